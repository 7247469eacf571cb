"""The spread step as whole-array numpy on one thread, without SEER: the measured reference
for :class:`workloads.mpe.Spread` (docs/porting.md, "Which kind of step do you have?").

Every agent's contact forces are one ``(N, N, 2)`` array and every observation one row of an
``(N, obs_dim)`` array. The forces are summed with ``np.cumsum`` along the "other agent"
axis, action force first: the same sequential order as mpe2 and the port, so the results are
bit-identical to both (tests/workloads/test_mpe.py checks it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workloads.mpe.model import (
    CONTACT_FORCE,
    CONTACT_MARGIN,
    DIST_MIN,
    DT,
    KEEP,
    N_ACTIONS,
    PUSH,
    SENSITIVITY,
    Shared,
    agent_observations,
    shared_outputs,
)

__all__ = ["WholeArraySpread"]

_PUSH = np.array(PUSH, np.float64) * SENSITIVITY  # (5, 2): action -> action force


class WholeArraySpread:
    """Simple spread with ``n_agents`` agents, stepped as whole arrays.

    ``reset(agents, landmarks)`` takes the initial ``(N, 2)`` positions (as
    ``Spread.init_episode`` or mpe2 makes them); ``step(actions)`` takes one int in 0..4 per
    agent and returns ``(observations, rewards, terminated, truncated)``: an
    ``(N, obs_dim)`` float32 array, an ``(N,)`` float64 array and two bools shared by every
    agent. Arguments as :class:`~workloads.mpe.Spread`'s.
    """

    def __init__(self, n_agents: int = 3, local_ratio: float = 0.5, max_cycles: int = 25,
                 terminate_on_success: bool = False) -> None:
        if isinstance(n_agents, bool) or not isinstance(n_agents, (int, np.integer)) \
                or n_agents < 1:
            raise ValueError(f"WholeArraySpread n_agents must be an int >= 1, got "
                             f"{n_agents!r}")
        self.n_agents = int(n_agents)
        self.local_ratio = float(local_ratio)
        self.max_cycles = int(max_cycles)
        self.terminate_on_success = bool(terminate_on_success)
        n = self.n_agents
        self._diagonal = (np.arange(n), np.arange(n))
        # Work arrays, reused every step (one thread: nothing else touches them).
        self._forces = np.empty((n, n + 1, 2))
        self._square = np.empty((n, n, 2))
        self._dist = np.empty((n, n))
        self._penetration = np.empty((n, n))
        self.pos = np.zeros((n, 2))
        self.vel = np.zeros((n, 2))
        self.landmarks = np.zeros((n, 2))
        self.steps = 0

    def reset(self, agents: Any, landmarks: Any) -> np.ndarray:
        """Start from these positions; returns the observations."""
        n = self.n_agents
        self.pos = np.array(agents, np.float64).reshape(n, 2)
        self.landmarks = np.array(landmarks, np.float64).reshape(n, 2)
        self.vel = np.zeros((n, 2))
        self.steps = 0
        return agent_observations(self.pos, self.vel, self.landmarks)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, bool, bool]:
        n = self.n_agents
        actions = np.asarray(actions)
        if actions.shape != (n,) or actions.dtype.kind not in "iu" \
                or not ((actions >= 0) & (actions < N_ACTIONS)).all():
            raise ValueError(f"WholeArraySpread.step needs {n} ints in 0..{N_ACTIONS - 1}, "
                             f"got {actions!r}")
        pos, vel = self.pos, self.vel
        # forces[i, 0] = action force of i; forces[i, 1 + j] = F(i, j), exactly 0 for j = i
        forces = self._forces
        forces[:, 0] = _PUSH[actions]
        d = forces[:, 1:]
        np.subtract(pos[:, None, :], pos[None, :, :], out=d)  # d[i, j] = p_i - p_j
        square, dist, penetration = self._square, self._dist, self._penetration
        np.square(d, out=square)
        np.add(square[..., 0], square[..., 1], out=dist)
        np.sqrt(dist, out=dist)
        dist[self._diagonal] = 1.0  # the row j = i: 0.0 / 1.0, not 0 / 0
        np.subtract(dist, DIST_MIN, out=penetration)
        np.negative(penetration, out=penetration)
        np.divide(penetration, CONTACT_MARGIN, out=penetration)
        np.logaddexp(0, penetration, out=penetration)
        np.multiply(penetration, CONTACT_MARGIN, out=penetration)
        np.multiply(d, CONTACT_FORCE, out=d)
        np.divide(d, dist[..., None], out=d)
        np.multiply(d, penetration[..., None], out=d)
        np.cumsum(forces, axis=1, out=forces)  # sequential along j: mpe2's running total
        total = forces[:, n]
        pos += vel * DT
        vel *= KEEP
        vel += total * DT
        self.steps += 1
        shared: Shared = shared_outputs(pos, self.landmarks, self.steps,
                                        local_ratio=self.local_ratio,
                                        max_cycles=self.max_cycles,
                                        terminate_on_success=self.terminate_on_success)
        return (agent_observations(pos, vel, self.landmarks), shared.rewards,
                shared.terminated, shared.truncated)
