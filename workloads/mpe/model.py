"""Spread: mpe2's ``simple_spread_v3`` (Multi Particle Environments) as a SEER model.

``N`` agents (discs of radius 0.15) and ``N`` landmarks in the plane. Each step every agent
pushes with its action (5 units along one axis, or not at all); every pair of agents pushes
apart with mpe2's soft contact force; velocity is damped and integrated with ``dt = 0.1``.
Agents are rewarded together for covering the landmarks and each is penalised for every
agent it overlaps.

Entities are mpe2's ``world.entities``: the agents first (entity ``i`` is ``agent_i``), then
the landmarks (entity ``N + k`` is landmark ``k``; ``Spread.groups``). State: ``pos`` and
``vel``, one ``(2,)`` float64 row each; a landmark's row is set at reset and never changes
(it has no events), and its ``vel`` stays zero. One step ``t`` is one event per agent:
``move`` at ``τ = t`` (the action event) computes the agent's contact force from every
other agent's step-start position (``ctx.snapshot``) and integrates its own row. No event
goes between entities, so ``lookahead = step_length``: each step is a single window.
:meth:`Spread.step_outputs` computes the shared part of the reward once per step;
:meth:`Spread.outputs` builds each agent's observation.

What makes the results bit-identical to mpe2 (floating-point addition is not associative,
so the order of every sum is mpe2's):

* **Contact forces.** mpe2 loops over pairs ``a < b`` and adds ``+F(a, b)`` to ``a`` and
  ``-F(a, b)`` to ``b``, each onto the running total, which starts at the action force. So
  agent ``i`` sums, in this order: its action force, ``-F(j, i)`` for ``j < i``,
  ``F(i, j)`` for ``j > i``. ``-F(j, i)`` equals ``F(i, j)`` bit for bit (IEEE rounding is
  symmetric in sign), so the handler computes ``F(i, j)`` for every ``j`` at once and sums
  the rows with ``np.cumsum`` (a sequential sum, unlike ``np.sum``'s pairwise one), action
  force first. The row ``j = i`` is made an exact ``0.0``, which leaves the sum unchanged.
  ``F`` is mpe2's expression, operation for operation:
  ``100 * d / dist * (logaddexp(0, -(dist - 0.3) / 1e-3) * 1e-3)`` with ``d = p_i - p_j``.
* **Integration.** ``pos += vel * 0.1``, then ``vel = vel * 0.75``, then
  ``vel += force * 0.1`` (mpe2 divides by the mass 1.0 first: exact).
* **Global reward.** ``0 - min_a dist(a, l_0) - min_a dist(a, l_1) - ...``, subtracted
  landmark by landmark in Python, not with ``np.sum``.
* **Reward.** ``global * (1 - local_ratio) + (0.0 - collisions) * local_ratio``, then
  ``0 + reward`` (PettingZoo's parallel wrapper adds each agent's reward onto an int 0,
  which turns a ``-0.0`` into ``0.0``).
* **Observations** are built in float64 and cast to float32, as mpe2 does:
  ``[vel, pos, landmark - pos (each), other - pos (each other agent), 0 (2 per other)]``.

Differences from mpe2:

* The initial layout comes from the runtime's episode generator (a child of the reset
  seed), drawn in mpe2's order (each agent's ``uniform(-1, 1, 2)``, then each landmark's):
  ``init_episode(np.random.default_rng(seed))`` gives mpe2's ``reset(seed=seed)`` layout
  exactly; a runtime's ``reset(seed)`` gives another. Set :attr:`Spread.initial_positions`
  to start from given positions.
* Discrete actions only (``continuous_actions=False``, mpe2's default); no partial
  observability (``num_agent_neighbors``, ``num_landmark_neighbors``), curriculum,
  ``benchmark_data`` or rendering. An agent with no action (None, or missing from a
  mapping) takes action 0 (no push); mpe2 needs one for every agent.
* After the episode ends the runtime can still be stepped (``truncated`` stays True);
  :class:`seer.marl.SeerParallelEnv` removes every agent, as PettingZoo does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import seer
from seer.errors import ModelError
from workloads._args import flag, integer, real

__all__ = ["Episode", "Shared", "Spread", "pair_distances", "shared_outputs"]

# mpe2's constants (World, Agent, Scenario and SimpleEnv defaults for simple_spread).
DT = 0.1
DAMPING = 0.25
KEEP = 1 - DAMPING  # mpe2 computes (1 - damping) each step: 0.75, exact
CONTACT_FORCE = 1e2
CONTACT_MARGIN = 1e-3
SIZE = 0.15
DIST_MIN = SIZE + SIZE
SENSITIVITY = 5.0
CAPTURE_RADIUS = 0.1
DIM_C = 2  # silent agents: their communication state is two zeros
N_ACTIONS = 5
#: Action -> unit push (no_action, left, right, down, up), times SENSITIVITY.
PUSH = ((0.0, 0.0), (-1.0, 0.0), (1.0, 0.0), (0.0, -1.0), (0.0, 1.0))


@dataclass(frozen=True, slots=True)
class Episode:
    """The episode's initial layout (``ctx.episode``): ``agents`` and ``landmarks``, each
    an ``(N, 2)`` read-only float64 array."""

    agents: np.ndarray
    landmarks: np.ndarray


@dataclass(frozen=True, slots=True)
class Shared:
    """What :meth:`Spread.step_outputs` computes once per step."""

    rewards: np.ndarray  # (N,) float64
    terminated: bool
    truncated: bool


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def pair_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``dist[i, j] = sqrt((a_i - b_j)_x² + (a_i - b_j)_y²)``, as mpe2's
    ``np.sqrt(np.sum(np.square(a_i - b_j)))`` computes it (a sum of two terms is one
    addition, so the order cannot differ). The x and y parts are separate ``(N, M)``
    arrays: numpy's inner loops then run along ``M``, not along a trailing axis of 2."""
    dx = a[:, 0, None] - b[None, :, 0]
    dy = a[:, 1, None] - b[None, :, 1]
    np.multiply(dx, dx, out=dx)
    np.multiply(dy, dy, out=dy)
    np.add(dx, dy, out=dx)
    return np.sqrt(dx, out=dx)


