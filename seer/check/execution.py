"""Executions: real threads run one at a time, switching only at atomic operations.

An :class:`Execution` runs a check once: the set-up on the calling (*main*) thread, then
each worker on a thread of its own, then the invariant on the main thread. A worker runs
only when the scheduler lets it: every operation of the model path (an atomic operation
through a :class:`~seer.check.accessor.ModelAccessor`, a plain read or write of an atomic
word through ``AtomicWords.plain()``, a :class:`~seer.check.lock.ModelLock`, a
:class:`~seer.check.barrier.Barrier`, :func:`yield_now`) first *announces* itself
(:meth:`Execution.point`) and parks the thread;
the strategy then says which parked thread goes next (asked on the thread that announced,
so a thread that goes on pays no hand-off), and that thread performs its operation and
runs on, plain Python and all, to its next announcement. So at
most one worker runs at any moment, every interleaving of atomic operations is reachable,
and the same decisions give the same execution: project code runs unchanged.

A *decision* is either which thread runs (its alternatives: the enabled threads, the
running one first; switching away from a thread that could go on is a *preemption*) or,
in weak-memory mode, which store a load reads (:mod:`seer.check.memory`). The list of
decisions is the execution's *schedule*; :mod:`seer.check.explorer` turns it into a string
that replays it.

Plain shared data (``seer.queues.atomic.data_view`` / ``data_slots``,
:mod:`seer.check.data`) is not a scheduling point: its accesses are checked for races
against the vector clocks of the memory model.

This module is the scheduler core; each modelled primitive is a module of its own that
calls into it (:mod:`~seer.check.accessor`, :mod:`~seer.check.data`,
:mod:`~seer.check.lock`, :mod:`~seer.check.barrier`), and :mod:`seer.check.session` makes
them for ``seer.queues.atomic``'s hooks. Imports point one way: the primitives import this
module, never it them, so :class:`Execution` knows an operation only as the :class:`Op` it
announces, and finds the calling thread's execution through :class:`Routing`.
:func:`yield_now` lives here, not in a module of its own, because what it does (a spinner
waits until another thread stores) is a rule of :meth:`Execution._next`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from seer.check.memory import DataRace, Memory

__all__ = ["Execution", "Op", "Routing", "SleepBlocked", "Step", "UnmodelledWrite",
           "name_words", "word_name", "yield_now"]


class _Abandon(BaseException):
    """Unwinds a parked worker when its execution is given up (a failure elsewhere)."""


class UnmodelledWrite(Exception):
    """A worker wrote an atomic word through ``words.array`` (the numpy view), which the
    model does not see: found at the thread's next scheduling point (or its end) because
    the array no longer holds what the model stored there."""

    def __init__(self, word: str, thread: int, value: int, expected: int) -> None:
        self.word, self.thread, self.value, self.expected = word, thread, value, expected
        super().__init__(
            f"T{thread} wrote atomic word {word} through AtomicWords.array (a numpy write "
            f"the checker does not see): the array holds {value}, the model {expected}. "
            "Use an accessor (acc.store, or AtomicWords.plain() for a plain write)")


class SleepBlocked(Exception):
    """Raised by a strategy when every thread that could run is asleep (DPOR's sleep
    sets): each continuation is equivalent to one already explored, so the execution is
    given up (neither a pass nor a failure)."""


@dataclass
class Op:
    """An announced operation: what DPOR and the report need to know of it."""

    kind: str
    location: Any = None  # None: depends on nothing (a thread's start)
    name: str = ""
    write: bool = False
    ready: Callable[[], bool] | None = None  # None: always enabled


@dataclass
class Step:
    """One line of an interleaving. ``step`` is the scheduling step it belongs to (plain
    data accesses share the step of the operation they follow)."""

    step: int
    thread: int
    kind: str
    name: str = ""
    order: str = ""
    detail: str = ""
    reads_from: tuple[int, int] | None = None  # (thread, step) of the store read
    scheduled: bool = True
    stale: int = 0  # how many stores newer in mo than the one read
    synchronises: bool = False  # an acquire that read a release (its rf is in hb)

    def __str__(self) -> str:
        who = "main" if self.thread < 0 else f"T{self.thread}"
        op = f"{self.kind} {self.order}".strip()
        mark = f"{self.step:>4}" if self.scheduled else "    "
        return f"{mark}  {who:<4}  {op:<20}  {self.name:<16}  {self.detail}"


class Routing:
    """Which execution each thread is in: the routing half of
    :class:`~seer.check.session.Session`, the half the scheduler and the primitives use
    (:meth:`bound`). It is a base class here because the session's module imports every
    primitive, to make them: a primitive that needed the session itself would close a
    cycle. Outside an execution (a free-running session, :func:`seer.check.model_atomics`),
    operations run at once under :attr:`free_lock`, sequentially consistent, with no
    checks."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.free_lock = threading.Lock()
        self.process_wide = False  # SEER_ATOMICS=model: every thread is covered

    def covers(self) -> bool:
        """Is the calling thread in this session (``model_atomics``, an execution)?"""
        local = self.local
        return self.process_wide or getattr(local, "depth", 0) > 0 or \
            getattr(local, "execution", None) is not None

    def bound(self) -> tuple[Execution | None, int]:
        """The calling thread's execution and its index in it (``(None, -1)`` when the
        thread is not in one)."""
        local = self.local
        return getattr(local, "execution", None), getattr(local, "thread", -1)

    def bind(self, execution: Execution | None, thread: int) -> None:
        self.local.execution, self.local.thread = execution, thread


