"""The Model contract: what an environment author writes (``docs/design.md``, "The event
contract").

A model declares

* ``kinds``: the names of its event kinds; kind ``k`` is handled by the method ``on_<k>``
  with signature ``on_<k>(self, ctx, event)``;
* ``fields`` (or ``state_fields()``): per-entity state as named numpy arrays, one row per
  entity, ``{"pos": ((2,), np.float64), "hits": ((), np.int64)}``; the runtime allocates
  them zero-filled and owns them;
* ``lookahead``: the minimum delay of an event sent to *another* entity (0 allowed, which
  means same-timestamp rounds), and ``step_length``: model time per environment step;
* ``init_entity(ctx)``: set the entity's initial row and emit its first events;
* ``action_kind`` / ``action_events(actions)``: how a joint action becomes events at τ_t;
* ``outputs(entity, state, start)``: the boundary outputs of one agent entity after a step.

A handler receives a :class:`Context` for the entity it runs on. It may write only
``ctx.row`` (that entity's rows), may read ``ctx.snapshot`` (every entity's state at the
start of the step, read-only) and ``ctx.rng`` (the entity's own generator), and expresses
every effect on another entity as ``ctx.emit(target, delay, kind, payload)``. Keeping to
this is what makes any thread count give results bit-identical to serial stepping.

The contract is this module: :class:`Model`, :class:`StepInfo`, :class:`EntityGroups`,
:class:`Context` (a handler's API) and :func:`sample_actions_of`, then
:func:`compile_model`, which checks a model against it. What a model is compiled into (its
:class:`ModelSpec`, the state arrays, the row class behind ``ctx.row``) is
:mod:`seer.compile`; those names are importable from here as well.
"""

from __future__ import annotations

import bisect
import inspect
import math
import operator
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# What a model is compiled into lives in seer.compile. The names imported "as" themselves
# are not used here: they stay importable from seer.model, where the runtimes import them.
from seer.compile import INIT_PARENT_SEQ, FieldSpec, ModelSpec, RowBase, StateArrays
from seer.compile import NO_SNAPSHOT as NO_SNAPSHOT
from seer.compile import SnapshotUnavailable as SnapshotUnavailable
from seer.compile import allocate_state as allocate_state
from seer.compile import make_row as make_row
from seer.compile import make_row_class as make_row_class
from seer.compile import read_only as read_only
from seer.errors import (
    CausalityError,
    ContractError,
    LookaheadError,
    ModelError,
    NonFiniteTimeError,
    UnknownKindError,
    UnknownTargetError,
)
from seer.events import (
    COUNTER_LIMIT,
    DEPTH_LIMIT,
    DEPTH_SHIFT,
    EMITTED_BIT,
    ORIGIN_LIMIT,
    ORIGIN_SHIFT,
    Event,
)

__all__ = ["Context", "EntityGroups", "FieldSpec", "Model", "ModelSpec", "StateArrays",
           "StepInfo", "allocate_state", "compile_model", "sample_actions_of"]

# A code constant, so immortal on free-threaded CPython: math.inf is an ordinary float,
# and two threads emitting at once would contend on its reference count.
_INF = 1e999
_scratch = threading.local()  # .buffers: (name, shape, dtype) -> this thread's ndarray
_ndarray = np.ndarray
_tuple_new = tuple.__new__
_index = operator.index


