"""MAPPO on SEER environments: short, real, and unchanged by the runtime.

    .venv/bin/python -m examples.mappo --workload aircraft --runtime seer --threads 2
    .venv/bin/python -m examples.mappo --workload pcs --runtime seer --threads 2 --verify
    .venv/bin/python -m examples.mappo --workload pcs --envs 4 --threads 2 --verify

Trains :class:`examples.marl_policy.ActorCritic` (shared actor, centralised critic) with
PPO's clipped objective and GAE on Aircraft (50 UAVs, continuous turn/throttle) or PCS
(8x8 cells, discrete handoff reserve). Each update collects one episode of ``--steps``
steps from every one of ``--envs`` K environments (default 1), each from a fresh seed,
every agent of every environment acting from one batched forward pass over
``[K, agents]`` (each critic sees its own environment's team); GAE runs per agent of
each environment, then ``--epochs`` passes of ``--minibatches`` minibatches over all of it.

The environments, by ``--stepping``:

* K = 1 (the default): one :class:`seer.marl.SeerParallelEnv` on ``--runtime`` (public API
  only: ``reset``, ``observations_array``, ``step_arrays``, the spaces).
* K > 1 on ``seer`` (``vector``): one :class:`seer.vector.SeerVectorEnv`: K environments
  whose events share one pool of ``--threads`` workers (a worker that runs out of one
  environment's work takes another's). Its automatic reset is off (``Disabled``): the
  trainer resets all K at each update, and an episode is cut at ``--steps``.
* ``in-turn`` (K > 1 on any other runtime, or asked for): K ``SeerParallelEnv`` on
  ``--runtime``, stepped one after another.

The runtime does not change training: the environment's outputs are bit-identical on
every runtime, thread count and way of stepping, torch runs on a fixed number of intra-op
threads (``--torch-threads``, default 1) and every random draw comes from seeded
generators, so ``serial`` and ``seer`` with 2 threads, or the vector env and K serial
environments stepped in turn, log identical numbers. ``--verify`` trains a second time on
``serial`` (K environments in turn) and compares every logged number. At these small
sizes a step takes only a few milliseconds, so two threads gain little with K = 1
(``--threads auto`` lets STPA choose, from a preflight of all K with the vector env); the
loop at the benchmark sizes is timed by :mod:`bench.marl_loop`.

Writes to ``--out``: ``checkpoint_NNNN.pt`` (``torch.save`` of the policy's and the
optimiser's state dicts, the config and the history so far) every ``--checkpoint-every``
updates and at the end, ``history.json`` and ``learning_curve_<workload>.png``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from examples.marl_policy import ActorCritic, Adam, spec_of
from seer.marl import SeerParallelEnv

__all__ = ["LOGGED", "STEPPING", "Config", "Envs", "check", "describe", "main", "make_env",
           "make_envs", "make_model", "plot", "stepping", "train"]

#: the numbers logged per update; all of them must be equal across runtimes
LOGGED = ("episode_reward", "policy_loss", "value_loss", "entropy", "approx_kl",
          "clip_fraction", "grad_norm")
#: workload -> (default size, default cost_us): Aircraft UAVs, PCS side (side x side cells)
DEFAULTS = {"aircraft": (50, 200.0), "pcs": (8, 15.0)}
#: how K environments are stepped: "auto" is "vector" for K > 1 on seer, else "in-turn"
STEPPING = ("auto", "vector", "in-turn")


@dataclass
class Config:
    """Everything a run depends on (saved into every checkpoint)."""

    workload: str = "aircraft"
    size: int = 0  # 0: the workload's default (Aircraft 50 UAVs, PCS 8x8)
    cost_us: float = 0.0  # 0: the workload's default (200, 15)
    runtime: str = "seer"
    threads: int | str = 2
    envs: int = 1  # K environments, each with its own seed
    stepping: str = "auto"  # one of STEPPING
    updates: int = 200
    steps: int = 32  # environment steps per update = one episode
    epochs: int = 4
    minibatches: int = 4
    lr: float = 1e-3
    gamma: float = 0.99
    lam: float = 0.95
    clip: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    hidden: int = 64
    seed: int = 0
    torch_threads: int = 1
    extra: dict[str, Any] = field(default_factory=dict)  # more workload arguments


def make_model(cfg: Config) -> Any:
    """The workload's model at ``cfg``'s size."""
    size, cost = DEFAULTS[cfg.workload]
    size, cost = cfg.size or size, cfg.cost_us or cost
    if cfg.workload == "aircraft":
        from workloads.aircraft import Aircraft

        return Aircraft(size, cost_us=cost, seed=cfg.seed, **cfg.extra)
    from workloads.pcs import PCS

    return PCS(size, size, cost_us=cost, seed=cfg.seed, **cfg.extra)


def make_env(cfg: Config) -> SeerParallelEnv:
    """One environment: the workload at ``cfg``'s size on ``cfg``'s runtime."""
    # serial runs on one thread and refuses a count (cfg.threads is the parallel runtimes')
    threads = None if cfg.runtime == "serial" else cfg.threads
    return SeerParallelEnv(make_model(cfg), cfg.runtime, threads=threads)


def stepping(cfg: Config) -> str:
    """``cfg.stepping`` with "auto" resolved: "vector" for K > 1 on seer, else "in-turn"."""
    if cfg.stepping not in STEPPING:
        raise ValueError(f"stepping must be one of {STEPPING}, got {cfg.stepping!r}")
    if cfg.stepping != "auto":
        return cfg.stepping
    return "vector" if cfg.envs > 1 and cfg.runtime == "seer" else "in-turn"


def describe(cfg: Config | dict[str, Any]) -> str:
    """A run's environments in a few words: ``seer(2)``, ``seer(2) vector x4``,
    ``serial in turn x4``."""
    c = asdict(cfg) if isinstance(cfg, Config) else cfg
    name = c["runtime"] + ("" if c["runtime"] == "serial" else f"({c['threads']})")
    k = c.get("envs", 1)
    how = stepping(Config(**c))
    return name if k == 1 and how == "in-turn" else f"{name} {how.replace('-', ' ')} x{k}"


class Envs:
    """K environments as the trainer steps them: ``reset(seeds)`` returns observations
    ``[K, agents, obs_dim]``, ``step(actions)`` (``[K, agents, ...]``) returns them with
    rewards ``[K, agents]`` (float64). Made by :func:`make_envs`."""

    def __init__(self, cfg: Config) -> None:
        check(cfg)
        self.num_envs = cfg.envs
        self.vector = stepping(cfg) == "vector"
        if self.vector:
            from seer.vector import SeerVectorEnv

            models = [make_model(cfg) for _ in range(cfg.envs)]
            # the trainer resets every environment at each update: no automatic reset
            self.env: Any = SeerVectorEnv(models, threads=cfg.threads,
                                          autoreset_mode="Disabled")
            self.spaces: Any = self.env.spaces[0]  # possible_agents and the space methods
            self.threads_used = self.env.runtime.threads
        else:
            self.envs = [make_env(cfg) for _ in range(cfg.envs)]
            self.spaces = self.envs[0]
            # STPA's choice for "auto"
            self.threads_used = int(self.envs[0].runtime.stats.get("threads", 1))

    def reset(self, seeds: list[int]) -> np.ndarray:
        if self.vector:
            return self.env.reset(seed=seeds)[0]
        obs = []
        for env, seed in zip(self.envs, seeds, strict=True):
            env.reset(seed=seed)
            obs.append(env.observations_array())
        return np.stack(obs)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.vector:
            obs, rewards, _terms, _truncs, _infos = self.env.step(actions)
            return obs, rewards
        outs = [env.step_arrays(a) for env, a in zip(self.envs, actions, strict=True)]
        return (np.stack([o[0] for o in outs]),
                np.stack([np.asarray(o[1], np.float64) for o in outs]))

    def close(self) -> None:
        for env in [self.env] if self.vector else self.envs:
            env.close()


def check(cfg: Config) -> None:
    """Refuse (ValueError) a configuration whose environments cannot be made."""
    if cfg.envs < 1:
        raise ValueError(f"envs must be >= 1, got {cfg.envs}")
    if stepping(cfg) == "vector" and cfg.runtime != "seer":
        raise ValueError(f"stepping 'vector' is SeerVectorEnv, on seer's runtime; got "
                         f"runtime {cfg.runtime!r} (use stepping 'in-turn')")


def make_envs(cfg: Config) -> Envs:
    """``cfg.envs`` environments of ``cfg``'s workload, stepped as ``cfg.stepping`` says."""
    return Envs(cfg)


