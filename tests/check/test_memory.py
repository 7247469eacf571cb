"""The weak-memory model against the classic litmus tests (what C11 allows and forbids)."""

from __future__ import annotations

import pytest

from seer.check import explore
from seer.queues import AtomicWords
from seer.queues.atomic import ACQUIRE, RELAXED, RELEASE, SEQ_CST


class Two:
    def __init__(self) -> None:
        self.w = AtomicWords(2, name="xy")
        self.seen: dict[str, int] = {}


def outcomes(*workers, weak: bool) -> set[tuple]:
    """Every outcome (the ``seen`` values, sorted by name) over all schedules."""
    found: set[tuple] = set()

    def record(state: Two) -> None:
        found.add(tuple(v for _, v in sorted(state.seen.items())))

    explore(Two, *workers, invariant=record, weak=weak, preemptions=3, strategy="dfs")
    return found


def test_store_buffering_is_allowed_only_in_weak_mode():
    def t0(s):
        acc = s.w.accessor()
        acc.store(0, 1, RELAXED)
        s.seen["r0"] = acc.load(1, RELAXED)

    def t1(s):
        acc = s.w.accessor()
        acc.store(1, 1, RELAXED)
        s.seen["r1"] = acc.load(0, RELAXED)

    assert (0, 0) not in outcomes(t0, t1, weak=False)
    assert (0, 0) in outcomes(t0, t1, weak=True)


def test_seq_cst_forbids_store_buffering_even_in_weak_mode():
    def t0(s):
        acc = s.w.accessor()
        acc.store(0, 1, SEQ_CST)
        s.seen["r0"] = acc.load(1, SEQ_CST)

    def t1(s):
        acc = s.w.accessor()
        acc.store(1, 1, SEQ_CST)
        s.seen["r1"] = acc.load(0, SEQ_CST)

    assert (0, 0) not in outcomes(t0, t1, weak=True)


@pytest.mark.parametrize("publish,consume,stale", [
    (RELEASE, ACQUIRE, False),  # message passing works with release/acquire
    (RELAXED, ACQUIRE, True),   # a relaxed flag publishes nothing
    (RELEASE, RELAXED, True),   # nor does a relaxed read of it
])
def test_message_passing(publish, consume, stale):
    def producer(s):
        acc = s.w.accessor()
        acc.store(0, 42, RELAXED)  # the data
        acc.store(1, 1, publish)  # the flag

    def consumer(s):
        acc = s.w.accessor()
        flag = acc.load(1, consume)
        s.seen["data"] = acc.load(0, RELAXED) if flag else 42

    assert ((0,) in outcomes(producer, consumer, weak=True)) is stale


def test_coherence_a_thread_never_reads_a_word_backwards():
    def writer(s):
        acc = s.w.accessor()
        acc.store(0, 1, RELAXED)
        acc.store(0, 2, RELAXED)

    def reader(s):
        acc = s.w.accessor()
        s.seen["a"] = acc.load(0, RELAXED)
        s.seen["b"] = acc.load(0, RELAXED)

    found = outcomes(writer, reader, weak=True)
    assert all(a <= b for a, b in found)
    assert (0, 2) in found and (1, 1) in found  # stale reads happen, but only forward


def test_read_modify_writes_read_the_latest_store():
    def add(s):
        s.w.accessor().fetch_add(0, 1, RELAXED)

    report = explore(Two, add, add, add, weak=True, invariant=lambda s: s.w.array[0] == 3)
    assert report.exhaustive and report.failure is None


def test_a_release_sequence_continues_through_relaxed_rmws():
    # T0 writes data, then releases x = 1; T1 bumps x with a relaxed RMW; T2 acquires x and
    # reads 2: it synchronises with T0's release through T1's RMW (C11's release sequence).
    def t0(s):
        acc = s.w.accessor()
        acc.store(1, 7, RELAXED)
        acc.store(0, 1, RELEASE)

    def t1(s):
        acc = s.w.accessor()
        acc.compare_exchange(0, 1, 2, RELAXED, RELAXED)

    def t2(s):
        acc = s.w.accessor()
        if acc.load(0, ACQUIRE) == 2:
            s.seen["data"] = acc.load(1, RELAXED)

    assert (0,) not in outcomes(t0, t1, t2, weak=True)
