"""A handler's everyday operations (``bench.bench_sharing.OPS``) on one thread and on two
threads at once, on private and on shared objects: time per call of ``LOOPS`` iterations
of ``UNROLL`` statements (per thread)."""

from __future__ import annotations

import pytest

from bench.bench_sharing import MODES, OPS, loop_function, run_mode

LOOPS = 2000


@pytest.mark.parametrize("name", list(OPS))
def test_one_thread(benchmark, name):
    op = OPS[name]
    run, s = loop_function(op), op.make()
    benchmark(run, s, LOOPS)


@pytest.mark.parametrize("mode", [m for m in MODES if m != "1T"])
@pytest.mark.parametrize("name", list(OPS))
def test_two_threads(benchmark, name, mode):
    # each call starts two threads (tens of µs): compare these with each other, and with
    # test_one_thread only through bench.bench_sharing, which times inside the threads
    benchmark.pedantic(run_mode, args=(OPS[name], mode, LOOPS), rounds=20, warmup_rounds=2)
