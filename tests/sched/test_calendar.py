"""Both calendar layouts against a plain sorted list of entries."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from seer.events import DEPTH_SHIFT
from seer.sched.calendar import (
    DENSE_SHARE,
    SMALL,
    Calendar,
    CalendarBatch,
    DenseCalendar,
    prefer_dense,
)
from seer.sched.windows import window_bound


def _random_batch(rng: random.Random, n_entities: int, t_low: float, size: int,
                  same_time: bool) -> CalendarBatch:
    batch = CalendarBatch()
    for _ in range(size):
        if same_time and rng.random() < 0.5:
            t = t_low  # ties on τ, told apart by seq (depth rounds)
        else:
            t = t_low + rng.choice([0.0, 0.25, 0.5, 1.0, rng.random() * 10])
        depth = rng.randrange(3)
        batch.add(t, (depth << DEPTH_SHIFT) | rng.randrange(1 << 20), rng.randrange(n_entities))
    return batch


@pytest.mark.parametrize("layout", [Calendar, DenseCalendar])
# the fast tier runs the first 10 seeds
@pytest.mark.parametrize("seed", [s if s < 10 else pytest.param(s, marks=pytest.mark.slow)
                                  for s in range(40)])
def test_windows_match_a_sorted_list(layout, seed: int) -> None:
    """Both layouts against a sorted list of every entry, used as the runtimes use them:
    every entry added is at or after the current bound, and each readied entity lists its
    new head (the smallest of its entries left) after the window. The dense layout relies
    on that and keeps only each entity's smallest key."""
    rng = random.Random(seed)
    n = rng.choice([1, 5, 50, 500])
    lookahead = rng.choice([0.0, 0.25, 1.0])
    dense = layout is DenseCalendar
    calendar, reference = layout(n), []
    t_low = 0.0
    for window in range(60):
        size = rng.choice([0, 1, 3, SMALL - 1, SMALL, 3 * SMALL, 700])
        batch = _random_batch(rng, n, t_low, size, same_time=lookahead == 0.0)
        reference += zip(batch.tau, batch.seq, batch.entity, strict=True)
        reference.sort()
        if rng.random() < 0.5:
            calendar.extend(batch)
        else:  # as a worker hands them over
            calendar.extend_sorted(*batch.take_arrays(sort=layout.SORTED))
        firsts: dict[int, tuple] = {}
        for entry in reference:
            firsts.setdefault(entry[2], entry)
        listed = sorted(firsts.values()) if dense else reference
        assert calendar.entries() == listed, f"window {window}"
        assert len(calendar) == len(listed)
        head = calendar.head()
        if not reference:
            assert head is None
            continue
        assert head == reference[0][:2]
        bound = window_bound(head[0], head[1], head[0] + rng.choice([0.5, 3.0, 50.0]),
                             lookahead)
        ready = calendar.pop_ready(bound).tolist()
        taken = [entry for entry in reference if entry < bound]
        reference = [entry for entry in reference if not entry < bound]
        expected = list(dict.fromkeys(e for _, _, e in taken))
        assert taken, "the head is always ready"
        assert len(set(ready)) == len(ready)
        assert sorted(ready) == sorted(expected)
        if dense:
            assert ready == sorted(expected)  # in id order
        readied = set(expected)
        heads: dict[int, tuple] = {}
        for entry in reference:
            if entry[2] in readied:
                heads.setdefault(entry[2], entry)
        if heads:  # the readied entities list their new heads
            tau, seq, entity = zip(*heads.values(), strict=True)
            calendar.add_many(list(tau), list(seq), list(entity))
            reference = sorted(reference + list(heads.values()))
        t_low = bound[0]
    calendar.pop_ready((float("inf"), -1))
    assert calendar.head() is None and not calendar


def test_duplicates_keep_first_occurrence_order() -> None:
    calendar = Calendar(10)
    batch = CalendarBatch()
    for t, e in [(1.0, 7), (2.0, 3), (3.0, 7), (4.0, 1), (5.0, 3)]:
        batch.add(t, 0, e)
    calendar.extend(batch)
    assert calendar.pop_ready((10.0, -1)).tolist() == [7, 3, 1]
    assert not calendar
    assert calendar.head() is None
    assert calendar.pop_ready((99.0, -1)).tolist() == []


def test_large_batches_become_sorted_runs_and_merge() -> None:
    calendar = Calendar(100_000)
    rng = np.random.default_rng(0)
    for _ in range(12):
        batch = CalendarBatch()
        for t, e in zip(rng.random(1000).tolist(), rng.integers(0, 100_000, 1000).tolist(),
                        strict=True):
            batch.add(t, 0, e)
        calendar.extend(batch)
        calendar.head()
        # the timsort rule keeps run sizes more than doubling downwards
        sizes = [len(r) for r in calendar._runs]
        assert all(2 * above < below for below, above in itertools.pairwise(sizes))
    assert len(calendar) == 12_000
    calendar.clear()
    assert len(calendar) == 0 and calendar.head() is None


