"""Step throughput of serial, SEER and the peer runtimes on one model, side by side.

    .venv/bin/python -m bench.bench_runtimes --fast -o runtimes.json
    .venv/bin/python -m bench.bench_runtimes --fast --costs 200 --entities 1600

Each pyperf benchmark times one environment step (same model, seed and actions for every
runtime, after a warm-up step) of ``seer.testing.BenchModel``: ``--entities`` entities,
each event doing ``cost`` µs of numpy work. At the end the main process prints throughput
as ratios over serial for each cost (measured in this run).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pyperf

import seer
from seer.testing import BenchModel

RUNTIMES = [("serial", 1), ("seer", 1), ("seer", 2), ("static", 2), ("global", 2),
            ("executor", 2)]


def label(kind: str, threads: int) -> str:
    return "serial" if kind == "serial" else f"{kind}({threads})"


def step_timer(entities: int, cost: float, kind: str, threads: int,
               fanout: int) -> Callable[[int], float]:
    def run(loops: int) -> float:
        model = BenchModel(entities, cost_us=cost, fanout=fanout)
        runtime = seer.make_runtime(model, kind, threads=threads)
        try:
            runtime.reset(0)
            runtime.step(model.sample_actions(0))  # warm-up: pools started, caches filled
            t0 = time.perf_counter()
            for t in range(loops):
                runtime.step(model.sample_actions(t + 1))
            return time.perf_counter() - t0
        finally:
            runtime.close()
    return run


def _worker_args(cmd: list[str], args: object) -> None:
    """Pass this script's own options on to pyperf's worker processes."""
    cmd.extend(["--entities", str(args.entities), "--fanout", str(args.fanout), "--costs",
                *[str(c) for c in args.costs]])
    if args.runtimes:
        cmd.extend(["--runtimes", *args.runtimes])


def main() -> None:
    runner = pyperf.Runner(add_cmdline_args=_worker_args)
    cmd = runner.argparser
    cmd.add_argument("--entities", type=int, default=1600)
    cmd.add_argument("--costs", type=float, nargs="+", default=[0, 10, 50, 200])
    cmd.add_argument("--fanout", type=int, default=1)
    cmd.add_argument("--runtimes", nargs="+", default=None,
                     help="subset, e.g. serial seer:2 static:2")
    args = runner.parse_args()
    runtimes = RUNTIMES
    if args.runtimes:
        runtimes = [(r.split(":")[0], int(r.split(":")[1]) if ":" in r else 1)
                    for r in args.runtimes]
    runner.metadata["gil_disabled"] = str(seer.gil_disabled())
    runner.metadata["cores"] = str(seer.cpu_count())
    results: dict[tuple[float, str], float] = {}
    for cost in args.costs:
        for kind, threads in runtimes:
            name = f"step-n{args.entities}-cost{cost:g}us-{label(kind, threads)}"
            bench = runner.bench_time_func(name, step_timer(args.entities, cost, kind,
                                                            threads, args.fanout))
            if bench is not None and not args.worker and bench.get_nvalue():
                results[(cost, label(kind, threads))] = bench.mean()
    if results and not args.worker:
        names = [label(k, t) for k, t in runtimes]
        print(f"\nthroughput relative to serial ({args.entities} entities, fanout "
              f"{args.fanout}; >1 is faster)")
        print("cost µs | " + " | ".join(f"{n:>12}" for n in names))
        for cost in args.costs:
            base = results.get((cost, "serial"))
            row = [f"{base / results[(cost, n)]:12.2f}" if base and (cost, n) in results
                   else f"{'-':>12}" for n in names]
            print(f"{cost:7g} | " + " | ".join(row))


if __name__ == "__main__":
    main()
