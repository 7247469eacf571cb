import threading

import numpy as np
import pytest

from seer.queues import CapacityError, MpmcRing, ParallelExecutiveList
from tests.queues.stress import run_threads


def test_guided_chunks_shrink_and_cover_the_window(path):
    pel = ParallelExecutiveList.create(1000)
    pel.publish(range(100, 500))
    c = pel.claimer(threads=2, path=path)
    chunks = []
    while (r := c.claim()) is not None:
        chunks.append(r)
    sizes = [b - a for a, b in chunks]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] == 100 and sizes[-1] == 1
    covered = [i for a, b in chunks for i in range(a, b)]
    assert covered == list(range(400))
    assert pel.items[chunks[0][0]] == 100


@pytest.mark.parametrize("threads", [2, 4, 8])
def test_every_item_is_claimed_exactly_once_per_window(path, threads):
    windows = 60 if path == "fast" else 12
    pel = ParallelExecutiveList.create(4096)
    claimed = [[] for _ in range(threads)]
    start, end = threading.Barrier(threads), threading.Barrier(threads)

    def work(t):
        c = pel.claimer(threads, path=path)
        for w in range(windows):
            if t == 0:
                pel.publish(range(w * 7, w * 7 + 100 + 50 * (w % 60)))
            start.wait()  # stands in for the pool's wake-up
            c.reset()
            while (r := c.claim()) is not None:
                claimed[t].extend(int(x) for x in pel.items[r[0]:r[1]])
            end.wait()
        return c.claims

    run_threads(threads, work)
    got = sorted(x for part in claimed for x in part)
    expected = sorted(x for w in range(windows) for x in range(w * 7, w * 7 + 100 + 50 * (w % 60)))
    assert got == expected


def test_publish_over_capacity_is_an_error():
    pel = ParallelExecutiveList.create(4)
    with pytest.raises(CapacityError, match="PEL capacity 4 < 5 ready entities"):
        pel.publish(range(5))


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


@pytest.mark.parametrize(("producers", "consumers"), [(1, 1), (2, 2), (4, 4), (6, 2)])
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


def test_home_claims_take_the_own_segment_first_then_steal(path):
    pel = ParallelExecutiveList.create(100, segments=4)
    ready = np.arange(30, 60)
    pel.publish_homed(ready, ready % 3, 3)
    assert [int(x) % 3 for x in pel.items[:30]] == [0] * 10 + [1] * 10 + [2] * 10
    c = pel.home_claimer(1, threads=3, path=path)
    c.reset(3)
    taken = []
    while (r := c.claim()) is not None:
        taken.extend(int(x) for x in pel.items[r[0]:r[1]])
    # alone, thread 1 runs all of its home entities, then steals segment 2, then 0
    assert taken == [e for e in range(30, 60) if e % 3 == 1] + \
        [e for e in range(30, 60) if e % 3 == 2] + [e for e in range(30, 60) if e % 3 == 0]
    assert c.steals > 0 and c.claims > c.steals


def test_home_segments_are_bounded_by_the_plan():
    pel = ParallelExecutiveList.create(10, segments=2)
    with pytest.raises(CapacityError, match="room for 2 home segments, asked for 3"):
        pel.publish_homed(np.arange(3), np.arange(3), 3)


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_home_claims_hand_out_every_item_exactly_once(path, threads):
    windows = 40 if path == "fast" else 8
    pel = ParallelExecutiveList.create(4096, segments=threads)
    claimed = [[] for _ in range(threads)]
    published = []
    start, end = threading.Barrier(threads), threading.Barrier(threads)
    rng = np.random.default_rng(threads)

    def work(t):
        c = pel.home_claimer(t, threads, path=path)
        for w in range(windows):
            if t == 0:
                ready = np.unique(rng.integers(0, 3000, 50 + 40 * (w % 30))) + 10_000 * w
                published.extend(ready.tolist())
                # uneven homes: most items belong to thread 0, so the others must steal
                pel.publish_homed(ready, (ready % 7 == 0) * (ready % threads), threads)
            start.wait()
            c.reset(threads)
            while (r := c.claim()) is not None:
                claimed[t].extend(int(x) for x in pel.items[r[0]:r[1]])
            end.wait()
        return c.steals

    steals = run_threads(threads, work)
    got = sorted(x for part in claimed for x in part)
    assert got == sorted(published)  # nothing lost, nothing claimed twice
    assert sum(steals) > 0
