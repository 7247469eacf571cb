"""What every multi-threaded runtime shares: its threads, their lifetime, and stopping.

:class:`ThreadedRuntime` is the base of the parallel runtimes (``docs/design.md``, "The
runtime hierarchy"). It owns

* the thread count, checked by :func:`validate_threads` (one rule, one cap, one error
  type for every runtime and for ``resize``);
* the threads themselves: a :class:`~seer.sched.pool.WorkerPool` (:meth:`_start_pool`) or
  another executor, registered with :meth:`_own_threads` so that ``close()``, dropping the
  runtime, and interpreter exit all release them;
* the *abort flag* ``_abort``: a plain attribute that the coordinator or a failing thread
  sets and every thread reads between chunks of work, so a window stops early after an
  error or Ctrl-C (a stale read only costs one more chunk);
* Ctrl-C handling: while ``reset``/``step`` run, SIGINT is deferred to a safe point
  (:mod:`seer.sched.interrupts`).

Subclasses supply the event machinery of :class:`~seer.runtime.Runtime` and
``_resize_threads``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from seer.errors import ModelError
from seer.model import Model
from seer.platform import warn_if_gil_enabled
from seer.runtime import Runtime
from seer.sched.interrupts import deferred_interrupt
from seer.sched.pool import WorkerPool

__all__ = ["MAX_THREADS", "ThreadedRuntime", "validate_threads"]

#: Upper bound on threads per runtime (arena slabs and PEL segments are planned for it).
MAX_THREADS = 256


def validate_threads(threads: Any) -> int:
    """``threads`` as an int in ``1..MAX_THREADS``, or :class:`~seer.errors.ModelError`."""
    if isinstance(threads, bool) or not isinstance(threads, int) or \
            not 1 <= threads <= MAX_THREADS:
        raise ModelError(f"threads must be an int in 1..{MAX_THREADS}, got {threads!r}")
    return threads


class ThreadedRuntime(Runtime):
    """Base of the runtimes that run a step on ``threads`` OS threads (the caller is one
    of them); see the module docstring."""

    def __init__(self, model: Model, *, threads: int = 2, debug: bool = False) -> None:
        self._threads = validate_threads(threads)
        if debug:
            raise ModelError(f"debug mode (isolation checks) is only available in "
                             f"SerialRuntime; {type(self).__name__} would race on them")
        self._abort = False
        self._interrupted = False
        self._pool: WorkerPool | None = None
        self._finalizer: weakref.finalize | None = None
        self.windows_run = 0
        super().__init__(model, debug=False)
        warn_if_gil_enabled(threads)

    # -- threads -------------------------------------------------------------------------
    @property
    def threads(self) -> int:
        return self._threads

    def _thread_name(self) -> str:
        """Prefix of this runtime's thread names: runtime, assignment, model."""
        assignment = self.stats_labels().get("assignment")
        middle = f"[{assignment}]" if assignment else ""
        return f"seer-{self.name}{middle}-{self.spec.name}"

    def _start_pool(self, spin_us: float) -> WorkerPool:
        """Start this runtime's worker pool (once, from the constructor)."""
        pool = WorkerPool(self._threads, name=self._thread_name(), spin_us=spin_us)
        self._pool = pool
        self._own_threads(pool.close)
        return pool

    def _own_threads(self, release: Callable[[], Any]) -> None:
        """Register ``release`` to stop this runtime's threads on ``close()``, when the
        runtime is dropped, or at interpreter exit. ``release`` must not refer back to the
        runtime (it would keep it alive)."""
        self._finalizer = weakref.finalize(self, release)

    @property
    def pool(self) -> WorkerPool | None:
        """The worker pool, for runtimes that have one (None otherwise)."""
        return self._pool

    def worker_stats(self) -> list[dict[str, Any]]:
        """Per-thread counters (events, entities, CAS retries, steals, busy/idle/CPU time);
        empty for runtimes without a worker pool."""
        return [s.as_dict() for s in self._pool.stats] if self._pool is not None else []

    def resize(self, threads: int) -> None:
        """Change the thread count between steps (results do not depend on it)."""
        self._check_open()
        threads = validate_threads(threads)
        self._resize_threads(threads)
        self._threads = threads

    def _resize_threads(self, threads: int) -> None:
        """Grow or shrink this runtime's threads to ``threads``."""
        raise NotImplementedError

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        super().close()

    def stats_labels(self) -> dict[str, str]:
        """Names that describe this runtime (in ``stats`` and in thread names)."""
        return {"runtime": self.name}

    @property
    def stats(self) -> dict[str, Any]:
        return {**self.stats_labels(), "threads": self._threads, **super().stats,
                "windows": self.windows_run}

    # -- stopping early ----------------------------------------------------------------------
    def _abort_window(self) -> None:
        """Ask the threads running the current window to stop after their current chunk."""
        self._abort = True

    def step(self, actions: Any = None) -> Any:
        """As :meth:`Runtime.step`; Ctrl-C stops the threads at a safe point and then
        raises KeyboardInterrupt (see :mod:`seer.sched.interrupts`)."""
        return self._deferring_interrupts(super().step, actions)

    def reset(self, seed: Any = None) -> Any:
        """As :meth:`Runtime.reset`, with Ctrl-C deferred like in :meth:`step`."""
        self.windows_run = 0
        return self._deferring_interrupts(super().reset, seed)

    def _deferring_interrupts(self, operation: Callable[[Any], Any], arg: Any) -> Any:
        self._interrupted = False
        try:
            with deferred_interrupt(self._on_interrupt):
                return operation(arg)
        except KeyboardInterrupt:
            self._mark_failed()  # even if the operation had finished: reset before going on
            raise

    def _on_interrupt(self) -> None:
        self._interrupted = True
        self._abort_window()
