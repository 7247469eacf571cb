"""The Vyukov MPMC ring: FIFO, full/empty, and nothing lost or reordered under threads."""

import threading

import pytest

from seer.interprocess import MpmcRing
from seer.queues import CapacityError
from tests.queues.stress import run_threads


def test_ring_is_fifo_and_reports_full_and_empty(path):
    port = MpmcRing.create(4).port(path)
    assert port.try_pop() is None
    for v in (5, -6, 7, 2**62):
        port.push(v)
    assert not port.try_push(9)
    with pytest.raises(CapacityError, match=r"ring full \(4 values\)"):
        port.push(9)
    assert [port.try_pop() for _ in range(5)] == [5, -6, 7, 2**62, None]
    for lap in range(10):  # wrap around many times
        port.push(lap)
        assert port.try_pop() == lap


def test_ring_capacity_must_be_a_power_of_two():
    with pytest.raises(ValueError, match="power of two >= 2, got 6"):
        MpmcRing.create(6)


# the fast tier runs 2 producers and 2 consumers, on the public path (tests/conftest.py
# SLOW); the rest is in the full suite
@pytest.mark.parametrize(("producers", "consumers"), [
    pytest.param(1, 1, marks=pytest.mark.slow), (2, 2),
    pytest.param(4, 4, marks=pytest.mark.slow), pytest.param(6, 2, marks=pytest.mark.slow)])
def test_ring_mpmc_loses_nothing_and_keeps_each_producers_order(path, producers, consumers):
    per_producer = (60_000 if path == "fast" else 4_000) // producers
    ring = MpmcRing.create(64)
    remaining = [producers * per_producer]
    lock = threading.Lock()

    def work(t):
        port = ring.port(path)
        if t < producers:
            for i in range(per_producer):
                while not port.try_push((t << 32) | i):
                    pass
            return []
        got = []
        while True:
            v = port.try_pop()
            if v is None:
                with lock:
                    if remaining[0] == 0:
                        return got
                continue
            got.append(v)
            with lock:
                remaining[0] -= 1

    results = run_threads(producers + consumers, work)
    everything = [v for r in results for v in r]
    assert sorted(everything) == sorted((p << 32) | i for p in range(producers)
                                        for i in range(per_producer))
    for got in results[producers:]:
        last = {}
        for v in got:
            p, i = v >> 32, v & 0xFFFFFFFF
            assert last.get(p, -1) < i, "ring reordered one producer's values"
            last[p] = i
