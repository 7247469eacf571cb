"""What every runtime shares: state ownership, seeding, snapshots, actions and outputs.

A runtime subclass supplies only the event machinery: where emitted events go
(``_make_push``), how external events are queued (``_push_external``), how pending events
are dropped (``_clear_events``) and how the events of ``[τ_t, τ_{t+1})`` are run
(``_run``). Everything that decides *results* lives here, once, so that all runtimes agree
on it by construction (``docs/design.md``, "The runtime hierarchy").

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
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

import seer.interrupts as interrupts
from seer.errors import (
    ContractError,
    HandlerError,
    ModelCodeError,
    ModelError,
    PendingEventsError,
    RuntimeStateError,
    SeerError,
    StepLimitError,
    event_of,
    tag_event,
)
from seer.events import COUNTER_LIMIT, ORIGIN_SHIFT, Event, seq_is_emitted, seq_origin
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
from seer.trace import Trace

__all__ = ["DEFAULT_EVENTS_PER_ENTITY", "DEFAULT_MIN_EVENTS", "ActionBatch", "Runtime",
           "StepResult", "default_event_limit", "run_event", "step_limit_error"]

_NEW, _READY, _FAILED, _BROKEN, _CLOSED = "new", "ready", "failed", "broken", "closed"
_NO_KIND = object()  # no action kind checked yet
_tuple_new = tuple.__new__  # Event without its keyword-handling constructor (a C call)


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


class ActionBatch:
    """A step's checked action events as columns: event ``i`` is ``(t0, seqs[i],
    entities[i], kinds[i], payloads[i])``, in the order the model gave them.
    ``distinct``: no entity has two of them."""

    __slots__ = ("distinct", "entities", "entity_array", "kinds", "payloads", "seq_array",
                 "seqs", "t0")

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.entities: list[int] = []
        self.entity_array = np.empty(0, np.int64)  # the entities, as an array
        self.seqs: list[int] = []
        self.seq_array = np.empty(0, np.int64)  # the seqs, as an array
        self.kinds: list[int] = []
        self.payloads: list[Any] = []
        self.distinct = True

    def __len__(self) -> int:
        return len(self.entities)

    def event(self, i: int) -> Event:
        """Event ``i``, as an :class:`Event` tuple."""
        return _tuple_new(Event, (self.t0, self.seqs[i], self.entities[i], self.kinds[i],
                                  self.payloads[i]))

    def events(self) -> list[Event]:
        """All the events, as :class:`Event` tuples (:meth:`event` for each, in one pass)."""
        t0 = self.t0
        return [_tuple_new(Event, (t0, seq, e, k, payload)) for seq, e, k, payload
                in zip(self.seqs, self.entities, self.kinds, self.payloads, strict=True)]


class Runtime(ABC):
    """Common interface: ``reset(seed)``, ``step(actions)``, ``close()``; also a context
    manager. ``state`` gives read-only views of the live entity state.

    ``max_events_per_step`` (every runtime's constructor, and ``make_runtime``): a step
    that runs more events raises :class:`~seer.errors.StepLimitError` (the runtime then
    needs ``reset``). None, the default, is :func:`default_event_limit` of the model's
    entity count, far above what real models run, so that a runaway step (a self-loop with
    a tiny delay) always ends; an int ``N >= 1`` is that limit; 0 turns the guard off."""

    #: The runtime's name, as given to :func:`seer.make_runtime`.
    name: ClassVar[str] = "abstract"
    #: What STPA measured and predicted when the runtime was built with threads="auto".
    stpa: dict[str, Any] | None = None

    def __init__(self, model: Model, *, debug: bool = False,
                 max_events_per_step: int | None = None, trace: bool | Trace = False) -> None:
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
        self.max_events_per_step = _event_limit(max_events_per_step, n)
        self._limit_text = _limit_text(max_events_per_step, self.max_events_per_step, n)
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

    # -- subclass hooks ---------------------------------------------------------------
    @abstractmethod
    def _make_push(self, e: int) -> Callable[[Event], Any]:
        """The callable that ``emit`` of entity ``e``'s context hands each new event to."""

    @abstractmethod
    def _push_external(self, ev: Event) -> None:
        """Queue an action/injected event (called on the caller's thread, between steps)."""

    def _push_externals(self, batch: ActionBatch) -> None:
        """Queue a step's action events (default: :meth:`_push_external` for each); the
        coordinator runs this alone, so runtimes queue them in one batch where they can."""
        push = self._push_external
        for ev in batch.events():
            push(ev)

    @abstractmethod
    def _clear_events(self) -> None:
        """Drop every pending event (start of an episode)."""

    @abstractmethod
    def _run(self, t_end: float) -> None:
        """Run every pending event with τ < ``t_end`` in an order equivalent to κ order.

        An exception from a handler is tagged with its event (:func:`run_event`) and
        passed to :meth:`_raise_failure`."""

    # -- public API ---------------------------------------------------------------------
    @property
    def threads(self) -> int:
        return 1

    @property
    def step_index(self) -> int:
        """Number of steps taken since the last reset."""
        return self._step_index

    @property
    def time(self) -> float:
        """Model time τ_t of the next step's start."""
        return self._step_index * self.spec.step_length

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
        batch = self._actions(actions, self._step_index * self.spec.step_length)
        return self._guarded(self._step, batch)

    def close(self) -> None:
        """Release resources; the runtime cannot be used afterwards. Idempotent.

        Refused with :class:`RuntimeStateError` while another thread is inside ``reset``,
        ``step`` or ``resize`` of this runtime: close it after that call returns (from
        the thread that made it, or once it has returned)."""
        self._operate("close", self._close, None)

    def _close(self, _: None) -> None:
        if self._status != _CLOSED:
            self._status = _CLOSED
            self._release()

    def _release(self) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release what the runtime holds (threads); called once, by ``close``."""

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
        """The first Ctrl-C of an operation arrived (parallel runtimes stop their threads)."""
        self._interrupted = True

    def _guarded(self, operation: Callable[[Any], StepResult], arg: Any) -> StepResult:
        """Run ``operation(arg)`` (a reset or a step); parallel runtimes defer Ctrl-C here."""
        return operation(arg)

    def _reset(self, seed_seq: np.random.SeedSequence) -> StepResult:
        self._status = _FAILED  # until the reset completes
        self._clear_events()
        for a in self._arrays.values():
            a.fill(0)
        self._step_index = 0
        self.events_run = 0
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
        entity's id (parallel runtimes make each one on the thread that will draw from
        it: see :meth:`seer.sched.threaded.ThreadedRuntime._seed_generators_on`)."""
        for ctx in self._contexts:
            ctx.rng = np.random.default_rng(child_seed(seed_seq, ctx.id))

    def _step(self, batch: ActionBatch) -> StepResult:
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
        self._run(t_end)
        self._step_index += 1
        if self.model.strict_steps and self.pending:
            raise self._pending_error()
        result = self._outputs()
        self._status = _READY
        return result

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def stats(self) -> dict[str, Any]:
        """Counters since the last reset: events run, events emitted, cross-entity emits
        (parallel runtimes add their name, threads and windows)."""
        return {
            "events_run": self.events_run,
            "emitted": sum(c._counter for c in self._contexts),
            "cross_entity": sum(c._cross for c in self._contexts),
        }

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

    def _actions(self, actions: Any, t0: float) -> ActionBatch:
        """The events of ``actions`` at ``t0``, checked; nothing is changed here, so a
        rejected call leaves the runtime as it was (the counters move in ``_step``). They
        come as columns, not yet as :class:`Event` tuples: making a tuple of a tuple
        subclass costs about 0.25 µs, and a parallel runtime may leave that to its
        threads (:meth:`_push_externals`)."""
        spec = self.spec
        n = spec.n_entities
        try:
            items = list(self.model.action_events(actions))
        except ModelError:
            raise
        except (TypeError, ValueError) as exc:
            raise ModelError(f"actions for model {spec.name!r} were rejected by its "
                             f"action_events(): {type(exc).__name__}: {exc}") from exc
        if not items and isinstance(actions, Mapping) and actions:
            stray = next((key for key in actions if key.__class__ is not int
                          and not isinstance(key, np.integer)), None)
            if stray is not None:  # an override that skips unknown keys would drop them all
                raise ModelError(f"action for entity {stray!r} of model {spec.name!r}: "
                                 f"entity ids are integers in range({n}) (no action became "
                                 "an event; map agent names to entity ids first)")
        batch = ActionBatch(t0)
        entities, kinds, payloads = batch.entities, batch.kinds, batch.payloads
        add_entity, add_kind, add_payload = entities.append, kinds.append, payloads.append
        kind_ids = spec.kind_ids
        last_kind: Any = _NO_KIND  # the kind of the previous item, already checked
        k = -1
        for item in items:
            try:
                entity, kind, payload = item
            except (TypeError, ValueError):
                raise ModelError(f"action_events() of model {spec.name!r} must yield "
                                 f"(entity, kind, payload) triples, got {item!r}") from None
            if entity.__class__ is not int:
                if isinstance(entity, bool) or not isinstance(entity, (int, np.integer)):
                    raise ModelError(f"action for entity {entity!r} of model {spec.name!r}: "
                                     f"entity ids are integers in range({n})")
                entity = int(entity)
            if not 0 <= entity < n:
                raise ModelError(f"action for entity {entity!r} of model {spec.name!r}: "
                                 f"entity ids are integers in range({n})")
            if kind is not last_kind:
                k = (kind_ids.get(kind) if kind.__class__ is str or kind.__class__ is int
                     else None)  # not 2.0 or True for kind 2 or 1
                if k is None:
                    raise ModelError(f"action event kind {kind!r} is not a kind of model "
                                     f"{spec.name!r} {spec.kinds!r}")
                last_kind = kind
            add_entity(entity)
            add_kind(k)
            add_payload(payload)
        if entities:
            self._number_actions(batch)
        return batch

    def _number_actions(self, batch: ActionBatch) -> None:
        """Give each action its sequence number: its entity's count of action events so
        far this episode, plus its rank among the entity's actions in this batch (in
        numpy: one big int per action made in Python costs more than the whole pass)."""
        n_actions = len(batch)
        entity = np.array(batch.entities, np.int64)
        positions = np.arange(n_actions, dtype=np.int64)
        marks = self._action_marks
        marks[entity] = positions  # with repeats the last one wins: a mismatch shows them
        batch.distinct = bool((marks[entity] == positions).all())
        count = self._external_counters[entity]
        if not batch.distinct:
            seen: dict[int, int] = {}
            rank = np.zeros(n_actions, np.int64)
            for i, e in enumerate(batch.entities):
                rank[i] = seen.get(e, 0)
                seen[e] = rank[i] + 1
            count += rank
        over = np.flatnonzero(count >= COUNTER_LIMIT)
        if len(over):
            raise ModelError(f"more than {COUNTER_LIMIT} external events for entity "
                             f"{batch.entities[int(over[0])]} in one episode")
        batch.entity_array = entity
        batch.seq_array = (entity << ORIGIN_SHIFT) | count
        batch.seqs = batch.seq_array.tolist()

    @property
    def pending(self) -> int:
        """Events scheduled for later steps (after a step has completed)."""
        return 0

    def _earliest_pending(self) -> tuple[float, int] | None:
        """κ of the earliest pending event, or None (for error messages)."""
        return None

    def _pending_error(self) -> PendingEventsError:
        self._mark_failed()
        head = self._earliest_pending()
        earliest, origin = "", -1
        if head is not None:
            tau, seq = head
            origin = seq_origin(seq)
            earliest = f"; the earliest at t={tau!r}, emitted by entity {origin}"
        err = PendingEventsError(
            f"{self.pending} events are pending past the end of step {self._step_index - 1} "
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
                       start: StateArrays, buffers: tuple) -> None:
        """Call ``outputs()`` for the agents at ``positions`` and fill their slots. Any
        thread may fill its own positions (slots are disjoint); a parallel runtime passes
        the thread's own ``state``/``start`` views and loads the rest once per call."""
        outputs = self.model.outputs
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
        return _NO_LIMIT if limit == 0 else limit

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

    def _explain_step_limit(self, err: StepLimitError) -> StepLimitError:
        """Fill in what only the runtime knows (the step, the kind's name, where the step
        started and ends) and rewrite the message with it (a worker thread made ``err``)."""
        err.step = self._step_index
        ev = err.event
        if ev is not None:
            err.kind = self._kind_name(ev[3])
        t0 = self._step_index * self.spec.step_length
        err.message = _step_limit_message(
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



_NO_LIMIT = 1 << 62

#: The default event limit of a step (``max_events_per_step=None``) is
#: :func:`default_event_limit`: ``max(DEFAULT_MIN_EVENTS, DEFAULT_EVENTS_PER_ENTITY * n)``
#: for ``n`` entities, a guard against a step that never ends (a self-loop whose time
#: barely advances), sized far above what real models run. Measured on the serial runtime,
#: events in the busiest step (per entity): the benchmark sizes run BenchModel(1000) 2,029
#: (2.0), fanout 16: 17,199 (17); EmptyModel(1000, per_step=10) 11,000 (11); Aircraft(800)
#: 1,002 (1.3); PCS(40x40) 6,529 (4.1); Pursuit(256x256, 1000 + 4000) 5,318 (1.1);
#: Spread(50) 50 (0.5). Pushed knobs: Aircraft(200) with interaction and density 8: 23,116
#: (116); PCS(10x10) with step_length=3600: 35,652 (357); EmptyModel(50, per_step=1000):
#: 50,050 (1,001). seer.testing.RandomModel over the tests' range (fanout <= 3, ttl <= 4):
#: at most 55 per entity; at fanout 8, ttl 6: 189,494 for 50 (3,790). So the benchmarks
#: stay 580x below the per-entity part and every shipped or test configuration at least
#: 2.6x below it (the floor: 5x for the largest small-model step). RandomModel at fanout
#: 8 and ttl 8 is a branching process that grows 4x per generation (2.5 million events a
#: step for 50 entities, 30 s a step): it needs ``max_events_per_step=0``. A self-loop
#: reaches the floor in about 1 s (serial, seer, static, global, executor) to 3 s
#: (optimistic) on one core.
DEFAULT_EVENTS_PER_ENTITY = 10_000
DEFAULT_MIN_EVENTS = 1_000_000


def default_event_limit(n_entities: int) -> int:
    """The default ``max_events_per_step`` of a model with ``n_entities`` entities."""
    return max(DEFAULT_MIN_EVENTS, DEFAULT_EVENTS_PER_ENTITY * n_entities)


def step_limit_error(model: str, limit: int, entity: int, ev: Event | None, detail: str, *,
                     text: str | None = None) -> StepLimitError:
    """A :class:`StepLimitError` for ``ev`` on ``entity`` (the runtime fills in the step
    and the kind's name: :meth:`Runtime._explain_step_limit`). ``text`` says where the
    limit came from (default: ``max_events_per_step=<limit>``)."""
    err = StepLimitError("", model=model, entity=entity, kind=None,
                         time=ev[0] if ev is not None else 0.0, limit=limit,
                         limit_text=text or f"max_events_per_step={limit}", detail=detail,
                         event=ev, emitted=None)
    err.message = _step_limit_message(err, None)
    return err


def _step_limit_message(err: StepLimitError, step: tuple[float, float] | None,
                        how: str = "make_runtime(model, runtime, max_events_per_step=N) or "
                                   "the runtime's constructor") -> str:
    """What a :class:`StepLimitError` says: the limit and where it came from, which entity
    and event were running (or which entity emitted the most), how far model time got in
    the step ``[t0, t_end)``, and ``how`` to raise the limit."""
    ev = err.event
    if ev is not None:
        origin = seq_origin(ev[1])
        by = ("from the actions" if not seq_is_emitted(ev[1]) else "emitted by itself"
              if origin == err.entity else f"emitted by entity {origin}")
        kind = f"a {err.kind!r} event" if err.kind is not None else "an event"
        who = f"entity {err.entity} was handling {kind} {by} at t={err.time!r}"
    else:
        who = (f"entity {err.entity} emitted the most events this episode "
               f"({err.emitted}) and had reached t={err.time!r}")
    where = ""
    if step is not None:
        t0, t_end = step
        where = (f"; model time had advanced only {err.time - t0:.3g} into the step "
                 f"[{t0!r}, {t_end!r})")
    return (f"the step ran more than {err.limit} events ({err.detail}) without reaching its "
            f"end (the limit: {err.limit_text}): {who}{where}. An event loop whose time "
            "barely advances, such as an entity re-scheduling itself with a tiny delay? If "
            f"the model really needs more events per step, raise the limit: {how} "
            "(max_events_per_step=0: no limit)")


def _emitted(ctx: Context) -> int:
    return ctx._counter


def _limit_text(given: Any, limit: int, n: int) -> str:
    """How a step-limit message names the limit in force."""
    if given is None:
        return (f"max_events_per_step={limit}, the default for {n} entities: "
                f"{DEFAULT_EVENTS_PER_ENTITY} per entity, at least {DEFAULT_MIN_EVENTS}")
    return f"max_events_per_step={limit}"


def _short(value: Any, limit: int = 200) -> str:
    """``repr(value)``, cut to ``limit`` characters (an observation can be huge)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _event_limit(limit: Any, n: int) -> int:
    """``max_events_per_step`` as given to a constructor, as the limit in force: None is
    :func:`default_event_limit`, 0 no limit (kept as 0), an int >= 1 itself."""
    if limit is None:
        return default_event_limit(n)
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0:
        raise ModelError(f"max_events_per_step must be None or an int >= 0 (None: the "
                         f"default, {default_event_limit(n)} events for {n} entities; 0: no "
                         f"limit; N: at most N events per step), got {limit!r}")
    return int(limit)


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