def gae(rewards: np.ndarray, values: np.ndarray, gamma: float, lam: float
        ) -> tuple[np.ndarray, np.ndarray]:
    """Advantages and returns (float64) for rewards (T, N) and values (T + 1, N). The
    episode is cut at T by a time limit, so the last value is bootstrapped."""
    adv = np.zeros_like(rewards)
    last = np.zeros(rewards.shape[1])
    for t in range(len(rewards) - 1, -1, -1):
        delta = rewards[t] + gamma * values[t + 1] - values[t]
        last = delta + gamma * lam * last
        adv[t] = last
    return adv, adv + values[:-1]


def collect(envs: Envs, policy: ActorCritic, gen: torch.Generator, seeds: list[int],
            steps: int) -> dict[str, Any]:
    """One episode of every environment: ``steps`` batched policy forwards over
    ``[K, agents]`` and ``envs.step`` calls. Arrays are ``(T, K, agents, ...)``."""
    obs = envs.reset(seeds)
    raw, xs, acts, logps, vals, rews = [], [], [], [], [], []
    env_s = 0.0
    with torch.no_grad():
        for _ in range(steps):
            actions, logp, value, x = policy.act(torch.from_numpy(obs), gen)
            t0 = time.perf_counter()
            next_obs, rewards = envs.step(policy.env_actions(actions))
            env_s += time.perf_counter() - t0
            raw.append(obs)
            xs.append(x)
            acts.append(actions)
            logps.append(logp)
            vals.append(value.numpy().astype(np.float64))
            rews.append(np.asarray(rewards, np.float64))
            obs = next_obs
        vals.append(policy.value(policy.norm(torch.from_numpy(obs))).numpy().astype(np.float64))
    return {"raw": np.stack(raw), "x": torch.stack(xs), "actions": torch.stack(acts),
            "logp": torch.stack(logps), "values": np.stack(vals), "rewards": np.stack(rews),
            "env_s": env_s}


