"""The MARL inference loop end to end: one batched torch policy forward + one SEER step,
with the latency of every step broken down into :data:`PHASES`.

    .venv/bin/python -m bench.marl_loop                  # 3 rounds of 8 steps (1-2 minutes)
    .venv/bin/python -m bench.marl_loop --smoke --out /tmp/marl_loop.json   # tiny (tests)

A MAPPO rollout's step (:class:`examples.marl_policy.ActorCritic` for all agents, then the
step) on every run of :data:`RUNS`, the same seeds, runs taking turns; medians over rounds
of the per-step mean; torch on one thread except in the last run. docs/training.md.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["PHASES", "main", "measure"]

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "marl_loop.json"
#: breakdown phases in table and stacking order, with their table headings
PHASES = {"policy": "policy inference", "torch": "torch<->numpy", "env": "env execution",
          "assembly": "obs/reward assembly"}
#: (runtime, threads, torch threads or 0 for torch's default) in table order
RUNS: list[tuple[str, int | str, int]] = [
    ("serial", 1, 1), ("seer", 1, 1), ("seer", 2, 1), ("seer", 4, 1), ("static", 2, 1),
    ("static-block", 2, 1), ("global", 2, 1), ("seer", "auto", 1), ("seer", 2, 0)]


def run_label(kind: str, threads: int | str, torch_threads: int, auto: int = 0) -> str:
    """``serial``, ``seer(2)``, ``seer(auto: 2)``, ``seer(2), torch 2 threads``."""
    name = "serial" if kind == "serial" else f"{kind}({threads}{f': {auto}' if auto else ''})"
    return name if torch_threads == 1 else f"{name}, torch {torch_threads} threads"


def time_outputs(model: Any) -> Callable[[], float]:
    """Wrap ``model.outputs`` (before a runtime is built for it) so that every call notes
    its thread's first start and last end. Returns a function giving the wall time of the
    outputs phase since its previous call (first start to last end over all threads)."""
    inner = model.outputs
    local = threading.local()
    records: list[list[float]] = []
    lock = threading.Lock()
    clock = time.perf_counter

    def outputs(entity: int, state: Any, start: Any) -> Any:  # three parameters, as inner
        t0 = clock()
        out = inner(entity, state, start)
        t1 = clock()
        rec = getattr(local, "rec", None)
        if rec is None:
            rec = local.rec = [math.inf, -math.inf]
            with lock:
                records.append(rec)
        if t0 < rec[0]:
            rec[0] = t0
        rec[1] = t1
        return out

    model.outputs = outputs

    def phase() -> float:
        used = [r for r in records if r[0] < math.inf]
        wall = max(r[1] for r in used) - min(r[0] for r in used) if used else 0.0
        for r in records:
            r[0], r[1] = math.inf, -math.inf
        return wall

    return phase


class Loop:
    """One environment, its instrumented model and a policy: :meth:`run` times steps."""

    def __init__(self, workload: str, entities: int, cost: float, kind: str,
                 threads: int | str, torch_threads: int, hidden: int) -> None:
        import torch

        from bench.harness import make_model
        from examples.marl_policy import ActorCritic, spec_of
        from seer.marl import SeerParallelEnv

        model = make_model(workload, entities, cost, 1)
        self.outputs_phase = time_outputs(model)
        t0 = time.perf_counter()
        self.env = SeerParallelEnv(model, kind, threads=threads)
        self.make_s = time.perf_counter() - t0
        stpa = getattr(self.env.runtime, "stpa", None)
        self.auto = int(stpa["threads"]) if stpa else 0
        self.preflight_s = float(stpa["seconds"]) if stpa else 0.0
        self.kind, self.threads, self.torch_threads = kind, threads, torch_threads
        self.label = run_label(kind, threads, torch_threads or torch_default_threads(), self.auto)
        torch.manual_seed(0)
        self.policy = ActorCritic(spec_of(self.env), hidden).eval()
        self.entities = tuple(self.env.runtime.spec.agents)

    def run(self, steps: int, seed: int = 0) -> dict[str, float]:
        """Reset, one warm-up step, ``steps`` timed steps: mean seconds per step per phase."""
        import torch

        clock = time.perf_counter
        torch.set_num_threads(self.torch_threads or torch_default_threads())
        env, policy, step = self.env, self.policy, self.env.runtime.step
        gen = torch.Generator().manual_seed(seed)
        env.reset(seed=seed)
        obs = env.observations_array()
        sums = dict.fromkeys(PHASES, 0.0)
        for k in range(steps + 1):
            if k == 1:  # the first step warms up; it is not timed
                sums = dict.fromkeys(PHASES, 0.0)
            self.outputs_phase()
            t0 = clock()
            obs_t = torch.from_numpy(obs)
            t1 = clock()
            with torch.inference_mode():
                actions, _, _, _ = policy.act(obs_t, gen)
            t2 = clock()
            env_actions = policy.env_actions(actions)
            t3 = clock()
            result = step(dict(zip(self.entities, env_actions, strict=True)))
            t4 = clock()
            obs = np.stack(result.observations)
            _rewards = np.asarray(result.rewards)  # a trainer keeps them
            t5 = clock()
            out_s = self.outputs_phase()
            sums["policy"] += t2 - t1
            sums["torch"] += (t1 - t0) + (t3 - t2)
            sums["env"] += (t4 - t3) - out_s
            sums["assembly"] += out_s + (t5 - t4)
        return {k: v / steps for k, v in sums.items()}

    def close(self) -> None:
        self.env.close()


_DEFAULT_THREADS: list[int] = []


def torch_default_threads() -> int:
    """Torch's own intra-op thread count, read once, before anything here changes it."""
    if not _DEFAULT_THREADS:
        import torch

        _DEFAULT_THREADS.append(torch.get_num_threads())
    return _DEFAULT_THREADS[0]


