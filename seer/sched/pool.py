"""A pool of persistent worker threads that run one task at a time, all together.

The runtime calls :meth:`WorkerPool.run` once per window (and once for the outputs): every
worker runs ``task(index)`` and so does the caller (index 0), then ``run`` returns when all
are done. Between tasks the workers park on a condition variable.

Protocol (shared fields are written under ``_cond``'s lock; some reads are not):

* ``_published = (generation, task)`` is replaced, as one object, for every task. A worker
  runs a task when the generation moves past the one it last ran, so no worker runs a task
  twice. A wake-up cannot be lost: the caller changes ``_published`` and notifies under the
  lock, and a worker re-checks it under the lock before it waits.
* ``_pending`` counts workers that have not finished the current task; the last one to
  finish notifies the caller.
* Before parking, a worker spins for ``spin_us`` re-reading ``_published`` *without* the
  lock, and when it sees a new task it starts it without taking the lock either: taking a
  lock that the caller holds for a moment would park the worker in the lock's slow path and
  cost a futex wake-up (tens of µs) per window. While :attr:`WorkerPool.hot` is set (a
  runtime sets it for the length of a step, whose windows follow each other after a
  short pause of the caller's), it spins up to ``hot_spin_us`` instead, so that it catches
  the step's next window without parking. The caller likewise spins on ``_pending``
  before it waits. Spinning is disabled when there are more threads than cores, where it
  would steal the core the others need.

Workers are daemon threads, joined by :meth:`close` (also called by ``with``, by the
runtime's finaliser and at interpreter exit), so no thread outlives its pool.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import seer.interrupts as interrupts
from seer.errors import event_of
from seer.platform import cpu_count

__all__ = ["WorkerPool", "WorkerStats"]


@dataclass(slots=True)
class WorkerStats:
    """Per-thread counters since the last :meth:`WorkerPool.reset_stats`.

    Filled in by the runtime (SEER's runtime and the peers built on it; others leave them 0):

    * ``events``, ``entities``: events run, and entity runs (one per claimed entity and
      window);
    * ``claims``: chunks of ready entities this thread claimed from the PEL (each one
      ``fetch_add``, or none for the static strategies' own segments);
    * ``steals``: those of the claims taken from another thread's home segment;
    * ``claim_misses``: the claimers' contention: claim attempts (atomic fetch-adds)
      that came back empty because other threads had taken the segment's last items
      first. The PEL's claimers never retry a claim (one ``fetch_add`` per chunk, which
      cannot fail), so a lost race shows up as a miss, not as a retry. Counted by claimers
      that keep a ``misses`` counter (see :class:`seer.sched.assignment.Claimer`); 0 for
      those that do not (the PEL's own claimers do not count them yet);
    * ``cas_retries``: the intakes' contention: compare-exchanges (and other atomic
      attempts) that had to go round again while sending cross-entity events to another
      entity's intake or merging one (``IntakeWorker.cas_retries``,
      :mod:`seer.queues.protocol`): for the Treiber intakes, a push CAS that found a new
      top; for the MS intakes, a lost link or head CAS, a tail that moved, a lagging tail
      helped on;
    * ``arena_full``: cross-entity events that found no free arena record and were placed
      by the coordinator instead.

    ``busy_s``/``idle_s`` are wall time inside / waiting between tasks; ``cpu_s`` is the
    thread's CPU time inside tasks; ``tasks`` counts tasks run. Traces show the same
    contention per window and thread (``docs/queues.md``, "Contention")."""

    events: int = 0
    entities: int = 0
    cas_retries: int = 0
    claims: int = 0
    steals: int = 0
    claim_misses: int = 0
    arena_full: int = 0
    tasks: int = 0
    busy_s: float = 0.0
    idle_s: float = 0.0
    cpu_s: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


_live_pools: weakref.WeakSet[WorkerPool] = weakref.WeakSet()

#: Seconds a wait gives workers to come back after the first Ctrl-C before a later one
#: may give up on them (see :meth:`WorkerPool._wait_all`).
GRACE_S = 1.0


def _error_order(item: tuple[int, BaseException]) -> tuple:
    """Which of several errors ``run`` re-raises: one tagged by a runtime with the event
    it happened in (:func:`seer.errors.tag_event`) and the smallest κ first, so that the
    error reported does not depend on timing; then the lowest thread index."""
    index, exc = item
    event = event_of(exc)
    if event is None:
        return (1, 0.0, 0, index)
    return (0, event.tau, event.seq, index)


@atexit.register
def _close_all_pools() -> None:
    for pool in list(_live_pools):
        pool.close()


class WorkerPool:
    """``threads - 1`` persistent workers plus the calling thread."""

    def __init__(self, threads: int, *, name: str = "seer", spin_us: float = 50.0,
                 hot_spin_us: float = 0.0) -> None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be an int >= 1, got {threads!r}")
        self.name = name
        self._spin_us = spin_us
        self._hot_spin_us = max(spin_us, hot_spin_us)
        #: Set by the runtime while more tasks are coming soon (a step runs): idle workers
        #: then spin up to ``hot_spin_us`` before parking. Only a hint: read without a lock.
        self.hot = False
        self._cond = threading.Condition(threading.Lock())
        self._published: tuple[int, Callable[[int], None] | None] = (0, None)
        self._pending = 0
        self._errors: list[tuple[int, BaseException]] = []
        self._threads: list[threading.Thread] = []
        self._size = 1
        self._closed = False
        self._spin = self._hot_spin = 0
        self.stats: list[WorkerStats] = [WorkerStats()]
        # _inside[i]: worker i is inside a task (each worker writes only its own slot).
        self._inside: list[bool] = [False]
        #: Workers given up on by ``run`` after repeated Ctrl-C: ``(index, thread name)``.
        self.stuck: list[tuple[int, str]] = []
        #: A :class:`seer.trace.Trace` to record wake-ups in (set by a traced runtime).
        self.trace: Any = None
        _live_pools.add(self)
        self.resize(threads)

    @property
    def threads(self) -> int:
        return self._size

    def _update_spin(self) -> None:
        spin = self._size <= cpu_count()
        self._spin = int(self._spin_us * 1000) if spin else 0
        self._hot_spin = int(self._hot_spin_us * 1000) if spin else 0

    def _publish(self, task: Callable[[int], None] | None) -> None:
        """Hand ``task`` to every worker (call with the lock held)."""
        self._published = (self._published[0] + 1, task)
        self._cond.notify_all()

    def resize(self, threads: int) -> None:
        """Change the number of threads (only between tasks). A runtime's pool is resized
        through the runtime (``Runtime.resize``), which also re-plans its workers."""
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be an int >= 1, got {threads!r}")
        self._check_usable()
        if threads < self._size:
            with self._cond:
                self._size = threads  # workers with index >= size exit when woken
                self._publish(None)
            for thread in self._threads[threads - 1:]:
                thread.join()
            del self._threads[threads - 1:]
            del self.stats[threads:]
            del self._inside[threads:]
        while self._size < threads:
            index = self._size
            self.stats.append(WorkerStats())
            self._inside.append(False)
            thread = threading.Thread(target=self._worker, args=(index, self._published[0]),
                                      name=f"{self.name}-worker-{index}", daemon=True)
            self._threads.append(thread)
            self._size += 1
            thread.start()
        self._update_spin()

    def restart(self) -> None:
        """Replace every worker thread by a new one (only between tasks).

        Free-threaded CPython counts references to an object in two parts, one for the
        thread that made it; when another thread drops the last reference, the object is
        freed only once its owner runs Python code again, which a parked worker never
        does, and a thread that exits hands its objects over at once. A runtime restarts
        its pool after a failed step: the error, made on a worker, holds frames that hold
        the runtime, which would otherwise outlive the user's last reference to it, and
        its threads with it."""
        size = self._size
        if size > 1:
            self.resize(1)
            self.resize(size)

    #: How long a parked worker sleeps before it runs a line of Python and parks again:
    #: in free-threaded CPython that is when it frees the objects it made that other
    #: threads have dropped (see :meth:`restart`). Not a poll for work: tasks wake it.
    _PARK_S = 0.5

    def reset_stats(self) -> None:
        for stats in self.stats:
            for f in fields(stats):
                setattr(stats, f.name, type(getattr(stats, f.name))())

    def _worker(self, index: int, seen: int) -> None:
        cond = self._cond
        stats = self.stats[index]
        while True:
            idle_start = time.perf_counter()
            clock = time.perf_counter_ns()
            spin_until, hot_until = clock + self._spin, clock + self._hot_spin
            published = self._published
            while published[0] == seen:
                clock = time.perf_counter_ns()
                if clock >= spin_until and (clock >= hot_until or not self.hot):
                    break
                published = self._published
            parked = published[0] == seen
            if parked:
                published = None  # may be the finished task: do not keep it while parked
                with cond:
                    while self._published[0] == seen:
                        cond.wait(self._PARK_S)
                    published = self._published
            seen, task = published
            published = None  # hold no reference to a task while parked (see close())
            if index >= self._size or self._closed:
                return
            if task is None:  # a wake-up without work (resize): nothing to count
                continue
            if self.trace is not None:  # once per task, never per event
                self.trace.instant(index, "wake", parked=parked)
            busy_start = time.perf_counter()
            cpu_start = time.thread_time()
            stats.idle_s += busy_start - idle_start
            self._inside[index] = True
            try:
                task(index)
            except BaseException as exc:
                with cond:
                    self._errors.append((index, exc))
            finally:
                task = None
                self._inside[index] = False
                stats.cpu_s += time.thread_time() - cpu_start
                stats.busy_s += time.perf_counter() - busy_start
                stats.tasks += 1
                with cond:
                    self._pending -= 1
                    if self._pending == 0:
                        cond.notify_all()

    def run(self, task: Callable[[int], None], abort: Callable[[], None] | None = None,
            *, give_up_after: int = 2) -> None:
        """Run ``task(index)`` on every thread ``index`` (the caller is 0) and wait for all.

        If any call raised, the exception tagged with the smallest event κ (see
        :func:`_error_order`; untagged ones after tagged ones, then by thread index) is
        re-raised here after every worker has finished, so that which error is reported
        does not depend on timing. If the caller's part raises, ``abort()`` is called so that
        the workers stop early, and ``run`` still waits for them before propagating; a
        KeyboardInterrupt (any non-``Exception``) on the caller takes precedence.

        Waiting is interrupted only by the user insisting: at ``give_up_after`` Ctrl-Cs
        (see :meth:`_wait_all`), ``run`` stops waiting for workers that have not come
        back (a handler that never returns), lists them in :attr:`stuck`, marks the pool
        unusable and raises KeyboardInterrupt. Python cannot stop a thread; the stuck
        ones are daemon threads, so the process can still exit."""
        self._check_usable()
        cond = self._cond
        stats = self.stats[0]
        busy_start = time.perf_counter()
        cpu_start = time.thread_time()
        generation = self._published[0] + 1
        caller_error: BaseException | None = None
        try:
            with cond:
                self._errors.clear()
                self._pending = self._size - 1
                self._publish(task)  # makes `generation` current
            try:
                task(0)
            except BaseException as exc:
                caller_error = exc
                if abort is not None:
                    abort()
        finally:
            busy_end = time.perf_counter()
            try:
                self._wait_all(generation, abort, give_up_after)
            finally:
                stats.cpu_s += time.thread_time() - cpu_start
                stats.busy_s += busy_end - busy_start
                stats.idle_s += time.perf_counter() - busy_end
                stats.tasks += 1
                # Drop every reference to the task and its errors: a traceback's frames
                # hold the runtime, and the pool lives as long as its threads.
                self._published = (self._published[0], None)
                with cond:
                    errors, self._errors = self._errors, []
        try:
            if caller_error is not None and not isinstance(caller_error, Exception):
                raise caller_error
            if caller_error is not None:
                errors.append((0, caller_error))
            if errors:
                raise min(errors, key=_error_order)[1]
        finally:
            caller_error = errors = None  # no exception -> frame -> exception cycle

    def run_setup(self, task: Callable[[int], None]) -> None:
        """Run ``task(index)`` on every thread ``index``, as set-up work: not counted in
        :attr:`stats` and not traced. Free-threaded CPython counts references to an object
        with a cheap non-atomic add only on the thread that made it, so objects a thread
        will use on every event are best made on that thread."""
        saved = [stats.as_dict() for stats in self.stats]
        trace, self.trace = self.trace, None
        try:
            self.run(task)
        finally:
            self.trace = trace
            for stats, values in zip(self.stats, saved, strict=True):
                for name, value in values.items():
                    setattr(stats, name, value)

    def _wait_all(self, generation: int, abort: Callable[[], None] | None,
                  give_up_after: int) -> None:
        """Return only when no worker is inside task ``generation``, unless the user insists
        (see :meth:`run`); a KeyboardInterrupt met meanwhile is re-raised afterwards.

        On the main thread of a runtime operation, Ctrl-C never raises in here (it is
        recorded: :mod:`seer.interrupts`), so the wait polls the guard's count every
        50 ms and gives up at ``give_up_after`` Ctrl-Cs once the workers have had
        :data:`GRACE_S` to stop since the first (a loaded machine can keep a worker that
        is about to finish away for a while; only one that does not come back is stuck).
        Elsewhere (the program's own
        SIGINT handler, or another thread) it counts the KeyboardInterrupts it catches.
        If the caller was interrupted before it published the task, there is nothing to
        wait for."""
        cond = self._cond
        guard = interrupts.current()
        interrupted: BaseException | None = None
        interrupts_seen = 0
        asked_at = 0.0  # when this wait first saw a Ctrl-C (the workers were asked to stop)
        spin_until = time.perf_counter_ns() + self._spin
        while True:
            try:
                while self._pending and time.perf_counter_ns() < spin_until:
                    pass
                insisted = False
                with cond:
                    while self._pending and self._published[0] == generation:
                        # Re-notify on every timeout: an interrupt between publishing and
                        # notifying must not leave a parked worker unaware of the task.
                        cond.notify_all()
                        cond.wait(0.05)
                        if guard is not None and guard.hits:
                            now = time.monotonic()
                            asked_at = asked_at or now
                            if guard.hits >= give_up_after and now - asked_at >= GRACE_S:
                                insisted = True
                                break
                if insisted:
                    if abort is not None:
                        abort()
                    self._give_up()
                    if self.stuck:
                        guard.pending = 0  # raised here, once
                        raise KeyboardInterrupt
                    continue  # they all came back meanwhile: nothing to give up on
                break
            except KeyboardInterrupt as exc:  # keep waiting: workers must not be left running
                if self.stuck:
                    raise
                interrupted = exc
                interrupts_seen += 1
                spin_until = 0
                if abort is not None:
                    abort()
                if interrupts_seen >= give_up_after:
                    self._give_up()
                    break
        if interrupted is not None:
            try:
                raise interrupted
            finally:
                interrupted = None  # no exception -> frame -> exception cycle

    def _give_up(self) -> None:
        """Stop waiting for the workers still inside the task: they are abandoned."""
        self.stuck = [(index, self._threads[index - 1].name) for index in range(1, self._size)
                      if self._inside[index]]

    def _check_usable(self) -> None:
        if self._closed:
            raise RuntimeError(f"pool {self.name!r} is closed")
        if self.stuck:
            raise RuntimeError(f"pool {self.name!r} is unusable: threads "
                               f"{[name for _, name in self.stuck]} did not come back")

    @property
    def busy(self) -> int:
        """Workers still inside a task (0 whenever ``run`` has returned)."""
        return self._pending

    def close(self) -> None:
        """Stop and join every worker. Idempotent; safe at interpreter exit.

        Called on one of the pool's own workers (the runtime's finaliser runs on the
        thread that drops its last reference, which can be a worker settling reference
        counts inside ``with cond``), it hands the closing to a new thread: taking the
        condition's lock there, or joining the others while holding it, would deadlock."""
        if self._closed:
            return
        if threading.current_thread() in self._threads:
            threading.Thread(target=self.close, name=f"{self.name}-close", daemon=True).start()
            return
        with self._cond:
            self._closed = True
            self._publish(None)
        abandoned = {name for _, name in self.stuck}  # never joined: they may never return
        for thread in self._threads:
            if thread is not threading.current_thread() and thread.name not in abandoned:
                thread.join()
        self._threads.clear()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
