"""The lock-free structures the runtime runs on, over one buffer (``docs/design.md``,
"The dual-layer queue").

* :mod:`~seer.queues.atomic`: int64 atomic words, fast (op table) and public paths;
* :mod:`~seer.queues.layout`: regions of one buffer (in-process or shared memory);
* :mod:`~seer.queues.arena`: event records addressed by handles, per-worker slabs;
* :mod:`~seer.queues.leq`: per-entity Local Event Queues (Treiber intake + private heap);
* :mod:`~seer.queues.pel`: the Parallel Executive List (guided claims, home segments);
* :mod:`~seer.queues.protocol`: the queue protocol a runtime builds on, and its registry;
  :mod:`~seer.queues.ms`, Michael-Scott intakes, the shipped alternative.

Structures for work that crosses a process boundary are in :mod:`seer.interprocess`.
"""

from seer.queues.arena import NIL, ArenaFullError, ArenaSlab, EventArena, HandleError
from seer.queues.atomic import AtomicWords, fast_path_available, selected_path
from seer.queues.layout import BufferLayout, Region
from seer.queues.leq import EmptyQueueError, LeqWorker, LocalEventQueues
from seer.queues.ms import MsQueues  # registers the "ms" queues with seer.queues.protocol
from seer.queues.pel import CapacityError, HomeClaimer, ParallelExecutiveList, PelClaimer

__all__ = [
    "NIL",
    "ArenaFullError",
    "ArenaSlab",
    "AtomicWords",
    "BufferLayout",
    "CapacityError",
    "EmptyQueueError",
    "EventArena",
    "HandleError",
    "HomeClaimer",
    "LeqWorker",
    "LocalEventQueues",
    "MsQueues",
    "ParallelExecutiveList",
    "PelClaimer",
    "Region",
    "fast_path_available",
    "selected_path",
]