def test_lookahead_zero_round_takes_only_the_lower_depth() -> None:
    calendar = Calendar(4)
    batch = CalendarBatch()
    for _ in range(SMALL):  # large enough for the numpy level
        batch.add(1.0, 0, 0)
    batch.add(1.0, 1 << DEPTH_SHIFT, 1)
    batch.add(1.0, 2 << DEPTH_SHIFT, 2)
    batch.add(0.5, 5, 3)
    calendar.extend(batch)
    assert calendar.head() == (0.5, 5)
    assert calendar.pop_ready(window_bound(0.5, 5, 9.0, 0.0)).tolist() == [3]
    head = calendar.head()
    assert head == (1.0, 0)
    assert calendar.pop_ready(window_bound(*head, 9.0, 0.0)).tolist() == [0]
    assert calendar.pop_ready(window_bound(*calendar.head(), 9.0, 0.0)).tolist() == [1]
    assert calendar.pop_ready(window_bound(*calendar.head(), 9.0, 0.0)).tolist() == [2]
    assert calendar.head() is None


def test_deepest_round_has_a_bound_beyond_int64() -> None:
    # depth 63 makes the round's bound (63 + 1) << 57 == 2**63, which int64 cannot hold
    calendar = Calendar(100)
    batch = CalendarBatch()
    for e in range(SMALL):
        batch.add(0.0, 2**63 - 1 - e, e)
    calendar.extend(batch)
    bound = window_bound(*calendar.head(), 1.0, 0.0)
    assert bound[1] == 2**63
    assert sorted(calendar.pop_ready(bound).tolist()) == list(range(SMALL))
    assert calendar.head() is None


def test_dense_keeps_the_smallest_key_of_repeated_entities() -> None:
    calendar = DenseCalendar(4)
    tau = np.array([3.0, 1.0, 2.0, 1.0, 5.0, 5.0])
    seq = np.array([0, 9, 0, 4, 7, 6])
    entity = np.array([0, 0, 0, 0, 2, 2])
    calendar.extend_sorted(tau, seq, entity)
    assert calendar.entries() == [(1.0, 4, 0), (5.0, 6, 2)]
    calendar.add(1.0, 2, 0)  # same τ, smaller seq
    calendar.add(0.5, 8, 2)  # smaller τ: its seq replaces the old one, though larger
    assert calendar.entries() == [(0.5, 8, 2), (1.0, 2, 0)]
    assert calendar.head() == (0.5, 8)
    assert calendar.pop_ready((1.0, -1)).tolist() == [2]
    assert calendar.head() == (1.0, 2)
    calendar.clear()
    assert calendar.head() is None and not calendar


def test_dense_lookahead_zero_rounds_and_deepest_bound() -> None:
    calendar = DenseCalendar(4)
    calendar.add(1.0, 0, 0)
    calendar.add(1.0, 1 << DEPTH_SHIFT, 1)
    calendar.add(1.0, 2 << DEPTH_SHIFT, 2)
    calendar.add(0.5, 5, 3)
    for expected in ([3], [0], [1], [2]):
        assert calendar.pop_ready(window_bound(*calendar.head(), 9.0, 0.0)).tolist() \
            == expected
    assert calendar.head() is None
    calendar.add(0.0, 2**63 - 1, 1)
    bound = window_bound(*calendar.head(), 1.0, 0.0)
    assert bound[1] == 2**63
    assert calendar.pop_ready(bound).tolist() == [1]


@pytest.mark.parametrize("source", [Calendar, DenseCalendar])
def test_entries_move_between_layouts(source) -> None:
    rng = random.Random(7)
    first = source(50)
    first.extend(_random_batch(rng, 50, 0.0, 300, same_time=True))
    first.add(0.25, 3, 49)
    other = (DenseCalendar if source is Calendar else Calendar)(50)
    other.extend_sorted(*first.arrays())
    keys = {}
    for entry in first.entries():
        keys.setdefault(entry[2], entry)
    if source is Calendar:  # the dense one keeps each entity's smallest key
        assert other.entries() == sorted(keys.values())
    else:
        assert other.entries() == first.entries()
    assert other.head() == first.head()


def test_prefer_dense_switches_with_a_margin() -> None:
    n = 1600
    at = int(DENSE_SHARE * n)  # entities readied per window at the threshold
    assert not prefer_dense(False, 10 * (at - 1), 10, n)
    assert prefer_dense(False, 10 * at, 10, n)
    assert prefer_dense(True, 10 * (at // 2 + 1), 10, n)  # stays dense down to half
    assert not prefer_dense(True, 10 * (at // 2 - 1), 10, n)
    assert prefer_dense(True, 0, 0, n) and not prefer_dense(False, 0, 0, n)  # no windows
