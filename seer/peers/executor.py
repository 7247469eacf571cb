"""The ``executor`` peer: what a user would write first.

Same windows and calendar as SEER's runtime (it composes :class:`seer.sched.windows.
EntityEvents`, as SEER does, and inherits none of SEER's machinery); each window maps a
function over
chunks of the ready entities with a ``concurrent.futures.ThreadPoolExecutor``.
Cross-entity events go into a per-entity ``collections.deque`` (appends are thread-safe),
which the entity's runner drains into the entity's heap when it next runs.
"""

from __future__ import annotations

import concurrent.futures.thread
import heapq
import threading
import time
from collections import deque
from collections.abc import MutableMapping
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numpy as np

import seer.interrupts as interrupts
from seer.actions import ActionBatch
from seer.errors import StepLimitError, event_of, tag_event
from seer.events import Event
from seer.model import Model
from seer.runtime import Runtime, run_event
from seer.sched.calendar import CalendarBatch
from seer.sched.pool import GRACE_S
from seer.sched.windows import EntityEvents

__all__ = ["ExecutorRuntime"]

_heappush = heapq.heappush


class ExecutorWorker:
    """Runs one chunk of entities on whichever executor thread picked it up."""

    __slots__ = ("cal", "cur", "heap", "inboxes", "push")

    def __init__(self, inboxes: list[deque]) -> None:
        self.inboxes = inboxes
        self.cal = CalendarBatch()
        self.cur = -1
        self.heap: list[Event] = []
        self.push = self._push

    def _push(self, ev: Event) -> None:
        e = ev[2]  # per emit: by position (seer.events, "Layout")
        if e == self.cur:
            _heappush(self.heap, ev)
        else:
            self.inboxes[e].append(ev)
            self.cal.add(ev[0], ev[1], e)


