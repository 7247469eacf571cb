"""Gymnasium spaces of a model's agents and the check of actions against them, shared by
:class:`seer.marl.SeerParallelEnv` and :class:`seer.vector.SeerVectorEnv`.

:class:`AgentSpaces` names a model's agents ``f"{prefix}_{entity}"``, asks the model for
``observation_space(entity)`` and ``action_space(entity)`` once each, and checks actions:
shape, dtype, a Box's bounds, a Discrete's or MultiDiscrete's range, NaN and inf. A bad
action raises :class:`ActionError` (a :class:`seer.ModelError`) naming the agent, the
space, what is wrong and the value. With one Box or Discrete shared by every agent the
check is a few whole-array numpy comparisons; only a failure is looked at agent by agent.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from seer.errors import ModelError
from seer.model import Model

__all__ = ["ActionError", "AgentSpaces"]


class ActionError(ModelError):
    """An action :class:`SeerParallelEnv` refused before the step ran: the episode is as it
    was. ``agent`` is the agent's name, ``space`` its action space (None for an unknown
    agent) and ``value`` the action given (None when it is missing)."""

    def __init__(self, message: str, *, agent: Any = None, space: Any = None,
                 value: Any = None) -> None:
        super().__init__(message)
        self.agent = agent
        self.space = space
        self.value = value


# -- what a model must define ---------------------------------------------------------------------
_SPACES = ("observation_space", "action_space")
_SPACES_EXAMPLE = """\
    class {cls}(seer.Model):
        ...
        def observation_space(self, entity):  # what outputs() returns as the observation
            return gymnasium.spaces.Box(-np.inf, np.inf, (6,), np.float32)

        def action_space(self, entity):  # what one agent's action may be
            return gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)  # or Discrete(5)"""


def _model_spaces(model: Model, entities: Sequence[Any], method: str) -> list[Any]:
    """``model.<method>(e)`` for every agent entity, each checked to be a gymnasium space."""
    make = getattr(model, method)
    found = []
    for entity in entities:
        space = make(entity)
        if not isinstance(space, spaces.Space):
            raise ModelError(f"{type(model).__name__}.{method}({entity!r}) returned "
                             f"{_shown(space)}, not a gymnasium space (gymnasium.spaces.Box, "
                             "Discrete, MultiDiscrete, ...); SeerParallelEnv needs one per "
                             "agent entity")
        found.append(space)
    return found


def _check_model(model: Model) -> None:
    """Refuse a model without the two space methods, saying how to define them."""
    missing = [m for m in _SPACES if not callable(getattr(model, m, None))]
    if not missing:
        return
    cls = type(model).__name__
    name = getattr(model, "name", cls)
    defined = "".join(f" ({cls}.{m} is a {type(getattr(model, m)).__name__}, not a method)"
                      for m in missing if hasattr(model, m))
    raise ModelError(
        f"SeerParallelEnv needs model {name!r} to define "
        f"{' and '.join(f'{m}(self, entity)' for m in missing)}{defined}: the methods "
        "observation_space(self, entity) and action_space(self, entity) each return a "
        "gymnasium space for one agent entity (one of agent_entities()), and are called "
        "once per agent when the env is built; the action space is also what actions are "
        f"checked against. For example:\n{_SPACES_EXAMPLE.format(cls=cls)}")


# -- the action check ----------------------------------------------------------------------------
_REPR = reprlib.Repr()
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 60, 60, 40


def _shown(value: Any) -> str:
    """``repr(value)`` on one line, at most about 60 characters."""
    return " ".join(_REPR.repr(value).split())


def _space_text(space: Any) -> str:
    text = " ".join(str(space).split())
    return text if len(text) <= 100 else text[:97] + "..."


def _number(x: Any) -> str:
    return repr(x.item() if isinstance(x, np.generic) else x)


def _element(index: tuple[int, ...]) -> str:
    return f"element [{', '.join(map(str, index))}]" if index else "the value"


def _first(mask: np.ndarray) -> tuple[int, ...] | None:
    """The index of the first True in ``mask``, or None."""
    if not mask.any():
        return None
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape))


def _kinds(dtype: np.dtype) -> str | None:
    """The array dtype kinds a Box of ``dtype`` takes (they cast to it within a kind):
    numbers into a float Box, integers into an integer one; bool only into a bool one."""
    return {"f": "iuf", "i": "iu", "u": "iu", "b": "b"}.get(dtype.kind)