class Execution:
    """One run of ``setup``, ``workers`` and ``invariant`` under ``strategy``'s
    decisions (module docstring). Read :attr:`failure`, :attr:`steps` (the interleaving),
    :attr:`decisions` and :attr:`transitions` after :meth:`run`."""

    def __init__(self, session: Routing, workers: int, strategy: Any, *, weak: bool,
                 max_steps: int) -> None:
        self.session = session
        self.n = workers
        self.strategy = strategy
        self.memory = Memory(workers, weak)
        self.max_steps = max_steps
        self.pending: list[Op | None] = [None] * workers
        self.state = ["new"] * workers
        # Hand-offs through plain locks used as binary semaphores (a Lock may be released
        # by a thread other than its holder): much cheaper than threading.Semaphore.
        self._go = [_taken_lock() for _ in range(workers)]
        self._parked = _taken_lock()  # a worker parked at its start
        self._done = _taken_lock()  # the execution is over
        self._started = False
        self._error: BaseException | None = None
        self._abandoned = False
        #: ``(kind, alternatives, index, costs, preemptions_before)`` per decision; kind is
        #: "thread" (alternatives: thread ids) or "read" (alternatives: stores, latest first)
        self.decisions: list[tuple[str, list, int, list[int], int]] = []
        #: per scheduling step: ``(decision index, thread, location, write)``
        self.transitions: list[tuple[int, int, Any, bool]] = []
        #: per scheduling step: thread -> the operation it would perform if chosen
        self.pending_ops: list[dict[int, Op]] = []
        self.steps: list[Step] = []
        self.preemptions = 0
        self.failure: tuple[str, BaseException | str, int] | None = None
        self.state_object: Any = None
        #: the memory model had no consistent choice left: the execution is not one that
        #: RC11 allows, and is dropped (neither a pass nor a failure)
        self.infeasible = False
        #: given up by the strategy: every thread that could go on was asleep (DPOR)
        self.blocked = False
        self._step = 0
        self._running = -1
        self._yielded = [0] * workers  # len(memory.writers) when each thread last yielded
        self._yield_step = [0] * workers  # len(transitions) then
        #: id(words) -> [words, its array, base address, what the array held at the last
        #: check]: the words whose numpy view is compared with the model (watch)
        self._watched: dict[int, list] = {}

    # -- the main thread -------------------------------------------------------------------
    def run(self, setup: Callable[[], Any], workers: tuple[Callable[[Any], Any], ...],
            invariant: Callable[[Any], Any] | None) -> Execution:
        session = self.session
        main = self.memory.main
        previous = session.bound()
        session.bind(self, main)
        threads: list[_Carrier] = []
        try:
            try:
                state = self.state_object = setup()
            except BaseException as exc:
                raise RuntimeError(f"the check's setup() failed: {exc!r}") from exc
            self.memory.start_workers()
            for entry in self._watched.values():  # the set-up may write the arrays
                entry[3] = entry[1].tobytes()
            threads = _carriers(len(workers))
            for t, (carrier, fn) in enumerate(zip(threads, workers, strict=True)):
                carrier.start(self._body, t, fn, state)  # one at a time: each parks at
                self._parked.acquire()                   # its start

            self._started = True
            self._hand_off(None)
            self._done.acquire()  # the last thread to run says the execution is over
        finally:
            if self.failure is not None or self._error is not None or self.infeasible or \
                    any(s == "parked" for s in self.state):
                self._abandon()
            stuck = [c for c in threads if not c.join(30)]
            session.bind(*previous)
        if stuck:
            raise RuntimeError("a worker of the check did not end within 30 s after its "
                               "execution was given up (is it blocked outside the model, "
                               "on a lock or I/O?)")
        if self._error is not None:
            raise self._error
        if self.failure is None and not self.infeasible:
            self.memory.join_workers()
            self.memory.step = self._step + 1
            session.bind(self, main)
            try:
                ok = invariant(state) if invariant is not None else None
                if ok is False:
                    self.failure = ("invariant", "the invariant returned False", -1)
            except _Abandon:
                self.infeasible = True
            except DataRace as exc:
                self.failure = ("data race", exc, -1)
            except BaseException as exc:
                self.failure = ("invariant", exc, -1)
            finally:
                session.bind(*previous)
        return self

    # -- scheduling (on whichever thread ran last: no hand-off when it goes on) -------------
    def _next(self) -> int | None:
        """The thread to run next, its step recorded; None when the execution is over (every
        thread done, a failure, a deadlock, the step limit, or a strategy error)."""
        if self.failure is not None or self._error is not None or self.infeasible:
            return None
        enabled = [t for t in range(self.n) if self.state[t] == "parked"
                   and (self.pending[t].ready is None or self.pending[t].ready())]
        # A thread that yielded (a spin-wait) waits until another thread has stored
        # something, unless nobody else can run: a spinner only reads, so exploring
        # spinners taking turns would never end.
        writers = self.memory.writers
        spinning = [t for t in enabled if self.pending[t].kind == "yield"
                    and all(w == t for w in writers[self._yielded[t]:])]
        if spinning and len(spinning) < len(enabled):
            enabled = [t for t in enabled if t not in spinning]
        elif len(spinning) > 1:
            # Everyone spins: the one that has waited longest goes (no choice, no
            # preemption), so that each gets its turn to catch up with what was stored.
            enabled = [min(spinning, key=lambda t: self._yield_step[t])]
        if not enabled:
            blocked = [t for t in range(self.n) if self.state[t] == "parked"]
            if blocked:
                ops = ", ".join(f"T{t} at {self.pending[t].kind} {self.pending[t].name}"
                                for t in blocked)
                self.failure = ("deadlock", f"no thread can go on: {ops}", -1)
            return None
        if self._step >= self.max_steps:
            self.failure = ("step limit", self._step_limit_message(), -1)
            return None
        # what every thread that could run would do next (DPOR's races need it)
        self.pending_ops.append({t: self.pending[t] for t in range(self.n)
                                 if self.state[t] == "parked" and (
                                     self.pending[t].ready is None or self.pending[t].ready())})
        current = self._running
        if current in enabled:
            alternatives = [current] + [t for t in enabled if t != current]
            costs = [0] + [1] * (len(enabled) - 1)
        else:
            alternatives, costs = enabled, [0] * len(enabled)
        try:
            t = alternatives[self._decide("thread", alternatives, costs)]
        except SleepBlocked:
            self.infeasible = self.blocked = True
            return None
        except BaseException as exc:  # a replay that does not fit, a nondeterministic check
            self._error = exc
            return None
        self._step += 1
        self.memory.step = self._step
        op = self.pending[t]
        self.transitions.append((len(self.decisions) - 1, t, op.location, op.write))
        self.steps.append(Step(self._step, t, op.kind, op.name))
        self._running = t
        self.state[t] = "running"
        return t

    def _step_limit_message(self) -> str:
        """Why the execution is that long: a thread that only loads over its last steps
        is a spin-wait without :func:`yield_now` (the explorer keeps scheduling it), which
        is named with the fix; otherwise a livelock, or a scope that needs more steps."""
        window = [line for line in self.steps[-200:] if line.scheduled and line.thread >= 0]
        spinners = []
        for t in sorted({line.thread for line in window}):
            mine = [line for line in window if line.thread == t]
            if len(mine) >= 20 and all(line.kind in ("load", "plain load") or (
                    line.kind == "cas" and "(failed)" in line.detail) for line in mine):
                words = sorted({line.name for line in mine})
                spinners.append(f"T{t} ({', '.join(words)})")
        if spinners:
            return (f"the execution did not end within {self.max_steps} steps: "
                    f"{', '.join(spinners)} spin{'s' if len(spinners) == 1 else ''}, "
                    "loading without storing: call seer.check.yield_now() in the loop (the "
                    "spinner then waits until another thread stores); raising max_steps "
                    "does not help")
        return (f"the execution did not end within {self.max_steps} steps (a livelock, "
                "or a scope that needs more: raise max_steps)")

    def _hand_off(self, me: int | None) -> bool:
        """Choose who runs next and let it: True when that is ``me`` (go on, no hand-off);
        otherwise wake it, or the main thread when the execution is over."""
        t = self._next()
        if t is None:
            self._done.release()
            return False
        if t == me:
            return True
        self._go[t].release()
        return False

    def _decide(self, kind: str, alternatives: list, costs: list[int]) -> int:
        index = self.strategy.choose(self, kind, alternatives, costs)
        if not 0 <= index < len(alternatives):
            raise RuntimeError(f"strategy chose alternative {index} of {len(alternatives)}")
        self.decisions.append((kind, alternatives, index, costs, self.preemptions))
        self.preemptions += costs[index]
        return index

    def _abandon(self) -> None:
        self._abandoned = True
        for t in range(self.n):
            if self.state[t] == "parked":
                self._go[t].release()

    # -- the workers -----------------------------------------------------------------------
    def _body(self, t: int, fn: Callable[[Any], Any], state: Any) -> None:
        self.session.bind(self, t)
        try:
            self.point(t, Op("start"))
            fn(state)
            self._check_writes(t)
        except _Abandon:
            pass
        except DataRace as exc:
            self._fail("data race", exc, t)
        except UnmodelledWrite as exc:
            self._fail("unmodelled write", exc, t)
        except BaseException as exc:
            self._fail("exception", exc, t)
        finally:
            self.state[t] = "done"
            self.session.bind(None, -1)
            if not self._abandoned:
                self._hand_off(None)

    def _fail(self, kind: str, exc: BaseException | str, t: int) -> None:
        if self.failure is None:
            self.failure = (kind, exc, t)

    def point(self, t: int, op: Op) -> None:
        """Thread ``t`` announces ``op`` and waits until it is chosen (the main thread
        never waits: it runs alone)."""
        if t == self.memory.main:
            return
        if self.failure is not None or self._abandoned or self.infeasible:
            raise _Abandon
        if self._started:
            self._check_writes(t)
        self.pending[t] = op
        if op.kind == "yield":
            self._yielded[t] = len(self.memory.writers)
            self._yield_step[t] = len(self.transitions)
        self.state[t] = "parked"
        if not self._started:
            self._parked.release()  # the main thread starts the next worker
        elif self._hand_off(t):
            return
        self._go[t].acquire()
        if self._abandoned:
            raise _Abandon

    # -- writes through words.array --------------------------------------------------------
    def watch(self, words: Any) -> None:
        """Compare ``words.array`` with the model from now on (an accessor or ``plain()``
        view of it was made in this execution)."""
        if id(words) not in self._watched and words.array is not None:
            array = words.array
            seen = array.copy()
            if self._started:  # a worker's accessor: words the model has stores of are
                base = words.address  # checked against their latest store
                for i in range(words.n):
                    stores = self.memory.words.get(base + 8 * i)
                    if stores is not None:
                        seen[i] = stores[-1].value
            self._watched[id(words)] = [words, array, words.address, seen.tobytes()]

    def _check_writes(self, t: int) -> None:
        """Between two scheduling points only thread ``t`` ran: a word of a watched array
        that changed and does not hold the model's latest store of that word was written
        by ``t`` through the numpy view (:class:`UnmodelledWrite`, a failure). Only the
        model path pays for this (a bytes comparison per watched array and scheduling
        point): the accessors' fast path is untouched."""
        for entry in self._watched.values():
            words, array, base, seen_bytes = entry
            now = array.tobytes()
            if now == seen_bytes:
                continue
            seen = np.frombuffer(seen_bytes, np.int64).copy()
            words_of = self.memory.words
            for i in np.flatnonzero(array != seen).tolist():
                value = int(array[i])
                stores = words_of.get(base + 8 * i)
                if stores is not None and stores[-1].value == value:
                    seen[i] = value  # a store of the model (it keeps the array current)
                    continue
                name = word_name(words, i)
                expected = stores[-1].value if stores is not None else int(seen[i])
                exc = UnmodelledWrite(name, t, value, expected)
                self._fail("unmodelled write", exc, t)
                raise exc
            entry[3] = now

    def choose_read(self, alternatives: int, kind: str = "read") -> int:
        """Which of ``alternatives`` stores (latest first) a weak load reads, or
        (``kind="mo"``) where in the modification order a weak store goes (the end
        first). None at all: the graph so far has no RC11-consistent continuation, and the
        execution is dropped (not a failure)."""
        if alternatives == 1:
            return 0
        if alternatives == 0:
            self.infeasible = True
            raise _Abandon
        return self._decide(kind, list(range(alternatives)), [0] * alternatives)

    def read_only(self) -> None:
        """The operation being performed only read (a failed compare-exchange): DPOR
        treats its step as a read."""
        d, t, loc, _write = self.transitions[-1]
        self.transitions[-1] = (d, t, loc, False)

    def note(self, t: int, **fields: Any) -> None:
        """Fill in the line of the operation ``t`` is performing, or (``scheduled=False``)
        add a line for a plain data access."""
        who = -1 if t == self.memory.main else t
        if fields.pop("scheduled", True):
            for line in reversed(self.steps):
                if line.thread == who:
                    for k, v in fields.items():
                        setattr(line, k, v)
                    return
        self.steps.append(Step(self._step, who, scheduled=False, **fields))

    def begin_main(self, kind: str, name: str) -> None:
        """A line for an operation of the main thread (set-up or invariant)."""
        self.steps.append(Step(self._step, -1, kind, name, scheduled=False))

    def race(self, exc: DataRace, t: int) -> DataRace:
        self._fail("data race", exc, t)
        return exc


