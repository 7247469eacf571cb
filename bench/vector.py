"""K environments, one pool: the vector runtime against the ways a user steps K environments
today, side by side in rotated rounds, every result checked against stepping them in turn.

    .venv/bin/python -m bench.vector --out bench/results/vector.json   # both sets, 2 threads
    .venv/bin/python -m bench.vector --sets equal --rounds 3           # one set
    .venv/bin/python -m bench.vector --smoke --out /tmp/vector.json    # seconds

The sets (PCS, cost_us=15): ``equal`` is 8 grids of 20x20; ``dominant`` one 40x40 beside
three 10x10, where stepping environments side by side is bounded by the big one. The ways,
each stepping the same K environments with the same seeds and actions:

- ``serial``: the K environments stepped one after another on the serial runtime (what
  gymnasium's ``SyncVectorEnv`` does): the baseline;
- ``vector``: :class:`seer.vector.VectorRuntime` on T threads: every environment's events
  on one pool;
- ``seer in turn``: K ``seer(T)`` runtimes stepped one after another;
- ``thread pool``: K serial runtimes handed out to T threads by a
  :class:`~concurrent.futures.ThreadPoolExecutor` as each finishes, no parallelism inside
  a step (the best thread-based vector env a free-threaded user would write);
- ``async processes``: gymnasium's ``AsyncVectorEnv`` over the K environments, each a
  serial runtime in a process of its own (gymnasium's default: one process per
  environment), every process held to the same T cores;
- the ceiling: ``serial``'s time over what T independent runs of that same work gain
  on T threads of one process, measured in the same round (no scheduler of this work can
  beat it).

Per way: milliseconds per vector step (all K environments stepped once), environment-steps
per second, and its speed-up over ``serial`` paired by round (median and range). Every
round checks each way's final states (``async processes``: a digest of them, computed in
the child) against ``serial``'s, bit for bit.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import hashlib
import os
import statistics
import time
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

import seer
from bench.harness import finish, record
from seer.benchmark import on_threads
from seer.blas import blas_cap
from seer.vector import VectorRuntime
from workloads.pcs import PCS

__all__ = ["SETS", "WAYS", "main", "measure"]

#: set -> the PCS grids (width, height) of its environments
SETS: dict[str, list[tuple[int, int]]] = {
    "equal": [(20, 20)] * 8,
    "dominant": [(40, 40)] + [(10, 10)] * 3,
}
SMOKE_SETS: dict[str, list[tuple[int, int]]] = {"equal": [(6, 6)] * 3,
                                                 "dominant": [(10, 10), (4, 4), (4, 4)]}
COST_US = 15.0
#: the ways, in the order of the first round (later rounds rotate it)
WAYS = ("serial", "vector", "seer in turn", "thread pool", "async processes")


def _model(grid: tuple[int, int], cost_us: float) -> PCS:
    return PCS(width=grid[0], height=grid[1], cost_us=cost_us)


def _digest(runtime: Any) -> str:
    """A digest of every state array of ``runtime`` (names, dtypes, bytes)."""
    h = hashlib.sha256()
    for name in runtime.state.names:
        a = np.ascontiguousarray(runtime.state[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _actions(grids: list[tuple[int, int]], steps: int, seed: int = 1) -> list[list[list[int]]]:
    """actions[t][k]: a random reserve (0..RESERVE_CHOICES-1) per cell of environment k."""
    rng = np.random.default_rng(seed)
    return [[rng.integers(0, PCS.RESERVE_CHOICES, w * h).tolist() for w, h in grids]
            for _ in range(steps)]


class SerialGymEnv(gymnasium.Env):
    """One PCS grid on the serial runtime as a single-agent gymnasium environment, for
    ``AsyncVectorEnv``: the observation is every cell's observation stacked (float64, so
    nothing is rounded on the way back), the action one reserve per cell, the reward their
    sum; observations and actions padded to ``width`` cells, so that grids of different
    sizes share one space. ``digest()`` is :func:`_digest` of its state."""

    def __init__(self, grid: tuple[int, int], cost_us: float, width: int,
                 cores: int) -> None:
        if hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) > cores:
            os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:cores])
        self.model = _model(grid, cost_us)
        self.runtime = seer.make_runtime(self.model, "serial")
        self.cells = grid[0] * grid[1]
        self.observation_space = spaces.Box(-np.inf, np.inf, (width, 6), np.float64)
        self._obs = np.zeros((width, 6), np.float64)
        self.action_space = spaces.Box(0, PCS.RESERVE_CHOICES - 1, (width,), np.int64)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        r = self.runtime.reset(seed)
        return self._padded(r.observations), {}

    def step(self, action: Any) -> tuple:
        r = self.runtime.step(np.asarray(action)[:self.cells].tolist())
        return self._padded(r.observations), float(np.sum(r.rewards)), False, False, {}

    def _padded(self, observations: list) -> np.ndarray:
        obs = self._obs.copy()
        obs[:self.cells] = np.stack(observations)
        return obs

    def digest(self) -> str:
        return _digest(self.runtime)

    def close(self) -> None:
        self.runtime.close()


def _make_gym_env(grid: tuple[int, int], cost_us: float, width: int, cores: int) -> Any:
    return SerialGymEnv(grid, cost_us, width, cores)


class _Ways:
    """What each way keeps across rounds (the thread pool, the processes), and how it
    steps: each returns (seconds per vector step, the final states' digests)."""

    def __init__(self, grids: list[tuple[int, int]], cost_us: float, threads: int) -> None:
        self.grids, self.cost_us, self.threads = grids, cost_us, threads
        self.executor = concurrent.futures.ThreadPoolExecutor(threads, "bench-vector")
        self.processes: Any = None

    def models(self) -> list[PCS]:
        return [_model(g, self.cost_us) for g in self.grids]

    def close(self) -> None:
        self.executor.shutdown()
        if self.processes is not None:
            self.processes.close()

    def run(self, way: str, actions: list, steps: int) -> tuple[float, list[str]]:
        if way == "vector":
            with VectorRuntime(self.models(), threads=self.threads) as vec:
                vec.reset(0)
                vec.step(actions[0])
                start = time.perf_counter()
                for t in range(1, steps + 1):
                    vec.step(actions[t])
                return (time.perf_counter() - start) / steps, [_digest(e) for e in vec.envs]
        if way == "async processes":
            return self._async(actions, steps)
        kind = "seer" if way == "seer in turn" else "serial"
        rts = [seer.make_runtime(m, kind, threads=self.threads if kind == "seer" else None)
               for m in self.models()]
        try:
            for k, rt in enumerate(rts):
                rt.reset(k)
                rt.step(actions[0][k])
            start = time.perf_counter()
            if way == "thread pool":
                with blas_cap(1):  # as the parallel runtimes hold it while they step
                    for t in range(1, steps + 1):
                        list(self.executor.map(
                            lambda k, t=t: rts[k].step(actions[t][k]), range(len(rts))))
            else:
                for t in range(1, steps + 1):
                    for k, rt in enumerate(rts):
                        rt.step(actions[t][k])
            return (time.perf_counter() - start) / steps, [_digest(rt) for rt in rts]
        finally:
            for rt in rts:
                rt.close()

    def _async(self, actions: list, steps: int) -> tuple[float, list[str]]:
        if self.processes is None:  # started once: a process start is no part of a step
            from gymnasium.vector import AsyncVectorEnv

            width = max(w * h for w, h in self.grids)
            self.processes = AsyncVectorEnv(
                [functools.partial(_make_gym_env, g, self.cost_us, width, self.threads)
                 for g in self.grids],
                shared_memory=False, context="forkserver")
        envs = self.processes
        envs.reset(seed=0)
        width = envs.single_action_space.shape[0]
        batched = [np.array([a + [0] * (width - len(a)) for a in step], np.int64)
                   for step in actions]
        envs.step(batched[0])
        start = time.perf_counter()
        for t in range(1, steps + 1):
            envs.step(batched[t])
        seconds = (time.perf_counter() - start) / steps
        return seconds, list(envs.call("digest"))

    def ceiling_gain(self, actions: list, steps: int) -> float:
        """What T independent runs of the whole set (each thread its own K serial
        runtimes, stepped in turn) gain on T threads: T x one run's time over the
        group's."""
        groups: list[list[Any]] = [[] for _ in range(self.threads)]

        def setup(i: int) -> None:
            groups[i] = [seer.make_runtime(m, "serial") for m in self.models()]
            for k, rt in enumerate(groups[i]):
                rt.reset(k)
                rt.step(actions[0][k])

        def body(i: int, n: int) -> None:
            for t in range(1, n + 1):
                for k, rt in enumerate(groups[i]):
                    rt.step(actions[t][k])

        try:
            with blas_cap(1):
                alone = on_threads(1, body, steps, setup=setup)
                for rt in groups[0]:
                    rt.close()
                together = on_threads(self.threads, body, steps, setup=setup)
        finally:
            for group in groups:
                for rt in group:
                    rt.close()
        return self.threads * alone / together


def measure(grids: list[tuple[int, int]], threads: int = 2, steps: int = 5,
            rounds: int = 5, cost_us: float = COST_US, ways: tuple[str, ...] = WAYS,
            progress: Any = None) -> dict[str, Any]:
    """Every way of ``ways`` (``serial`` first, always) on the environments ``grids``, and
    the ceiling, in ``rounds`` rotated rounds of ``steps`` timed vector steps."""
    ways = ("serial", *(w for w in ways if w != "serial"))
    actions = [[list(a) for a in step] for step in _actions(grids, steps + 1)]
    seconds: dict[str, list[float]] = {w: [] for w in ways}
    identical: dict[str, bool] = {w: True for w in ways if w != "serial"}
    gains: list[float] = []
    state = _Ways(grids, cost_us, threads)
    try:
        for r in range(rounds):
            order = list(ways[r % len(ways):] + ways[:r % len(ways)])
            digests = {}
            for way in order:
                seconds[way].append(0.0)
                seconds[way][-1], digests[way] = state.run(way, actions, steps)
                if progress is not None:
                    progress(f"round {r + 1}/{rounds}: {way}")
            gains.append(state.ceiling_gain(actions, steps))
            for way in identical:
                identical[way] &= digests[way] == digests["serial"]
    finally:
        state.close()
    k = len(grids)
    base = seconds["serial"]
    ceiling = [s / g for s, g in zip(base, gains, strict=True)]
    out: dict[str, Any] = {}
    for way in (*ways, "ceiling"):
        per_round = ceiling if way == "ceiling" else seconds[way]
        speedups = [b / s for b, s in zip(base, per_round, strict=True)]
        of_ceiling = [c / s for c, s in zip(ceiling, per_round, strict=True)]
        median = statistics.median(per_round)
        out[way] = {"ms_per_step": 1e3 * median, "env_steps_per_s": k / median,
                    "speedup": statistics.median(speedups),
                    "speedup_range": [min(speedups), max(speedups)],
                    "of_ceiling": statistics.median(of_ceiling),
                    "identical": identical.get(way, True)}
    return {"environments": [f"PCS {w}x{h}" for w, h in grids], "cost_us": cost_us,
            "threads": threads, "steps": steps, "rounds": rounds,
            "ceiling_gain": statistics.median(gains), "ways": out}


def summary(result: dict[str, Any]) -> list[str]:
    lines = []
    for name, s in result["sets"].items():
        lines.append(f"{name}: {', '.join(s['environments'])} "
                     f"(ceiling gain {s['ceiling_gain']:.2f}x on {s['threads']} threads)")
        for way, w in s["ways"].items():
            lo, hi = w["speedup_range"]
            lines.append(f"  {way:>16}: {w['ms_per_step']:8.2f} ms per vector step, "
                         f"{w['env_steps_per_s']:7.1f} env-steps/s, {w['speedup']:.2f}x "
                         f"serial ({lo:.2f}-{hi:.2f}), {w['of_ceiling']:.2f} of the ceiling"
                         + ("" if w["identical"] else "  STATES DIFFER"))
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="JSON file to write")
    parser.add_argument("--sets", nargs="+", choices=sorted(SETS), default=list(SETS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5, help="timed vector steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one round")
    args = parser.parse_args(argv)
    sets = SMOKE_SETS if args.smoke else SETS
    steps, rounds = (2, 1) if args.smoke else (args.steps, args.rounds)
    from tqdm import tqdm

    with tqdm(total=len(args.sets) * rounds * len(args.ways), desc="bench.vector",
              unit="run", leave=False) as bar:
        def progress(what: str) -> None:
            bar.set_postfix_str(what)
            bar.update()

        result = record("bench.vector", argv, sets={
            name: measure(sets[name], args.threads, steps, rounds, ways=tuple(args.ways),
                          progress=progress) for name in args.sets})
    finish(args.out, result, summary(result))


if __name__ == "__main__":
    main()
