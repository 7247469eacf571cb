"""How much parallel CPU the machine delivers right now: a fixed pure-Python loop run on
1 thread and on T threads at once (each thread does the same work).

    .venv/bin/python -m bench.bench_capacity --fast -o capacity.json

``effective cores = T * time(1 thread) / time(T threads)``: T on an idle machine with T
free cores, less when other tenants of a shared host take CPU time. The report runs it
between the runtime benchmarks, so every result can be read next to the capacity that
the machine had while it was measured.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable

import pyperf

import seer
from seer.cli import pyperf_metadata

WORK = 200_000  # loop iterations per thread per call (~10 ms on the development machine)


def spin(n: int = WORK) -> int:
    total = 0
    for i in range(n):
        total += i & 7
    return total


def timer(threads: int) -> Callable[[int], float]:
    def run(loops: int) -> float:
        elapsed = 0.0
        for _ in range(loops):
            workers = [threading.Thread(target=spin) for _ in range(threads - 1)]
            t0 = time.perf_counter()
            for w in workers:
                w.start()
            spin()  # the calling thread is one of the T
            for w in workers:
                w.join()
            elapsed += time.perf_counter() - t0
        return elapsed
    return run


def capacity_now(repeats: int = 5) -> float:
    """Effective cores right now: ``2 x time(1 thread) / time(2 threads)`` of the loop,
    medians of ``repeats`` interleaved calls (plain timing, for the parts that are not
    pyperf benchmarks)."""
    one, two = timer(1), timer(2)
    a, b = [], []
    for _ in range(repeats):
        a.append(one(1))
        b.append(two(1))
    return 2 * statistics.median(a) / statistics.median(b)


def name(threads: int) -> str:
    return f"capacity-{threads}thread" + ("s" if threads > 1 else "")


def main() -> None:
    runner = pyperf.Runner(add_cmdline_args=lambda cmd, args: cmd.extend(
        ["--threads", *map(str, args.threads)]))
    runner.argparser.add_argument("--threads", type=int, nargs="+",
                                  default=sorted({1, max(2, seer.cpu_count())}))
    args = runner.parse_args()
    runner.metadata.update(pyperf_metadata())
    for t in args.threads:
        runner.bench_time_func(name(t), timer(t))


if __name__ == "__main__":
    main()