class ExecutorRuntime(Runtime):
    """ThreadPoolExecutor.map over ready entities, per window."""

    name = "executor"

    def __init__(self, model: Model, *, threads: int = 2, debug: bool = False,
                 max_events_per_step: int | None = None, trace: bool | Any = False) -> None:
        n = model.n_entities if isinstance(model, Model) else 0
        self._events = EntityEvents(n)
        self._heaps = self._events.heaps
        self._inboxes: list[deque] = [deque() for _ in range(n)]
        super().__init__(model, threads=threads, debug=debug,
                         max_events_per_step=max_events_per_step, trace=trace)
        self._trace_threads()
        self._bound: tuple[float, int] = (0.0, -1)
        self._executor = self._start_executor(self._threads)
        self._track_local = threading.local()
        self._track_lock = threading.Lock()
        self._tracks_assigned = 0
        #: Errors of the current window's chunks (see :meth:`_run_chunk`).
        self._chunk_errors: list[BaseException] = []
        #: Thread name -> the worker of the chunk it runs now (one entry per thread).
        self._running: dict[str, ExecutorWorker] = {}

    def _start_executor(self, threads: int) -> ThreadPoolExecutor:
        executor = ThreadPoolExecutor(max_workers=threads,
                                      thread_name_prefix=self._thread_name())
        self._own_threads(lambda: executor.shutdown(wait=True, cancel_futures=True))
        _start_daemon_threads(executor, threads)
        return executor

    def _restart_threads(self) -> None:
        """A new executor, started before the old one stops: free-threaded CPython hands
        an object made on a thread that has exited to whichever thread drops it, but a
        new thread started after the old one exits may take its identity, and its
        parked threads would then hold the failed step's error (and the runtime) for
        good (see :meth:`seer.sched.pool.WorkerPool.restart`)."""
        old = self._finalizer
        self._executor = self._start_executor(self._threads)
        if old is not None:
            old()  # shuts the old executor down

    def _resize_threads(self, threads: int) -> None:
        if self._finalizer is not None:
            self._finalizer()  # shuts the old executor down (no task runs between steps)
        self._executor = self._start_executor(threads)

    # -- event placement (between windows, on the caller's thread) ---------------------------
    def _make_push(self, e: int) -> Any:
        return self._events.push

    def _push_externals(self, batch: ActionBatch) -> None:
        self._events.push_batch(batch)

    def _clear_events(self) -> None:
        self._events.clear()
        for inbox in self._inboxes:
            inbox.clear()
        push = self._events.push
        for ctx in self._contexts:
            ctx._push = ctx._self_push = push

    def _pending(self) -> tuple[int, tuple[float, int] | None]:
        return (self._events.count() + sum(len(q) for q in self._inboxes),
                self._events.head())

    def _run_chunk(self, chunk: list[int]) -> tuple[int, CalendarBatch]:
        """Run a chunk of entities; a handler's ``Exception`` is recorded and later entities
        run only below its κ (see ``WindowWorker.run_merged``), so the window's reported
        failure is the one serial stepping meets first.

        Errors go into ``_chunk_errors``, never into the future: an error's traceback
        reaches, through the frames' ``f_back``, the executor's work item and its future,
        and a future holding the error would make a cycle that keeps the runtime (and
        its threads) alive until the garbage collector runs."""
        worker = ExecutorWorker(self._inboxes)
        running = self._running
        name = threading.current_thread().name
        running[name] = worker  # for the report of a chunk that never comes back
        heaps, inboxes, bound = self._heaps, self._inboxes, self._bound
        trace = self.trace
        limit = self._event_limit
        ran = 0
        failure: BaseException | None = None
        try:
            for e in chunk:
                if self._abort:
                    break
                heap = heaps[e]
                inbox = inboxes[e]
                while inbox:
                    _heappush(heap, inbox.popleft())
                worker.cur, worker.heap = e, heap
                try:
                    if trace is None:
                        ran += self._run_entity(e, bound, worker.push, worker.cal)
                    else:
                        ran += self._run_entity_traced(e, bound, worker, trace)
                except StepLimitError as exc:
                    # The guard is not the model's error: no serial order to keep, so every
                    # chunk of the window stops now (each ran up to the limit otherwise).
                    self._abort = True
                    failure = exc
                    break
                except Exception as exc:
                    ev = event_of(exc)
                    if failure is None or ev[:2] < event_of(failure)[:2]:
                        failure = exc
                    bound = ev[:2]
                if ran > limit:  # the chunk's own count, as SEER's workers keep it
                    self._abort = True
                    failure = self._step_limit_error(e, None, "in one chunk of a window")
                    break
        except BaseException as exc:
            self._abort = True  # Ctrl-C: stop the other chunks of this window early
            failure = exc
        finally:
            running.pop(name, None)
        if failure is not None:
            self._chunk_errors.append(failure)  # list.append is atomic
            failure = None  # no exception -> frame -> exception cycle
        return ran, worker.cal

    def _run_entity(self, e: int, bound: tuple[float, int], push: Any,
                    cal: CalendarBatch) -> int:
        """Run entity ``e``'s events ``< bound`` from its heap in κ order, with emits going
        to ``push``; add the entity's next head to the calendar batch ``cal``. Returns the
        number of events run."""
        heap = self._heaps[e]
        ctx = self._contexts[e]
        ctx._push = ctx._self_push = push
        handlers = self._handlers
        pop = heapq.heappop
        limit = self._event_limit
        ran = 0
        while heap and heap[0] < bound:
            ev = pop(heap)
            run_event(handlers, ctx, ev)
            ran += 1
            if ran > limit:
                raise tag_event(self._step_limit_error(e, ev, "in one window"), ev)
        if heap:
            head = heap[0]
            cal.add(head[0], head[1], e)  # its tau and seq
        return ran

    def _run_entity_traced(self, e: int, bound: tuple[float, int], worker: ExecutorWorker,
                           trace: Any) -> int:
        """:meth:`_run_entity` with a ``run`` slice on this executor thread's track
        (executor threads are numbered 1.. in the order they first ran a chunk)."""
        heap = self._heaps[e]
        first = heap[0][:2] if heap and heap[0] < bound else None
        start = time.perf_counter_ns()
        ran = self._run_entity(e, bound, worker.push, worker.cal)
        if ran:
            ctx = self._contexts[e]
            trace.slice(self._executor_track(), "run", start, time.perf_counter_ns(), entity=e,
                        events=ran, first=first, last=(ctx.now, ctx._seq))
        return ran

    def _executor_track(self) -> int:
        local = self._track_local
        track = getattr(local, "track", None)
        if track is None:
            with self._track_lock:
                track = local.track = 1 + self._tracks_assigned % self._threads
                self._tracks_assigned += 1
        return track if track < len(self.trace.threads) else 0

    def _wait_chunks(self, futures: list) -> None:
        """Wait for every chunk of the window; Ctrl-C never leaves a chunk running unless
        the user insists. On the main thread of an operation Ctrl-C is recorded
        (:mod:`seer.interrupts`), so the wait polls the guard (giving up at the second
        Ctrl-C once the chunks have had ``GRACE_S`` to stop, as the pool does); elsewhere
        it catches the KeyboardInterrupt and waits again, and a second one gives up."""
        guard = interrupts.current()
        if guard is not None:
            asked_at = 0.0  # when this wait first saw a Ctrl-C
            while wait(futures, timeout=0.05).not_done:
                if not guard.hits:
                    continue
                now = time.monotonic()
                asked_at = asked_at or now
                if guard.hits >= self._give_up_after and now - asked_at >= GRACE_S:
                    self._abort = True
                    for f in futures:
                        f.cancel()
                    if wait(futures, timeout=0.05).not_done:
                        self._abandon_executor()
                        guard.pending = 0  # raised here, once
                        raise KeyboardInterrupt
            return
        try:
            wait(futures)
        except BaseException:  # e.g. KeyboardInterrupt: leave no chunk running
            self._abort = True
            for f in futures:
                f.cancel()
            try:
                wait(futures)
            except KeyboardInterrupt:  # ... unless the user insists
                self._abandon_executor()
                raise
            raise

    def _abandon_executor(self) -> None:
        """Stop waiting for chunks that do not come back (a handler that never returns):
        the runtime becomes unusable, naming each stuck thread's entity and event. The
        executor's threads are daemon threads (:func:`_start_daemon_threads`), and the
        abandoned ones are taken off ``concurrent.futures``' exit list, so the process can
        still exit."""
        stuck = sorted(self._running.items())
        where = "; ".join(f"thread {name!r} {self._entity_at(worker.cur)}"
                          for name, worker in stuck)
        self._break(f"threads did not come back from a handler after Ctrl-C ({where}); "
                    "Python cannot stop a thread: fix the handler and build a new runtime")
        if self._finalizer is not None:
            self._finalizer.detach()  # close() must not wait for them
        executor = self._executor
        executor.shutdown(wait=False, cancel_futures=True)
        # concurrent.futures joins every executor thread at interpreter exit, daemon or
        # not: forget the stuck ones there (private, checked: only if it is as expected).
        exit_list = getattr(concurrent.futures.thread, "_threads_queues", None)
        for thread in list(getattr(executor, "_threads", ())):
            if isinstance(exit_list, MutableMapping) and thread.name in dict(stuck):
                exit_list.pop(thread, None)

    # -- windows -------------------------------------------------------------------------------
    def _run(self, t_end: float) -> None:
        """The step's windows (:meth:`EntityEvents.windows`), each mapped over chunks."""
        limit = self.events_run + self._event_limit
        for t_min, ready, bound in self._events.windows(t_end, self.spec.lookahead):
            self._run_window(ready, bound)
            self._window_done(limit, int(ready[0]), t_min, len(ready))

    def _run_window(self, ready: np.ndarray, bound: tuple[float, int]) -> None:
        self._bound = bound
        self._abort = self._interrupted  # a Ctrl-C between windows still stops this one
        size = max(1, -(-len(ready) // (4 * self._threads)))
        entities = ready.tolist()
        chunks = [entities[i:i + size] for i in range(0, len(entities), size)]
        futures = [self._executor.submit(self._run_chunk, c) for c in chunks]
        self._wait_chunks(futures)
        errors, self._chunk_errors = self._chunk_errors, []
        try:
            calendar = self._events.calendar
            for f in futures:
                ran, cal = f.result()
                self.events_run += ran
                calendar.extend(cal)
            if errors:
                # A KeyboardInterrupt (any non-Exception) first; else the κ-smallest.
                fatal = [e for e in errors if not isinstance(e, Exception)]
                self._raise_failure(fatal[0] if fatal else min(errors, key=_failure_order))
        finally:
            futures = errors = fatal = f = None  # no exception -> frame -> exception cycle


def _start_daemon_threads(executor: ThreadPoolExecutor, threads: int) -> None:
    """Start all ``threads`` of ``executor`` now, as daemon threads, so that a handler that
    never returns cannot keep the process from exiting (see
    :meth:`ExecutorRuntime._abandon_executor`).

    A thread is a daemon when the thread that starts it is, and an executor starts its
    threads from ``submit``: a daemon thread submits one task per thread, each of which
    waits for all the others, so that every submit finds no idle thread and starts one.
    The main thread's later submits find all ``max_workers`` threads there and start none."""
    barrier = threading.Barrier(threads, timeout=30.0)
    futures: list = []

    def start() -> None:
        futures.extend(executor.submit(barrier.wait) for _ in range(threads))

    starter = threading.Thread(target=start, name=f"{executor._thread_name_prefix}-start",
                               daemon=True)
    starter.start()
    starter.join()
    for f in futures:
        f.result()  # a broken barrier (a thread that did not start) raises here


def _failure_order(exc: BaseException) -> tuple:
    """Which of a window's handler errors is reported: the κ-smallest tagged one."""
    ev = event_of(exc)
    return (0, ev[0], ev[1]) if ev is not None else (1, 0.0, 0)
