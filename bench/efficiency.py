"""Parallel efficiency: each runtime's speed-up over serial, the CPU it spent for it, and
its share of the ceiling, side by side; with ``--balance``, per-thread CPU time.

    .venv/bin/python -m bench.efficiency --out bench/results/efficiency.json  # ~20 minutes
    .venv/bin/python -m bench.efficiency --smoke --out /tmp/eff.json          # seconds
    .venv/bin/python -m bench.efficiency --threads 4 8 16 --only aircraft pcs --out m.json
    .venv/bin/python -m bench.efficiency --model mypackage.env:MyModel n=500 --out mine.json
    .venv/bin/python -m bench.efficiency --balance --only pcs_gain8 --steps 20 --out lb.json

Every workload is one :func:`seer.benchmark.compare`; ``KEY@T`` (or ``--threads``) runs
it at T threads. How to read the figures: docs/performance.md; the goals read from this
file: ``bench/goals.toml``.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

import seer
from bench.harness import (
    ALL,
    PEERS,
    compare,
    finish,
    make_model,
    record,
    state_digest,
    timed_steps,
    write_json,
)
from seer.specs import model_factory

__all__ = ["BALANCE_KINDS", "WORKLOADS", "balance", "main", "measure", "measure_model"]

#: key -> (title, workload, entities, cost µs, hotspot peak, runtimes at 2 threads)
WORKLOADS: dict[str, tuple[str, str, int, float, float, list[str]]] = {
    "pcs": ("PCS 1600 cells, cost_us=15 (~11 µs events)", "pcs", 1600, 15, 2.0, ALL),
    "pcs10": ("PCS 1600 cells, cost_us=10", "pcs", 1600, 10, 2.0, PEERS),
    "pcs20": ("PCS 1600 cells, cost_us=120 (~20 µs events)", "pcs", 1600, 120, 2.0,
              ["serial", "seer(1)", "seer(2)", "static(2)"]),
    "aircraft": ("Aircraft 800 UAVs, ~200 µs events", "aircraft", 800, 200, 2.0, ALL),
    **{f"bench{c}": (f"BenchModel 1600 entities, {c} µs events", "bench", 1600, c, 2.0, ALL)
       for c in (0, 10, 50, 200)},
    "bench5": ("BenchModel 1600 entities, 5 µs events", "bench", 1600, 5, 2.0,
               ["serial", "seer(2)"]),
    **{f"pcs_gain{g}": (f"PCS 1600 cells, hotspot of peak {g}" if g else
                        "PCS 1600 cells, no hotspot", "pcs", 1600, 15, float(g), PEERS)
       for g in (0, 2, 4, 8)},
    "empty": ("EmptyModel 1600 entities, 10 empty events each per step", "empty", 1600, 0,
              2.0, ["serial", "seer(1)", "seer(2)"]),
}
#: the thread scans of the default run: ``key@T`` is workload ``key`` at ``T`` threads
SCANS = [f"{key}@{t}" for key in ("aircraft", "pcs") for t in (1, 3, 4, 8)]
#: the smoke mode's sizes (the pipeline's correctness only)
SMOKE_ENTITIES = {"pcs": 64, "aircraft": 40, "bench": 60, "empty": 60}


def at_threads(runtimes: list[str], threads: int) -> list[str]:
    """``seer(2)`` -> ``seer(threads)``; one-thread and serial labels unchanged (at one
    thread, ``seer(1)`` once)."""
    return list(dict.fromkeys(r.replace("(2)", f"({threads})") for r in runtimes))


def measure(key: str, steps: int, rounds: int, threads: int = 2,
            smoke: bool = False) -> dict[str, Any]:
    """One workload of :data:`WORKLOADS` at ``threads`` threads: the comparison's JSON with
    the workload's description."""
    title, workload, entities, cost, gain, runtimes = WORKLOADS[key]
    if smoke:
        entities = SMOKE_ENTITIES[workload]
    result = compare(lambda: make_model(workload, entities, cost, 1, gain),
                     at_threads(runtimes, threads), steps=steps, rounds=rounds, name=title)
    return {"title": title, "workload": workload, "entities": entities, "cost_us": cost,
            "gain": gain, "threads": threads, **result.to_json()}


#: the pooled runtimes whose per-thread CPU ``--balance`` measures
BALANCE_KINDS = ("seer", "static", "static-block", "global")


