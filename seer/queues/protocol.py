"""The intake protocol: what the windowed runtime asks of its per-entity event queues.

:class:`~seer.sched.dual_queue.SeerRuntime` keeps every entity's pending events in
two layers (``docs/design.md``, "The dual-layer queue"): a private heap per entity, which
only the entity's current claimer touches, and an *intake* per entity, to which any thread
sends cross-entity events concurrently. The runtime gets the intake layer from a
:class:`QueueFactory` (``queues=`` of the runtime, a name in :data:`QUEUES` or an
instance), so an alternative algorithm plugs in without editing the runtime. Two ship:

==========  ===================================================================  ===========
name        intake                                                               module
==========  ===================================================================  ===========
``treiber`` a Treiber stack of arena handles per entity and window parity; the   ``leq``
            claimer takes a whole chain with one exchange (or plainly, for the
            previous parity): the default, and the fastest
``ms``      a Michael-Scott FIFO queue of arena handles per entity (head, tail   ``ms``
            and ``next`` words with tags); the claimer dequeues one by one: the
            worked example of swapping the algorithm
==========  ===================================================================  ===========

What the runtime calls
----------------------
On the factory (once per runtime, on the coordinator, before any thread runs):

* ``reserved_records(n_entities)``: arena records the layer holds for good (an MS queue's
  dummy nodes); the runtime adds them to the arena's capacity.
* ``plan(layout, n_entities, capacity)``: add the layer's regions to the runtime's buffer
  layout (after the arena's, before the PEL's); returns them.
* ``build(n_entities, arena, buffer, regions, heaps)``: the layer (:class:`Intakes`) over
  the allocated buffer. ``heaps`` is the runtime's list of per-entity heaps (``heapq``
  lists of :class:`~seer.events.Event`): the layer's merges push into them.

On the layer (:class:`Intakes`), single-threaded only (no window runs):

* ``worker(slab, path)``: a new :class:`IntakeWorker` for the calling thread, over that
  thread's arena slab and atomics path (``None``: the default path). The runtime calls it
  on the thread that will use the worker (``WorkerPool.run_setup``), after construction,
  reset and resize.
* ``in_intakes(slab)``: events sent but not merged yet (for ``runtime.pending``).
* ``reset()``: every intake and heap empty, the arena reset (every record back in its
  pool); workers made before are void.
* ``heaps``: the heaps given to ``build``.

On each worker (:class:`IntakeWorker`), from its own thread only:

* ``set_epoch(k)``: called on every worker by the coordinator before window ``k``
  starts (``k`` goes up by one per window and never repeats; workers start at 0).
* ``send_all(events) -> int``: during a window, after the thread's last claim, from any
  thread, concurrently with other sends and merges: send each event to the intake of its
  target (``event[2]``), in order, in records of the worker's slab; returns how many
  were sent (fewer than ``len(events)`` when the arena had no free record: the rest were
  not sent, and no record was leaked).
* ``merge(e) -> heap``: during a window, by ``e``'s claimer only: move what ``e``'s intake
  holds into ``heaps[e]``, freeing the records into this worker's slab; returns the heap.
  The runtime first reads ``heads[previous_offset + e]`` and ``heads[offset + e]``
  plainly (see the pre-check below) and calls ``merge(e)`` unless both are ``NIL``.
* ``heads`` (an int64 view), ``offset``, ``previous_offset`` (ints, kept up to date by
  ``set_epoch``): the pre-check's words.
* ``cas_retries``: failed atomic attempts (a lost CAS, a re-read after a conflict) in
  ``send_all`` and ``merge``; the runtime adds it to ``WorkerStats.cas_retries`` after
  every window and sets it back to 0.
* ``slab``: the slab given to ``worker``; ``leqs``: the layer.
* ``send(e, event)`` is optional (the runtime does not call it; tests and checks do).

The runtime binds ``send_all``, ``merge``, ``heads`` once per worker (not per event or
claim), so an implementation's own methods are the hot path, with nothing in between.

Invariants an implementation must keep
---------------------------------------
1. **Nothing lost, nothing duplicated.** Every event that ``send_all`` reports sent is put
   into its target's heap by exactly one ``merge``, once. Every arena record is owned by
   one party at a time (a slab's free list, an intake, the layer's reserve); a merged
   record is freed into the merging worker's slab, and a free handle is in one slab only.
2. **What a merge returns, and when.** The window barrier (the pool's hand-off between
   windows) orders every send of windows ``< k`` before every merge of window ``k``.
   ``merge(e)`` in window ``k`` must move into ``heaps[e]`` every event sent to ``e`` in
   windows ``< k`` that no earlier merge moved, however many windows back it was sent (an
   entity is merged only in windows it is claimed in). It *may* also move events sent to
   ``e`` during window ``k`` itself, concurrently with it, or leave them to the next merge:
   such an event was emitted by a handler of window ``k``, so by lookahead its key is at or
   above the window's bound, and it cannot run in window ``k`` either way. (The result is
   the same event set in the heap before its events run; the heap orders them by κ, so the
   run is bit-identical whichever a merge did.)
3. **The pre-check.** After the barrier of window ``k``: if ``e`` has an event sent in a
   window ``< k`` and not merged, then ``heads[previous_offset + e]`` or
   ``heads[offset + e]``, read plainly, is not ``NIL``. (Reads may show sends of window
   ``k`` too: a spurious merge costs a call, never a result.) An implementation without such
   words returns a view whose entries are never ``NIL``: the runtime then merges every
   claimed entity, and the merge checks for itself.
4. **Threads.** A worker is used by the thread that made it, only. At most one thread
   merges a given entity in a window (the PEL hands each ready entity to one claimer), and
   consecutive claimers of an entity are ordered by the barrier; ``heaps[e]`` is touched by
   ``e``'s claimer during a window, and by the coordinator between windows.
5. **Memory orders.** The runtime adds no synchronisation but the barrier. A send must
   publish its record (the side-table slot holding the event, and any link the record
   carries) with a *release* that the merge's taking operation *acquires* (directly, or
   through a release sequence), so that the merging thread reads what the sender wrote.
   Plain reads of shared words are allowed only where a barrier makes them exact, or as a
   first guess that an atomic operation then checks. Every shared word is an
   :class:`~seer.queues.atomic.AtomicWords` used through an accessor the thread made
   (``words.accessor(path)``), plain shared data goes through
   :func:`~seer.queues.atomic.data_view`/``data_slots``/``AtomicWords.plain()``, and each
   call site names its order where it is not the default: then :func:`seer.check.explore`
   checks the implementation unchanged (``docs/queues.md``).

Register a new factory with :func:`register_queues` (or pass an instance as ``queues=``);
``docs/queues.md`` walks through the MS example: the check, the equivalence test and the
benchmark.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol

from seer.errors import ModelError
from seer.events import Event
from seer.queues.arena import ArenaSlab, EventArena
from seer.queues.layout import BufferLayout, Region
from seer.queues.leq import LocalEventQueues

__all__ = ["QUEUES", "IntakeWorker", "Intakes", "QueueFactory", "TreiberQueues",
           "get_queues", "register_queues"]


class IntakeWorker(Protocol):
    """One thread's handle on every intake (module docstring, "What the runtime calls")."""

    leqs: Any
    slab: ArenaSlab
    heads: Any
    offset: int
    previous_offset: int
    cas_retries: int

    def set_epoch(self, epoch: int) -> None: ...
    def send_all(self, events: list[Event]) -> int: ...
    def merge(self, entity: int) -> list[Event]: ...