def update(policy: ActorCritic, opt: Adam, batch: dict[str, Any], cfg: Config,
           gen: torch.Generator) -> dict[str, float]:
    """PPO's clipped objective over the episodes; returns the mean losses and diagnostics."""
    rewards, values = batch["rewards"], batch["values"]  # (T, K, N), (T + 1, K, N)
    # GAE runs down each column: one per agent of each environment
    adv, ret = gae(rewards.reshape(len(rewards), -1), values.reshape(len(values), -1),
                   cfg.gamma, cfg.lam)
    x = batch["x"]  # (T, K, N, D) normalised as the policy saw them
    # the critic sees its team's mean at the same step: build its inputs before flattening
    cx = policy.critic_input(x).flatten(0, 2)
    x = x.flatten(0, 2)
    actions = batch["actions"].flatten(0, 2)
    logp_old = batch["logp"].flatten(0, 2)
    adv_t = torch.from_numpy(adv.reshape(-1).astype(np.float32))
    ret_t = torch.from_numpy(ret.reshape(-1).astype(np.float32))
    n = x.shape[0]
    size = n // cfg.minibatches
    sums = dict.fromkeys(LOGGED[1:], 0.0)
    count = 0
    for _ in range(cfg.epochs):
        order = torch.randperm(n, generator=gen)
        for k in range(cfg.minibatches):
            idx = order[k * size:(k + 1) * size]
            a = adv_t[idx]
            a = (a - a.mean()) / (a.std() + 1e-8)
            logp, entropy = policy.log_prob(policy.actor(x[idx]), actions[idx])
            log_ratio = logp - logp_old[idx]
            ratio = log_ratio.exp()
            pg = -torch.min(ratio * a, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * a).mean()
            v_loss = 0.5 * (policy.critic(cx[idx]).squeeze(-1) - ret_t[idx]).square().mean()
            ent = entropy.mean()
            loss = pg + cfg.vf_coef * v_loss - cfg.ent_coef * ent
            opt.zero_grad()
            loss.backward()
            grad_norm = opt.step()
            with torch.no_grad():
                sums["policy_loss"] += float(pg)
                sums["value_loss"] += float(v_loss)
                sums["entropy"] += float(ent)
                sums["approx_kl"] += float(((ratio - 1) - log_ratio).mean())
                sums["clip_fraction"] += float(((ratio - 1).abs() > cfg.clip).float().mean())
                sums["grad_norm"] += grad_norm
            count += 1
    return {k: v / count for k, v in sums.items()}


def train(cfg: Config, out: Path | None = None, *, progress: bool = True,
          checkpoint_every: int = 50) -> dict[str, Any]:
    """Train; returns ``{"history": [per-update dict of LOGGED], "seconds", "env_seconds",
    "config", "threads_used"}``. With ``out``, writes checkpoints and ``history.json``
    there."""
    previous = torch.get_num_threads()
    torch.set_num_threads(cfg.torch_threads)  # fixed: same kernels, same sums every run
    try:
        return _train(cfg, out, progress, checkpoint_every)
    finally:
        torch.set_num_threads(previous)


