import threading

import numpy as np
import pytest

from seer.queues import CapacityError, ParallelExecutiveList
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


# 8 threads on 2 cores: in the full suite only
@pytest.mark.parametrize("threads", [2, 4, pytest.param(8, marks=pytest.mark.slow)])
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


def test_a_thief_leaves_a_short_segment_to_its_owner(path):
    pel = ParallelExecutiveList.create(100, segments=3)
    ready = np.arange(30, 60)
    pel.publish_homed(ready, ready % 3, 3)
    home = [e for e in range(30, 60) if e % 3 == 1]
    # each other segment holds 10 items; a steal takes remaining // 6 (at least 1) of them
    for steal_min, stolen in ((11, 0), (10, 2), (1, 20)):
        c = pel.home_claimer(1, threads=3, path=path, steal_min=steal_min)
        pel.publish_homed(ready, ready % 3, 3)
        c.reset(3)
        taken = []
        while (r := c.claim()) is not None:
            taken.extend(int(x) for x in pel.items[r[0]:r[1]])
        assert taken[:10] == home and len(taken) == 10 + stolen
        assert (c.steals == 0) == (stolen == 0)


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


def test_a_strategy_may_keep_its_own_words_per_segment(path):
    from seer.queues.pel import SEGMENT_WORDS, segment_word

    pel = ParallelExecutiveList.create(100, segments=4)
    words = {segment_word(k, i) for k in range(4) for i in range(SEGMENT_WORDS)}
    assert len(words) == 4 * SEGMENT_WORDS  # no two segments share a word
    assert all(segment_word(k, i) // SEGMENT_WORDS == segment_word(k) // SEGMENT_WORDS
               for k in range(4) for i in range(SEGMENT_WORDS))  # one line a segment
    acc = pel.ctl.accessor(path)
    ready = np.arange(40)
    pel.publish_homed(ready, ready % 4, 4)
    for k in range(4):
        acc.fetch_add(segment_word(k, 1), k + 1)
        acc.fetch_add(segment_word(k), 3)  # claim 3 items of each segment
    pel.publish_homed(ready, ready % 4, 4)
    assert [acc.load(segment_word(k)) for k in range(4)] == pel.seg_start  # cursors reset
    assert [acc.load(segment_word(k, 1)) for k in range(4)] == [1, 2, 3, 4]  # left alone
    with pytest.raises(ValueError, match="segment word 8"):
        segment_word(0, SEGMENT_WORDS)
