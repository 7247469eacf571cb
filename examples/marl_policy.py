"""A MAPPO-style policy for SEER environments, in plain torch, and its inference step.

* :class:`ActorCritic`: one actor MLP shared by every agent (parameter sharing) over the
  agent's own observation, with a Gaussian head for a ``Box`` action space (Aircraft:
  ``(turn, throttle)`` in [-1, 1]) or a categorical head for a ``Discrete`` one (PCS: the
  handoff reserve), and a *centralised* critic that sees the agent's observation next to
  the mean observation of all agents. One forward pass covers all agents of a step.
* :class:`RunningNorm`: observation normalisation whose statistics travel in the
  ``state_dict`` (so a checkpoint holds everything the policy needs).
* :class:`Adam`: :class:`seer.stpa.adam.Adam` with the trainer's defaults: torch's own Adam
  update (``torch.optim.adam.adam``, bit for bit ``torch.optim.Adam(foreach=False)`` with
  ``clip_grad_norm_``) without constructing a ``torch.optim`` optimizer, which imports
  ``torch._dynamo`` and with it triton, whose extension re-enables the GIL on free-threaded
  CPython (checked on torch 2.14.1 and 2.15.0; docs/training.md).
* :func:`spec_of`: what the policy needs to know about a :class:`seer.marl.SeerParallelEnv`.

Everything is deterministic on CPU for a fixed ``torch.set_num_threads``: sampling draws
from an explicit :class:`torch.Generator`, and no op used here has a nondeterministic CPU
kernel. (``torch.use_deterministic_algorithms`` is not called: it imports ``torch._dynamo``
too.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from seer.stpa.adam import Adam as _Adam

__all__ = ["ActorCritic", "Adam", "PolicySpec", "RunningNorm", "spec_of"]

LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True)
class PolicySpec:
    """Observation size and action kind of an environment whose agents share spaces."""

    obs_dim: int
    n_actions: int = 0  # > 0: categorical over range(n_actions)
    act_dim: int = 0  # > 0: Gaussian over act_dim numbers, clipped to [low, high]
    low: float = -1.0
    high: float = 1.0

    @property
    def discrete(self) -> bool:
        return self.n_actions > 0


def spec_of(env: Any) -> PolicySpec:
    """The :class:`PolicySpec` of a PettingZoo parallel env whose agents all have the
    spaces of its first agent (a shared-parameter policy needs that)."""
    from gymnasium import spaces

    agent = env.possible_agents[0]
    obs, act = env.observation_space(agent), env.action_space(agent)
    if not isinstance(obs, spaces.Box) or len(obs.shape) != 1:
        raise TypeError(f"need a flat Box observation space, got {obs}")
    if isinstance(act, spaces.Discrete):
        return PolicySpec(obs_dim=obs.shape[0], n_actions=int(act.n))
    if isinstance(act, spaces.Box) and len(act.shape) == 1:
        return PolicySpec(obs_dim=obs.shape[0], act_dim=act.shape[0],
                          low=float(act.low.min()), high=float(act.high.max()))
    raise TypeError(f"need a Discrete or flat Box action space, got {act}")


class RunningNorm(nn.Module):
    """Running mean and variance of observations (float64 buffers; Chan et al.'s parallel
    update), applied as ``clamp((x - mean) / std, -10, 10)``."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.register_buffer("count", torch.tensor(1e-4, dtype=torch.float64))
        self.register_buffer("mean", torch.zeros(dim, dtype=torch.float64))
        self.register_buffer("var", torch.ones(dim, dtype=torch.float64))

    def update(self, x: torch.Tensor) -> None:
        x = x.reshape(-1, x.shape[-1]).to(torch.float64)
        n = x.shape[0]
        mean, var = x.mean(0), x.var(0, unbiased=False)
        total = self.count + n
        delta = mean - self.mean
        self.var.copy_((self.var * self.count + var * n
                        + delta.square() * self.count * n / total) / total)
        self.mean.add_(delta * n / total)
        self.count.copy_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = (self.var + 1e-8).sqrt()
        return ((x.to(torch.float64) - self.mean) / scale).clamp(-10.0, 10.0).float()