def _train(cfg: Config, out: Path | None, progress: bool,
           checkpoint_every: int) -> dict[str, Any]:
    from tqdm import tqdm

    torch.manual_seed(cfg.seed)  # the initial weights
    gen = torch.Generator().manual_seed(cfg.seed + 1)  # action samples and minibatches
    envs = make_envs(cfg)
    threads_used = envs.threads_used
    policy = ActorCritic(spec_of(envs.spaces), cfg.hidden)
    opt = Adam(list(policy.parameters()), lr=cfg.lr)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    history: list[dict[str, float]] = []
    t0 = time.perf_counter()
    env_s = 0.0
    bar = tqdm(range(cfg.updates), desc=f"mappo {cfg.workload} {describe(cfg)}",
               unit="update", disable=not progress)
    k = cfg.envs
    try:
        for u in bar:
            # environment j of update u: its own seed, never another's (K = 1: seed * 100003 + u)
            seeds = [(cfg.seed * 100_003 + u) * k + j for j in range(k)]
            batch = collect(envs, policy, gen, seeds, steps=cfg.steps)
            env_s += batch["env_s"]
            rewards = batch["rewards"].reshape(cfg.steps, -1)  # mean over envs and agents
            row = {"update": u, "episode_reward": float(rewards.mean(1).sum())}
            row.update(update(policy, opt, batch, cfg, gen))
            policy.norm.update(torch.from_numpy(batch["raw"]))  # used from the next episode
            history.append(row)
            bar.set_postfix(reward=f"{row['episode_reward']:.3f}")
            if out is not None and ((u + 1) % checkpoint_every == 0 or u + 1 == cfg.updates):
                torch.save({"policy": policy.state_dict(), "optimizer": opt.state_dict(),
                            "update": u + 1, "config": asdict(cfg), "history": history},
                           out / f"checkpoint_{u + 1:04d}.pt")
    finally:
        bar.close()
        envs.close()
    result = {"config": asdict(cfg), "threads_used": threads_used, "history": history,
              "seconds": time.perf_counter() - t0, "env_seconds": env_s}
    if out is not None:
        (out / "history.json").write_text(json.dumps(result, indent=1))
    return result


def smoothed(values: list[float], window: int) -> np.ndarray:
    """Trailing moving average (shorter at the start)."""
    v = np.asarray(values, float)
    c = np.cumsum(np.insert(v, 0, 0.0))
    lo = np.maximum(np.arange(1, len(v) + 1) - window, 0)
    return (c[1:] - c[lo]) / (np.arange(1, len(v) + 1) - lo)


def plot(results: list[dict[str, Any]], path: Path) -> None:
    """The learning curve(s): mean episode reward per agent against updates."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 3.8), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    styles = ["-", "--", ":"]
    for i, res in enumerate(results):
        cfg = res["config"]
        rewards = [h["episode_reward"] for h in res["history"]]
        name = describe(cfg)
        ax.plot(rewards, alpha=0.25, color=f"C{i}")
        ax.plot(smoothed(rewards, 10), styles[i % 3], color=f"C{i}",
                label=f"{name} (moving mean of 10)")
    cfg = results[0]["config"]
    size = cfg["size"] or DEFAULTS[cfg["workload"]][0]
    what = f"{size} UAVs" if cfg["workload"] == "aircraft" else f"{size}x{size} cells"
    same = len(results) > 1 and all(r["history"] == results[0]["history"] for r in results)
    k = cfg.get("envs", 1)
    what += f", {k} environments" if k > 1 else ""
    ax.set_title(f"MAPPO on {cfg['workload']} ({what})"
                 + (": runs identical" if same else ""), fontsize=10)
    ax.set_xlabel(f"update (one {cfg['steps']}-step episode "
                  + ("of each environment)" if k > 1 else "each)"))
    ax.set_ylabel("episode reward per agent")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)


def compare(a: list[dict[str, float]], b: list[dict[str, float]]) -> str | None:
    """None when every logged number is equal, else where the first difference is."""
    if len(a) != len(b):
        return f"{len(a)} updates against {len(b)}"
    for ra, rb in zip(a, b, strict=True):
        for key in LOGGED:
            if ra[key] != rb[key]:
                return f"update {ra['update']}: {key} {ra[key]!r} != {rb[key]!r}"
    return None


def _run_name(cfg: Config) -> str:
    """The run's folder under ``--out``: ``pcs-seer``, ``pcs-seer-vector-x4``..."""
    how = stepping(cfg)
    tail = "" if cfg.envs == 1 and how == "in-turn" else f"-{how}-x{cfg.envs}"
    return f"{cfg.workload}-{cfg.runtime}{tail}"


