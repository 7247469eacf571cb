"""The runtime base: what every runtime shares, and the whole of a step but its events.

A step reads in two files: this one (``Runtime.step``: check the actions, take the
snapshot, ``prepare_step``, hand the actions over, run the events, outputs) and the
runtime's own (how its events run: :mod:`seer.serial`, or SEER's
:mod:`seer.sched.dual_queue`). ``docs/architecture.md``, "Read one step", walks it.

A runtime supplies only its event machinery, through these hooks (each overridden at most
once below this class):

* ``_make_push(e)``: where entity ``e``'s emits go;
* ``_push_externals(batch)``: queue a step's action events;
* ``_clear_events()``: drop every pending event (an episode starts);
* ``_run(t_end)``: run every pending event with τ < ``t_end`` in an order equivalent to
  κ order;
* ``_pending()``: how many events wait for later steps, and the earliest one's κ;

and, where it has them, ``_outputs()`` (outputs computed in parallel),
``_resize_threads(threads)``, ``_restart_threads()`` (threads other than a
:class:`~seer.sched.pool.WorkerPool`), ``_stop_threads()`` (more than the abort flag to
set) and ``stats``. A parallel runtime also hands the base its threads, as data: its pool
(``_use_pool``, or ``_own_threads`` for other threads, so that ``close`` stops them),
``_homed`` (the entities whose generators each pool thread makes at ``reset``),
``_labels`` (names for ``stats`` and thread names) and, for a report of threads stuck in
a handler, ``_workers[i].cur`` (the entity thread ``i`` runs).

Everything that decides *results* lives here, once, so all runtimes agree on it by
construction: state, seeding, snapshots, actions, outputs, errors. So
does what every multi-threaded runtime needs around its threads: the thread count
(:func:`validate_threads`), the abort flag, Ctrl-C, BLAS's own threads, replacing threads
after a failed step, and releasing them (``docs/design.md``, "The runtime hierarchy").

Names. The runtimes' code gives each concept one name, the one ``docs/design.md`` uses:
``e`` an entity id (``entities`` several, ``n`` how many the model has), ``ev`` an event
(its fields by position: :mod:`seer.events`, "Layout"), ``tau`` and ``seq`` an event's time
and sequence number, ``key`` a κ ``(tau, seq)``, ``bound`` a window's bound B, ``t_min``
the earliest pending time, ``t0`` and ``t_end`` a step's start and end, ``index`` a
thread's index and ``threads`` how many, ``ctx`` an entity's context, ``heap`` its
pending events, ``cal`` a calendar batch, ``ran`` events run so far, ``seed_seq`` a numpy
``SeedSequence``, and ``start``/``end`` clock readings (never model times). Public names
keep their documented spelling (``Calendar.add(tau, seq, entity)``, ``outputs(entity,
...)``).
"""

from __future__ import annotations

import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

import seer.interrupts as interrupts
from seer.actions import ActionBatch, action_batch
from seer.blas import blas_cap
from seer.errors import (
    ContractError,
    HandlerError,
    ModelCodeError,
    ModelError,
    PendingEventsError,
    RuntimeStateError,
    SeerError,
    StepLimitError,
    describe,
    event_of,
    tag_event,
)
from seer.events import Event, seq_origin
from seer.limits import (
    DEFAULT_EVENTS_PER_ENTITY,
    DEFAULT_MIN_EVENTS,
    NO_LIMIT,
    default_event_limit,
    event_limit,
    limit_text,
    step_limit_error,
    step_limit_message,
)
from seer.model import (
    INIT_PARENT_SEQ,
    NO_SNAPSHOT,
    Context,
    Model,
    ModelSpec,
    StateArrays,
    StepInfo,
    allocate_state,
    compile_model,
    make_row,
    make_row_class,
    read_only,
)
from seer.platform import warn_if_gil_enabled
from seer.trace import Trace

__all__ = ["DEFAULT_EVENTS_PER_ENTITY", "DEFAULT_MIN_EVENTS", "MAX_THREADS", "ActionBatch",
           "Runtime", "StepResult", "child_seed", "default_event_limit", "run_event",
           "step_limit_error", "validate_threads"]

_NEW, _READY, _FAILED, _BROKEN, _CLOSED = "new", "ready", "failed", "broken", "closed"

#: Upper bound on threads per runtime (arena slabs and PEL segments are planned for it).
MAX_THREADS = 256


