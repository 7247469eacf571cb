"""The ``static`` peer (ROSS-T-like): entity ``e`` always runs on thread ``e % threads``.

Same windows, queues and pool as SEER; only the work assignment differs: no claiming, no
sharing. When the load of a window is uneven across the residue classes, some threads wait
at the barrier while others work — the case dynamic sharing is for.
"""

from __future__ import annotations

import numpy as np

from seer.sched.seer import SeerRuntime

__all__ = ["StaticRuntime"]

#: Entities run between two looks at the abort flag (another thread failed, or Ctrl-C).
ABORT_CHECK_EVERY = 32


class StaticRuntime(SeerRuntime):
    """Entities bound to threads by ``id % threads``."""

    kind = "static"

    def _window_task(self, index: int) -> None:
        threads = self._pool.threads
        ready = self._ready
        mine = ready[ready % threads == index].tolist()
        run, bound = self._workers[index].run_entities, self._bound
        try:
            for i in range(0, len(mine), ABORT_CHECK_EVERY):
                if self._abort:
                    return
                run(mine[i:i + ABORT_CHECK_EVERY], bound)
        except BaseException:
            self._abort = True
            raise

    def _run_window(self, ready: np.ndarray, bound: tuple[float, int]) -> None:
        self._ready = ready
        super()._run_window(ready, bound)
