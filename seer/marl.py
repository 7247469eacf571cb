"""PettingZoo ``ParallelEnv`` over any Model and any runtime (``docs/design.md``, "The
PettingZoo adapter").

    from seer.marl import SeerParallelEnv
    env = SeerParallelEnv(Aircraft(800), "seer", threads=2)
    observations, infos = env.reset(seed=0)
    observations, rewards, terminations, truncations, infos = env.step(actions)

Agents are named ``f"{prefix}_{entity}"`` for the model's ``agent_entities()``. The model
supplies ``observation_space(entity)`` and ``action_space(entity)`` (gymnasium spaces); the
env caches them, so ``observation_space(agent)`` returns the same object every call.
An agent leaves ``agents`` after the step in which it terminates or is truncated (the
model may set ``max_steps``: every agent is truncated at that step).

For batched policy inference, :meth:`SeerParallelEnv.step_arrays` takes one action per
agent as a sequence or array in ``possible_agents`` order and returns stacked arrays.

Both check every action against its agent's action space before the step runs: shape,
dtype, a Box's bounds, a Discrete's or MultiDiscrete's range, NaN and inf, and in
``step`` an unknown agent or a live agent with no action. A bad action raises
:class:`ActionError` (a :class:`seer.ModelError`) that names the agent, the space, what is
wrong (which element, which bound) and the value; nothing has run, so the episode goes on
as if the call had not been made. When all agents share one Box or Discrete space the
check is a few whole-array numpy comparisons (for 800 agents, about 7 µs for one stacked
array given to ``step_arrays``, 0.16 ms for a dict of arrays given to ``step``).
``SeerParallelEnv(..., check_actions=False)`` skips it (an unknown agent name is still
refused).
"""

from __future__ import annotations

import contextlib
import reprlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from seer.errors import ModelError
from seer.model import Model
from seer.runtime import StepResult
from seer.sched import make_runtime

__all__ = ["ActionError", "SeerParallelEnv"]


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