class _Carrier:
    """A daemon thread that runs one worker body after another: executions reuse them,
    since starting a thread costs more than most executions' hand-offs. One carrier runs
    one body at a time; a carrier whose body never ended is dropped."""

    def __init__(self) -> None:
        self._job: tuple | None = None
        self._ready = _taken_lock()
        self._finished = _taken_lock()
        self.busy = False
        threading.Thread(target=self._loop, name="seer-check-carrier", daemon=True).start()

    def _loop(self) -> None:
        while True:
            self._ready.acquire()
            fn, *args = self._job
            self._job = None
            try:
                fn(*args)
            finally:
                self._finished.release()

    def start(self, fn: Callable, *args: Any) -> None:
        self.busy = True
        self._job = (fn, *args)
        self._ready.release()

    def join(self, timeout: float) -> bool:
        if not self._finished.acquire(timeout=timeout):
            return False
        self.busy = False
        return True


_carrier_pool: list[_Carrier] = []
_carrier_lock = threading.Lock()


def _carriers(n: int) -> list[_Carrier]:
    """``n`` idle carriers (made as needed)."""
    with _carrier_lock:
        _carrier_pool[:] = [c for c in _carrier_pool if not c.busy]
        while len(_carrier_pool) < n:
            _carrier_pool.append(_Carrier())
        return _carrier_pool[:n]


