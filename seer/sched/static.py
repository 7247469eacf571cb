"""The ``static`` peer (ROSS-T-like): entity ``e`` always runs on thread ``e % threads``.

Same windows, queues and pool as SEER; only the work assignment differs: no claiming, no
sharing. When the load of a window is uneven across the residue classes, some threads wait
at the barrier while others work — the case dynamic sharing is for.
"""

from __future__ import annotations

from seer.sched.seer import SeerRuntime

__all__ = ["StaticRuntime"]


class StaticRuntime(SeerRuntime):
    """Entities bound to threads by ``id % threads``."""

    kind = "static"

    def _window_task(self, index: int) -> None:
        run = self._workers[index].run
        bound = self._bound
        threads = self._pool.threads
        try:
            for e in self._ready:
                if e % threads == index:
                    if self._abort:
                        return
                    run(e, bound)
        except BaseException:
            self._abort = True
            raise

    def _run_window(self, ready: list[int], bound: tuple[float, int]) -> None:
        self._ready = ready
        super()._run_window(ready, bound)