class Model:
    """Base class of an environment model. Subclass it; see the module docstring.

    ``n_entities`` is fixed for the model's lifetime. Class attributes give defaults that a
    subclass may override (also per instance, before a runtime is built).
    """

    name: str = ""
    kinds: tuple[str, ...] = ()
    fields: Mapping[str, tuple[Any, Any]] = {}
    lookahead: float = 0.0
    step_length: float = 1.0
    #: Kind of the event that ``action_events`` makes for each agent's action, or None
    #: when the model takes no actions.
    action_kind: str | None = None
    #: When True, a step that leaves events pending past its end is an error
    #: (:class:`~seer.errors.PendingEventsError`) instead of carrying them to the next step.
    strict_steps: bool = False

    def __init__(self, n_entities: int) -> None:
        if isinstance(n_entities, bool) or not isinstance(n_entities, (int, np.integer)):
            raise ModelError(
                f"n_entities must be an int, got {type(n_entities).__name__} {n_entities!r}"
            )
        if not 1 <= n_entities < ORIGIN_LIMIT:
            raise ModelError(
                f"n_entities must be between 1 and {ORIGIN_LIMIT - 1}, got {n_entities}"
            )
        self.n_entities = int(n_entities)
        if not self.name:
            self.name = type(self).__name__
        # the agents' caches (:meth:`_agent_list`), made on first use
        self._agents: list[int] | None = None
        self._agent_ids: frozenset[int] | None = None

    # -- state ------------------------------------------------------------------------
    def state_fields(self) -> Mapping[str, tuple[Any, Any]]:
        """Per-entity fields: name -> (row shape, dtype). Defaults to ``self.fields``."""
        return self.fields

    # -- episode start ---------------------------------------------------------------
    def init_episode(self, rng: np.random.Generator) -> Any:
        """Shared, read-only data for the whole episode, built once per ``reset`` before
        any ``init_entity`` (for example an initial layout that places all entities from
        one generator). ``rng`` is the episode's own generator (from the reset seed,
        independent of every entity's ``ctx.rng``). Handlers, ``init_entity`` and
        ``outputs`` see the result as ``ctx.episode`` / ``info.episode``; nobody may mutate
        it. Default: None."""
        return None

    def init_entity(self, ctx: Context) -> None:
        """Set entity ``ctx.id``'s initial row and emit its first events (at τ >= 0).

        Runs for every entity in id order on the caller's thread, after
        :meth:`init_episode` (``ctx.episode``). It may emit to any entity (cross-entity
        events still need ``delay >= lookahead``). ``ctx.snapshot`` is not available here:
        the boundary snapshot is taken once every entity is initialised. Default: all-zero
        row, no events."""

    def prepare_step(self, snapshot: StateArrays, step: int) -> Any:
        """Derived read-only data built once per step from the boundary snapshot (for
        example a spatial index), before any handler runs; handlers see it as
        ``ctx.prepared``. It must depend only on ``snapshot`` and ``step``, and handlers must
        not mutate it. Default: None (nothing is built).

        ``step`` is the index of the step about to run: 0 in the first step after
        ``reset``. (:meth:`step_outputs`, :class:`StepInfo` and ``StepResult`` count the
        steps *taken*, so the same step is 1 there: it is the one that ends there.)"""
        return None

    # -- actions ----------------------------------------------------------------------
    def action_events(self, actions: Any) -> Iterable[tuple[int, Any, Any]]:
        """Turn a joint action into ``(entity, kind, payload)`` events at the step start.

        Default: ``actions`` is None, a mapping ``entity -> action`` or a sequence (or
        array) with one action per *agent*, in :meth:`agent_entities` order; each action
        that is not None becomes one ``action_kind`` event for its agent, whose payload is
        the action.
        """
        if actions is None:
            return ()
        if self.action_kind is None:
            raise ModelError(
                f"model {self.name!r} takes no actions (action_kind is None) but step() "
                f"was given {type(actions).__name__}"
            )
        kind = self.action_kind
        if isinstance(actions, Mapping):
            agents = self._agent_set()
            # Ids outside range(n_entities) are reported by the runtime, with the range.
            stray = [e for e in actions if e not in agents
                     and isinstance(e, (int, np.integer)) and 0 <= e < self.n_entities]
            if stray:
                raise ModelError(f"actions for model {self.name!r} name entities that are not "
                                 f"agents: {stray[:5]} (agents: agent_entities())")
            return [(e, kind, a) for e, a in actions.items() if a is not None]
        if isinstance(actions, (str, bytes)) or not isinstance(actions, Sequence | np.ndarray):
            raise ModelError(
                f"actions for model {self.name!r} must be a sequence (or array) with one "
                f"action per agent, or a mapping entity -> action; got "
                f"{type(actions).__name__}")
        agents = self._agent_list()
        if len(actions) != len(agents):
            raise ModelError(
                f"actions for model {self.name!r} has length {len(actions)}; expected "
                f"{len(agents)} (one per agent, in agent_entities() order) or a mapping "
                f"entity -> action"
            )
        return [(e, kind, a) for e, a in zip(agents, actions, strict=True) if a is not None]

    # The caches below are plain attributes, set in __init__ and read with ordinary loads.
    # Reading ``self.__dict__`` would turn the model's inline attribute values into a dict,
    # and CPython 3.14t then stops specialising every new ``self.x`` load in the handlers
    # (each takes the generic path: a type lookup, a dict lookup and a counted reference to
    # a value that all threads share; docs/performance.md).
    def _agent_set(self) -> frozenset[int]:
        agents = getattr(self, "_agent_ids", None)
        if agents is None:
            agents = self._agent_ids = frozenset(self._agent_list())
        return agents

    def _agent_list(self) -> list[int]:
        agents = getattr(self, "_agents", None)
        if agents is None:  # agent_entities() is fixed for the model's lifetime
            agents = self._agents = [int(a) for a in self.agent_entities()]
        return agents

    # -- boundary outputs -------------------------------------------------------------
    def agent_entities(self) -> Sequence[int]:
        """Entities that are agents, in output order. Default: every entity."""
        return range(self.n_entities)

    def step_outputs(self, state: StateArrays, start: StateArrays, step: int) -> Any:
        """What every agent's outputs share, computed once per step (after the step's
        events, before any ``outputs``), for example a shared reward or a truncation flag.
        ``outputs`` receives it as ``info.shared`` when it takes the ``info`` argument.
        Must not mutate anything. Default: None.

        ``step`` counts the steps taken: 0 after ``reset``, 1 at the end of the first step
        (whose :meth:`prepare_step` got 0), as ``StepResult.step``."""
        return None

    def outputs(self, entity: int, state: StateArrays,
                start: StateArrays) -> tuple[Any, float, bool, bool, dict]:
        """``(observation, reward, terminated, truncated, info)`` of one agent entity.

        ``state`` is the state after the step, ``start`` the boundary snapshot at the step
        start (so a reward can be a difference of counters); both are read-only. A model
        may declare a fourth parameter, ``outputs(self, entity, state, start, info)``, to
        receive a :class:`StepInfo` (the step index, :meth:`step_outputs`' result and the
        episode data). Must not depend on anything else: outputs may be built on any
        thread, in any order.
        Default: the entity's rows as a dict, reward 0, never done.
        """
        return ({name: state[name][entity].copy() for name in state.names}, 0.0, False,
                False, {})