def balance(workload: str, entities: int, cost: float, kind: str, threads: int,
            steps: int, gain: float = 2.0) -> dict[str, Any]:
    """One runtime's per-thread CPU seconds (``WorkerStats.cpu_s``, from
    ``time.thread_time`` in the pool), events and steals over ``steps`` steps after a
    warm-up step, its wall time, final state digest and the CV of the CPU seconds."""
    model = make_model(workload, entities, cost, 1, gain)
    actions = [model.sample_actions(t) for t in range(steps + 1)]
    rt = seer.make_runtime(model, kind, threads=threads)
    try:
        rt.reset(0)
        rt.step(actions[0])
        rt.pool.reset_stats()
        wall = steps * timed_steps(rt, actions[1:], steps)[0]
        stats, digest = rt.worker_stats(), state_digest(rt)
    finally:
        rt.close()
    cpu = [s["cpu_s"] for s in stats]
    mean = statistics.fmean(cpu)
    return {"kind": kind, "threads": threads, "wall_s": wall, "cpu_s": cpu,
            "events": [s["events"] for s in stats],
            "steals": [s.get("steals", 0) for s in stats], "state_sha256": digest,
            "cpu_cv": statistics.pstdev(cpu) / mean if mean else 0.0}


def measure_model(words: list[str], steps: int, rounds: int, threads: int = 2
                  ) -> dict[str, Any]:
    """A model given as a spec and key=value words, on every runtime at ``threads``."""
    spec, *kwargs = words
    title = " ".join(words)
    result = compare(model_factory(spec, kwargs), at_threads(ALL, threads),
                     steps=steps, rounds=rounds, name=title)
    return {"title": title, "workload": spec, "threads": threads, **result.to_json()}


def _workload(word: str) -> str:
    key, at, threads = word.partition("@")
    if key not in WORKLOADS or (at and not (threads.isascii() and threads.isdigit()
                                            and int(threads) > 0)):
        raise argparse.ArgumentTypeError(f"{word!r}: give a workload ({', '.join(WORKLOADS)})"
                                         ", optionally @T (threads, T >= 1)")
    return f"{key}@{int(threads)}" if at else key


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one round")
    parser.add_argument("--steps", type=int, default=6, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[2])
    parser.add_argument("--only", nargs="+", type=_workload, default=[*WORKLOADS, *SCANS],
                        metavar="KEY[@T]", help=f"workloads ({', '.join(WORKLOADS)}), KEY@T "
                        "at T threads only (default: every workload and the scans "
                        f"{' '.join(SCANS)})")
    parser.add_argument("--model", nargs="+", default=None, metavar="SPEC",
                        help="measure this model (module:callable or a registered name, then "
                        "key=value arguments) instead of the workloads")
    parser.add_argument("--balance", action="store_true",
                        help="per-thread CPU time of each pooled runtime on the one workload "
                        "of --only, at the first --threads, over --steps steps")
    args = parser.parse_args(argv)
    from tqdm import tqdm

    steps, rounds = (1, 1) if args.smoke else (args.steps, args.rounds)
    if args.balance:
        if len(args.only) != 1 or "@" in args.only[0] or args.model:
            parser.error("--balance measures one workload: give it with --only, T --threads")
        _title, workload, entities, cost, gain, _runtimes = WORKLOADS[args.only[0]]
        entities = SMOKE_ENTITIES[workload] if args.smoke else entities
        steps = 2 if args.smoke else args.steps
        rows = [balance(workload, entities, cost, k, args.threads[0], steps, gain)
                for k in tqdm(BALANCE_KINDS, desc="balance", unit="runtime")]
        finish(args.out, record("bench.efficiency", argv, workload=workload,
                                entities=entities, cost_us=cost, gain=gain, steps=steps,
                                rows=rows),
               [f"{r['kind']}({r['threads']}): wall {r['wall_s']:.2f} s, CPU per thread "
                f"{' '.join(f'{c:.2f}' for c in r['cpu_s'])}, CV {r['cpu_cv']:.3f}"
                for r in rows])
        return
    result = record("bench.efficiency", argv, steps=steps, rounds=rounds, smoke=args.smoke,
                    workloads={})
    todo = []  # (result name, workload key, threads)
    for word in ["model"] if args.model else args.only:
        key, _, at = word.partition("@")
        for t in [int(at)] if at else args.threads:
            todo.append((word if at or args.threads == [2] else f"{key}@{t}", key, t))
    for name, key, t in tqdm(list(dict.fromkeys(todo)), desc="efficiency", unit="workload"):
        result["workloads"][name] = measure_model(args.model, steps, rounds, t) \
            if args.model else measure(key, steps, rounds, t, args.smoke)
        write_json(args.out, result)  # a run cut short keeps what it measured
    finish(args.out, result, [f"{name}: " + ", ".join(
        f"{r} {v['speedup']:.2f}x (CPU {v['cpu_ratio']:.2f})"
        for r, v in w["summary"].items() if r != "serial")
        for name, w in result["workloads"].items()])


if __name__ == "__main__":
    main()