def _threads(text: str) -> int | str:
    return text if text == "auto" else int(text)


def _parser() -> argparse.ArgumentParser:
    d = Config()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", choices=sorted(DEFAULTS), default=d.workload)
    p.add_argument("--size", type=int, default=d.size,
                   help="Aircraft: UAVs (default 50); PCS: side of the torus (default 8)")
    p.add_argument("--cost-us", type=float, default=d.cost_us,
                   help="the workload's cost knob (default Aircraft 200, PCS 15)")
    p.add_argument("--runtime", default=d.runtime, help="serial, seer, static, ...")
    p.add_argument("--threads", type=_threads, default=d.threads, help="an int or 'auto'")
    p.add_argument("--envs", type=int, default=d.envs,
                   help="K environments per update (default 1)")
    p.add_argument("--stepping", choices=STEPPING, default=d.stepping,
                   help="K > 1: 'vector' (SeerVectorEnv, one pool; auto on seer) or "
                        "'in-turn' (K SeerParallelEnv one after another; auto otherwise)")
    p.add_argument("--updates", type=int, default=d.updates)
    p.add_argument("--steps", type=int, default=d.steps, help="steps per episode/update")
    p.add_argument("--epochs", type=int, default=d.epochs)
    p.add_argument("--minibatches", type=int, default=d.minibatches)
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--ent-coef", type=float, default=d.ent_coef)
    p.add_argument("--hidden", type=int, default=d.hidden)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--torch-threads", type=int, default=d.torch_threads,
                   help="torch intra-op threads (default 1: leave the cores to SEER)")
    p.add_argument("--out", type=Path, default=Path("runs/mappo"))
    p.add_argument("--checkpoint-every", type=int, default=50)
    p.add_argument("--verify", action="store_true",
                   help="train again on serial (K environments in turn) with the same "
                        "seeds; compare every number")
    p.add_argument("--no-progress", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    cfg = Config(workload=args.workload, size=args.size, cost_us=args.cost_us,
                 runtime=args.runtime, threads=args.threads, envs=args.envs,
                 stepping=args.stepping, updates=args.updates,
                 steps=args.steps, epochs=args.epochs, minibatches=args.minibatches,
                 lr=args.lr, ent_coef=args.ent_coef, hidden=args.hidden, seed=args.seed,
                 torch_threads=args.torch_threads)
    try:
        check(cfg)
    except ValueError as exc:
        parser.error(str(exc))
    out: Path = args.out / _run_name(cfg)
    results = [train(cfg, out, progress=not args.no_progress,
                     checkpoint_every=args.checkpoint_every)]
    status = 0
    if args.verify and cfg.runtime != "serial":
        serial = Config(**{**asdict(cfg), "runtime": "serial", "threads": 1,
                           "stepping": "in-turn"})
        results.append(train(serial, args.out / _run_name(serial),
                             progress=not args.no_progress,
                             checkpoint_every=args.checkpoint_every))
        diff = compare(results[0]["history"], results[1]["history"])
        used = results[0]["threads_used"]
        name = describe(cfg)
        if used != cfg.threads:  # STPA's choice
            name = name.replace(f"({cfg.threads})", f"({cfg.threads}: {used})", 1)
        print(f"{name} against {describe(serial)}: "
              + ("every logged number identical "
                 f"({len(LOGGED)} numbers x {cfg.updates} updates)"
                 if diff is None else f"DIFFERENT at {diff}"))
        status = 0 if diff is None else 1
    figure = out / f"learning_curve_{cfg.workload}.png"
    plot(results, figure)
    for res in results:
        rewards = [h["episode_reward"] for h in res["history"]]
        k = max(1, min(10, len(rewards) // 5))
        c = res["config"]
        print(f"{describe(c)}: episode reward per agent, first {k} updates "
              f"{np.mean(rewards[:k]):.4f} -> last {k} {np.mean(rewards[-k:]):.4f}; "
              f"{res['seconds']:.1f} s ({res['env_seconds']:.1f} s stepping the environments)")
    print(f"wrote {out} (checkpoints, history.json) and {figure}; GIL enabled: "
          f"{sys._is_gil_enabled()}")
    return status


if __name__ == "__main__":
    sys.exit(main())
