"""Wall and CPU time per step of one runtime, alone in a fresh process: what
``bench.compare --cpu`` runs for each revision, runtime and round.

    .venv/bin/python bench/steptime.py --workload pcs --entities 1600 --cost 120 \\
        --runtime seer:2 --steps 10

It builds the model with ``bench.bench_runtimes.make_model`` and the runtime with
``seer.make_runtime``, resets it (seed 0), steps it ``--warmup`` times and then times
``--steps`` steps: wall (``time.perf_counter``) and CPU of the whole process, every thread
counted (``time.process_time``). It prints one JSON object. It is run as a file, so that
``bench.compare`` can run this copy against another revision's ``seer``, ``bench`` and
``workloads`` (first on ``PYTHONPATH``); it uses nothing of them that older revisions lack.

``BusyWork`` (BenchModel's cost knob) calibrates its ns per element once per process, and
the calibration moves by about 10 % from process to process. ``--busy-ns`` (default 4.0)
fixes it, so that both revisions run the same work; ``--busy-ns 0`` calibrates as usual.
"""

from __future__ import annotations

import argparse
import json
import re
import time

__all__ = ["main", "parse_runtime_arg"]


def parse_runtime_arg(text: str) -> tuple[str, int]:
    """``seer:2`` or ``seer(2)`` -> ``("seer", 2)``; a bare name is one thread."""
    m = re.fullmatch(r"([\w-]+)(?::(\d+)|\((\d+)\))?", text)
    if not m:
        raise argparse.ArgumentTypeError(f"runtime {text!r}: use NAME, NAME:THREADS or "
                                         "NAME(THREADS)")
    return m[1], int(m[2] or m[3] or 1)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="pcs")
    parser.add_argument("--entities", type=int, default=1600)
    parser.add_argument("--cost", type=float, default=15.0)
    parser.add_argument("--fanout", type=int, default=1)
    parser.add_argument("--gain", type=float, default=2.0)
    parser.add_argument("--runtime", type=parse_runtime_arg, default=("serial", 1))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--busy-ns", type=float, default=4.0)
    args = parser.parse_args(argv)
    if args.steps < 1 or args.warmup < 0:
        parser.error("--steps must be >= 1 and --warmup >= 0")

    import seer
    import seer.busywork
    from bench.bench_runtimes import make_model

    if args.busy_ns > 0:
        seer.busywork._ns_per_element = args.busy_ns
    name, threads = args.runtime
    model = make_model(args.workload, args.entities, args.cost, args.fanout, args.gain)
    actions = [model.sample_actions(t) for t in range(args.warmup + args.steps)]
    runtime = seer.make_runtime(model, name, threads=threads) if name != "serial" \
        else seer.make_runtime(model, "serial")
    try:
        runtime.reset(seed=0)
        for t in range(args.warmup):
            runtime.step(actions[t])
        c0, t0 = time.process_time(), time.perf_counter()
        for t in range(args.warmup, args.warmup + args.steps):
            runtime.step(actions[t])
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        runtime.close()
    result = {"runtime": f"{name}({threads})", "wall_s": wall / args.steps,
              "cpu_s": cpu / args.steps}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