def _as_array(action: Any) -> np.ndarray | None:
    if isinstance(action, np.ndarray):
        return action
    try:
        return np.asarray(action)
    except (TypeError, ValueError, OverflowError):
        return None


def _numeric_problem(arr: np.ndarray | None, action: Any, shape: tuple[int, ...],
                     kinds: str, wanted: str) -> str | None:
    if arr is None:
        return f"a {type(action).__name__} that is not an array of numbers"
    if arr.dtype.kind not in kinds:
        what = "not numeric: " if arr.dtype.kind in "USOVMm" else ""
        return f"{what}dtype {arr.dtype} does not cast to the space's {wanted}"
    if arr.shape != shape:
        return f"shape {arr.shape}, the space's is {shape}"
    return None


def _box_problem(space: spaces.Box, action: Any) -> str | None:
    arr = _as_array(action)
    kinds = _kinds(space.dtype)
    if kinds is None:  # a complex or other unusual Box: gymnasium decides
        return None if space.contains(action) else "not in the space (its contains() is False)"
    problem = _numeric_problem(arr, action, space.shape, kinds, str(space.dtype))
    if problem is not None:
        return problem
    if arr.dtype.kind == "f":
        at = _first(~np.isfinite(arr))
        if at is not None:
            return f"{_element(at)} is {_number(arr[at])}, not a finite number"
    below = arr < space.low
    at = _first(below | (arr > space.high))
    if at is not None:
        side, bound = ("below the low", space.low) if below[at] else ("above the high", space.high)
        return f"{_element(at)} is {_number(arr[at])}, {side} bound {_number(bound[at])}"
    if space.dtype.kind == "f" and arr.dtype.kind == "f" \
            and arr.dtype.itemsize > space.dtype.itemsize:
        at = _first(np.abs(arr) > np.finfo(space.dtype).max)
        if at is not None:
            return f"{_element(at)} is {_number(arr[at])}, beyond the range of {space.dtype}"
    return None


def _discrete_problem(space: spaces.Discrete, action: Any) -> str | None:
    start, n = int(space.start), int(space.n)
    if isinstance(action, np.ndarray):
        if action.shape != ():
            return f"an array of shape {action.shape}, not one int"
        if action.dtype.kind not in "iu":
            return f"dtype {action.dtype}, not an integer"
    elif isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        return f"a {type(action).__name__}, not an int"
    if not start <= int(action) < start + n:
        return f"{int(action)} is outside {start}..{start + n - 1}"
    return None


def _multi_problem(space: spaces.MultiDiscrete | spaces.MultiBinary,
                   action: Any) -> str | None:
    arr = _as_array(action)
    binary = isinstance(space, spaces.MultiBinary)
    problem = _numeric_problem(arr, action, space.shape, "biu" if binary else "iu",
                               "0/1 values" if binary else "integers")
    if problem is not None:
        return problem
    low, high = (0, 2) if binary else (space.start, space.start + space.nvec)
    at = _first((arr < low) | (arr >= high))
    if at is None:
        return None
    top = 1 if binary else _number(np.broadcast_to(high, arr.shape)[at] - 1)
    bottom = 0 if binary else _number(np.broadcast_to(low, arr.shape)[at])
    return f"{_element(at)} is {_number(arr[at])}, outside {bottom}..{top}"


def _problem(space: Any, action: Any) -> str | None:
    """What is wrong with ``action`` in ``space`` (which element, which bound), or None."""
    if isinstance(space, spaces.Box):
        return _box_problem(space, action)
    if isinstance(space, spaces.Discrete):
        return _discrete_problem(space, action)
    if isinstance(space, (spaces.MultiDiscrete, spaces.MultiBinary)):
        return _multi_problem(space, action)
    try:
        inside = bool(space.contains(action))
    except Exception:  # a value contains() cannot even look at is not in the space
        inside = False
    return None if inside else "not in the space (its contains() is False)"


def _refusal(agent: str, space: Any, action: Any, problem: str) -> ActionError:
    return ActionError(f"action for agent {agent!r} refused by its action space "
                       f"{_space_text(space)}: {problem}; got {_shown(action)}",
                       agent=agent, space=space, value=action)