def _taken_lock() -> threading.Lock:
    lock = threading.Lock()
    lock.acquire()
    return lock


def name_words(words: Any, *names: str) -> Any:
    """Name the words of an ``AtomicWords`` one by one in reports, interleavings and graphs
    (``name_words(deque.words, "top", "bottom")``: word 0 is ``top``, word 1 ``bottom``;
    words past the names keep ``name[i]``). Returns ``words``."""
    words.index_names = list(names)
    return words


def word_name(words: Any, i: int) -> str:
    """Word ``i`` of ``words`` as reports name it: its :func:`name_words` name, else
    ``name[i]``."""
    names = words.__dict__.get("index_names")
    return names[i] if names and i < len(names) else f"{words.name}[{i}]"


def yield_now() -> None:
    """A spin-wait's hint: in a check, let the other threads run before this one goes on
    (it costs no preemption, and the thread is not scheduled again until another one has
    stored to a word, unless none can run); outside one, ``os.sched_yield``. Call it in a loop that
    waits for another thread (a full or empty ring), so that exploration terminates. In
    weak-memory mode, a thread that yields sees every store made before it goes on
    (:meth:`~seer.check.memory.Memory.catch_up`)."""
    session = _active_session()
    ex, t = session.bound() if session is not None else (None, -1)
    if ex is None or t == ex.memory.main:
        os.sched_yield()
        return
    ex.point(t, Op("yield"))
    ex.memory.catch_up(t)


def _active_session() -> Routing | None:
    """The session covering the calling thread, for what no session made (a
    :class:`~seer.check.barrier.Barrier`, :func:`yield_now`); None outside one."""
    from seer.queues import atomic

    hooks = atomic.model_hooks
    return hooks[0] if hooks and isinstance(hooks[0], Routing) and hooks[0].covers() else None
