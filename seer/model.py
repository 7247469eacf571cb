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
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from seer.errors import (
    CausalityError,
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

__all__ = ["Context", "FieldSpec", "Model", "ModelSpec", "StateArrays", "compile_model"]

_INF = math.inf
_tuple_new = tuple.__new__
_index = operator.index

#: ``ctx._seq`` while ``init_entity`` runs: a virtual parent of depth -1, so that zero-delay
#: initial events get depth 0.
INIT_PARENT_SEQ = -(1 << DEPTH_SHIFT)


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
    #: Kind of the event that ``action_events`` makes for each entity's action, or None
    #: when the model takes no actions.
    action_kind: str | None = None

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

    # -- state ------------------------------------------------------------------------
    def state_fields(self) -> Mapping[str, tuple[Any, Any]]:
        """Per-entity fields: name -> (row shape, dtype). Defaults to ``self.fields``."""
        return self.fields

    # -- episode start ---------------------------------------------------------------
    def init_entity(self, ctx: Context) -> None:
        """Set entity ``ctx.id``'s initial row and emit its first events (at τ >= 0).
        ``ctx.snapshot`` is not available here. Default: all-zero row, no events."""

    def prepare_step(self, snapshot: StateArrays, step: int) -> Any:
        """Derived read-only data built once per step from the boundary snapshot (for
        example a spatial index), before any handler runs; handlers see it as
        ``ctx.prepared``. It must depend only on ``snapshot`` and ``step``, and handlers must
        not mutate it. Default: None (nothing is built)."""
        return None

    # -- actions ----------------------------------------------------------------------
    def action_events(self, actions: Any) -> Iterable[tuple[int, Any, Any]]:
        """Turn a joint action into ``(entity, kind, payload)`` events at the step start.

        Default: ``actions`` is None, a mapping ``entity -> action`` or a sequence with one
        action per entity; each action that is not None becomes one ``action_kind`` event
        whose payload is the action.
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
            return [(e, kind, a) for e, a in actions.items() if a is not None]
        if not isinstance(actions, Sequence | np.ndarray):
            raise ModelError(
                f"actions for model {self.name!r} must be a sequence (or array) with one "
                f"action per entity, or a mapping entity -> action; got "
                f"{type(actions).__name__}")
        if len(actions) != self.n_entities:
            raise ModelError(
                f"actions for model {self.name!r} has length {len(actions)}; expected "
                f"{self.n_entities} (one per entity) or a mapping entity -> action"
            )
        return [(e, kind, a) for e, a in enumerate(actions) if a is not None]

    # -- boundary outputs -------------------------------------------------------------
    def agent_entities(self) -> Sequence[int]:
        """Entities that are agents, in output order. Default: every entity."""
        return range(self.n_entities)

    def outputs(self, entity: int, state: StateArrays,
                start: StateArrays) -> tuple[Any, float, bool, bool, dict]:
        """``(observation, reward, terminated, truncated, info)`` of one agent entity.

        ``state`` is the state after the step, ``start`` the boundary snapshot at the step
        start (so a reward can be a difference of counters); both are read-only. Must not
        depend on anything else: outputs may be built on any thread, in any order.
        Default: the entity's rows as a dict, reward 0, never done.
        """
        return ({name: state[name][entity].copy() for name in state.names}, 0.0, False,
                False, {})


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One state field: ``shape`` is the per-entity row shape."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A validated model, compiled into the lookup tables the runtimes' hot paths use."""

    model: Model
    name: str
    n_entities: int
    kinds: tuple[str, ...]
    kind_ids: dict[Any, int]  # kind name or id -> id
    handlers: tuple[Callable[[Context, Event], None], ...]
    fields: tuple[FieldSpec, ...]
    lookahead: float
    step_length: float
    agents: tuple[int, ...]


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


class StateArrays:
    """Named full-state arrays (one row per entity), by attribute or by ``[name]``.

    The runtime hands out read-only instances: ``ctx.snapshot`` (state at the step start)
    and ``runtime.state`` (live state, read-only outside handlers).
    """

    __slots__ = ("_arrays", "names")

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        object.__setattr__(self, "_arrays", dict(arrays))
        object.__setattr__(self, "names", tuple(arrays))

    def __getattr__(self, name: str) -> np.ndarray:
        try:
            return self._arrays[name]
        except KeyError:
            raise AttributeError(f"no state field {name!r}; fields are {self.names}") from None

    def __getitem__(self, name: str) -> np.ndarray:
        return self._arrays[name]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("state arrays cannot be rebound; write through ctx.row instead")

    def __repr__(self) -> str:
        return f"StateArrays({', '.join(self.names)})"


def read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (the array itself stays writable)."""
    view = array.view()
    view.flags.writeable = False
    return view


class RowBase:
    """Base of the per-model row class: one writable view per field of one entity.

    Reading ``row.pos`` gives the view (shape = the field's row shape; 0-d for scalar
    fields). Assigning ``row.pos = value`` writes *into* the view, so ``row.hits += 1`` and
    ``row.pos = new_pos`` both update the entity's state in place.
    """

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        getattr(self, name)[...] = value

    def __repr__(self) -> str:
        return "Row(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"


def make_row_class(fields: Sequence[FieldSpec]) -> type[RowBase]:
    """A slotted row class for these fields (attribute reads are slot loads)."""
    return type("Row", (RowBase,), {"__slots__": tuple(f.name for f in fields)})


def make_row(row_class: type[RowBase], arrays: Mapping[str, np.ndarray], entity: int) -> RowBase:
    row = row_class.__new__(row_class)
    for name in row_class.__slots__:
        object.__setattr__(row, name, arrays[name][entity, ...])
    return row


class Context:
    """What a handler sees of the entity it runs on; one per entity, reused every event.

    Public: ``id``, ``row`` (writable rows of this entity), ``snapshot`` (read-only state of
    all entities at the step start), ``prepared`` (what ``Model.prepare_step`` built from
    that snapshot), ``rng`` (this entity's numpy Generator), ``now`` (τ of the event being
    handled), ``model``.

    Only the thread that currently runs the entity touches its context, so none of these
    attributes is shared mutable state between threads.
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
        "_seq",
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
        try:
            k = self._kind_ids[kind]
        except (KeyError, TypeError):
            raise self._error(UnknownKindError, f"emitted unknown event kind {kind!r}; model "
                              f"kinds are {self._kinds!r}", target=target, delay=delay,
                              emit_kind=kind) from None
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
        self._push(_tuple_new(Event, (tau, seq, target, k, payload)))

    # -- slow paths ---------------------------------------------------------------------
    def _error(self, cls: type, message: str, **details: Any) -> Exception:
        # The runtime fills in the kind being handled and the step when the error leaves it.
        return cls(message, model=self.model.name, entity=self.id, kind=None, time=self.now,
                   **details)

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