class SeerParallelEnv(ParallelEnv):
    """A PettingZoo parallel environment stepping ``model`` on the runtime named
    ``runtime`` (see :func:`seer.make_runtime`; ``threads=None``: the runtime's default,
    2 for the parallel ones, 1 for serial). The model must define
    ``observation_space(entity)`` and ``action_space(entity)``. Actions are checked against
    the action spaces before each step (:class:`ActionError`) unless ``check_actions`` is
    False."""

    metadata = {"name": "seer_v0", "render_modes": ["rgb_array"],  # noqa: RUF012
                "is_parallelizable": True}

    def __init__(self, model: Model, runtime: str = "seer", *, threads: int | str | None = None,
                 render_mode: str | None = None, prefix: str | None = None,
                 check_actions: bool = True, **runtime_options: Any) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        _check_model(model)
        self.model = model
        #: Check every action against its agent's action space before the step (the
        #: default); False skips that check.
        self.check_actions = bool(check_actions)
        self.render_mode = render_mode
        self.runtime = make_runtime(model, runtime, threads=threads, **runtime_options)
        prefix = prefix or type(model).__name__.lower()
        self._entities = tuple(self.runtime.spec.agents)
        self.possible_agents = [f"{prefix}_{e}" for e in self._entities]
        self._entity_of = dict(zip(self.possible_agents, self._entities, strict=True))
        self._observation_spaces = dict(zip(
            self.possible_agents, _model_spaces(model, self._entities, "observation_space"),
            strict=True))
        self._action_spaces = dict(zip(
            self.possible_agents, _model_spaces(model, self._entities, "action_space"),
            strict=True))
        shared = list(self._action_spaces.values())
        self._batch = (_batch_check(shared[0]) if shared and all(
            _same_space(shared[0], space) for space in shared) else None)
        self.agents: list[str] = []
        self.max_steps = getattr(model, "max_steps", None)
        self._last: StepResult | None = None

    def observation_space(self, agent: str) -> Any:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> Any:
        return self._action_spaces[agent]

    # -- dict API ------------------------------------------------------------------------------
    def reset(self, seed: int | None = None,
              options: dict | None = None) -> tuple[dict[str, Any], dict[str, dict]]:
        result = self.runtime.reset(seed)
        self._last = result
        self.agents = list(self.possible_agents)
        observations = dict(zip(self.possible_agents, result.observations, strict=True))
        infos = dict(zip(self.possible_agents, result.infos, strict=True))
        return observations, infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """Step with ``actions``, a dict agent name -> action with one entry per agent in
        ``agents`` (actions for agents that have left are ignored). Checked first unless
        ``check_actions`` is False: a refused call raises :class:`ActionError` and changes
        nothing."""
        entity_of = self._entity_of
        live = self.agents
        if not isinstance(actions, Mapping):
            raise ActionError(f"step() takes a dict agent name -> action, got "
                              f"{_shown(actions)} (step_arrays() takes one action per agent "
                              "in possible_agents order)", value=actions)
        check = self.check_actions
        values = None
        if check and len(actions) == len(live):
            with contextlib.suppress(KeyError):  # then looked at below
                values = [actions[a] for a in live]
        if values is None:  # unknown names, missing agents, or agents that have left
            unknown = [a for a in actions if a not in entity_of]
            if unknown:
                raise self._unknown(unknown)
            missing = [a for a in live if a not in actions] if check else []
            if missing:
                space = self._action_spaces[missing[0]]
                more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
                raise ActionError(f"no action for agent {missing[0]!r}{more}: step() needs one "
                                  "for every agent in env.agents; its action space is "
                                  f"{_space_text(space)}", agent=missing[0], space=space)
        if check:
            if values is None:
                values = [actions[a] for a in live]
            self._check(live, values)
            step_actions = {entity_of[a]: v for a, v in zip(live, values, strict=True)}
        else:
            step_actions = {entity_of[a]: actions[a] for a in live if a in actions}
        result = self.runtime.step(step_actions)
        self._last = result
        truncate_all = self.max_steps is not None and result.step >= self.max_steps
        index = {a: i for i, a in enumerate(self.possible_agents)}
        observations, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        for a in live:
            i = index[a]
            observations[a] = result.observations[i]
            rewards[a] = float(result.rewards[i])
            terminations[a] = bool(result.terminations[i])
            truncations[a] = bool(result.truncations[i]) or truncate_all
            infos[a] = result.infos[i]
        self.agents = [a for a in live if not (terminations[a] or truncations[a])]
        return observations, rewards, terminations, truncations, infos

    # -- stacked fast path ---------------------------------------------------------------------
    def step_arrays(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                 np.ndarray]:
        """Step with one action per agent in ``possible_agents`` order (a sequence or an
        array with a leading agent axis). Returns ``(observations, rewards, terminations,
        truncations)`` stacked along the agent axis; observations must share one shape.
        Ignores ``agents`` (for vectorised training loops that reset on their own).
        Checked first unless ``check_actions`` is False: a refused call raises
        :class:`ActionError` and changes nothing."""
        n = len(self._entities)
        try:
            count = len(actions)
        except TypeError:
            raise ActionError(f"step_arrays() takes one action per agent in possible_agents "
                              f"order, got {_shown(actions)}", value=actions) from None
        if count != n:
            raise ActionError(f"step_arrays() needs {n} actions, one per agent in "
                              f"possible_agents order, got {count}", value=actions)
        if self.check_actions:
            self._check(self.possible_agents, actions)
        result = self.runtime.step(dict(zip(self._entities, actions, strict=True)))
        self._last = result
        return (np.stack(result.observations), result.rewards, result.terminations,
                result.truncations)

    # -- the action check ----------------------------------------------------------------------
    def _check(self, agents: Sequence[str], actions: Any) -> None:
        """Raise :class:`ActionError` for the first of ``actions`` (one per agent of
        ``agents``, in order) that is not in its agent's action space. With one Box or
        Discrete shared by all, a whole-array test first; only a failure is then looked at
        agent by agent, for the message."""
        batch = self._batch
        if not agents:
            return
        if batch is not None:
            stacked = (_as_array(actions) if isinstance(actions, np.ndarray)
                       or _items_stack(actions, batch[1]) else None)
            if stacked is not None and batch[0](stacked, len(agents)):
                return
        action_spaces = self._action_spaces
        for agent, action in zip(agents, actions, strict=True):
            space = action_spaces[agent]
            problem = _problem(space, action)
            if problem is not None:
                raise _refusal(agent, space, action, problem)

    def _unknown(self, unknown: list[Any]) -> ActionError:
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        names = self.possible_agents
        known = (f"{names[0]!r} .. {names[-1]!r}" if len(names) > 1
                 else repr(names[0]) if names else "none")
        return ActionError(f"action for unknown agent {_shown(unknown[0])}{more}: the agents "
                           f"are possible_agents ({len(names)}: {known})", agent=unknown[0])

    def observations_array(self) -> np.ndarray:
        """The latest observations stacked along the agent axis."""
        if self._last is None:
            raise RuntimeError("call reset() first")
        return np.stack(self._last.observations)

    # -- the rest ------------------------------------------------------------------------------
    def render(self) -> np.ndarray | None:
        """An RGB frame (H, W, 3) drawn by the model's ``render_frame(ax, state)``."""
        if self.render_mode is None:
            return None
        draw = getattr(self.model, "render_frame", None)
        if draw is None:
            raise NotImplementedError(f"model {self.model.name!r} has no render_frame")
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=(5, 5), dpi=80)
        canvas = FigureCanvasAgg(fig)  # off-screen, whatever the global backend is
        draw(fig.add_subplot(), self.runtime.state)
        canvas.draw()
        return np.asarray(canvas.buffer_rgba())[..., :3].copy()

    def close(self) -> None:
        self.runtime.close()

    def state(self) -> np.ndarray:
        raise NotImplementedError("no global state array; use env.runtime.state")
