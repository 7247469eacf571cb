"""Plain (non-atomic) shared data under the model: :class:`DataView` (``data_view``: int64
words) and :class:`SlotTable` (``data_slots``: a two-level table of object slots).

A plain access is not a scheduling point: it runs at once, and the execution's
:class:`~seer.check.memory.Memory` checks it for a race against its vector clocks (a race
fails the execution and is raised). Each access is listed in the interleaving, as a line
of the step it follows. Outside an execution, the accesses go straight to the data.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from seer.check.execution import Routing
from seer.check.memory import DataRace

__all__ = ["DataView", "SlotTable"]


def _data_access(session: Routing, loc: Any, name: str, write: bool, shown: Any) -> None:
    """A plain read or write of ``loc`` by the calling thread: race-checked in its
    execution (a race fails the execution and is raised) and listed in the interleaving;
    nothing outside an execution."""
    ex, t = session.bound()
    if ex is None:
        return
    try:
        if write:
            ex.memory.data_write(t, loc, name)
        else:
            ex.memory.data_read(t, loc, name)
    except DataRace as exc:
        raise ex.race(exc, t) from None
    ex.note(t, kind="write" if write else "read", name=name,
            detail=f"{'<-' if write else '->'} {shown}", scheduled=False)


class DataView:
    """A plain-data int64 view (``data_view``) whose accesses are race-checked."""

    __slots__ = ("_base", "_name", "_session", "_view")

    def __init__(self, session: Routing, name: str, view: memoryview) -> None:
        self._session, self._name, self._view = session, name, view
        self._base = np.asarray(view).ctypes.data

    def _check(self, i: int, write: bool, value: int) -> None:
        _data_access(self._session, self._base + 8 * i, f"{self._name}[{i}]", write, value)

    def __getitem__(self, i: int) -> int:
        value = self._view[i]
        self._check(i, False, value)
        return value

    def __setitem__(self, i: int, value: int) -> None:
        self._check(i, True, value)
        self._view[i] = value

    def __len__(self) -> int:
        return len(self._view)

    def release(self) -> None:
        self._view.release()


class SlotTable:
    """A race-checked view of a two-level table of object slots (``data_slots``)."""

    __slots__ = ("_name", "_session", "_table")

    def __init__(self, session: Routing, name: str, table: list[list]) -> None:
        self._session, self._name, self._table = session, name, table

    def __getitem__(self, chunk: int) -> _SlotChunk:
        return _SlotChunk(self, chunk, self._table[chunk])

    def __len__(self) -> int:
        return len(self._table)


class _SlotChunk:
    __slots__ = ("_chunk", "_index", "_table")

    def __init__(self, table: SlotTable, index: int, chunk: list) -> None:
        self._table, self._index, self._chunk = table, index, chunk

    def _check(self, j: int, write: bool, value: Any) -> None:
        table = self._table
        h = self._index * len(self._chunk) + j
        _data_access(table._session, (id(table._table), h), f"{table._name}[{h}]", write,
                     "None" if value is None else type(value).__name__)

    def __getitem__(self, j: int) -> Any:
        value = self._chunk[j]
        self._check(j, False, value)
        return value

    def __setitem__(self, j: int, value: Any) -> None:
        self._check(j, True, value)
        self._chunk[j] = value