def measure(workload: str, entities: int, cost: float, runs: list[tuple[str, int | str, int]],
            rounds: int, steps: int, hidden: int, progress: Any = None) -> dict[str, Any]:
    """Every run of ``runs`` on ``workload``, in ``rounds`` rounds; medians over rounds."""
    import torch

    torch_default_threads()
    loops = [Loop(workload, entities, cost, kind, threads, tt, hidden)
             for kind, threads, tt in runs]
    per_round: list[list[dict[str, float]]] = [[] for _ in loops]
    try:
        for r in range(rounds):
            # each round starts one run later, so no runtime always follows the same one
            for j in range(len(loops)):
                i = (r + j) % len(loops)
                per_round[i].append(loops[i].run(steps))
                if progress is not None:
                    progress()
    finally:
        torch.set_num_threads(torch_default_threads())
        for loop in loops:
            loop.close()
    rows = []
    for loop, values in zip(loops, per_round, strict=True):
        totals = [sum(v.values()) for v in values]
        rows.append({"label": loop.label, "runtime": loop.kind, "threads": loop.threads,
                     "chosen_threads": loop.auto or None, "preflight_s": loop.preflight_s,
                     "torch_threads": loop.torch_threads or torch_default_threads(),
                     "torch_default": loop.torch_threads == 0,
                     "phases": {k: statistics.median(v[k] for v in values) for k in PHASES},
                     "total": statistics.median(totals), "round_totals": totals})
    agents = len(loops[0].entities)
    return {"workload": workload, "model": loops[0].env.model.name, "agents": agents,
            "obs_dim": loops[0].policy.spec.obs_dim, "cost_us": cost, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    import torch
    from tqdm import tqdm

    from bench.harness import capacity_now, finish, record
    from bench.markdown import Results, also_measured
    from bench.sizes import Sizes

    args = _parser().parse_args(argv)
    default_threads = torch_default_threads()
    mode = "smoke" if args.smoke else "full" if args.full else "fast"
    z = Sizes(mode)
    rounds = args.rounds or {"smoke": 1, "fast": 3, "full": 6}[mode]
    steps = args.steps or {"smoke": 2, "fast": 8, "full": 10}[mode]
    runs = RUNS if not args.smoke else [r for r in RUNS if r[1] != 4]
    sizes = {"aircraft": (z.n_air, z.air_cost), "pcs": (z.n_pcs, z.pcs_cost)}
    started = time.time()
    result = record("bench.marl_loop", argv, mode=mode, rounds=rounds, steps=steps,
                    hidden=args.hidden, torch=torch.__version__,
                    torch_default_threads=default_threads,
                    capacity={"before": capacity_now()}, workloads={})
    bar = tqdm(total=rounds * len(runs) * len(args.workloads), desc="marl loop", unit="run")
    try:
        for w in args.workloads:
            bar.set_postfix(workload=w)
            result["workloads"][w] = measure(w, *sizes[w], runs, rounds, steps, args.hidden,
                                             progress=lambda: bar.update())
    finally:
        bar.close()
        torch.set_num_threads(default_threads)
    result["capacity"]["after"] = capacity_now()
    result["minutes"] = (time.time() - started) / 60
    finish(args.out, result, also_measured(Results(marl_loop=result)))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes, 1 round of 2 steps (seconds; for tests)")
    parser.add_argument("--full", action="store_true", help="6 rounds of 10 steps")
    parser.add_argument("--rounds", type=int, default=0)
    parser.add_argument("--steps", type=int, default=0, help="timed steps per round")
    parser.add_argument("--hidden", type=int, default=64, help="policy MLP width")
    parser.add_argument("--workloads", nargs="+", choices=["aircraft", "pcs"],
                        default=["aircraft", "pcs"])
    parser.add_argument("--out", type=Path, default=RESULTS)
    return parser


if __name__ == "__main__":
    sys.exit(main())
