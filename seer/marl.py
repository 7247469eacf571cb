"""PettingZoo ``ParallelEnv`` over any Model and any runtime (``docs/design.md``, "The
PettingZoo adapter").

    from seer.marl import SeerParallelEnv
    env = SeerParallelEnv(Aircraft(800), "seer", threads=2)
    observations, infos = env.reset(seed=0)
    observations, rewards, terminations, truncations, infos = env.step(actions)

Agents are named ``f"{prefix}_{entity}"`` for the model's ``agent_entities()``. The model
supplies ``observation_space(entity)`` and ``action_space(entity)`` (gymnasium spaces); the
env caches them, so ``observation_space(agent)`` returns the same object every call.
An agent leaves ``agents`` after the step in which it terminates or is truncated (the
model may set ``max_steps``: every agent is truncated at that step).

For batched policy inference, :meth:`SeerParallelEnv.step_arrays` takes one action per
agent as a sequence or array in ``possible_agents`` order and returns stacked arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pettingzoo import ParallelEnv

from seer.model import Model
from seer.runtime import StepResult
from seer.sched import make_runtime

__all__ = ["SeerParallelEnv"]


class SeerParallelEnv(ParallelEnv):
    """A PettingZoo parallel environment stepping ``model`` on the runtime named
    ``runtime`` (see :func:`seer.make_runtime`)."""

    metadata = {"name": "seer_v0", "render_modes": ["rgb_array"],  # noqa: RUF012
                "is_parallelizable": True}

    def __init__(self, model: Model, runtime: str = "seer", *, threads: int = 2,
                 render_mode: str | None = None, prefix: str | None = None,
                 **runtime_options: Any) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        for method in ("observation_space", "action_space"):
            if not callable(getattr(model, method, None)):
                raise TypeError(f"model {model.name!r} needs {method}(entity) returning a "
                                "gymnasium space to be used as a PettingZoo environment")
        self.model = model
        self.render_mode = render_mode
        self.runtime = make_runtime(model, runtime, threads=threads, **runtime_options)
        prefix = prefix or type(model).__name__.lower()
        self._entities = tuple(self.runtime.spec.agents)
        self.possible_agents = [f"{prefix}_{e}" for e in self._entities]
        self._entity_of = dict(zip(self.possible_agents, self._entities, strict=True))
        self._observation_spaces = {a: model.observation_space(e)
                                    for a, e in self._entity_of.items()}
        self._action_spaces = {a: model.action_space(e) for a, e in self._entity_of.items()}
        self.agents: list[str] = []
        self.max_steps = getattr(model, "max_steps", None)
        self._last: StepResult | None = None

    def observation_space(self, agent: str) -> Any:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> Any:
        return self._action_spaces[agent]

    # -- dict API ------------------------------------------------------------------------------
    def reset(self, seed: int | None = None,
              options: dict | None = None) -> tuple[dict[str, Any], dict[str, dict]]:
        result = self.runtime.reset(seed)
        self._last = result
        self.agents = list(self.possible_agents)
        observations = dict(zip(self.possible_agents, result.observations, strict=True))
        infos = dict(zip(self.possible_agents, result.infos, strict=True))
        return observations, infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        entity_of = self._entity_of
        unknown = [a for a in actions if a not in entity_of]
        if unknown:
            raise KeyError(f"actions for unknown agents {unknown[:5]}")
        live = self.agents
        result = self.runtime.step({entity_of[a]: actions[a] for a in live if a in actions})
        self._last = result
        truncate_all = self.max_steps is not None and result.step >= self.max_steps
        index = {a: i for i, a in enumerate(self.possible_agents)}
        observations, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        for a in live:
            i = index[a]
            observations[a] = result.observations[i]
            rewards[a] = float(result.rewards[i])
            terminations[a] = bool(result.terminations[i])
            truncations[a] = bool(result.truncations[i]) or truncate_all
            infos[a] = result.infos[i]
        self.agents = [a for a in live if not (terminations[a] or truncations[a])]
        return observations, rewards, terminations, truncations, infos

    # -- stacked fast path ---------------------------------------------------------------------
    def step_arrays(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                 np.ndarray]:
        """Step with one action per agent in ``possible_agents`` order (a sequence or an
        array with a leading agent axis). Returns ``(observations, rewards, terminations,
        truncations)`` stacked along the agent axis; observations must share one shape.
        Ignores ``agents`` (for vectorised training loops that reset on their own)."""
        if len(actions) != len(self._entities):
            raise ValueError(f"step_arrays needs {len(self._entities)} actions, got "
                             f"{len(actions)}")
        result = self.runtime.step(dict(zip(self._entities, actions, strict=True)))
        self._last = result
        return (np.stack(result.observations), result.rewards, result.terminations,
                result.truncations)

    def observations_array(self) -> np.ndarray:
        """The latest observations stacked along the agent axis."""
        if self._last is None:
            raise RuntimeError("call reset() first")
        return np.stack(self._last.observations)

    # -- the rest ------------------------------------------------------------------------------
    def render(self) -> np.ndarray | None:
        """An RGB frame (H, W, 3) drawn by the model's ``render_frame(ax, state)``."""
        if self.render_mode is None:
            return None
        draw = getattr(self.model, "render_frame", None)
        if draw is None:
            raise NotImplementedError(f"model {self.model.name!r} has no render_frame")
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=(5, 5), dpi=80)
        canvas = FigureCanvasAgg(fig)  # off-screen, whatever the global backend is
        draw(fig.add_subplot(), self.runtime.state)
        canvas.draw()
        return np.asarray(canvas.buffer_rgba())[..., :3].copy()

    def close(self) -> None:
        self.runtime.close()

    def state(self) -> np.ndarray:
        raise NotImplementedError("no global state array; use env.runtime.state")
