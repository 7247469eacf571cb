"""SEER's switches for many cores, A/B: seer(T) with each set of per-worker copies and
with stealing that backs off, its speed-up, CPU ratio and share of the ceiling (T
independent serial runs), side by side in one run.

    .venv/bin/python -m bench.switches --out bench/results/switches.json        # 2 threads
    .venv/bin/python -m bench.switches --threads 4 8 16 --only pcs --out m.json  # many cores
    .venv/bin/python -m bench.switches --smoke --out /tmp/switches.json         # seconds

Each variant is SEER's runtime with ``copies=`` (:mod:`seer.sched.copies`) or the
assignment ``Steal(backoff=B)`` (:class:`seer.sched.assignment.Steal`) set, registered for
the run under the name of :data:`VARIANTS`; every round times serial, each variant and the
ceiling in turns (:func:`seer.benchmark.compare`). ``seer`` is the default.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bench.harness import compare, finish, make_model, record, write_json
from seer.sched import SeerRuntime, register_runtime
from seer.sched.assignment import Steal
from seer.sched.copies import COPIES, DEFAULT_COPIES

__all__ = ["VARIANTS", "main", "measure"]

#: runtime name -> (the copies it makes, its steal back-off B: leaves a segment with
#: fewer than B * T items to its owner); ``seer`` is the default
VARIANTS: dict[str, tuple[frozenset[str], int]] = {
    "seer": (DEFAULT_COPIES, 0),
    "seer-copies-none": (frozenset(), 0),
    "seer-copies-all": (frozenset(COPIES), 0),
    **{f"seer-no-{c}": (DEFAULT_COPIES - {c}, 0) for c in sorted(DEFAULT_COPIES)},
    "seer-backoff-2": (DEFAULT_COPIES, 2),
    "seer-backoff-8": (DEFAULT_COPIES, 8),
}
#: key -> (title, workload, entities, cost µs)
WORKLOADS = {
    "pcs": ("PCS 1600 cells, cost_us=15", "pcs", 1600, 15.0),
    "pcs10": ("PCS 1600 cells, cost_us=10", "pcs", 1600, 10.0),
    "aircraft": ("Aircraft 800 UAVs, cost_us=200", "aircraft", 800, 200.0),
    "bench10": ("BenchModel 1600 entities, 10 µs events", "bench", 1600, 10.0),
}
SMOKE_ENTITIES = {"pcs": 64, "aircraft": 40, "bench": 60}


def _register() -> None:
    """Each variant of :data:`VARIANTS` as a runtime ``make_runtime`` knows by name."""
    for name, (copies, backoff) in VARIANTS.items():
        if name != "seer":
            register_runtime(type(f"Seer_{name.replace('-', '_')}", (SeerRuntime,),
                                  {"name": name, "default_copies": copies,
                                   "default_assignment": Steal(backoff),
                                   "__module__": __name__}), replace=True)


def measure(key: str, threads: int, steps: int, rounds: int, smoke: bool = False
            ) -> dict[str, Any]:
    """Every variant on workload ``key`` at ``threads`` threads, with the ceiling."""
    title, workload, entities, cost = WORKLOADS[key]
    if smoke:
        entities = SMOKE_ENTITIES[workload]
    labels = [f"{name}({threads})" for name in VARIANTS]
    result = compare(lambda: make_model(workload, entities, cost, 1, 2.0), labels,
                     steps=steps, rounds=rounds, name=title)
    return {"title": title, "workload": workload, "entities": entities, "cost_us": cost,
            "threads": threads,
            "copies": {name: sorted(c) for name, (c, _b) in VARIANTS.items()},
            "backoff": {name: b for name, (_c, b) in VARIANTS.items()},
            **result.to_json()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one round")
    parser.add_argument("--steps", type=int, default=8, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[2])
    parser.add_argument("--only", nargs="+", choices=sorted(WORKLOADS),
                        default=["pcs", "aircraft"])
    args = parser.parse_args(argv)
    _register()
    steps, rounds = (1, 1) if args.smoke else (args.steps, args.rounds)
    result = record("bench.switches", argv, steps=steps, rounds=rounds, smoke=args.smoke,
                    workloads={})
    lines = []
    for key in args.only:
        for t in args.threads:
            w = measure(key, t, steps, rounds, args.smoke)
            result["workloads"][f"{key}@{t}"] = w
            write_json(args.out, result)  # a run cut short keeps what it measured
            lines.append(f"{key}@{t}: " + ", ".join(
                f"{r} {v['speedup']:.2f}x (CPU {v['cpu_ratio']:.2f}, of ceiling "
                f"{v['of_ceiling'] if v['of_ceiling'] is None else format(v['of_ceiling'], '.2f')})"
                for r, v in w["summary"].items() if r != "serial"))
    finish(args.out, result, lines)


if __name__ == "__main__":
    main()
