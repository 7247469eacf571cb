"""Step throughput of serial, SEER and the peer runtimes on one model, side by side (pyperf).

    .venv/bin/python -m bench.bench_runtimes --fast -o runtimes.json
    .venv/bin/python -m bench.bench_runtimes --fast --workload pcs --entities 1600 --costs 15 \
        --gains 0 2 8 --runtimes serial seer:2 static-block:2
    .venv/bin/python -m bench.bench_runtimes --fast --import examples.locality_steal \
        --runtimes serial 'seer(2)' 'static(2)' 'locality(2)'
    .venv/bin/python -m bench.bench_runtimes --fast --model mypackage.env:MyModel n=500

Each benchmark times steps after a reset and a warm-up step (same model, seed and actions
for every runtime) of BenchModel (``--costs``: µs per event), a workload (``--gains``:
PCS's hotspot peak) or any model (``--model SPEC key=value``); ``--import MODULE`` first
imports a module that registers a runtime, in every pyperf worker too.
"""

from __future__ import annotations

import functools
import importlib
import time
from collections.abc import Callable

import pyperf

import seer

# make_model is imported from here by bench.compare's child (CHILD), also in older revisions
from bench.harness import config_name, label, make_model, parse_runtime
from seer.cli import pyperf_metadata
from seer.specs import model_factory

RUNTIMES = [("serial", 1), ("seer", 1), ("seer", 2), ("static", 2), ("static-block", 2),
            ("global", 2), ("executor", 2)]


def step_timer(make: Callable[[], seer.Model], kind: str,
               threads: int) -> Callable[[int], float]:
    def run(loops: int) -> float:
        model = make()
        actions = getattr(model, "sample_actions", lambda step: None)
        runtime = seer.make_runtime(model, kind, threads=threads)
        try:
            # Every call times the same steps 1..loops after a reset, whatever the runtime.
            runtime.reset(0)
            runtime.step(actions(0))  # warm-up: pools started, caches filled
            t0 = time.perf_counter()
            for t in range(loops):
                runtime.step(actions(t + 1))
            return time.perf_counter() - t0
        finally:
            runtime.close()
    return run


def _worker_args(cmd: list[str], args: object) -> None:
    """Pass this script's own options on to pyperf's worker processes."""
    cmd.extend(["--workload", args.workload, "--entities", *[str(n) for n in args.entities],
                "--fanout", str(args.fanout), "--costs", *[str(c) for c in args.costs],
                "--gains", *[str(g) for g in args.gains]])
    if args.model:
        cmd.extend(["--model", *args.model])
    if args.runtimes:
        cmd.extend(["--runtimes", *[label(kind, threads) for kind, threads in args.runtimes]])
    for module in args.imports:  # workers re-run this module: they must import it too
        cmd.extend(["--import", module])


def import_modules(modules: list[str], runtimes: list[tuple[str, int]]) -> str | None:
    """Import ``modules`` (each may register runtimes); return an error message if one
    cannot be imported or a runtime in ``runtimes`` is still unknown, else None."""
    from seer.sched import RUNTIMES

    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            return f"--import {module}: {exc}"
    unknown = sorted({kind for kind, _ in runtimes if kind not in RUNTIMES})
    if unknown:
        hint = "" if modules else " (a runtime registered by a module of your own needs " \
            "--import MODULE)"
        return (f"unknown runtime(s) {', '.join(unknown)}; known: {', '.join(sorted(RUNTIMES))}"
                + hint)
    return None


def main() -> None:
    # Workers run as ``-m bench.bench_runtimes`` (not as a script), so that they import the
    # ``bench``, ``seer`` and ``workloads`` packages of the working directory, as the parent.
    runner = pyperf.Runner(add_cmdline_args=_worker_args,
                           program_args=("-m", "bench.bench_runtimes"))
    cmd = runner.argparser
    cmd.add_argument("--workload", choices=["bench", "aircraft", "pcs", "empty", "pursuit"],
                     default="bench", help="workloads.synthetic.BenchModel (default), a real "
                     "workload, or EmptyModel (scheduler overhead per event)")
    cmd.add_argument("--entities", type=int, nargs="+", default=[1600])
    cmd.add_argument("--costs", type=float, nargs="+", default=[0, 10, 50, 200])
    cmd.add_argument("--fanout", type=int, default=1)
    cmd.add_argument("--runtimes", nargs="+", type=parse_runtime, default=None,
                     help="subset, e.g. serial 'seer(2)' static:2 (kind:threads needs no "
                     "shell quoting)")
    cmd.add_argument("--gains", type=float, nargs="+", default=[2.0],
                     help="PCS only: peak of the moving traffic hotspot (0 = none)")
    cmd.add_argument("--import", dest="imports", action="append", default=[],
                     metavar="MODULE", help="import MODULE first (repeatable), e.g. one that "
                     "registers a runtime of your own with seer.register_runtime")
    cmd.add_argument("--model", nargs="+", default=None, metavar="SPEC",
                     help="time this model instead of a workload: module:callable or a "
                     "registered name, then key=value arguments (as seer bench takes it)")
    args = runner.parse_args()
    runtimes = args.runtimes or RUNTIMES
    problem = import_modules(args.imports, runtimes)
    if problem:
        cmd.error(problem)
    runner.metadata.update(pyperf_metadata())  # interpreter, GIL, cores, versions
    results: dict[tuple[str, str], float] = {}
    configs: list[tuple[str, Callable[[], seer.Model]]] = []
    if args.model:
        spec, *words = args.model
        configs.append(("-".join([spec.replace(":", "."), *words]),
                        model_factory(spec, words)))
    else:
        for n in args.entities:
            for cost in args.costs:
                for gain in args.gains if args.workload == "pcs" else [2.0]:
                    configs.append((config_name(args.workload, n, cost, gain),
                                    functools.partial(make_model, args.workload, n, cost,
                                                      args.fanout, gain)))
    for config, make in configs:
        for kind, threads in runtimes:
            bench = runner.bench_time_func(f"{config}-{label(kind, threads)}",
                                           step_timer(make, kind, threads))
            if bench is not None and not args.worker and bench.get_nvalue():
                results[(config, label(kind, threads))] = bench.median()
    if results and not args.worker:
        names = [label(k, t) for k, t in runtimes]
        print(f"\nthroughput relative to {names[0]} (median step time; >1 is faster)")
        print(f"{'configuration':>32} | " + " | ".join(f"{x:>15}" for x in names))
        for config, _make in configs:
            base = results.get((config, names[0]))
            row = [f"{base / results[(config, x)]:15.2f}" if base and (config, x) in results
                   else f"{'-':>15}" for x in names]
            print(f"{config:>32} | " + " | ".join(row))


if __name__ == "__main__":
    main()