def _same_space(a: Any, b: Any) -> bool:
    """Exactly the same Box or Discrete (gymnasium's == compares bounds with a tolerance)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, spaces.Box):
        return (a.shape == b.shape and a.dtype == b.dtype
                and np.array_equal(a.low, b.low) and np.array_equal(a.high, b.high))
    if isinstance(a, spaces.Discrete):
        return int(a.n) == int(b.n) and int(a.start) == int(b.start)
    return False


def _batch_check(space: Any) -> tuple[Callable[[np.ndarray, int], bool], str] | None:
    """For one Box or Discrete shared by every agent: a whole-array test that ``n``
    stacked actions all lie in it (True), and the dtype kinds the space takes; None for
    other spaces. A False is explained agent by agent by :func:`_problem`."""
    if isinstance(space, spaces.Box):
        kinds = _kinds(space.dtype)
        if kinds is None:
            return None
        low, high = space.low, space.high
        if space.dtype.kind == "f":  # an infinite bound still refuses inf, and values
            top = np.finfo(space.dtype).max  # the space's dtype cannot hold
            low = np.where(np.isfinite(low), low, -top).astype(space.dtype)
            high = np.where(np.isfinite(high), high, top).astype(space.dtype)
        shape = space.shape

        def box(arr: np.ndarray, n: int) -> bool:
            return (arr.shape == (n, *shape) and arr.dtype.kind in kinds
                    and bool((arr >= low).all()) and bool((arr <= high).all()))
        return box, kinds
    if isinstance(space, spaces.Discrete):
        start, stop = int(space.start), int(space.start + space.n)

        def discrete(arr: np.ndarray, n: int) -> bool:
            return (arr.shape == (n,) and arr.dtype.kind in "iu"
                    and bool((arr >= start).all()) and bool((arr < stop).all()))
        return discrete, "iu"
    return None


def _items_stack(actions: Sequence[Any], kinds: str) -> bool:
    """Whether stacking ``actions`` keeps what the per-agent check would see: np.asarray
    reads a bool, a list of bools or a bool array among numbers as numbers. (A bool inside
    a list that also holds other numbers is read as a number by both checks.)"""
    classes = {a.__class__ for a in actions}
    if list in classes or tuple in classes:
        classes |= {x.__class__ for a in actions if a.__class__ in (list, tuple) for x in a}
    if bool in classes or np.bool_ in classes:
        return "b" in kinds
    if np.ndarray in classes:
        return {a.dtype.kind for a in actions if a.__class__ is np.ndarray} <= set(kinds)
    return True


class AgentSpaces:
    """``model``'s agents, named ``f"{prefix}_{entity}"`` (``prefix``: the model class's
    name in lower case by default), with their spaces; :meth:`check` refuses an action
    outside its agent's action space. The model must define both space methods."""

    def __init__(self, model: Model, entities: Sequence[Any], prefix: str | None = None
                 ) -> None:
        _check_model(model)
        prefix = prefix or type(model).__name__.lower()
        self.entities = tuple(entities)
        self.possible_agents = [f"{prefix}_{e}" for e in self.entities]
        self.entity_of = dict(zip(self.possible_agents, self.entities, strict=True))
        self.observation_spaces = dict(zip(
            self.possible_agents, _model_spaces(model, self.entities, "observation_space"),
            strict=True))
        self.action_spaces = dict(zip(
            self.possible_agents, _model_spaces(model, self.entities, "action_space"),
            strict=True))
        shared = list(self.action_spaces.values())
        self.batch = (_batch_check(shared[0]) if shared and all(
            _same_space(shared[0], space) for space in shared) else None)

    def observation_space(self, agent: str) -> Any:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> Any:
        return self.action_spaces[agent]

    def check(self, agents: Sequence[str], actions: Any) -> None:
        """Raise :class:`ActionError` for the first of ``actions`` (one per agent of
        ``agents``, in order) that is not in its agent's action space. With one Box or
        Discrete shared by all, a whole-array test first; only a failure is then looked at
        agent by agent, for the message."""
        batch = self.batch
        if not agents:
            return
        if batch is not None:
            stacked = (_as_array(actions) if isinstance(actions, np.ndarray)
                       or _items_stack(actions, batch[1]) else None)
            if stacked is not None and batch[0](stacked, len(agents)):
                return
        action_spaces = self.action_spaces
        for agent, action in zip(agents, actions, strict=True):
            space = action_spaces[agent]
            problem = _problem(space, action)
            if problem is not None:
                raise _refusal(agent, space, action, problem)
