"""The peers SEER is measured against: ``static``, ``static-block``, ``seer-ms``,
``global``, ``executor`` and ``optimistic``.

They are not part of the product: ``import seer`` does not load them. The runtime registry
(:data:`seer.sched.RUNTIMES`) imports this package the first time a name it does not know
is asked for, or the names are listed, and importing it registers each peer
(``RUNTIMES.provide``: a name a user registered first keeps the user's class). Each
plugs in through a seam the product already has, never by reaching into SEER's machinery:

================  ==========================================================================
``static``        SEER's runtime with the assignment ``round-robin``: entity ``e`` on thread
                  ``e % threads`` (:class:`StaticRuntime`)
``static-block``  the assignment ``block``: contiguous id blocks per thread, ROSS's linear
                  mapping (:class:`StaticBlockRuntime`)
``seer-ms``       the intakes ``ms``: Michael-Scott queues in place of the Treiber stacks
                  (:class:`SeerMsRuntime`; ``docs/queues.md``)
``global``        one locked global event heap (:class:`GlobalQueueRuntime`), a
                  :class:`~seer.runtime.Runtime` of its own
``executor``      ThreadPoolExecutor.map per window (:class:`ExecutorRuntime`), composing
                  the windows of :mod:`seer.sched.windows`
``optimistic``    Time Warp (ROOT-Sim-like): entities bound to threads, rollbacks,
                  anti-messages, GVT per step (:class:`OptimisticRuntime`)
================  ==========================================================================
"""

from __future__ import annotations

from seer.peers.executor import ExecutorRuntime
from seer.peers.global_queue import GlobalQueueRuntime
from seer.peers.optimistic import OptimisticRuntime
from seer.peers.static import SeerMsRuntime, StaticBlockRuntime, StaticRuntime
from seer.sched import RUNTIMES

__all__ = ["ExecutorRuntime", "GlobalQueueRuntime", "OptimisticRuntime", "SeerMsRuntime",
           "StaticBlockRuntime", "StaticRuntime"]

for _cls in (StaticRuntime, StaticBlockRuntime, SeerMsRuntime, GlobalQueueRuntime,
             ExecutorRuntime, OptimisticRuntime):
    RUNTIMES.provide(_cls)
del _cls