def _mlp(inp: int, hidden: int, out: int, gain: float) -> nn.Sequential:
    net = nn.Sequential(nn.Linear(inp, hidden), nn.Tanh(), nn.Linear(hidden, hidden),
                        nn.Tanh(), nn.Linear(hidden, out))
    for layer in net:  # PPO's usual orthogonal init; the output layer small
        if isinstance(layer, nn.Linear):
            nn.init.orthogonal_(layer.weight, math.sqrt(2.0) if layer is not net[-1] else gain)
            nn.init.zeros_(layer.bias)
    return net


class ActorCritic(nn.Module):
    """Shared actor + centralised critic. Observations are ``(..., agents, obs_dim)``;
    the critic's input per agent is ``[own observation, mean observation of all agents]``
    (normalised), so it sees the whole team while staying one batched pass."""

    def __init__(self, spec: PolicySpec, hidden: int = 64) -> None:
        super().__init__()
        self.spec = spec
        self.norm = RunningNorm(spec.obs_dim)
        out = spec.n_actions if spec.discrete else spec.act_dim
        self.actor = _mlp(spec.obs_dim, hidden, out, gain=0.01)
        self.critic = _mlp(2 * spec.obs_dim, hidden, 1, gain=1.0)
        if not spec.discrete:
            self.log_std = nn.Parameter(torch.zeros(spec.act_dim))

    def critic_input(self, x: torch.Tensor) -> torch.Tensor:
        """``[x_i, mean_j x_j]`` for normalised observations ``x`` of shape (..., N, D)."""
        team = x.mean(dim=-2, keepdim=True).expand_as(x)
        return torch.cat([x, team], dim=-1)

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(self.critic_input(x)).squeeze(-1)

    def log_prob(self, head: torch.Tensor, actions: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probability of ``actions`` and the entropy, per agent, from the actor's
        output ``head`` (logits, or the Gaussian mean). Written out rather than with
        ``torch.distributions``, to keep the arithmetic visible and fixed."""
        if self.spec.discrete:
            logp_all = torch.log_softmax(head, dim=-1)
            logp = logp_all.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
            entropy = -(logp_all.exp() * logp_all).sum(-1)
            return logp, entropy
        log_std = self.log_std.expand_as(head)
        z = (actions - head) / log_std.exp()
        logp = (-0.5 * z.square() - log_std - 0.5 * LOG_2PI).sum(-1)
        entropy = (log_std + 0.5 * (1.0 + LOG_2PI)).sum(-1)
        return logp, entropy

    def act(self, obs: torch.Tensor, generator: torch.Generator
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One batched step for all agents of raw observations ``obs`` (N, D), or of K
        environments' agents (K, N, D: one pass over K * N rows, each critic seeing its
        own environment's team): returns ``(actions, log_probs, values, normalised
        observations)``, shaped like ``obs`` without its last axis. Call under
        ``torch.inference_mode()`` (or ``no_grad``)."""
        x = self.norm(obs)
        head = self.actor(x)
        if self.spec.discrete:
            probs = torch.softmax(head, dim=-1)
            flat = probs.reshape(-1, probs.shape[-1])  # multinomial takes 1 or 2 dims
            actions = torch.multinomial(flat, 1, generator=generator).reshape(probs.shape[:-1])
        else:
            noise = torch.randn(head.shape, generator=generator)
            actions = head + self.log_std.exp() * noise
        logp, _ = self.log_prob(head, actions)
        return actions, logp, self.value(x), x

    def env_actions(self, actions: torch.Tensor) -> np.ndarray:
        """The actions as the environment takes them: int64 reserves, or float64 pairs
        clipped to the action space (the log-probability is of the unclipped sample)."""
        if self.spec.discrete:
            return actions.numpy().astype(np.int64)
        return np.clip(actions.numpy().astype(np.float64), self.spec.low, self.spec.high)


class Adam(_Adam):
    """:class:`seer.stpa.adam.Adam` with the trainer's defaults: ``eps`` 1e-5 and the gradients'
    global norm clipped at 0.5."""

    def __init__(self, params: list[torch.Tensor], lr: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-5,
                 max_grad_norm: float | None = 0.5) -> None:
        super().__init__(params, lr, betas, eps, max_grad_norm)
