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
* Ctrl-C handling: the first Ctrl-C of an operation stops the threads after their
  current chunk (:meth:`ThreadedRuntime._on_interrupt`; where KeyboardInterrupt may
  surface at all is :mod:`seer.interrupts`' rule);
* BLAS's own threads: while ``reset``/``step`` run, BLAS is capped at
  :attr:`ThreadedRuntime.blas_threads` threads (:mod:`seer.sched.blas`).

Subclasses supply the event machinery of :class:`~seer.runtime.Runtime` and
``_resize_threads``.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from seer.errors import ModelError, describe
from seer.model import Model
from seer.platform import warn_if_gil_enabled
from seer.runtime import _BROKEN, Runtime, child_seed
from seer.sched.blas import blas_cap
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

    def __init__(self, model: Model, *, threads: int = 2, debug: bool = False,
                 max_events_per_step: int | None = None, trace: bool | Any = False) -> None:
        self._threads = validate_threads(threads)
        if debug:
            raise ModelError(f"debug mode (isolation checks) is only available in "
                             f"SerialRuntime; {type(self).__name__} would race on them")
        self._abort = False
        #: KeyboardInterrupts a pool wait takes before it gives up on threads that do not
        #: come back, when no guard records Ctrl-C (off the main thread, or the program's
        #: own SIGINT handler); with a guard, the pool counts the guard's hits instead.
        self._give_up_after = 2
        self._blas_threads: int | None = 1
        self._pool: WorkerPool | None = None
        self._finalizer: weakref.finalize | None = None
        self.windows_run = 0
        super().__init__(model, debug=False, max_events_per_step=max_events_per_step,
                         trace=trace)
        warn_if_gil_enabled(threads)

    # -- threads -------------------------------------------------------------------------
    @property
    def threads(self) -> int:
        return self._threads

    @property
    def blas_threads(self) -> int | None:
        """BLAS threads while ``reset``/``step`` run (default 1; None: BLAS as it is set
        outside); restored when the call returns. See :mod:`seer.sched.blas`."""
        return self._blas_threads

    @blas_threads.setter
    def blas_threads(self, value: int | None) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise ModelError(f"blas_threads must be an int >= 1 or None, got {value!r}")
        self._blas_threads = value

    def _thread_name(self) -> str:
        """Prefix of this runtime's thread names: runtime, assignment, model."""
        assignment = self.stats_labels().get("assignment")
        middle = f"[{assignment}]" if assignment else ""
        return f"seer-{self.name}{middle}-{self.spec.name}"

    def _start_pool(self, spin_us: float, hot_spin_us: float = 0.0) -> WorkerPool:
        """Start this runtime's worker pool (once, from the constructor)."""
        pool = WorkerPool(self._threads, name=self._thread_name(), spin_us=spin_us,
                          hot_spin_us=hot_spin_us)
        self._pool = pool
        self._own_threads(pool.close)
        self._trace_threads()
        return pool

    def _trace_threads(self) -> None:
        """Give the trace one track per thread, named after the threads (the caller's is
        the thread that built or resized the runtime)."""
        if self.trace is None:
            return
        names = [threading.current_thread().name]
        if self._pool is not None:
            names += [t.name for t in self._pool._threads]
            self._pool.trace = self.trace
        else:  # an executor's threads: one track each, after the caller's
            names += [f"{self._thread_name()}-executor-{index}" for index in range(self._threads)]
        self.trace.ensure(len(names), names)

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
        """Per-thread counters (events, entities, CAS retries, steals, arena-full fallbacks,
        busy/idle/CPU time); empty for runtimes without a worker pool."""
        return [s.as_dict() for s in self._pool.stats] if self._pool is not None else []

    def resize(self, threads: int) -> None:
        """Change the thread count between steps (results do not depend on it). Refused
        like any operation while another thread is inside ``reset``/``step``."""
        self._operate("resize", self._resize_checked, threads)

    def _resize_checked(self, threads: Any) -> None:
        self._check_open()
        threads = validate_threads(threads)
        previous, self._threads = self._threads, threads
        try:
            self._resize_threads(threads)
        except BaseException as exc:
            # Threads and per-thread state may now disagree: go back to the old count,
            # and if even that fails the runtime cannot be trusted with another step.
            self._threads = previous
            try:
                self._resize_threads(previous)
            except BaseException:
                self._break(f"resize to {threads} threads failed ({exc!r}), and so did "
                            f"going back to {previous}")
            raise
        self._trace_threads()

    def _resize_threads(self, threads: int) -> None:
        """Grow or shrink this runtime's threads to ``threads``. ``self._threads`` already
        says ``threads``, so per-thread state sized from it gets the new count. If this
        raises, :meth:`resize` calls it again with the old count."""
        raise NotImplementedError

    def _release(self) -> None:
        if self._finalizer is not None:
            self._finalizer()

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

    def _guarded(self, operation: Callable[[Any], Any], arg: Any) -> Any:
        """Run a reset or step with BLAS capped and the pool hot. Ctrl-C is guarded by the
        operation (:mod:`seer.interrupts`): the first one stops the threads after their
        current chunk (:meth:`_on_interrupt`) and the step raises KeyboardInterrupt once
        they have; while the caller waits for threads that do not come back (a handler
        that never returns), a second one stops the wait and the runtime becomes unusable
        (see :meth:`_abandon`)."""
        pool = self._pool
        try:
            with blas_cap(self._blas_threads):
                if pool is not None:
                    pool.hot = True  # the step's windows follow each other closely
                try:
                    return operation(arg)
                finally:
                    if pool is not None:
                        pool.hot = False  # the caller's own code runs next: park soon
        except BaseException:
            self._mark_failed()  # even if the operation had finished: reset before going on
            if self._pool is not None and self._pool.stuck:
                self._abandon(self._pool.stuck)
            elif self._status != _BROKEN:
                try:
                    self._restart_threads()
                except BaseException as restart_exc:
                    # Threads and per-thread state may now disagree: no further step.
                    self._break(f"its threads could not be replaced after a failed "
                                f"operation ({type(restart_exc).__name__}: "
                                f"{describe(restart_exc)}); build a new runtime")
            raise

    def _restart_threads(self) -> None:
        """After a failed step or reset: new threads for old (see
        :meth:`seer.sched.pool.WorkerPool.restart`), so that a runtime dropped after the
        failure frees its threads without the garbage collector. The next ``reset``
        makes the per-thread objects again."""
        if self._pool is not None:
            self._pool.restart()

    def _reset(self, seed_seq: Any) -> Any:
        self.windows_run = 0
        return super()._reset(seed_seq)

    def _seed_generators_on(self, seed_seq: np.random.SeedSequence,
                            homed: list[list[int]]) -> None:
        """Make the generator of every entity in ``homed[index]`` on pool thread ``index``,
        from the same seed as serial's (so the same draws). Generators made one after another
        by one thread sit side by side in memory, and every draw writes the generator's
        state: two threads drawing from neighbours would share cache lines. Seeding on
        every thread also makes ``reset`` faster. With one thread, all on the caller."""
        contexts, rng = self._contexts, np.random.default_rng

        def seed(index: int) -> None:
            for e in homed[index]:
                contexts[e].rng = rng(child_seed(seed_seq, e))

        self._pool.run_setup(seed)

    def _abandon(self, stuck: list[tuple[int, str]]) -> None:
        """Mark the runtime unusable because threads ``stuck`` never came back."""
        where = "; ".join(f"thread {name!r} {self._stuck_at(index)}" for index, name in stuck)
        self._break(f"threads did not come back from a handler after Ctrl-C ({where}); "
                    "Python cannot stop a thread: fix the handler and build a new runtime")

    def _stuck_at(self, index: int) -> str:
        """Where thread ``index`` is: the entity its worker runs (``cur``) and the event
        that entity's context is handling."""
        workers = getattr(self, "_workers", ())
        return self._entity_at(workers[index].cur if index < len(workers) else -1)

    def _entity_at(self, e: int) -> str:
        """Where a thread running entity ``e`` (-1: none) is, for a report."""
        if e < 0:
            return "outside any entity"
        ctx = self._contexts[e]
        return f"in entity {e}'s handler of the event at t={ctx.now!r} (seq {ctx._seq})"

    def _on_interrupt(self) -> None:
        self._interrupted = True
        self._abort_window()