@dataclass(frozen=True, slots=True)
class StepInfo:
    """What ``outputs(entity, state, start, info)`` receives besides the state: ``step``,
    the steps taken (0 after ``reset``, 1 after the first step, as ``StepResult.step``), the
    end time, what
    :meth:`Model.step_outputs` computed for this step, and :meth:`Model.init_episode`'s
    data."""

    step: int
    time: float
    shared: Any
    episode: Any


class EntityGroups:
    """Named, contiguous groups of entity ids, for models whose entities are of several
    sorts (pursuers and evaders, cells and users). ``EntityGroups(pursuers=8, evaders=30)``
    numbers the pursuers 0..7 and the evaders 8..37::

        groups = EntityGroups(pursuers=8, evaders=30)
        super().__init__(len(groups))
        groups.pursuers          # range(0, 8)
        groups.of(9)             # 'evaders'
        groups.index(9)          # 1: the second evader

    All groups share the model's fields (rows a group does not use stay zero); a handler
    dispatches on ``groups.of(ctx.id)`` or on id ranges. It is plain arithmetic on ids, so
    it costs nothing on the runtime's hot path.
    """

    def __init__(self, **sizes: int) -> None:
        if not sizes:
            raise ModelError("EntityGroups needs at least one group, e.g. EntityGroups(a=3)")
        self._ranges: dict[str, range] = {}
        start = 0
        for name, size in sizes.items():
            if hasattr(EntityGroups, name) or name in ("total",) or name.startswith("_"):
                raise ModelError(f"entity group name {name!r} is taken by an EntityGroups "
                                 "attribute; choose another")
            if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
                raise ModelError(f"size of entity group {name!r} must be an int >= 0, "
                                 f"got {size!r}")
            self._ranges[name] = range(start, start + int(size))
            start += int(size)
        self._starts = [r.start for r in self._ranges.values()]
        self._names = list(self._ranges)
        self.total = start

    def __getattr__(self, name: str) -> range:
        try:
            return self.__dict__["_ranges"][name]
        except KeyError:
            raise AttributeError(f"no entity group {name!r}; groups are "
                                 f"{list(self.__dict__.get('_ranges', {}))}") from None

    def __getitem__(self, name: str) -> range:
        return self._ranges[name]

    def __len__(self) -> int:
        return self.total

    def __iter__(self):
        return iter(self._ranges.items())

    def of(self, entity: int) -> str:
        """The name of the group ``entity`` belongs to."""
        if not 0 <= entity < self.total:
            raise IndexError(f"entity {entity} outside range({self.total})")
        return self._names[bisect.bisect_right(self._starts, entity) - 1]

    def index(self, entity: int) -> int:
        """``entity``'s position within its group."""
        return entity - self._ranges[self.of(entity)].start

    def __repr__(self) -> str:
        return "EntityGroups(" + ", ".join(f"{n}={len(r)}" for n, r in self._ranges.items()) + ")"


