"""What every runtime shares: state ownership, seeding, snapshots, actions and outputs.

A runtime subclass supplies only the event machinery: where emitted events go
(``_make_push``), how external events are queued (``_push_external``), how pending events
are dropped (``_clear_events``) and how the events of ``[τ_t, τ_{t+1})`` are run
(``_run``). Everything that decides *results* lives here, once, so that all runtimes agree
on it by construction (``docs/design.md``, "The runtime hierarchy").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from seer.errors import (
    ContractError,
    HandlerError,
    ModelError,
    RuntimeStateError,
    event_of,
    tag_event,
)
from seer.events import COUNTER_LIMIT, ORIGIN_SHIFT, Event, make_event
from seer.model import (
    INIT_PARENT_SEQ,
    Context,
    Model,
    ModelSpec,
    StateArrays,
    compile_model,
    make_row,
    make_row_class,
    read_only,
)

__all__ = ["Runtime", "StepResult", "run_event"]

_NEW, _READY, _FAILED, _CLOSED = "new", "ready", "failed", "closed"


@dataclass(slots=True)
class StepResult:
    """Boundary outputs after ``reset`` (``step == 0``) or after a step.

    Lists and arrays are in ``model.agent_entities()`` order. After ``reset`` the rewards
    are zero and terminations/truncations are whatever the model reports.
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
    """
    ctx.now = ev[0]
    ctx._seq = ev[1]
    try:
        handlers[ev[3]](ctx, ev)
    except BaseException as exc:
        tag_event(exc, ev)
        raise


class Runtime(ABC):
    """Common interface: ``reset(seed)``, ``step(actions)``, ``close()``; also a context
    manager. ``state`` gives read-only views of the live entity state."""

    #: The runtime's name, as given to :func:`seer.make_runtime`.
    name: ClassVar[str] = "abstract"

    def __init__(self, model: Model, *, debug: bool = False) -> None:
        self.spec: ModelSpec = compile_model(model)
        self.model = model
        self.debug = bool(debug)
        self._status = _NEW
        self._step_index = 0
        self.events_run = 0
        n = self.spec.n_entities
        self._arrays = {f.name: np.zeros((n, *f.shape), f.dtype) for f in self.spec.fields}
        self._start_arrays = {f.name: np.zeros((n, *f.shape), f.dtype) for f in self.spec.fields}
        self.state = StateArrays({k: read_only(v) for k, v in self._arrays.items()})
        self.snapshot = StateArrays({k: read_only(v) for k, v in self._start_arrays.items()})
        row_class = make_row_class(self.spec.fields)
        self._contexts: list[Context] = [
            Context(self.spec, e, make_row(row_class, self._arrays, e), self._make_push(e))
            for e in range(n)
        ]
        self._external_counters = [0] * n
        self._handlers = self.spec.handlers
        self._prepares = type(model).prepare_step is not Model.prepare_step

    # -- subclass hooks ---------------------------------------------------------------
    @abstractmethod
    def _make_push(self, entity: int) -> Callable[[Event], Any]:
        """The callable that ``emit`` of ``entity``'s context hands each new event to."""

    @abstractmethod
    def _push_external(self, event: Event) -> None:
        """Queue an action/injected event (called on the caller's thread, between steps)."""

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
        order, and return the initial outputs."""
        self._check_open()
        self._status = _FAILED  # until the reset completes
        seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        self._clear_events()
        for a in self._arrays.values():
            a.fill(0)
        self._step_index = 0
        self.events_run = 0
        self._external_counters = [0] * self.spec.n_entities
        init = self.model.init_entity
        for ctx, child in zip(self._contexts, seq.spawn(self.spec.n_entities), strict=True):
            ctx.rng = np.random.default_rng(child)
            ctx.snapshot = None
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

    def step(self, actions: Any = None) -> StepResult:
        """Inject the actions as events at τ_t, run every event with τ in [τ_t, τ_{t+1}),
        and return the boundary outputs. After an exception the runtime needs ``reset``."""
        if self._status != _READY:
            self._check_open()
            raise RuntimeStateError(
                f"{type(self).__name__}.step() needs reset() first"
                + (" (the previous step failed)" if self._status == _FAILED else "")
            )
        spec = self.spec
        t0 = self._step_index * spec.step_length
        t1 = (self._step_index + 1) * spec.step_length
        self._status = _FAILED  # until the step completes
        self._take_snapshot()
        if self._prepares:
            prepared = self.model.prepare_step(self.snapshot, self._step_index)
            for ctx in self._contexts:
                ctx.prepared = prepared
        self._inject_actions(actions, t0)
        self._run(t1)
        self._step_index += 1
        result = self._outputs()
        self._status = _READY
        return result

    def close(self) -> None:
        """Release resources; the runtime cannot be used afterwards. Idempotent."""
        self._status = _CLOSED

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

    def _inject_actions(self, actions: Any, t0: float) -> None:
        spec = self.spec
        n = spec.n_entities
        counters = self._external_counters
        for item in self.model.action_events(actions):
            try:
                entity, kind, payload = item
            except (TypeError, ValueError):
                raise ModelError(f"action_events() of model {spec.name!r} must yield "
                                 f"(entity, kind, payload) triples, got {item!r}") from None
            if isinstance(entity, bool) or not isinstance(entity, (int, np.integer)) \
                    or not 0 <= entity < n:
                raise ModelError(f"action for entity {entity!r} of model {spec.name!r}: "
                                 f"entity ids are integers in range({n})")
            entity = int(entity)
            k = spec.kind_ids.get(kind) if isinstance(kind, (str, int)) else None
            if k is None:
                raise ModelError(f"action event kind {kind!r} is not a kind of model "
                                 f"{spec.name!r} {spec.kinds!r}")
            c = counters[entity]
            if c >= COUNTER_LIMIT:
                raise ModelError(f"more than {COUNTER_LIMIT} external events for entity "
                                 f"{entity} in one episode")
            counters[entity] = c + 1
            self._push_external(make_event(t0, (entity << ORIGIN_SHIFT) | c, entity, k,
                                           payload))

    def _outputs(self) -> StepResult:
        buffers = self._output_buffers()
        self._store_outputs(range(len(self.spec.agents)), self.state, self.snapshot, buffers)
        return self._step_result(buffers)

    def _output_buffers(self) -> tuple:
        """``(rewards, terminations, truncations, observations, infos)``, one slot per
        agent, filled by :meth:`_store_outputs`."""
        k = len(self.spec.agents)
        return (np.zeros(k, np.float64), np.zeros(k, np.bool_), np.zeros(k, np.bool_),
                [None] * k, [None] * k)

    def _store_outputs(self, positions: Iterable[int], state: StateArrays,
                       start: StateArrays, buffers: tuple) -> None:
        """Call ``outputs()`` for the agents at ``positions`` and fill their slots. Any
        thread may fill its own positions (slots are disjoint); a parallel runtime passes
        the thread's own ``state``/``start`` views and loads the rest once per call."""
        outputs = self.model.outputs
        agents = self.spec.agents
        rewards, terms, truncs, observations, infos = buffers
        for i in positions:
            entity = agents[i]
            out = outputs(entity, state, start)
            try:
                observations[i], rewards[i], terms[i], truncs[i], infos[i] = out
            except (TypeError, ValueError) as exc:
                raise ModelError(
                    f"outputs() of model {self.spec.name!r} for entity {entity} must return "
                    f"(observation, reward, terminated, truncated, info); got {out!r} ({exc})"
                ) from None

    def _step_result(self, buffers: tuple) -> StepResult:
        rewards, terms, truncs, observations, infos = buffers
        return StepResult(self._step_index, self._step_index * self.spec.step_length,
                          observations, rewards, terms, truncs, infos)

    def _mark_failed(self) -> None:
        """The episode cannot go on: the next ``step`` needs a ``reset`` first."""
        if self._status != _CLOSED:
            self._status = _FAILED

    def _raise_failure(self, exc: BaseException) -> None:
        """Raise the error the caller should see for ``exc``, which escaped a step: a
        :class:`HandlerError` (or the :class:`ContractError` itself) when ``exc`` is tagged
        with its event, else ``exc`` unchanged."""
        ev = event_of(exc)
        if ev is None:
            if isinstance(exc, Exception):
                self._mark_failed()
            raise exc
        err = self._handler_failed(exc, ev[2], self._kind_name(ev[3]), ev)
        if err is exc:
            raise exc
        raise err from exc

    def _handler_failed(self, exc: BaseException, entity: int, kind: str,
                        event: Event | None) -> BaseException:
        """Mark the runtime failed and return the exception the caller should see."""
        self._mark_failed()
        if isinstance(exc, ContractError):
            exc.step = self._step_index
            exc.kind = kind
            return exc
        if isinstance(exc, Exception):
            return HandlerError(model=self.spec.name, step=self._step_index, entity=entity,
                                kind=kind, event=event, cause=exc)
        return exc  # KeyboardInterrupt, SystemExit: propagate unchanged

    def _kind_name(self, k: int) -> str:
        return self.spec.kinds[k]