def shared_outputs(pos: np.ndarray, landmarks: np.ndarray, step: int, *,
                   local_ratio: float, max_cycles: int,
                   terminate_on_success: bool) -> Shared:
    """Rewards and flags after a step from the agents' positions, in mpe2's order (see the
    module docstring); ``step`` counts from 1 for the first step."""
    n = len(pos)
    mins = pair_distances(landmarks, pos).min(axis=1)  # per landmark: the closest agent
    global_reward = 0
    for m in mins.tolist():  # mpe2: rew -= min(dists), landmark by landmark
        global_reward -= m
    collide = pair_distances(pos, pos) < DIST_MIN
    collide[np.arange(n), np.arange(n)] = False  # mpe2: ... and a != agent
    agent_reward = 0.0 - collide.sum(axis=1).astype(np.float64)
    rewards = float(global_reward) * (1 - local_ratio) + agent_reward * local_ratio
    rewards = rewards + 0.0  # the parallel wrapper's 0 + reward (-0.0 becomes 0.0)
    truncated = step >= max_cycles
    terminated = (not truncated and terminate_on_success
                  and bool((mins < CAPTURE_RADIUS).all()))
    return Shared(rewards, terminated, truncated)


class Spread(seer.Model):
    """mpe2's ``simple_spread_v3`` as events; see the module docstring. The arguments are
    ``simple_spread_v3.parallel_env``'s (``n_agents`` is its ``N``), with its defaults."""

    kinds = ("move",)
    action_kind = "move"
    step_length = 1.0
    # No event ever goes to another entity: the largest lookahead a step allows makes each
    # step one window (and a cross-entity emit, should one be added, a LookaheadError).
    lookahead = 1.0
    fields = {"pos": ((2,), np.float64), "vel": ((2,), np.float64)}  # noqa: RUF012

    def __init__(self, n_agents: int = 3, local_ratio: float = 0.5, max_cycles: int = 25,
                 terminate_on_success: bool = False) -> None:
        self.n_agents = integer("Spread", "n_agents", n_agents, minimum=1)
        self.local_ratio = real("Spread", "local_ratio", local_ratio, at_least=0.0, at_most=1.0)
        self.max_cycles = integer("Spread", "max_cycles", max_cycles, minimum=1)
        self.terminate_on_success = flag("Spread", "terminate_on_success",
                                         terminate_on_success)
        self.groups = seer.EntityGroups(agents=self.n_agents, landmarks=self.n_agents)
        super().__init__(len(self.groups))
        self.name = f"Spread({self.n_agents} agents)"
        #: Every agent is truncated at this step (read by SeerParallelEnv).
        self.max_steps = self.max_cycles
        self._initial_positions: Episode | None = None

    # -- episode ----------------------------------------------------------------------------
    @property
    def initial_positions(self) -> Episode | None:
        """None (draw the layout from the episode generator) or the layout every episode
        starts from: set it to ``(agent_positions, landmark_positions)``, each ``(N, 2)``
        finite numbers."""
        return self._initial_positions

    @initial_positions.setter
    def initial_positions(self, value: Any) -> None:
        if value is None:
            self._initial_positions = None
            return
        try:
            agents, landmarks = value
        except (TypeError, ValueError):
            raise ModelError("Spread initial_positions must be (agent_positions, "
                             f"landmark_positions), got {value!r}") from None
        arrays = []
        for what, a in (("agent", agents), ("landmark", landmarks)):
            a = np.array(a, dtype=np.float64)
            if a.shape != (self.n_agents, 2) or not np.isfinite(a).all():
                raise ModelError(f"Spread initial {what} positions must be "
                                 f"{self.n_agents} finite (x, y) pairs, got shape {a.shape}")
            arrays.append(_read_only(a))
        self._initial_positions = Episode(*arrays)

    def init_episode(self, rng: np.random.Generator) -> Episode:
        """The layout: :attr:`initial_positions`, or drawn as mpe2's ``reset_world``
        draws it (each agent's ``uniform(-1, 1, 2)``, then each landmark's)."""
        if self._initial_positions is not None:
            return self._initial_positions
        n = self.n_agents
        agents = np.array([rng.uniform(-1, +1, 2) for _ in range(n)])
        landmarks = np.array([rng.uniform(-1, +1, 2) for _ in range(n)])
        return Episode(_read_only(agents), _read_only(landmarks))

    def init_entity(self, ctx: seer.Context) -> None:
        e = ctx.id
        layout: Episode = ctx.episode
        n = self.n_agents
        ctx.row.pos = layout.agents[e] if e < n else layout.landmarks[e - n]

    # -- the step ---------------------------------------------------------------------------
    def on_move(self, ctx: seer.Context, event: Any) -> None:
        """Agent ``ctx.id``'s action force plus every contact force, summed in mpe2's order,
        then integrated (see the module docstring)."""
        i = ctx.id
        n = self.n_agents
        positions = ctx.snapshot.pos[:n]  # the agents' step-start positions
        forces = ctx.scratch("spread.forces", (n + 1, 2))  # row 0: action; 1 + j: F(i, j)
        f = forces[1:]
        np.subtract(positions[i], positions, out=f)  # d = p_i - p_j; row i: exactly 0.0
        dist = ctx.scratch("spread.dist", (n,))
        square = ctx.scratch("spread.square", (n, 2))
        np.square(f, out=square)
        np.add(square[:, 0], square[:, 1], out=dist)
        np.sqrt(dist, out=dist)
        dist[i] = 1.0  # the row j = i: 0.0 / 1.0, not 0 / 0
        penetration = ctx.scratch("spread.penetration", (n,))
        np.subtract(dist, DIST_MIN, out=penetration)
        np.negative(penetration, out=penetration)
        np.divide(penetration, CONTACT_MARGIN, out=penetration)
        np.logaddexp(0, penetration, out=penetration)
        np.multiply(penetration, CONTACT_MARGIN, out=penetration)
        np.multiply(f, CONTACT_FORCE, out=f)
        np.divide(f, dist[:, None], out=f)
        np.multiply(f, penetration[:, None], out=f)
        push_x, push_y = PUSH[event.payload]
        forces[0, 0] = push_x * SENSITIVITY
        forces[0, 1] = push_y * SENSITIVITY
        np.cumsum(forces, axis=0, out=forces)  # sequential: mpe2's running total
        row = ctx.row
        pos, vel = row.pos, row.vel
        pos += vel * DT
        vel *= KEEP
        vel += forces[n] * DT

    # -- actions ----------------------------------------------------------------------------
    def action_events(self, actions: Any) -> list[tuple[int, Any, Any]]:
        """As :meth:`seer.Model.action_events`; each action must be an int in 0..4
        (refused with the agent named, before anything runs). An agent with no action
        (None, or missing from a mapping) takes action 0: every agent gets a move."""
        events = super().action_events(actions)
        n = self.n_agents
        chosen = [0] * n
        for entity, _, action in events:
            if isinstance(entity, bool) or not isinstance(entity, (int, np.integer)) \
                    or not 0 <= entity < n:
                raise ModelError(f"action for entity {entity!r} of model {self.name!r}: "
                                 f"entity ids are integers in range({n}) (agent names such "
                                 "as 'agent_0' are seer.marl.SeerParallelEnv's)")
            if isinstance(action, (bool, np.bool_)) \
                    or not isinstance(action, (int, np.integer)) \
                    or not 0 <= action < N_ACTIONS:
                raise ModelError(f"Spread action for agent {entity} must be an int in "
                                 f"0..{N_ACTIONS - 1}, got {action!r}")
            chosen[int(entity)] = int(action)
        return [(e, "move", a) for e, a in enumerate(chosen)]

    def agent_entities(self) -> range:
        return self.groups.agents

    def sample_actions(self, step: int) -> list[int]:
        """A deterministic joint action for benchmarks and tests."""
        return [(3 * i + step + (i * step) // 7) % N_ACTIONS for i in range(self.n_agents)]

    # -- outputs ----------------------------------------------------------------------------
    def step_outputs(self, state: seer.StateArrays, start: seer.StateArrays,
                     step: int) -> Shared:
        if step == 0:  # after reset: mpe2 reports no rewards and no flags
            return Shared(np.zeros(self.n_agents), False, False)
        n = self.n_agents
        return shared_outputs(state.pos[:n], state.pos[n:], step,
                              local_ratio=self.local_ratio, max_cycles=self.max_cycles,
                              terminate_on_success=self.terminate_on_success)

    def outputs(self, entity: int, state: seer.StateArrays, start: seer.StateArrays,
                info: seer.StepInfo) -> tuple[Any, float, bool, bool, dict]:
        shared: Shared = info.shared
        n = self.n_agents
        pos_all = state.pos[:n]
        pos = pos_all[entity]
        obs = np.zeros(4 + 2 * n + 4 * (n - 1), np.float64)
        obs[0:2] = state.vel[entity]
        obs[2:4] = pos
        obs[4:4 + 2 * n] = (state.pos[n:] - pos).ravel()
        k = 4 + 2 * n
        obs[k:k + 2 * entity] = (pos_all[:entity] - pos).ravel()
        obs[k + 2 * entity:k + 2 * (n - 1)] = (pos_all[entity + 1:] - pos).ravel()
        return (obs.astype(np.float32), float(shared.rewards[entity]), shared.terminated,
                shared.truncated, {})

    def observation_space(self, entity: int) -> Any:
        from gymnasium import spaces

        n = self.n_agents
        return spaces.Box(low=-np.float32(np.inf), high=np.float32(np.inf),
                          shape=(4 + 2 * n + 4 * (n - 1),), dtype=np.float32)

    def action_space(self, entity: int) -> Any:
        from gymnasium import spaces

        return spaces.Discrete(N_ACTIONS)

