"""Atomic words under the model: :class:`ModelAccessor`, the model path's accessor, and
:class:`PlainWords`, the model's ``AtomicWords.plain()`` view.

Every operation announces itself to the calling thread's execution
(:meth:`~seer.check.execution.Execution.point`) before it is performed, and is performed
in the execution's :class:`~seer.check.memory.Memory`, which decides what a load reads;
the numpy words are only kept equal to each word's latest store. A plain access of a
word is a relaxed atomic operation, scheduled like the rest. Outside an execution, one
operation at a time under the session's lock, on the numpy words.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from seer.check.execution import Op, Routing, word_name
from seer.check.memory import _ACQUIRES
from seer.queues.atomic import (
    ACQ_REL,
    ACQUIRE,
    ORDER_NAMES,
    RELAXED,
    RELEASE,
    SEQ_CST,
    PythonRawOps,
    check_order,
)

__all__ = ["ModelAccessor", "PlainWords"]

_MASK64 = (1 << 64) - 1


def _wrap64(x: int) -> int:
    """``x`` as an int64 (fetch_add wraps around, as the hardware does)."""
    x &= _MASK64
    return x - (1 << 64) if x >> 63 else x


class ModelAccessor(PythonRawOps):
    """The model path's accessor (``path == "model"``): every operation is a scheduling
    point and is performed in the execution's :class:`~seer.check.memory.Memory`; the
    real words are kept equal to each word's latest store, so the set-up, the invariant
    and plain numpy reads see what an execution wrote. Orders are checked
    (:func:`~seer.queues.atomic.check_order`)."""

    __slots__ = ("_array", "_base", "_scratch", "_session", "_words", "name", "path")

    def __init__(self, session: Routing, words: Any) -> None:
        self.path = "model"
        self._session = session
        self._words = words
        self._array = words.array
        self._base = words.address
        self.name = words.name
        self._init_scratch()

    def _index(self, i: int) -> int:
        if not 0 <= i < self._words.n:
            raise IndexError(f"atomic word {i} of {self.name} out of range({self._words.n})")
        return int(i)

    def _op(self, kind: str, i: int, order: int, write: bool, perform: Callable,
            plain: bool = False) -> int:
        i = self._index(i)
        session = self._session
        ex, t = session.bound()
        array = self._array
        if ex is None:
            with session.free_lock:  # a free-running session: one operation at a time
                return perform(None, None, -1, i)
        loc = self._base + 8 * i
        name = word_name(self._words, i)
        ex.memory.names[loc] = name
        op = Op(f"plain {kind}" if plain else kind, loc, name, write)
        if t == ex.memory.main:
            ex.begin_main(op.kind, op.name)
        else:
            ex.point(t, op)
        return perform(ex, ex.memory, t, i, loc, int(array[i]))

    def load(self, i: int, order: int = ACQUIRE, *, _plain: bool = False) -> int:
        check_order("load", order)
        array = self._array

        def perform(ex, mem, t, i, loc=None, initial=None):
            if ex is None:
                return int(array[i])
            stores = mem.readable(t, loc, initial, order)
            store = stores[ex.choose_read(len(stores))]
            newer = len(mem.words[loc]) - 1 - store.index
            value = mem.read(t, loc, store, order)
            stale = f" (stale: {newer} newer store{'s' if newer > 1 else ''})" if newer else ""
            ex.note(t, order=ORDER_NAMES[order], detail=f"-> {value}{stale}",
                    reads_from=(store.thread, store.step), stale=newer,
                    synchronises=store.sync is not None and order in _ACQUIRES)
            return value

        return self._op("load", i, order, False, perform, _plain)

    def store(self, i: int, value: int, order: int = RELEASE, *, _plain: bool = False) -> None:
        check_order("store", order)
        array = self._array
        value = int(value)

        def perform(ex, mem, t, i, loc=None, initial=None):
            if mem is not None:
                places = mem.positions(t, loc, initial, order)
                place = places[ex.choose_read(len(places), "mo")]
                mem.write(t, loc, initial, value, order, place)
                later = len(mem.words[loc]) - 1 - place
                ex.note(t, order=ORDER_NAMES[order], detail=f"<- {value}" + (
                    f" (mo: before {later} store{'s' if later > 1 else ''})" if later else ""))
                array[i] = mem.latest(loc, initial).value
                return
            array[i] = value

        self._op("store", i, order, True, perform, _plain)

    def fence(self, order: int = SEQ_CST) -> None:
        """``atomic_thread_fence(order)``: a scheduling point, simulated by the memory
        model (acquire, release, acq_rel or seq_cst; RC11's fences)."""
        check_order("fence", order)
        session = self._session
        ex, t = session.bound()
        if ex is None:
            return
        sc = order == SEQ_CST
        op = Op("fence", ("fence",) if sc else None, "", sc)
        if t == ex.memory.main:
            ex.begin_main(op.kind, op.name)
        else:
            ex.point(t, op)
        ex.memory.fence(t, order)
        ex.note(t, order=ORDER_NAMES[order])

    def _rmw(self, kind: str, i: int, order: int, new: Callable[[int], int],
             detail: Callable[[int], str]) -> int:
        check_order("rmw", order)
        array = self._array

        def perform(ex, mem, t, i, loc=None, initial=None):
            if mem is None:
                old = int(array[i])
                array[i] = new(old)
                return old
            stores = mem.rmw_readable(t, loc, initial, order)
            reads = stores[ex.choose_read(len(stores))]
            newer = len(mem.words[loc]) - 1 - reads.index
            old = mem.rmw(t, loc, initial, order, new, reads)
            array[i] = mem.latest(loc, initial).value
            ex.note(t, order=ORDER_NAMES[order], detail=detail(old) + (
                f" (stale: {newer} newer)" if newer else ""),
                    reads_from=(reads.thread, reads.step), stale=newer,
                    synchronises=reads.sync is not None and order in _ACQUIRES)
            return old

        return self._op(kind, i, order, True, perform)

    def exchange(self, i: int, value: int, order: int = ACQ_REL) -> int:
        value = int(value)
        return self._rmw("exchange", i, order, lambda old: value,
                         lambda old: f"{old} -> {value}")

    def fetch_add(self, i: int, delta: int, order: int = ACQ_REL) -> int:
        delta = int(delta)
        return self._rmw("fetch_add", i, order, lambda old: _wrap64(old + delta),
                         lambda old: f"{old} -> {_wrap64(old + delta)}")

    def compare_exchange(self, i: int, expected: int, desired: int, order: int = ACQ_REL,
                         failure: int = ACQUIRE) -> int:
        check_order("rmw", order)
        check_order("failure", failure)
        expected, desired = int(expected), int(desired)
        array = self._array

        def perform(ex, mem, t, i, loc=None, initial=None):
            if mem is None:
                old = int(array[i])
                if old == expected:
                    array[i] = desired
                return old
            stores = mem.rmw_readable(t, loc, initial, order, expected, failure)
            seen = stores[ex.choose_read(len(stores))]
            newer = len(mem.words[loc]) - 1 - seen.index
            stale = f" (stale: {newer} newer)" if newer else ""
            if seen.value == expected:
                mem.rmw(t, loc, initial, order, lambda old: desired, seen)
                array[i] = mem.latest(loc, initial).value
                ex.note(t, order=ORDER_NAMES[order],
                        detail=f"{expected} -> {desired} (ok){stale}",
                        reads_from=(seen.thread, seen.step), stale=newer,
                        synchronises=seen.sync is not None and order in _ACQUIRES)
            else:
                mem.read(t, loc, seen, failure)
                ex.read_only()
                ex.note(t, order=ORDER_NAMES[order],
                        detail=f"expected {expected}, saw {seen.value} (failed){stale}",
                        reads_from=(seen.thread, seen.step), stale=newer,
                        synchronises=seen.sync is not None and failure in _ACQUIRES)
            return seen.value

        return self._op("cas", i, order, True, perform)


class PlainWords:
    """``AtomicWords.plain()`` under a model session: each read is a relaxed load and
    each write a relaxed store (what a plain 8-byte access of a word is on the hardware
    the project runs on), scheduled like any other atomic operation."""

    __slots__ = ("_acc",)

    def __init__(self, acc: ModelAccessor) -> None:
        self._acc = acc

    def __getitem__(self, i: int) -> int:
        return self._acc.load(i, RELAXED, _plain=True)

    def __setitem__(self, i: int, value: int) -> None:
        self._acc.store(i, value, RELAXED, _plain=True)

    def __len__(self) -> int:
        return self._acc._words.n

    def release(self) -> None:
        pass
