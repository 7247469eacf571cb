"""The model path's hooks: the one :class:`Session` that ``seer.queues.atomic`` asks for
model accessors, views and locks (``model_hooks``).

Each hook makes a modelled primitive, from its own module: atomic words
(:mod:`seer.check.accessor`), plain shared data (:mod:`seer.check.data`), a lock
(:mod:`seer.check.lock`). What a primitive needs of the session, which execution the
calling thread is in, is :class:`~seer.check.execution.Routing`, the base class; so this
module is the top of the model path: it imports the primitives and the scheduler core, and
none of them imports it.
"""

from __future__ import annotations

from typing import Any

from seer.check.accessor import ModelAccessor, PlainWords
from seer.check.data import DataView, SlotTable
from seer.check.execution import Routing
from seer.check.lock import ModelLock

__all__ = ["Session"]


class Session(Routing):
    """The model path's hooks (``seer.queues.atomic.model_hooks``): it makes model
    accessors and views, and routes their operations to the execution of the calling
    thread. Outside an execution (a free-running session, :func:`seer.check.model_atomics`),
    operations run at once under one lock, sequentially consistent, with no checks."""

    # hooks -------------------------------------------------------------------------------
    def accessor(self, words: Any) -> ModelAccessor:
        self._watch(words)
        return ModelAccessor(self, words)

    def plain(self, words: Any) -> PlainWords:
        self._watch(words)
        return PlainWords(ModelAccessor(self, words))

    def _watch(self, words: Any) -> None:
        ex = getattr(self.local, "execution", None)
        if ex is not None:
            ex.watch(words)

    def data_view(self, name: str, view: memoryview) -> DataView:
        return DataView(self, name, view)

    def data_slots(self, name: str, table: list[list]) -> SlotTable:
        return SlotTable(self, name, table)

    def lock(self) -> ModelLock:
        return ModelLock(self)
