"""The old home of seer.check's scheduler, now one concept a module (as loom's
``src/rt/``); this module only re-exports every name it had, so that old import paths
keep working. New code imports from where each piece lives:

* :mod:`seer.check.execution`: the scheduler core: :class:`Execution` (real threads run
  one at a time, switching only at atomic operations), :class:`Op`, :class:`Step`,
  :class:`Routing` (which execution a thread is in), :class:`UnmodelledWrite`,
  :class:`SleepBlocked`, the carrier threads, :func:`name_words` / ``word_name`` and
  :func:`yield_now`.
* :mod:`seer.check.session`: :class:`Session`, ``seer.queues.atomic``'s hooks, which
  make the primitives below.
* :mod:`seer.check.accessor`: atomic words: :class:`ModelAccessor`, ``PlainWords``.
* :mod:`seer.check.data`: plain shared data, race-checked: ``DataView``, ``SlotTable``.
* :mod:`seer.check.lock`: ``ModelLock``.
* :mod:`seer.check.barrier`: :class:`Barrier`.
"""

from seer.check.accessor import _MASK64 as _MASK64
from seer.check.accessor import ModelAccessor as ModelAccessor
from seer.check.accessor import PlainWords as PlainWords
from seer.check.accessor import _wrap64 as _wrap64
from seer.check.barrier import Barrier as Barrier
from seer.check.data import DataView as DataView
from seer.check.data import SlotTable as SlotTable
from seer.check.data import _data_access as _data_access
from seer.check.data import _SlotChunk as _SlotChunk
from seer.check.execution import Execution as Execution
from seer.check.execution import Op as Op
from seer.check.execution import SleepBlocked as SleepBlocked
from seer.check.execution import Step as Step
from seer.check.execution import UnmodelledWrite as UnmodelledWrite
from seer.check.execution import _Abandon as _Abandon
from seer.check.execution import _active_session as _active_session
from seer.check.execution import _Carrier as _Carrier
from seer.check.execution import _carrier_lock as _carrier_lock
from seer.check.execution import _carrier_pool as _carrier_pool
from seer.check.execution import _carriers as _carriers
from seer.check.execution import _taken_lock as _taken_lock
from seer.check.execution import name_words as name_words
from seer.check.execution import word_name as word_name
from seer.check.execution import yield_now as yield_now
from seer.check.lock import ModelLock as ModelLock
from seer.check.session import Session as Session

__all__ = ["Barrier", "Execution", "ModelAccessor", "Session", "Step", "UnmodelledWrite",
           "yield_now"]
