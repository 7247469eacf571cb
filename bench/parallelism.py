"""The parallelism profile's bound beside the measured speed-up: per workload, what the
window protocol allows at T threads with no scheduling cost (:func:`seer.trace.parallelism_profile`
of a one-thread seer trace) and what seer(2) measured over serial
(:func:`seer.benchmark.compare`, as ``bench.efficiency`` compares).

    .venv/bin/python -m bench.parallelism --out bench/results/parallelism.json   # ~2 minutes
    .venv/bin/python -m bench.parallelism --smoke --out /tmp/par.json           # seconds

The bound at T = 2 is the one a 2-core host can check; T = 4, 8 and 16 say what more cores
could buy. *measured/bound* near 1: the runtime keeps what the protocol allows; well below
it: scheduling, sharing or the host costs the rest, not the protocol.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import seer
from bench.efficiency import SMOKE_ENTITIES, WORKLOADS
from bench.harness import compare, finish, make_model, record
from seer.benchmark import sample_actions_of
from seer.trace import DEFAULT_BARRIER_US, parallelism_profile

__all__ = ["BOUND_THREADS", "PROFILED", "main", "measure", "profile", "summary"]

#: the thread counts of the bound: 2 (measured beside it), 4-16 (what more cores could buy)
BOUND_THREADS = (2, 4, 8, 16)
#: key -> (title, workload, entities, cost µs): bench.efficiency's workloads of the same
#: key, and the MPE port at bench.mpe's larger size
PROFILED: dict[str, tuple[str, str, int, float]] = {
    **{key: WORKLOADS[key][:4] for key in ("aircraft", "pcs", "bench10")},
    "mpe": ("MPE spread port, 400 agents", "mpe", 400, 0.0),
}
SMOKE = {**SMOKE_ENTITIES, "mpe": 12}


def build(workload: str, entities: int, cost: float) -> seer.Model:
    """A model of :data:`PROFILED` (``mpe``: ``workloads.mpe.Spread``, no episode end)."""
    if workload == "mpe":
        from workloads.mpe import Spread

        return Spread(entities, max_cycles=10**9)
    return make_model(workload, entities, cost)


def profile(model: seer.Model, steps: int, warmup: int = 1,
            barrier_us: float = DEFAULT_BARRIER_US) -> dict[str, Any]:
    """The parallelism profile of ``steps`` steps of seer on one thread after ``warmup``
    steps (as ``seer trace MODEL --parallelism`` traces), as JSON."""
    actions = sample_actions_of(model)
    runtime = seer.make_runtime(model, "seer", threads=1, trace=True)
    with runtime:
        runtime.reset(0)
        for t in range(warmup):
            runtime.step(actions(t))
        runtime.trace.clear()
        for t in range(warmup, warmup + steps):
            runtime.step(actions(t))
    p = parallelism_profile(runtime.trace, BOUND_THREADS, barrier_us=barrier_us)
    share = p.runtime_us / (p.work_us + p.runtime_us) if p.runtime_us > 0 else 0.0
    return {"steps": steps, "windows": p.windows, "runs": p.runs, "events": p.events,
            "events_per_step": p.events / steps, "work_us": p.work_us, "span_us": p.span_us,
            "barrier_us": p.barrier_us, "median_ready": p.median_ready,
            "runtime_us": p.runtime_us, "runtime_share": share,
            "bound": {str(t): p.speedup[t] for t in BOUND_THREADS}, "limit": p.limit,
            "chain": [{"window": w, "entity": e, "run_us": us, "share_of_span": s}
                      for w, e, us, s in p.chain]}


def measure(key: str, steps: int, rounds: int, traced: int, smoke: bool = False
            ) -> dict[str, Any]:
    """One workload of :data:`PROFILED`: its profile and serial against seer(2)."""
    title, workload, entities, cost = PROFILED[key]
    if smoke:
        entities = SMOKE[workload]
    prof = profile(build(workload, entities, cost), traced)
    result = compare(lambda: build(workload, entities, cost), ["serial", "seer(2)"],
                     steps=steps, rounds=rounds, name=title).to_json()
    s = result["summary"]["seer(2)"]
    return {"title": title, "workload": workload, "entities": entities, "cost_us": cost,
            "profile": prof,
            "measured": {"speedup": s["speedup"], "cpu_ratio": s["cpu_ratio"],
                         "of_ceiling": s["of_ceiling"],
                         "serial_us_per_event": result["serial_us_per_event"],
                         "steps": steps, "rounds": rounds,
                         "wall_s": {k: v["wall_s"] for k, v in result["runtimes"].items()},
                         "ceiling_wall_s": (result.get("ceiling") or {}).get("wall_s"),
                         "identical": result["runtimes"]["seer(2)"].get("identical"),
                         "capacity": [result["capacity_before"], result["capacity_after"]]},
            "measured_over_bound": s["speedup"] / prof["bound"]["2"]}


def summary(result: dict[str, Any]) -> list[str]:
    """One line per workload."""
    return [f"{w['title']}: bound T=2 {w['profile']['bound']['2']:.2f}x, measured seer(2) "
            f"{w['measured']['speedup']:.2f}x ({w['measured_over_bound']:.2f} of the bound); "
            "bound " + ", ".join(f"T={t} {w['profile']['bound'][str(t)]:.2f}x"
                                 for t in BOUND_THREADS[1:])
            + f", limit {w['profile']['limit']:.2f}x" for w in result["workloads"].values()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one round")
    parser.add_argument("--steps", type=int, default=4, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--traced", type=int, default=3,
                        help="steps traced for the profile (after a warm-up step)")
    parser.add_argument("--only", nargs="+", choices=list(PROFILED), default=list(PROFILED))
    args = parser.parse_args(argv)
    steps, rounds, traced = (1, 1, 1) if args.smoke else (args.steps, args.rounds,
                                                          args.traced)
    result = record("bench.parallelism", argv, steps=steps, rounds=rounds, traced=traced,
                    smoke=args.smoke, threads=list(BOUND_THREADS), workloads={})
    for key in args.only:
        result["workloads"][key] = measure(key, steps, rounds, traced, args.smoke)
    finish(args.out, result, summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