def validate_threads(threads: Any) -> int:
    """``threads`` as an int in ``1..MAX_THREADS``, or :class:`~seer.errors.ModelError`:
    one rule, one cap, one error type for every runtime and for ``resize``."""
    if isinstance(threads, bool) or not isinstance(threads, int) or \
            not 1 <= threads <= MAX_THREADS:
        raise ModelError(f"threads must be an int in 1..{MAX_THREADS}, got {threads!r}")
    return threads


@dataclass(slots=True)
class StepResult:
    """Boundary outputs after ``reset`` (``step == 0``) or after a step (``step``: the steps
    taken since ``reset``, 1 after the first; ``time`` = ``step * step_length``).

    Lists and arrays are in ``model.agent_entities()`` order. Every field is what the
    model's ``outputs`` reports, after ``reset`` too (the workloads report zero rewards
    there; the runtime does not zero them).
    """

    step: int
    time: float
    observations: list[Any]
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: list[dict]


def run_event(handlers: tuple[Callable[[Context, Event], None], ...], ctx: Context,
              ev: Event) -> None:
    """Run event ``ev`` on its entity's context: the per-event dispatch of every runtime.

    An exception leaves tagged with the event (:func:`seer.errors.tag_event`), so that the
    caller's thread can say where it happened. The serial loop and SEER's worker loop
    inline these lines (a call per event is measurable there); everything else calls this.
    It reads ``ev`` by position, as every per-event loop does (:mod:`seer.events`, "Layout").
    """
    ctx.now = ev[0]  # tau
    ctx._seq = ev[1]  # seq
    try:
        handlers[ev[3]](ctx, ev)  # kind
    except BaseException as exc:
        tag_event(exc, ev)
        raise


