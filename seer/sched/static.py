"""The ``static`` peers (ROSS-T-like): every entity is bound to one thread for good.

Same windows, queues and pool as SEER; only the work assignment differs: no claiming, no
sharing. Two bindings, both found in ROSS:

* ``static``: round-robin, entity ``e`` on thread ``e % threads``. With entity ids that
  carry no spatial meaning (or a hotspot wider than a few ids) this is balanced on average.
* ``static-block``: ROSS's default linear mapping, contiguous id blocks, entity ``e`` on
  thread ``e * threads // n_entities``. Neighbouring entities (cells of a grid row) share
  a thread, so a moving hotspot loads one thread at a time.

When the load of a window is uneven across the threads, some threads wait at the barrier
while others work: the case dynamic sharing is for.
"""

from __future__ import annotations

import numpy as np

from seer.sched.seer import SeerRuntime

__all__ = ["StaticBlockRuntime", "StaticRuntime"]

#: Entities run between two looks at the abort flag (another thread failed, or Ctrl-C).
ABORT_CHECK_EVERY = 32


class StaticRuntime(SeerRuntime):
    """Entities bound to threads by ``id % threads``: each thread runs its own home
    segment of the PEL (see :meth:`SeerRuntime._publish`) and never steals."""

    kind = "static"

    def _window_task(self, index: int) -> None:
        pel = self._pel
        mine = pel.items[pel.seg_start[index]:pel.seg_end[index]].tolist()
        run, bound = self._workers[index].run_entities, self._bound
        try:
            for i in range(0, len(mine), ABORT_CHECK_EVERY):
                if self._abort:
                    return
                run(mine[i:i + ABORT_CHECK_EVERY], bound)
        except BaseException:
            self._abort = True
            raise


class StaticBlockRuntime(StaticRuntime):
    """Entities bound to threads in contiguous id blocks (ROSS's linear mapping)."""

    kind = "static-block"

    def _home(self, ready: np.ndarray, threads: int) -> np.ndarray:
        return ready * threads // self.spec.n_entities
