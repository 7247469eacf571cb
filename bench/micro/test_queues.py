"""The lock-free structures' operations (``bench.bench_queues``): atomics, LEQ push and
merge, PEL claims; each call does ``N`` operations."""

from __future__ import annotations

import pytest

from bench.bench_queues import CONTENDED_THREADS, atomic_op, leq_merge_pop, leq_push, pel_claim
from seer.queues import fast_path_available

N = 4096
PATHS = ["public", "fast"] if fast_path_available() else ["public"]


@pytest.mark.parametrize("op", ["load", "fetch_add", "cas"])
@pytest.mark.parametrize("path", PATHS)
def test_atomics(benchmark, path, op):
    benchmark(atomic_op(path, op, 1), N)


@pytest.mark.parametrize("threads", [1, CONTENDED_THREADS])
def test_leq_push(benchmark, threads):
    benchmark.pedantic(leq_push(threads), args=(N,), rounds=30, warmup_rounds=2)


def test_leq_merge_pop(benchmark):
    benchmark(leq_merge_pop, N)


@pytest.mark.parametrize("threads", [1, CONTENDED_THREADS])
def test_pel_claim(benchmark, threads):
    benchmark.pedantic(pel_claim(threads), args=(N,), rounds=30, warmup_rounds=2)