class Runtime(ABC):
    """Common interface: ``reset(seed)``, ``step(actions)``, ``resize(threads)``,
    ``close()``; also a context manager. ``state`` gives read-only views of the live
    entity state.

    ``max_events_per_step`` (every runtime's constructor, and ``make_runtime``): a step
    that runs more events raises :class:`~seer.errors.StepLimitError` (the runtime then
    needs ``reset``). None, the default, is :func:`default_event_limit` of the model's
    entity count, far above what real models run, so that a runaway step (a self-loop with
    a tiny delay) always ends; an int ``N >= 1`` is that limit; 0 turns the guard off.

    ``threads``: the OS threads a step runs on, the caller's included (``1..MAX_THREADS``;
    a runtime with ``parallel = False`` runs on one)."""

    #: The runtime's name, as given to :func:`seer.make_runtime`.
    name: ClassVar[str] = "abstract"
    #: Whether the runtime runs a step on several threads: if so, it takes ``threads``,
    #: caps BLAS while it steps, refuses ``debug`` (its checks would race), and reports its
    #: threads and windows in ``stats``.
    parallel: ClassVar[bool] = True
    #: What STPA measured and predicted when the runtime was built with threads="auto".
    stpa: dict[str, Any] | None = None

    def __init__(self, model: Model, *, threads: int = 1, debug: bool = False,
                 max_events_per_step: int | None = None, trace: bool | Trace = False) -> None:
        self._threads = validate_threads(threads)
        if debug and self.parallel:
            raise ModelError(f"debug mode (isolation checks) is only available in "
                             f"SerialRuntime; {type(self).__name__} would race on them")
        if not self.parallel and threads != 1:
            raise ModelError(f"{type(self).__name__} runs on one thread, got threads={threads!r}")
        #: The abort flag: a plain attribute that the coordinator or a failing thread sets
        #: and every thread reads between chunks of work, so a window stops early after an
        #: error or Ctrl-C (a stale read only costs one more chunk).
        self._abort = False
        #: KeyboardInterrupts a pool wait takes before it gives up on threads that do not
        #: come back, when no guard records Ctrl-C (off the main thread, or the program's
        #: own SIGINT handler); with a guard, the pool counts the guard's hits instead.
        self._give_up_after = 2
        self._blas_threads: int | None = 1 if self.parallel else None
        #: The worker pool (:meth:`_use_pool`), or None; ``_homed[index]``: the entities
        #: whose generators thread ``index`` makes at ``reset`` (empty: the caller makes all).
        self._pool: Any = None
        self._homed: list[list[int]] = []
        self._finalizer: weakref.finalize | None = None
        #: Extra names for ``stats`` and thread names (SEER's assignment and queues).
        self._labels: dict[str, str] = {}
        self.windows_run = 0
        self.spec: ModelSpec = compile_model(model)
        self.model = model
        self.debug = bool(debug)
        #: The execution trace (``trace=True``), or None: see :mod:`seer.trace`.
        if not (trace is None or trace is True or trace is False or isinstance(trace, Trace)):
            raise ModelError(f"trace must be True, False, None or a seer.trace.Trace, got "
                             f"{type(trace).__name__} {trace!r}")
        self.trace: Trace | None = Trace() if trace is True else (trace or None)
        n = self.spec.n_entities
        #: The step's event limit in force: an int >= 1, or 0 for no limit. The constructor's
        #: ``max_events_per_step``: None (the default) gives :func:`default_event_limit`.
        self.max_events_per_step = event_limit(max_events_per_step, n)
        self._limit_text = limit_text(max_events_per_step, self.max_events_per_step, n)
        self._status = _NEW
        self._step_index = 0
        self.events_run = 0
        # the live state and the step-start snapshot (a ModelError names a field too big)
        self._arrays, self._start_arrays = allocate_state(self.spec, copies=2)
        self.state = StateArrays({k: read_only(v) for k, v in self._arrays.items()})
        self.snapshot = StateArrays({k: read_only(v) for k, v in self._start_arrays.items()})
        self._row_class = row_class = make_row_class(self.spec.fields)
        self._contexts: list[Context] = [
            Context(self.spec, e, make_row(row_class, self._arrays, e), self._make_push(e))
            for e in range(n)
        ]
        self._external_counters = np.zeros(n, np.int64)  # action events per entity
        self._action_marks = np.zeros(n, np.int64)  # scratch: one action per entity?
        self._handlers = self.spec.handlers
        self._prepares = type(model).prepare_step is not Model.prepare_step
        self._episode: Any = None
        roots = frozenset(id(a) for a in (*self._arrays.values(), *self._start_arrays.values()))
        for ctx in self._contexts:
            ctx._roots = roots
        self._op_lock = threading.Lock()
        self._op_running: str | None = None
        self._interrupted = False  # a Ctrl-C arrived during the running operation
        self._broken = ""
        if self.parallel:
            warn_if_gil_enabled(threads)

    # -- the event machinery: what a runtime supplies ------------------------------------
    @abstractmethod
    def _make_push(self, e: int) -> Callable[[Event], Any]:
        """The callable that ``emit`` of entity ``e``'s context hands each new event to."""

    @abstractmethod
    def _push_externals(self, batch: ActionBatch) -> None:
        """Queue a step's action events (on the caller's thread, before ``_run``; the
        runtime queues them in one batch where it can, or leaves making them to its
        threads)."""

    @abstractmethod
    def _clear_events(self) -> None:
        """Drop every pending event (start of an episode)."""

    @abstractmethod
    def _run(self, t_end: float) -> None:
        """Run every pending event with τ < ``t_end`` in an order equivalent to κ order.

        An exception from a handler is tagged with its event (:func:`run_event`) and
        passed to :meth:`_raise_failure`."""

    @abstractmethod
    def _pending(self) -> tuple[int, tuple[float, int] | None]:
        """How many events are scheduled for later steps, and the κ of the earliest one
        (None when there is none)."""

    # -- public API ---------------------------------------------------------------------
    @property
    def threads(self) -> int:
        """The threads a step runs on, the caller's included."""
        return self._threads

    @property
    def step_index(self) -> int:
        """Number of steps taken since the last reset."""
        return self._step_index

    @property
    def time(self) -> float:
        """Model time τ_t of the next step's start."""
        return self._step_index * self.spec.step_length

    @property
    def pending(self) -> int:
        """Events scheduled for later steps (after a step has completed)."""
        return self._pending()[0]

    def reset(self, seed: int | np.random.SeedSequence | None = None) -> StepResult:
        """Start an episode: zero the state, seed one Generator per entity from
        ``SeedSequence(seed).spawn(n_entities)``, run ``init_entity`` for every entity in id
        order, and return the initial outputs.

        A bad ``seed`` raises :class:`ModelError` and leaves the runtime as it was."""
        return self._operate("reset", self._reset_checked, seed)

    def _reset_checked(self, seed: Any) -> StepResult:
        self._check_open()
        seed_seq = _seed_sequence(seed)
        return self._guarded(self._reset, seed_seq)

    def step(self, actions: Any = None) -> StepResult:
        """Inject the actions as events at τ_t, run every event with τ in [τ_t, τ_{t+1}),
        and return the boundary outputs.

        Actions are checked before anything changes: bad ones raise :class:`ModelError`
        and leave the runtime exactly as it was. After an exception from the model's code
        (a handler, ``prepare_step`` or ``outputs``) the runtime needs ``reset``."""
        return self._operate("step", self._step_checked, actions)

    def _step_checked(self, actions: Any) -> StepResult:
        if self._status != _READY:
            self._check_open()
            raise RuntimeStateError(
                f"{type(self).__name__}.step() needs reset() first"
                + (" (the previous step failed or was interrupted)"
                   if self._status == _FAILED else ""))
        batch = action_batch(self.model, self.spec, actions,
                             self._step_index * self.spec.step_length,
                             self._external_counters, self._action_marks)
        return self._guarded(self._step, batch)

    def resize(self, threads: int) -> None:
        """Change the thread count between steps (results do not depend on it). Refused
        like any operation while another thread is inside ``reset``/``step``; a runtime
        that runs on one thread takes only 1."""
        self._operate("resize", self._resize_checked, threads)

    def close(self) -> None:
        """Release resources; the runtime cannot be used afterwards. Idempotent.

        Refused with :class:`RuntimeStateError` while another thread is inside ``reset``,
        ``step`` or ``resize`` of this runtime: close it after that call returns (from
        the thread that made it, or once it has returned)."""
        self._operate("close", self._close, None)

    def _close(self, _: None) -> None:
        if self._status != _CLOSED:
            self._status = _CLOSED
            if self._finalizer is not None:
                self._finalizer()  # stops the threads

    @property
    def blas_threads(self) -> int | None:
        """BLAS threads while ``reset``/``step`` run (default 1 for a parallel runtime;
        None, a one-thread runtime's default: BLAS as it is set outside); restored when the
        call returns. See :mod:`seer.blas`."""
        return self._blas_threads

    @blas_threads.setter
    def blas_threads(self, value: int | None) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise ModelError(f"blas_threads must be an int >= 1 or None, got {value!r}")
        self._blas_threads = value

    @property
    def pool(self) -> Any:
        """The worker pool (:class:`~seer.sched.pool.WorkerPool`), for runtimes that have
        one (None otherwise)."""
        return self._pool

    def worker_stats(self) -> list[dict[str, Any]]:
        """Per-thread counters (events, entities, CAS retries, steals, arena-full fallbacks,
        busy/idle/CPU time); empty for runtimes without a worker pool."""
        return [s.as_dict() for s in self._pool.stats] if self._pool is not None else []

    def stats_labels(self) -> dict[str, str]:
        """Names that describe this runtime (in ``stats`` and in thread names)."""
        return {"runtime": self.name, **self._labels}

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def stats(self) -> dict[str, Any]:
        """Counters since the last reset: events run, events emitted, cross-entity emits;
        a parallel runtime adds its labels, threads and windows."""
        counters = {
            "events_run": self.events_run,
            "emitted": sum(c._counter for c in self._contexts),
            "cross_entity": sum(c._cross for c in self._contexts),
        }
        if not self.parallel:
            return counters
        return {**self.stats_labels(), "threads": self._threads, **counters,
                "windows": self.windows_run}

    # -- one operation at a time ---------------------------------------------------------
    def _operate(self, name: str, body: Callable[[Any], Any], arg: Any) -> Any:
        """Run ``body(arg)`` as the public operation ``name``: one at a time (a concurrent
        one is refused at once, never blocked: a caller waiting for a step that never ends
        would hang with it), with Ctrl-C guarded (:mod:`seer.interrupts`: raised at once
        only in the model's code; inside SEER's own code recorded and raised when the
        operation ends). Any KeyboardInterrupt leaves the runtime needing ``reset``."""
        self._interrupted = False
        guard = interrupts.enter(self._on_interrupt, self._mark_failed)
        try:
            if not self._op_lock.acquire(blocking=False):
                raise RuntimeStateError(
                    f"{name}() refused: {self._op_running or 'another operation'}() is "
                    f"already running on this {type(self).__name__} in another thread (one "
                    "operation at a time; a runtime belongs to one caller thread at a time)")
            try:
                self._op_running = name
                result = body(arg)
            finally:
                self._op_running = None
                self._op_lock.release()
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                guard.pending = 0  # this is the Ctrl-C (or a later one): raise it once
                self._mark_failed()
            interrupts.leave(guard)  # a Ctrl-C recorded meanwhile wins over ``exc``
            raise
        return interrupts.leave(guard, result)

    def _on_interrupt(self) -> None:
        """The first Ctrl-C of an operation arrived: stop the threads after their chunk."""
        self._interrupted = True
        self._stop_threads()

    def _guarded(self, operation: Callable[[Any], Any], arg: Any) -> Any:
        """Run a reset or step with BLAS capped (:attr:`blas_threads`) and the pool hot.
        Ctrl-C is guarded by the operation (:mod:`seer.interrupts`): the first one stops
        the threads after their current chunk (:meth:`_stop_threads`) and the step raises
        KeyboardInterrupt once they have; while the caller waits for threads that do not
        come back (a handler that never returns), a second one stops the wait and the
        runtime becomes unusable (see :meth:`_abandon`). After any failure the threads are
        replaced (:meth:`_restart_threads`)."""
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
            if pool is not None and pool.stuck:
                self._abandon(pool.stuck)
            elif self._status != _BROKEN:
                try:
                    self._restart_threads()
                except BaseException as restart_exc:
                    # Threads and per-thread state may now disagree: no further step.
                    self._break(f"its threads could not be replaced after a failed "
                                f"operation ({type(restart_exc).__name__}: "
                                f"{describe(restart_exc)}); build a new runtime")
            raise

    def _reset(self, seed_seq: np.random.SeedSequence) -> StepResult:
        self._status = _FAILED  # until the reset completes
        self._clear_events()
        for a in self._arrays.values():
            a.fill(0)
        self._step_index = 0
        self.events_run = 0
        self.windows_run = 0
        self._external_counters[:] = 0
        n = self.spec.n_entities
        # Children by explicit spawn key (what seed_seq.spawn(n) gives a fresh
        # SeedSequence), so that reusing one SeedSequence object gives the same episode
        # every time. The episode's own generator is the child after the entities'.
        episode = None
        if self.spec.has_init_episode:
            try:
                episode = self.model.init_episode(np.random.default_rng(child_seed(seed_seq, n)))
            except Exception as exc:
                self._raise_model_code(exc, "init_episode", None)
        self._episode = episode
        init = self.model.init_entity
        self._seed_generators(seed_seq)
        for ctx in self._contexts:
            ctx.episode = episode
            ctx.snapshot = NO_SNAPSHOT
            ctx.now = 0.0
            ctx._seq = INIT_PARENT_SEQ
            ctx._counter = 0
            ctx._cross = 0
            try:
                init(ctx)
            except BaseException as exc:
                err = self._handler_failed(exc, ctx.id, "<init_entity>", None)
                if err is exc:
                    raise
                raise err from exc
        self._take_snapshot()
        for ctx in self._contexts:
            ctx.snapshot = self.snapshot
        result = self._outputs()
        self._status = _READY
        return result

    def _seed_generators(self, seed_seq: np.random.SeedSequence) -> None:
        """Give every entity's context its generator, seeded by ``seed_seq``'s child of the
        entity's id (the same draws on every runtime). With a pool and homes
        (``_homed``), the generators of ``_homed[index]`` are made on pool thread
        ``index``: generators made one after another by one thread sit side by side in
        memory, and every draw writes the generator's state, so two threads drawing from
        neighbours would share cache lines (seeding on every thread also makes ``reset``
        faster). Otherwise the caller makes them all."""
        contexts, rng = self._contexts, np.random.default_rng
        homed = self._homed
        if self._pool is None or not homed:
            for ctx in contexts:
                ctx.rng = rng(child_seed(seed_seq, ctx.id))
            return

        def seed(index: int) -> None:
            for e in homed[index]:
                contexts[e].rng = rng(child_seed(seed_seq, e))

        self._pool.run_setup(seed)

    def _step(self, batch: ActionBatch) -> StepResult:
        t_end = self._begin_step(batch)
        self._run(t_end)
        return self._end_step()

    def _begin_step(self, batch: ActionBatch) -> float:
        """A step up to its events: the snapshot, ``prepare_step``, the action counters and
        the actions queued; returns the step's end τ_{t+1}. (A runtime that steps several
        models in one pool runs each model's part here, then all their events.)"""
        t_end = (self._step_index + 1) * self.spec.step_length
        self._status = _FAILED  # until the step completes
        self._take_snapshot()
        if self._prepares:
            try:
                prepared = self.model.prepare_step(self.snapshot, self._step_index)
            except Exception as exc:
                self._raise_model_code(exc, "prepare_step", None)
            for ctx in self._contexts:
                ctx.prepared = prepared
        if len(batch):
            if batch.distinct:
                self._external_counters[batch.entity_array] += 1
            else:
                np.add.at(self._external_counters, batch.entity_array, 1)
        self._push_externals(batch)
        return t_end

    def _end_step(self) -> StepResult:
        """A step after its events: the step count, ``strict_steps``, the outputs."""
        self._step_index += 1
        if self.model.strict_steps and self.pending:
            raise self._pending_error()
        result = self._outputs()
        self._status = _READY
        return result

    # -- threads ---------------------------------------------------------------------------
    def _resize_checked(self, threads: Any) -> None:
        self._check_open()
        threads = validate_threads(threads)
        if not self.parallel and threads != 1:
            raise ModelError(f"{type(self).__name__} runs on one thread: resize takes 1, "
                             f"got {threads!r}")
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

    def _resize_threads(self, threads: int) -> None:  # noqa: B027 - one thread: nothing to do
        """Grow or shrink this runtime's threads to ``threads``. ``self._threads`` already
        says ``threads``, so per-thread state sized from it gets the new count. If this
        raises, :meth:`resize` calls it again with the old count."""

    def _restart_threads(self) -> None:
        """After a failed step or reset: new threads for old (see
        :meth:`seer.sched.pool.WorkerPool.restart`), so that a runtime dropped after the
        failure frees its threads without the garbage collector. The next ``reset``
        makes the per-thread objects again."""
        if self._pool is not None:
            self._pool.restart()

    def _stop_threads(self) -> None:
        """Ask the threads running the current window to stop after their current chunk
        (plain stores only: this runs in the SIGINT handler too)."""
        self._abort = True

    def _thread_name(self) -> str:
        """Prefix of this runtime's thread names: runtime, assignment, model."""
        assignment = self._labels.get("assignment")
        middle = f"[{assignment}]" if assignment else ""
        return f"seer-{self.name}{middle}-{self.spec.name}"

    def _use_pool(self, pool: Any) -> Any:
        """Make ``pool`` (a :class:`~seer.sched.pool.WorkerPool`, from the constructor)
        this runtime's: its threads stop on ``close()``, when the runtime is dropped, or
        at interpreter exit, and the trace gets a track per thread. Returns ``pool``."""
        self._pool = pool
        self._own_threads(pool.close)
        self._trace_threads()
        return pool

    def _own_threads(self, release: Callable[[], Any]) -> None:
        """Register ``release`` to stop this runtime's threads on ``close()``, when the
        runtime is dropped, or at interpreter exit. ``release`` must not refer back to the
        runtime (it would keep it alive)."""
        self._finalizer = weakref.finalize(self, release)

    def _trace_threads(self) -> None:
        """Give the trace one track per thread, named after the threads (the caller's is
        the thread that built or resized the runtime)."""
        if self.trace is None:
            return
        names = [threading.current_thread().name]
        if self._pool is not None:
            names += [t.name for t in self._pool._threads]
            self._pool.trace = self.trace
        elif self.parallel:  # an executor's threads: one track each, after the caller's
            names += [f"{self._thread_name()}-executor-{index}"
                      for index in range(self._threads)]
        self.trace.ensure(len(names), names)

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

    # -- shared machinery ----------------------------------------------------------------
    def _check_open(self) -> None:
        if self._status == _CLOSED:
            raise RuntimeStateError(f"{type(self).__name__} is closed")
        if self._status == _BROKEN:
            raise RuntimeStateError(f"{type(self).__name__} is unusable: {self._broken}")

    def _break(self, reason: str) -> None:
        """The runtime cannot be used again (only ``close`` is allowed)."""
        if self._status != _CLOSED:
            self._status = _BROKEN
            self._broken = reason

    def _private_views(self) -> tuple[StateArrays, StateArrays]:
        """``(state, snapshot)`` wrappers with their own read-only array views of the same
        memory, for one worker thread. Free-threaded CPython counts references to an object
        that several threads use with contended atomics; a thread that reads state through
        its own wrapper and views touches no shared Python object on the way."""
        return (StateArrays({k: read_only(v) for k, v in self._arrays.items()}),
                StateArrays({k: read_only(v) for k, v in self._start_arrays.items()}))

    def _take_snapshot(self) -> None:
        for name, live in self._arrays.items():
            np.copyto(self._start_arrays[name], live)

    def _pending_error(self) -> PendingEventsError:
        self._mark_failed()
        count, head = self._pending()
        earliest, origin = "", -1
        if head is not None:
            tau, seq = head
            origin = seq_origin(seq)
            earliest = f"; the earliest at t={tau!r}, emitted by entity {origin}"
        err = PendingEventsError(
            f"{count} events are pending past the end of step {self._step_index - 1} "
            f"(t={self.time!r}){earliest}; the model sets strict_steps = True, so every "
            "event must fall inside its step (set strict_steps = False to carry them over)",
            model=self.spec.name, entity=origin, kind=None, time=self.time)
        err.step = self._step_index - 1
        return err

    def _outputs(self) -> StepResult:
        buffers = self._output_buffers()
        self._store_outputs(range(len(self.spec.agents)), self.state, self.snapshot, buffers)
        return self._step_result(buffers)

    def _output_buffers(self) -> tuple:
        """``(rewards, terminations, truncations, observations, infos, step_info)``: one
        slot per agent, filled by :meth:`_store_outputs`, and the :class:`StepInfo` that
        ``outputs`` receives (None when it takes none). Computes ``step_outputs`` on the
        caller's thread, once."""
        n_agents = len(self.spec.agents)
        spec = self.spec
        info = None
        if spec.outputs_take_info or spec.has_step_outputs:
            shared = None
            if spec.has_step_outputs:
                try:
                    shared = self.model.step_outputs(self.state, self.snapshot,
                                                     self._step_index)
                except Exception as exc:
                    self._raise_model_code(exc, "step_outputs", None)
            info = StepInfo(self._step_index, self.time, shared, self._episode)
        return (np.zeros(n_agents, np.float64), np.zeros(n_agents, np.bool_),
                np.zeros(n_agents, np.bool_), [None] * n_agents, [None] * n_agents, info)

    def _store_outputs(self, positions: Iterable[int], state: StateArrays,
                       start: StateArrays, buffers: tuple,
                       outputs: Callable[..., Any] | None = None) -> None:
        """Call ``outputs()`` for the agents at ``positions`` and fill their slots. Any
        thread may fill its own positions (slots are disjoint); a parallel runtime passes
        the thread's own ``state``/``start`` views and loads the rest once per call."""
        outputs = outputs or self.model.outputs
        agents = self.spec.agents
        rewards, terms, truncs, observations, infos, info = buffers
        extra = (info,) if self.spec.outputs_take_info else ()
        for i in positions:
            e = agents[i]
            try:
                out = outputs(e, state, start, *extra)
            except Exception as exc:
                self._raise_model_code(exc, "outputs", e, position=i)
            try:
                observations[i], rewards[i], terms[i], truncs[i], infos[i] = out
            except (TypeError, ValueError) as exc:
                err = ModelError(
                    f"outputs() of model {self.spec.name!r} for entity {e} must return "
                    f"(observation, reward, terminated, truncated, info); got "
                    f"{_short(out)} ({exc})")
                err.agent_position = i  # type: ignore[attr-defined]
                self._mark_failed()
                raise err from None

    def _step_result(self, buffers: tuple) -> StepResult:
        rewards, terms, truncs, observations, infos, _ = buffers
        return StepResult(self._step_index, self._step_index * self.spec.step_length,
                          observations, rewards, terms, truncs, infos)

    def _raise_model_code(self, exc: Exception, where: str, entity: int | None, *,
                          position: int | None = None) -> None:
        """Raise the error for ``exc`` from the model's ``where`` (``outputs``,
        ``prepare_step``, ...): ``exc`` itself if it is one of SEER's errors, else a
        :class:`ModelCodeError` caused by it. Marks the runtime failed."""
        self._mark_failed()
        err = exc if isinstance(exc, SeerError) else ModelCodeError(
            model=self.spec.name, step=self._step_index, where=where, entity=entity,
            cause=exc)
        if position is not None:
            err.agent_position = position  # type: ignore[attr-defined]
        try:
            if err is exc:
                raise exc
            raise err from exc
        finally:
            exc = err = None  # no exception -> frame -> exception cycle

    @property
    def _event_limit(self) -> int:
        """``max_events_per_step`` as an int that a hot loop can compare against."""
        limit = self.max_events_per_step
        return NO_LIMIT if limit == 0 else limit

    def _step_limit_error(self, e: int, ev: Event | None, detail: str) -> StepLimitError:
        """The error for a step that ran more than ``max_events_per_step`` events; without
        an event (a coordinator's count over several windows), it names the entity that
        emitted the most events this episode, and the time that entity had reached."""
        err = step_limit_error(self.spec.name, self.max_events_per_step, e, ev, detail,
                               text=self._limit_text)
        if ev is None:
            busiest = max(self._contexts, key=_emitted)
            err.entity, err.time = busiest.id, busiest.now
            err.emitted = busiest._counter
        return self._explain_step_limit(err)

    def _window_done(self, limit: int, e: int, t_min: float, ready: int | None = None) -> None:
        """After a window of a parallel runtime: count it; a Ctrl-C that arrived during it,
        or more events this step than ``limit`` (the count to stay at or under), ends the
        step here. ``e``, ``t_min`` and ``ready`` (its ready entities, where the runtime
        has them) name the window in the error."""
        self.windows_run += 1
        if self._interrupted:
            raise KeyboardInterrupt
        if self.events_run > limit:
            self._mark_failed()
            where = f"window at t={t_min!r}"
            if ready is not None:
                where += f" with {ready} ready entities"
            raise self._step_limit_error(e, None, where)

    def _explain_step_limit(self, err: StepLimitError) -> StepLimitError:
        """Fill in what only the runtime knows (the step, the kind's name, where the step
        started and ends) and rewrite the message with it (a worker thread made ``err``)."""
        err.step = self._step_index
        ev = err.event
        if ev is not None:
            err.kind = self._kind_name(ev[3])
        t0 = self._step_index * self.spec.step_length
        err.message = step_limit_message(
            err, (t0, t0 + self.spec.step_length),
            f"make_runtime(model, {self.name!r}, max_events_per_step=N) or "
            f"{type(self).__name__}(model, max_events_per_step=N)")
        return err

    def _mark_failed(self) -> None:
        """The episode cannot go on: the next ``step`` needs a ``reset`` first."""
        if self._status not in (_CLOSED, _BROKEN):
            self._status = _FAILED

    def _raise_failure(self, exc: BaseException) -> None:
        """Raise the error the caller should see for ``exc``, which escaped a step: a
        :class:`HandlerError` (or the :class:`ContractError` itself) when ``exc`` is tagged
        with its event, else ``exc`` unchanged."""
        ev = event_of(exc)
        try:
            if ev is None:
                if isinstance(exc, Exception):
                    self._mark_failed()
                raise exc
            err = self._handler_failed(exc, ev.target, self._kind_name(ev.kind), ev)
            if err is exc:
                raise exc
            raise err from exc
        finally:
            # The traceback's frames hold the runtime: no exception -> frame -> exception
            # cycle, so that a dropped runtime releases its threads without the collector.
            exc = err = None

    def _handler_failed(self, exc: BaseException, e: int, kind: str,
                        ev: Event | None) -> BaseException:
        """Mark the runtime failed and return the exception the caller should see."""
        self._mark_failed()
        if isinstance(exc, StepLimitError):
            return self._explain_step_limit(exc)
        if isinstance(exc, ContractError):
            exc.step = self._step_index
            exc.kind = kind
            return exc
        if isinstance(exc, Exception):
            return HandlerError(model=self.spec.name, step=self._step_index, entity=e,
                                kind=kind, event=ev, cause=exc)
        return exc  # KeyboardInterrupt, SystemExit: propagate unchanged

    def _kind_name(self, k: int) -> str:
        return self.spec.kinds[k]


def child_seed(seed_seq: np.random.SeedSequence, i: int) -> np.random.SeedSequence:
    """``seed_seq``'s ``i``-th child, as ``seed_seq.spawn`` would make it on a fresh
    sequence."""
    return np.random.SeedSequence(seed_seq.entropy, spawn_key=(*seed_seq.spawn_key, i),
                                  pool_size=seed_seq.pool_size)


def _seed_sequence(seed: Any) -> np.random.SeedSequence:
    """``seed`` as a SeedSequence, or :class:`ModelError` saying what a seed may be."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is None or (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)
                        and seed >= 0):
        return np.random.SeedSequence(None if seed is None else int(seed))
    raise ModelError(f"seed must be None, a non-negative int or a numpy SeedSequence; "
                     f"got {type(seed).__name__} {seed!r}")


def _emitted(ctx: Context) -> int:
    return ctx._counter


def _short(value: Any, limit: int = 200) -> str:
    """``repr(value)``, cut to ``limit`` characters (an observation can be huge)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"