class Context:
    """What a handler sees of the entity it runs on; one per entity, reused every event.

    Public: ``id``, ``row`` (writable rows of this entity), ``snapshot`` (read-only state of
    all entities at the step start), ``prepared`` (what ``Model.prepare_step`` built from
    that snapshot), ``rng`` (this entity's numpy Generator), ``now`` (τ of the event being
    handled), ``model``.

    Only the thread that currently runs the entity touches its context, so none of these
    attributes is shared mutable state between threads. Scratch space that a handler
    needs is :meth:`scratch`: a buffer of the calling thread, never a model attribute.
    """

    __slots__ = (
        "_counter",
        "_cross",
        "_kind_ids",
        "_kinds",
        "_lookahead",
        "_n",
        "_origin_bits",
        "_push",
        "_roots",
        "_self_push",
        "_seq",
        "episode",
        "id",
        "model",
        "now",
        "prepared",
        "rng",
        "row",
        "snapshot",
    )

    def __init__(self, spec: ModelSpec, entity: int, row: RowBase,
                 push: Callable[[Event], Any]) -> None:
        self.id = entity
        self.model = spec.model
        self.row = row
        self.rng: np.random.Generator | None = None
        self.snapshot: StateArrays | None = None
        self.prepared: Any = None
        self.episode: Any = None
        self.now = 0.0
        self._seq = INIT_PARENT_SEQ
        self._counter = 0
        self._cross = 0
        self._n = spec.n_entities
        self._lookahead = spec.lookahead
        self._kind_ids = spec.kind_ids
        self._kinds = spec.kinds
        self._origin_bits = (entity << ORIGIN_SHIFT) | EMITTED_BIT
        self._push = push
        self._self_push = push
        self._roots: frozenset[int] = frozenset()  # ids of the runtime's state buffers

    def emit(self, target: int, delay: float, kind: str | int, payload: Any = None) -> None:
        """Schedule ``kind`` on entity ``target`` at ``now + delay``.

        ``delay`` must be finite and >= 0, and >= the model's lookahead when ``target`` is
        another entity. ``kind`` is a kind name or id. Raises a :class:`ContractError`
        subclass otherwise (these checks are always on: they are what keeps parallel runs
        equal to serial ones).
        """
        if delay.__class__ is not float:
            delay = self._as_delay(delay)
        if not 0.0 <= delay < _INF:
            self._bad_delay(target, delay, kind)
        now = self.now
        if target.__class__ is not int:
            target = self._as_target(target, kind)
        if target != self.id:
            if not 0 <= target < self._n:
                raise self._error(UnknownTargetError, f"event addressed to entity {target}, "
                                  f"outside range({self._n})", target=target, delay=delay,
                                  emit_kind=kind)
            if delay < self._lookahead:
                raise self._error(LookaheadError, f"lookahead violation: event to entity "
                                  f"{target} with delay {delay!r} < lookahead "
                                  f"{self._lookahead!r} (would arrive at t={now + delay!r})",
                                  target=target, delay=delay, emit_kind=kind)
            self._cross += 1
            push = self._push
        else:
            push = self._self_push
        try:
            if kind.__class__ is not str and kind.__class__ is not int:
                raise TypeError  # 2.0 and True would find kinds 2 and 1 in the dict
            k = self._kind_ids[kind]
        except (KeyError, TypeError):
            raise self._error(UnknownKindError, f"emitted unknown event kind {kind!r}; model "
                              f"kinds are {self._kinds!r} (a name, or its int index)",
                              target=target, delay=delay, emit_kind=kind) from None
        c = self._counter
        if c >= COUNTER_LIMIT:
            raise self._error(CausalityError, f"entity emitted more than {COUNTER_LIMIT} events "
                              "this episode; sequence numbers would repeat", target=target,
                              delay=delay, emit_kind=kind)
        self._counter = c + 1
        tau = now + delay
        if tau == now:
            depth = (self._seq >> DEPTH_SHIFT) + 1
            if depth >= DEPTH_LIMIT:
                raise self._error(CausalityError, f"zero-delay chain deeper than "
                                  f"{DEPTH_LIMIT - 1} events at t={now!r} (a zero-delay "
                                  f"loop?)", target=target, delay=delay, emit_kind=kind)
            seq = (depth << DEPTH_SHIFT) | self._origin_bits | c
        else:
            seq = self._origin_bits | c
        if payload.__class__ is _ndarray and payload.base is not None:
            self._check_view_payload(payload, target, kind)
        push(_tuple_new(Event, (tau, seq, target, k, payload)))

    def scratch(self, name: str, shape: int | tuple[int, ...],
                dtype: Any = np.float64) -> np.ndarray:
        """A numpy buffer of ``shape`` and ``dtype`` owned by the calling thread, for scratch
        space inside one handler call (``out=`` arguments, temporaries).

        The buffer is made on the first call with that ``(name, shape, dtype)`` on a thread
        and the same one is returned afterwards (no allocation per call), to every entity's
        handlers on that thread; two threads never get the same buffer. Its contents are
        undefined when you get it (another entity's handler used it last): write before you
        read, and keep nothing in it across calls. Do not emit it or store it (in a row, on
        the model, in a payload): copy what must outlive the call. A buffer kept on the
        model instead (``self.buf``) is shared by every thread and races on a parallel
        runtime; debug mode (``SerialRuntime(model, debug=True)``, ``seer verify``)
        reports it."""
        key = (name, shape, dtype)
        try:
            buffers = _scratch.buffers
        except AttributeError:
            buffers = _scratch.buffers = {}
        try:
            return buffers[key]
        except KeyError:
            pass
        except TypeError:
            raise ModelError(f"ctx.scratch({name!r}, {shape!r}, {dtype!r}): name, shape and "
                             "dtype must be hashable (a str, an int or tuple of ints, a "
                             "numpy dtype)") from None
        try:
            buffer = np.empty(shape, dtype)
        except (TypeError, ValueError) as exc:
            raise ModelError(f"ctx.scratch({name!r}, {shape!r}, {dtype!r}): {exc}") from None
        buffers[key] = buffer
        return buffer

    # -- slow paths ---------------------------------------------------------------------
    def _error(self, cls: type, message: str, **details: Any) -> Exception:
        # The runtime fills in the kind being handled and the step when the error leaves it.
        return cls(message, model=self.model.name, entity=self.id, kind=None, time=self.now,
                   **details)

    def _check_view_payload(self, payload: np.ndarray, target: int, kind: Any) -> None:
        # A view of entity state as a payload would let the receiver see the sender's later
        # writes (or the next step's snapshot): refused, cheaply, on every runtime.
        root = payload
        while isinstance(root.base, np.ndarray):
            root = root.base
        if id(root) in self._roots:
            raise self._error(ContractError, "payload is a view of entity state (a row or "
                              "snapshot array); emit a copy (e.g. row.pos.copy())",
                              target=target, emit_kind=kind)

    def _as_delay(self, delay: Any) -> float:
        # float("1.0") and float(True) would pass: a delay is a number, not text or a flag.
        if not isinstance(delay, (str, bytes, bool)):
            try:
                return float(delay)
            except (TypeError, ValueError):
                pass
        raise self._error(NonFiniteTimeError, f"delay must be a real number, got {delay!r}",
                          delay=delay)

    def _as_target(self, target: Any, kind: Any) -> int:
        if not isinstance(target, bool):  # operator.index(True) == 1
            try:
                return _index(target)
            except TypeError:
                pass
        raise self._error(UnknownTargetError, f"event target must be an integer entity id, "
                          f"got {target!r}", target=target, emit_kind=kind)

    def _bad_delay(self, target: Any, delay: float, kind: Any) -> None:
        if math.isnan(delay) or math.isinf(delay):
            raise self._error(NonFiniteTimeError, f"emitted event with non-finite delay "
                              f"{delay!r} (to entity {target})", target=target, delay=delay,
                              emit_kind=kind)
        raise self._error(CausalityError, f"emitted event into the past: delay {delay!r} < 0 "
                          f"(to entity {target}, would arrive at t={self.now + delay!r})",
                          target=target, delay=delay, emit_kind=kind)


