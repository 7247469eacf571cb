"""The event record and its order key κ = (τ, seq).

Layout
------
An :class:`Event` is a tuple, and the runtimes' hot loops read it by position::

    ev[0]  tau      model time τ at which it runs (a float)
    ev[1]  seq      its sequence number (below): unique, so κ = ev[:2] orders all events
    ev[2]  target   the entity that runs it
    ev[3]  kind     the index of its kind in ``Model.kinds``, and of its handler
    ev[4]  payload  any object, never copied

Tuples compare element-wise, so ``(tau, seq)`` order *is* κ order and ``heapq`` orders
events directly; ``seq`` is unique, so a comparison never reaches ``target`` or
``payload``. Calendar entries ``(tau, seq, entity)`` and keys ``(tau, seq)`` are plain
tuples with the same leading positions.

Why positions and not names in the hot loops: on CPython 3.14 indexing and unpacking are
specialised only for exact tuples, and ``Event`` is a tuple subclass. An index then costs
a generic subscript, unpacking all five fields builds an iterator (about 120 machine
instructions more per event than three indexes, counted with cachegrind), and
``ev.tau`` looks the field's descriptor up on the class and counts a reference to it,
which two threads share. So code that runs per event indexes (``ev[0]``), with this
table as its legend; code that runs per window or less reads the fields by name.

Sequence numbers
----------------
``seq`` is a non-negative int64 whose value depends only on the model and the seed, never
on which thread ran what (``docs/design.md``, "Sequence numbers")::

    bit 62..57  depth    zero-delay generation at this timestamp (0..63)
    bit 56..33  origin   entity that emitted the event; the target for external events
    bit 32      emitted  0 for external events (actions, injected), 1 for handler emits
    bit 31..0   counter  the origin's own counter of such events in this episode

* ``origin`` and ``counter`` make ``seq`` unique: each entity runs its own events in a fixed
  order, so the n-th event it emits is the same event in every run.
* ``depth`` makes every child sort after its parent even at equal τ: a child with the same τ
  as its parent gets ``depth(parent) + 1``, any later child gets depth 0. At one timestamp
  all causes therefore come before their effects, whatever the entity ids. It also lets a
  parallel runtime run zero-delay cross-entity events in rounds (one round per depth)
  that are equivalent to the serial order.
* External events (actions) have depth 0 and sort before the target's own emitted events
  at the same τ.

The layout bounds a run to 2**24 entities, 2**32 emits per entity per episode and zero-delay
chains of 63 events; exceeding any bound raises an error instead of reusing a key.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = [
    "COUNTER_LIMIT",
    "DEPTH_LIMIT",
    "DEPTH_SHIFT",
    "EMITTED_BIT",
    "ORIGIN_LIMIT",
    "ORIGIN_SHIFT",
    "Event",
    "external_seq",
    "make_event",
    "seq_counter",
    "seq_depth",
    "seq_is_emitted",
    "seq_origin",
]

DEPTH_SHIFT = 57
ORIGIN_SHIFT = 33
EMITTED_BIT = 1 << 32
DEPTH_LIMIT = 1 << 6  # depths 0..63
ORIGIN_LIMIT = 1 << 24  # entity ids 0..2**24-1
COUNTER_LIMIT = 1 << 32  # counters 0..2**32-1
_COUNTER_MASK = COUNTER_LIMIT - 1
_ORIGIN_MASK = ORIGIN_LIMIT - 1


class Event(NamedTuple):
    """One timestamped event. Order (and equality of keys) is κ = (tau, seq).

    ``kind`` is the integer id of the kind (its index in ``Model.kinds``). ``payload`` is any
    object; the runtime never copies it, so a handler must not mutate a payload after
    emitting it or after receiving it.
    """

    tau: float
    seq: int
    target: int
    kind: int
    payload: Any = None


# tuple.__new__ is a C call: several times cheaper than the generated Event(...) constructor.
_tuple_new = tuple.__new__


def make_event(tau: float, seq: int, target: int, kind: int, payload: Any = None) -> Event:
    """Build an :class:`Event` without the keyword-handling constructor (hot path)."""
    return _tuple_new(Event, (tau, seq, target, kind, payload))


def external_seq(target: int, counter: int) -> int:
    """``seq`` of the ``counter``-th external (action/injected) event for ``target``."""
    if not 0 <= counter < COUNTER_LIMIT:
        raise OverflowError(f"external event counter {counter} of entity {target} exceeds 2**32")
    return (target << ORIGIN_SHIFT) | counter


def seq_depth(seq: int) -> int:
    """Zero-delay generation of the event at its timestamp."""
    return seq >> DEPTH_SHIFT


def seq_origin(seq: int) -> int:
    """Entity that emitted the event (the target, for external events)."""
    return (seq >> ORIGIN_SHIFT) & _ORIGIN_MASK


def seq_is_emitted(seq: int) -> bool:
    """True for events emitted by a handler, False for external events."""
    return bool(seq & EMITTED_BIT)


def seq_counter(seq: int) -> int:
    """The origin's counter value for this event."""
    return seq & _COUNTER_MASK
