import heapq

import pytest

from seer.events import (
    COUNTER_LIMIT,
    DEPTH_SHIFT,
    EMITTED_BIT,
    ORIGIN_SHIFT,
    Event,
    external_seq,
    make_event,
    seq_counter,
    seq_depth,
    seq_is_emitted,
    seq_origin,
)


def test_make_event_is_an_event_with_fields():
    ev = make_event(1.5, 7, 3, 1, "p")
    assert isinstance(ev, Event)
    assert (ev.tau, ev.seq, ev.target, ev.kind, ev.payload) == (1.5, 7, 3, 1, "p")
    assert ev == Event(1.5, 7, 3, 1, "p")


def test_order_is_tau_then_seq_and_never_reaches_payload():
    a = make_event(1.0, 5, 0, 0, object())  # payloads are not comparable
    b = make_event(1.0, 6, 0, 0, object())
    c = make_event(0.5, 99, 0, 0, object())
    heap = []
    for ev in (a, b, c):
        heapq.heappush(heap, ev)
    assert [heapq.heappop(heap) for _ in range(3)] == [c, a, b]


def test_seq_layout_round_trips():
    seq = (5 << DEPTH_SHIFT) | (123456 << ORIGIN_SHIFT) | EMITTED_BIT | 42
    assert seq_depth(seq) == 5
    assert seq_origin(seq) == 123456
    assert seq_is_emitted(seq)
    assert seq_counter(seq) == 42
    assert seq < 2**63  # fits a signed int64


def test_external_events_sort_before_emitted_events_of_the_same_origin():
    ext = external_seq(9, 1000)
    emitted = (9 << ORIGIN_SHIFT) | EMITTED_BIT | 0
    assert ext < emitted
    assert not seq_is_emitted(ext) and seq_origin(ext) == 9 and seq_counter(ext) == 1000


def test_depth_dominates_origin():
    deep = (1 << DEPTH_SHIFT) | (0 << ORIGIN_SHIFT)
    shallow_high_origin = ((2**24 - 1) << ORIGIN_SHIFT) | EMITTED_BIT | (COUNTER_LIMIT - 1)
    assert deep > shallow_high_origin


def test_external_counter_overflow_is_an_error():
    with pytest.raises(OverflowError, match="exceeds 2\\*\\*32"):
        external_seq(1, COUNTER_LIMIT)
