"""The ``executor`` peer: what a user would write first.

Same windows and calendar as the other windowed runtimes; each window maps a function over
chunks of the ready entities with a ``concurrent.futures.ThreadPoolExecutor``.
Cross-entity events go into a per-entity ``collections.deque`` (appends are thread-safe),
which the entity's runner drains into the entity's heap when it next runs.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from seer.errors import event_of
from seer.events import Event
from seer.model import Model
from seer.sched.calendar import CalendarBatch
from seer.sched.windows import WindowedRuntime

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


class ExecutorRuntime(WindowedRuntime):
    """ThreadPoolExecutor.map over ready entities, per window."""

    name = "executor"

    def __init__(self, model: Model, *, threads: int = 2, debug: bool = False,
                 max_events_per_step: int | None = None, trace: bool | Any = False) -> None:
        super().__init__(model, threads=threads, debug=debug,
                         max_events_per_step=max_events_per_step, trace=trace)
        self._trace_threads()
        self._inboxes: list[deque] = [deque() for _ in range(self.spec.n_entities)]
        self._bound: tuple[float, int] = (0.0, -1)
        self._executor = self._start_executor(self._threads)
        self._track_local = threading.local()
        self._track_lock = threading.Lock()
        self._tracks_assigned = 0

    def _start_executor(self, threads: int) -> ThreadPoolExecutor:
        executor = ThreadPoolExecutor(max_workers=threads,
                                      thread_name_prefix=self._thread_name())
        self._own_threads(lambda: executor.shutdown(wait=True, cancel_futures=True))
        return executor

    def _resize_threads(self, threads: int) -> None:
        if self._finalizer is not None:
            self._finalizer()  # shuts the old executor down (no task runs between steps)
        self._executor = self._start_executor(threads)

    def _clear_events(self) -> None:
        super()._clear_events()
        for inbox in getattr(self, "_inboxes", ()):
            inbox.clear()

    @property
    def pending(self) -> int:
        return super().pending + sum(len(q) for q in self._inboxes)

    def _run_chunk(self, chunk: list[int]) -> tuple[int, CalendarBatch, BaseException | None]:
        """Run a chunk of entities; a handler's ``Exception`` is recorded and later entities
        run only below its κ (see ``WindowWorker.run_merged``), so the window's reported
        failure is the one serial stepping meets first."""
        worker = ExecutorWorker(self._inboxes)
        heaps, inboxes, bound = self._heaps, self._inboxes, self._bound
        trace = self.trace
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
                except Exception as exc:
                    ev = event_of(exc)
                    if failure is None or ev[:2] < event_of(failure)[:2]:
                        failure = exc
                    bound = ev[:2]
        except BaseException:
            self._abort = True  # Ctrl-C: stop the other chunks of this window early
            raise
        try:
            return ran, worker.cal, failure
        finally:
            failure = None  # no exception -> frame -> exception cycle

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

    def _abandon_executor(self, futures: list) -> None:
        """Stop waiting for chunks that do not come back (a handler that never returns):
        the runtime becomes unusable. The executor's threads are not daemon threads, so
        interpreter exit still waits for them (this peer is what a user writes first; the
        pooled runtimes use daemon threads)."""
        running = sum(1 for f in futures if not f.done())
        self._break(f"{running} executor chunk(s) did not come back from a handler after "
                    "Ctrl-C; Python cannot stop a thread: fix the handler and build a new "
                    "runtime")
        if self._finalizer is not None:
            self._finalizer.detach()  # close() must not wait for them
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _run_window(self, ready: np.ndarray, bound: tuple[float, int]) -> None:
        self._bound = bound
        self._abort = self._interrupted  # a Ctrl-C between windows still stops this one
        size = max(1, -(-len(ready) // (4 * self._threads)))
        entities = ready.tolist()
        chunks = [entities[i:i + size] for i in range(0, len(entities), size)]
        futures = [self._executor.submit(self._run_chunk, c) for c in chunks]
        try:
            wait(futures)
        except BaseException:  # e.g. KeyboardInterrupt: leave no chunk running
            self._abort = True
            for f in futures:
                f.cancel()
            if self._give_up_after > 1:  # Ctrl-C is not deferred here: wait for the chunks
                try:
                    wait(futures)
                except KeyboardInterrupt:  # ... unless the user insists
                    self._abandon_executor(futures)
                    raise
            elif not all(f.done() for f in futures):  # the user's second Ctrl-C
                self._abandon_executor(futures)
            raise
        try:
            for f in futures:
                exc = f.exception()
                if exc is not None:
                    self._raise_failure(exc)
            calendar = self._calendar
            failures = []
            for ran, cal, failure in (f.result() for f in futures):
                self.events_run += ran
                calendar.extend(cal)
                if failure is not None:
                    failures.append(failure)
            if failures:
                self._raise_failure(min(failures, key=lambda f: event_of(f)[:2]))
        finally:
            # The futures hold the errors, whose frames hold the runtime: no cycle.
            futures = failures = failure = exc = f = None
