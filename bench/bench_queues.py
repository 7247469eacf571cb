"""Per-operation cost of the atomics paths and of each queue structure, single-threaded and
under contention, next to queue.SimpleQueue and collections.deque, in one pyperf run.

    .venv/bin/python -m bench.bench_queues --fast -o queues.json
    .venv/bin/python -m pyperf show queues.json

Every benchmark reports time per operation (per event for LEQ, per claim for the PEL);
contended variants run the same loop on 2 threads at once and report wall time per
operation per thread (so perfect scaling keeps the figure equal to the single-thread one).
"""

from __future__ import annotations

import collections
import queue
import time
from collections.abc import Callable

import pyperf

from seer.benchmark import on_threads
from seer.queues import AtomicWords, LocalEventQueues, ParallelExecutiveList, fast_path_available

CONTENDED_THREADS = 2


# -- atomics -----------------------------------------------------------------------------------
def atomic_op(path: str, op: str, threads: int) -> Callable[[int], float]:
    words = AtomicWords(8 * threads)

    def body(i: int, loops: int) -> None:
        acc = words.accessor(path)
        word = 0  # every thread on the same word: real contention
        if op == "load":
            for _ in range(loops):
                acc.load(word)
        elif op == "fetch_add":
            for _ in range(loops):
                acc.fetch_add(word, 1)
        else:
            for _ in range(loops):
                acc.compare_exchange(word, 0, 0)

    return lambda loops: on_threads(threads, body, loops)


# -- structures --------------------------------------------------------------------------------
def leq_push(threads: int, targets: int = 64) -> Callable[[int], float]:
    """alloc + write + push of one event to one of ``targets`` entities in turn
    (``targets=1``: every thread pushes to one entity, worst-case CAS contention)."""
    def run(loops: int) -> float:
        leqs = LocalEventQueues.create(targets, loops * threads + 4096, n_slabs=threads)

        def body(i: int, n: int) -> None:
            w = leqs.worker(leqs.arena.slab(i))
            slab = w.slab
            for k in range(n):
                h = slab.alloc()
                slab.write(h, float(k), k, 0, 1, None)
                w.push(k % targets, h)

        return on_threads(threads, body, loops)
    return run


def leq_merge_pop(loops: int) -> float:
    """merge (drain intake into the heap, free records) + pop, per event; 16 per drain."""
    leqs = LocalEventQueues.create(1, 4096)
    w = leqs.worker(leqs.arena.slab(0))
    slab = w.slab
    total = 0.0
    done = 0
    while done < loops:
        for k in range(16):
            h = slab.alloc()
            slab.write(h, float(k), k, 0, 1, None)
            w.push(0, h)
        t0 = time.perf_counter()
        w.merge(0)
        for _ in range(16):
            w.pop(0)
        total += time.perf_counter() - t0
        done += 16
    return total * loops / done


def pel_claim(threads: int) -> Callable[[int], float]:
    """One claim of a single item (min_chunk 1, so every claim is one fetch_add)."""
    def run(loops: int) -> float:
        pel = ParallelExecutiveList.create(loops * threads + 1)
        pel.publish(range(loops * threads))

        def body(i: int, n: int) -> None:
            c = pel.claimer(threads=10**9)  # chunk = 1
            for _ in range(n):
                c.claim()

        return on_threads(threads, body, loops)
    return run


# -- references -----------------------------------------------------------------------------
def simplequeue(threads: int) -> Callable[[int], float]:
    def run(loops: int) -> float:
        q = queue.SimpleQueue()

        def body(i: int, n: int) -> None:
            put, get = q.put, q.get
            for k in range(n):
                put(k)
                get()

        return on_threads(threads, body, loops)
    return run


def deque_ops(loops: int) -> float:
    d = collections.deque()
    append, popleft = d.append, d.popleft
    t0 = time.perf_counter()
    for k in range(loops):
        append(k)
        popleft()
    return time.perf_counter() - t0


def main() -> None:
    runner = pyperf.Runner()
    runner.metadata["description"] = __doc__.splitlines()[0]
    from seer.cli import pyperf_metadata  # pyperf workers run this file as a script

    runner.metadata.update(pyperf_metadata())
    paths = ["public", "fast"] if fast_path_available() else ["public"]
    for path in paths:
        for op in ("load", "fetch_add", "cas"):
            runner.bench_time_func(f"atomics-{path}-{op}", atomic_op(path, op, 1))
        runner.bench_time_func(f"atomics-{path}-fetch_add-x{CONTENDED_THREADS}",
                               atomic_op(path, "fetch_add", CONTENDED_THREADS))
    runner.bench_time_func("leq-push", leq_push(1))
    runner.bench_time_func(f"leq-push-x{CONTENDED_THREADS}", leq_push(CONTENDED_THREADS))
    runner.bench_time_func(f"leq-push-one-target-x{CONTENDED_THREADS}",
                           leq_push(CONTENDED_THREADS, targets=1))
    runner.bench_time_func("leq-merge+pop", leq_merge_pop)
    runner.bench_time_func("pel-claim", pel_claim(1))
    runner.bench_time_func(f"pel-claim-x{CONTENDED_THREADS}", pel_claim(CONTENDED_THREADS))
    runner.bench_time_func("simplequeue-put+get", simplequeue(1))
    runner.bench_time_func(f"simplequeue-put+get-x{CONTENDED_THREADS}",
                           simplequeue(CONTENDED_THREADS))
    runner.bench_time_func("deque-append+popleft", deque_ops)


if __name__ == "__main__":
    main()