def sample_actions_of(model: Any) -> Callable[[int], Any]:
    """The model's optional ``sample_actions(step)`` (each step's joint action, which the
    tools that run a model on their own use: ``seer verify``, ``seer bench``, ``seer
    trace``, the demo, STPA's preflight), or a callable giving no actions when the model
    has none (then only the events ``init_entity`` emits run)."""
    sample = getattr(model, "sample_actions", None)
    return sample if callable(sample) else _no_actions


def _no_actions(step: int) -> None:
    return None


# -- checking a model against the contract -------------------------------------------------
def _positive_finite(model: Model, attr: str, allow_zero: bool) -> float:
    value = getattr(model, attr)
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ModelError(f"{attr} of model {model.name!r} must be a number, got {value!r}") \
            from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ModelError(f"{attr} of model {model.name!r} must be finite and {bound}, "
                         f"got {value!r}")
    return value


def compile_model(model: Model) -> ModelSpec:
    """Validate ``model`` and build its :class:`ModelSpec`; raise :class:`ModelError`
    naming the offending attribute otherwise."""
    if not isinstance(model, Model):
        raise ModelError(f"expected a seer.Model instance, got {type(model).__name__}")
    if not hasattr(model, "n_entities"):
        raise ModelError(f"model {type(model).__name__} did not call Model.__init__")
    name = model.name
    kinds = tuple(model.kinds)
    if not kinds:
        raise ModelError(f"model {name!r} declares no event kinds (set kinds = (...))")
    if len(set(kinds)) != len(kinds) or not all(isinstance(k, str) and k for k in kinds):
        raise ModelError(f"kinds of model {name!r} must be distinct non-empty strings, "
                         f"got {kinds!r}")
    handlers = []
    for k in kinds:
        handler = getattr(model, "on_" + k, None)
        if not callable(handler):
            raise ModelError(f"model {name!r} declares kind {k!r} but has no handler "
                             f"method on_{k}(self, ctx, event)")
        handlers.append(handler)
    kind_ids: dict[Any, int] = {}
    for i, k in enumerate(kinds):
        kind_ids[k] = i
        kind_ids[i] = i
    if model.action_kind is not None and model.action_kind not in kinds:
        raise ModelError(f"action_kind {model.action_kind!r} of model {name!r} is not one of "
                         f"its kinds {kinds!r}")

    raw_fields = model.state_fields()
    if not isinstance(raw_fields, Mapping):
        raise ModelError(f"state_fields() of model {name!r} must return a mapping "
                         "name -> (shape, dtype)")
    fields = []
    for fname, spec in raw_fields.items():
        if not isinstance(fname, str) or not fname.isidentifier() or fname.startswith("_"):
            raise ModelError(f"state field name {fname!r} of model {name!r} must be a public "
                             "Python identifier")
        try:
            shape, dtype = spec
            shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
            shape = tuple(_index(s) for s in shape)
            dtype = np.dtype(dtype)
        except (TypeError, ValueError) as exc:
            raise ModelError(f"state field {fname!r} of model {name!r} must be "
                             f"(shape, dtype), got {spec!r}: {exc}") from None
        if any(s < 1 for s in shape):
            raise ModelError(f"state field {fname!r} of model {name!r} has a non-positive "
                             f"dimension in shape {shape}")
        if dtype.hasobject:
            raise ModelError(f"state field {fname!r} of model {name!r} has object dtype; "
                             "state must be plain numbers so it can be shared and compared")
        if dtype.kind in "mMV":  # not every runtime can share them (a buffer refuses M, m)
            raise ModelError(f"state field {fname!r} of model {name!r} has dtype {dtype}; "
                             "fields hold bools, numbers or fixed-size strings (store a "
                             "datetime or timedelta as an int64 count, a record as one "
                             "field per member)")
        fields.append(FieldSpec(fname, shape, dtype))
    if not fields:
        raise ModelError(f"model {name!r} declares no state fields")

    agents = tuple(int(_index(a)) for a in model.agent_entities())
    bad = [a for a in agents if not 0 <= a < model.n_entities]
    if bad:
        raise ModelError(f"agent_entities() of model {name!r} names entities outside "
                         f"range({model.n_entities}): {bad[:5]}")
    if len(set(agents)) != len(agents):
        raise ModelError(f"agent_entities() of model {name!r} repeats an entity")

    return ModelSpec(
        outputs_take_info=_takes_info(model, name),
        has_step_outputs=type(model).step_outputs is not Model.step_outputs,
        has_init_episode=type(model).init_episode is not Model.init_episode,
        model=model,
        name=name,
        n_entities=model.n_entities,
        kinds=kinds,
        kind_ids=kind_ids,
        handlers=tuple(handlers),
        fields=tuple(fields),
        lookahead=_positive_finite(model, "lookahead", allow_zero=True),
        step_length=_positive_finite(model, "step_length", allow_zero=False),
        agents=agents,
    )


def _takes_info(model: Model, name: str) -> bool:
    """Whether ``model.outputs`` is ``outputs(entity, state, start, info)`` (four
    positional parameters) rather than ``outputs(entity, state, start)``."""
    try:
        params = list(inspect.signature(model.outputs).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if len(required) not in (3, 4) or len(positional) < 3:
        raise ModelError(f"outputs() of model {name!r} must take (entity, state, start) or "
                         f"(entity, state, start, info); it takes {len(positional)} arguments")
    # A fourth parameter is the StepInfo when it has no default or is named info.
    return len(required) == 4 or (len(positional) >= 4 and positional[3].name == "info")