class Intakes(Protocol):
    """The intake layer of one runtime (module docstring)."""

    heaps: list[list[Event]]

    def worker(self, slab: ArenaSlab, path: str | None = None) -> IntakeWorker: ...
    def in_intakes(self, slab: ArenaSlab) -> int: ...
    def reset(self) -> None: ...


class QueueFactory(ABC):
    """Builds a runtime's intake layer (module docstring); one instance per runtime."""

    name: ClassVar[str]

    def reserved_records(self, n_entities: int) -> int:
        """Arena records the layer holds for good (default none)."""
        return 0

    @abstractmethod
    def plan(self, layout: BufferLayout, n_entities: int, capacity: int) -> dict[str, Region]:
        """Add the layer's regions to ``layout`` (``capacity``: the arena's records)."""

    @abstractmethod
    def build(self, n_entities: int, arena: EventArena, buffer: Any,
              regions: dict[str, Region], heaps: list[list[Event]]) -> Intakes:
        """The layer over ``buffer`` (allocated from the planned layout)."""


class TreiberQueues(QueueFactory):
    """The default: :class:`~seer.queues.leq.LocalEventQueues` with two epochs (one Treiber
    stack per entity and window parity). Its workers are
    :class:`~seer.queues.leq.LeqWorker` as they are: the factory adds no layer in between."""

    name = "treiber"

    def plan(self, layout: BufferLayout, n_entities: int, capacity: int) -> dict[str, Region]:
        return {"leq_heads": LocalEventQueues.plan(layout, n_entities, epochs=2)}

    def build(self, n_entities: int, arena: EventArena, buffer: Any,
              regions: dict[str, Region], heaps: list[list[Event]]) -> LocalEventQueues:
        return LocalEventQueues(n_entities, arena, buffer, regions["leq_heads"], heaps=heaps,
                                epochs=2)


#: Queue name -> factory class, for ``SeerRuntime(queues=...)``.
QUEUES: dict[str, type[QueueFactory]] = {TreiberQueues.name: TreiberQueues}


def register_queues(cls: type[QueueFactory], *, replace: bool = False) -> type[QueueFactory]:
    """Make ``cls`` available as ``queues=cls.name``; returns ``cls`` (a class decorator).
    A name already taken by another class is an error unless ``replace``."""
    if not (isinstance(cls, type) and issubclass(cls, QueueFactory)):
        raise ModelError(f"register_queues needs a QueueFactory subclass, got {cls!r}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ModelError(f"{cls.__name__} needs a class attribute name = '...'")
    if name in QUEUES and QUEUES[name] is not cls and not replace:
        raise ModelError(f"queue name {name!r} is taken by {QUEUES[name].__name__}")
    QUEUES[name] = cls
    return cls


def get_queues(queues: str | QueueFactory) -> QueueFactory:
    """A :class:`QueueFactory` from a name in :data:`QUEUES` or an instance."""
    if isinstance(queues, QueueFactory):
        return queues
    try:
        return QUEUES[queues]()
    except (KeyError, TypeError):
        raise ModelError(f"unknown queues {queues!r}; choose one of {sorted(QUEUES)} or "
                         "pass a QueueFactory instance") from None
