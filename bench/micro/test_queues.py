"""Per-operation cost of the atomics paths and of each lock-free structure, on one thread
and on :data:`CONTENDED` threads at once, beside ``queue.SimpleQueue`` and
``collections.deque``. Each benchmark does ``N`` operations (events for the LEQ, claims
for the PEL); a contended one is the wall time of ``N`` operations on every thread, so
perfect scaling keeps it equal to the one-thread figure."""

from __future__ import annotations

import collections
import queue
import time
from collections.abc import Callable

import pytest

from seer.benchmark import on_threads
from seer.queues import AtomicWords, LocalEventQueues, ParallelExecutiveList, fast_path_available

N = 4096
CONTENDED = 2
PATHS = ["public", "fast"] if fast_path_available() else ["public"]
THREADS = [1, CONTENDED]


def atomic_op(path: str, op: str, threads: int) -> Callable[[int], float]:
    """``op`` (load, fetch_add, cas) through accessor ``path``, every thread on one word."""
    words = AtomicWords(8 * threads)

    def body(i: int, loops: int) -> None:
        acc = words.accessor(path)  # its own loop per op: no dispatch inside the timing
        if op == "load":
            for _ in range(loops):
                acc.load(0)
        elif op == "fetch_add":
            for _ in range(loops):
                acc.fetch_add(0, 1)
        else:
            for _ in range(loops):
                acc.compare_exchange(0, 0, 0)

    return lambda loops: on_threads(threads, body, loops)


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
    total, done = 0.0, 0
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


def simplequeue(threads: int) -> Callable[[int], float]:
    """put + get on one ``queue.SimpleQueue`` shared by the threads."""
    def run(loops: int) -> float:
        q: queue.SimpleQueue = queue.SimpleQueue()

        def body(i: int, n: int) -> None:
            put, get = q.put, q.get
            for k in range(n):
                put(k)
                get()

        return on_threads(threads, body, loops)
    return run


def deque_ops(loops: int) -> float:
    """append + popleft on one thread's ``collections.deque``."""
    d: collections.deque = collections.deque()
    append, popleft = d.append, d.popleft
    t0 = time.perf_counter()
    for k in range(loops):
        append(k)
        popleft()
    return time.perf_counter() - t0


@pytest.mark.parametrize("op", ["load", "fetch_add", "cas"])
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("threads", THREADS)
def test_atomics(benchmark, path, op, threads):
    benchmark.pedantic(atomic_op(path, op, threads), args=(N,), rounds=30, warmup_rounds=2)


@pytest.mark.parametrize("targets", [64, 1])
@pytest.mark.parametrize("threads", THREADS)
def test_leq_push(benchmark, threads, targets):
    benchmark.pedantic(leq_push(threads, targets), args=(N,), rounds=30, warmup_rounds=2)


def test_leq_merge_pop(benchmark):
    benchmark(leq_merge_pop, N)


@pytest.mark.parametrize("threads", THREADS)
def test_pel_claim(benchmark, threads):
    benchmark.pedantic(pel_claim(threads), args=(N,), rounds=30, warmup_rounds=2)


@pytest.mark.parametrize("threads", THREADS)
def test_simplequeue(benchmark, threads):
    benchmark.pedantic(simplequeue(threads), args=(N,), rounds=30, warmup_rounds=2)


def test_deque(benchmark):
    benchmark(deque_ops, N)
