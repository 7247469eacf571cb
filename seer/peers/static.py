"""The peers that are SEER's runtime with another strategy or other intakes.

Each is :class:`~seer.sched.dual_queue.SeerRuntime` with a different default for one of
its two seams, and nothing else: the work assignment (:mod:`seer.sched.assignment`) or
the intake factory (:mod:`seer.queues.protocol`). So they share every line of SEER's
machinery, and a change to it changes them alike.
"""

from __future__ import annotations

from seer.queues.ms import MsQueues
from seer.sched.dual_queue import SeerRuntime

__all__ = ["SeerMsRuntime", "StaticBlockRuntime", "StaticRuntime"]


class StaticRuntime(SeerRuntime):
    """The ``static`` peer (ROSS-T-like): entity ``e`` always on thread ``e % T``."""

    name = "static"
    default_assignment = "round-robin"


class StaticBlockRuntime(SeerRuntime):
    """The ``static-block`` peer: contiguous id blocks per thread (ROSS's linear mapping)."""

    name = "static-block"
    default_assignment = "block"


class SeerMsRuntime(SeerRuntime):
    """``seer-ms``: SEER with Michael-Scott queue intakes (:mod:`seer.queues.ms`) in place of
    the Treiber stacks: the worked example of swapping the intakes (``docs/queues.md``)."""

    name = "seer-ms"
    default_queues = MsQueues
