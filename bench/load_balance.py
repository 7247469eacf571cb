"""Per-thread CPU time of each pooled runtime on one workload (the paper's CPU-utilisation
variance): how evenly the work lands on the threads.

    .venv/bin/python -m bench.load_balance --workload aircraft --entities 800 --cost 200 \\
        --threads 2 --steps 20 -o load_balance.json
    .venv/bin/python -m bench.load_balance --workload pcs --entities 1600 --cost 15 --gain 8

Plain timing (not pyperf): per-thread CPU seconds come from ``time.thread_time`` inside the
worker pool (``WorkerStats.cpu_s``), summed over the measured steps.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import seer
from bench.harness import label, make_model, state_digest

KINDS = ("seer", "static", "static-block", "global")


def measure(workload: str, entities: int, cost: float, kind: str, threads: int,
            steps: int, gain: float = 2.0) -> dict:
    model = make_model(workload, entities, cost, 1, gain)
    rt = seer.make_runtime(model, kind, threads=threads)
    try:
        rt.reset(0)
        rt.step(model.sample_actions(0))
        rt.pool.reset_stats()
        t0 = time.perf_counter()
        for t in range(steps):
            rt.step(model.sample_actions(t + 1))
        wall = time.perf_counter() - t0
        cpu = [s["cpu_s"] for s in rt.worker_stats()]
        events = [s["events"] for s in rt.worker_stats()]
        steals = [s.get("steals", 0) for s in rt.worker_stats()]
        digest = state_digest(rt)
    finally:
        rt.close()
    mean = statistics.fmean(cpu)
    return {"kind": kind, "threads": threads, "wall_s": wall, "cpu_s": cpu, "events": events,
            "steals": steals, "state_sha256": digest,
            "cpu_cv": statistics.pstdev(cpu) / mean if mean else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="aircraft", choices=["bench", "aircraft", "pcs"])
    parser.add_argument("--entities", type=int, default=800)
    parser.add_argument("--cost", type=float, default=200.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--gain", type=float, default=2.0,
                        help="PCS only: peak of the moving traffic hotspot")
    parser.add_argument("-o", "--output")
    args = parser.parse_args()
    rows = [measure(args.workload, args.entities, args.cost, k, args.threads, args.steps,
                    args.gain) for k in KINDS]
    print(f"per-thread CPU seconds over {args.steps} steps ({args.workload}, "
          f"{args.entities} entities, cost {args.cost:g} µs, {args.threads} threads)")
    for r in rows:
        cpu = " ".join(f"{c:6.2f}" for c in r["cpu_s"])
        print(f"{label(r['kind'], r['threads']):>15}: wall {r['wall_s']:6.2f} s  "
              f"cpu/thread [{cpu}]  CV {r['cpu_cv']:.3f}")
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"args": vars(args), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
