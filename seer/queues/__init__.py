"""Lock-free structures on ``atomics`` over one shared buffer (DESIGN.md section 5).

* :mod:`~seer.queues.atomic`: int64 atomic words, fast (op table) and public paths;
* :mod:`~seer.queues.layout`: regions of one buffer (in-process or shared memory);
* :mod:`~seer.queues.arena`: event records as structure-of-arrays, per-worker slabs;
* :mod:`~seer.queues.leq`: per-entity Local Event Queues (Treiber intake + private heap);
* :mod:`~seer.queues.pel`: the Parallel Executive List and an MPMC ring.
"""

from seer.queues.arena import NIL, ArenaFullError, ArenaSlab, EventArena, HandleError
from seer.queues.atomic import AtomicWords, fast_path_available, selected_path
from seer.queues.layout import BufferLayout, Region
from seer.queues.leq import EmptyQueueError, LeqWorker, LocalEventQueues
from seer.queues.pel import CapacityError, MpmcRing, ParallelExecutiveList, RingPort

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
    "LeqWorker",
    "LocalEventQueues",
    "MpmcRing",
    "ParallelExecutiveList",
    "Region",
    "RingPort",
    "fast_path_available",
    "selected_path",
]
