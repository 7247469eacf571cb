"""The spread step as whole-array numpy on one thread, without SEER: the measured reference
for :class:`workloads.mpe.Spread` (docs/porting.md, "Which kind of step do you have?").

Every agent's contact forces are two ``(N, N + 1)`` arrays (x and y; column 0 the action
force, column ``1 + j`` the force from agent ``j``) and every observation one row of an
``(N, obs_dim)`` array. The forces are summed with ``np.cumsum`` along the row, action force
first: the same sequential order as mpe2 and the port, so the results are bit-identical to
both (tests/workloads/test_mpe.py checks it). x and y are kept apart so that numpy's inner
loops run along ``N``, not along a trailing axis of 2 (about 3x faster at 400 agents).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workloads.mpe.model import (
    CONTACT_FORCE,
    CONTACT_MARGIN,
    DIM_C,
    DIST_MIN,
    DT,
    KEEP,
    N_ACTIONS,
    PUSH,
    SENSITIVITY,
    shared_outputs,
)

__all__ = ["WholeArraySpread", "agent_observations"]

_PUSH = np.array(PUSH, np.float64) * SENSITIVITY  # (5, 2): action -> action force


def _off_diagonal(a: np.ndarray) -> np.ndarray:
    """The ``(N, N - 1)`` array of ``a[i, j]`` for ``j != i``, in ``j`` order."""
    n = len(a)
    return a.reshape(-1)[1:].reshape(n - 1, n + 1)[:, :-1].reshape(n, n - 1)


def agent_observations(pos: np.ndarray, vel: np.ndarray, landmarks: np.ndarray) -> np.ndarray:
    """Every agent's observation as one ``(N, 4 + 2N + 4(N - 1))`` float32 array, each row
    mpe2's ``[vel, pos, landmarks - pos, others - pos, comm]`` (each difference computed in
    float64 and rounded to float32 once, as mpe2's ``astype`` does)."""
    n = len(pos)
    obs = np.zeros((n, 4 + 2 * n + (2 + DIM_C) * (n - 1)), np.float32)
    obs[:, 0:2] = vel
    obs[:, 2:4] = pos
    k = 4 + 2 * n
    for axis in (0, 1):  # x into even columns, y into odd ones
        p = pos[:, axis, None]
        obs[:, 4 + axis:k:2] = landmarks[None, :, axis] - p
        if n > 1:
            obs[:, k + axis:k + 2 * (n - 1):2] = _off_diagonal(pos[None, :, axis] - p)
    return obs


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
        self._fx = np.empty((n, n + 1))
        self._fy = np.empty((n, n + 1))
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
        fx, fy, dist, penetration = self._fx, self._fy, self._dist, self._penetration
        push = _PUSH[actions]
        fx[:, 0] = push[:, 0]
        fy[:, 0] = push[:, 1]
        dx, dy = fx[:, 1:], fy[:, 1:]
        np.subtract(pos[:, 0, None], pos[None, :, 0], out=dx)  # dx[i, j] = x_i - x_j
        np.subtract(pos[:, 1, None], pos[None, :, 1], out=dy)
        np.multiply(dx, dx, out=dist)
        np.multiply(dy, dy, out=penetration)
        np.add(dist, penetration, out=dist)
        np.sqrt(dist, out=dist)
        dist[self._diagonal] = 1.0  # the column j = i: 0.0 / 1.0, not 0 / 0
        np.subtract(dist, DIST_MIN, out=penetration)
        np.negative(penetration, out=penetration)
        np.divide(penetration, CONTACT_MARGIN, out=penetration)
        np.logaddexp(0, penetration, out=penetration)
        np.multiply(penetration, CONTACT_MARGIN, out=penetration)
        for d in (dx, dy):  # mpe2's 100 * d / dist * penetration
            np.multiply(d, CONTACT_FORCE, out=d)
            np.divide(d, dist, out=d)
            np.multiply(d, penetration, out=d)
        np.cumsum(fx, axis=1, out=fx)  # sequential along j: mpe2's running total
        np.cumsum(fy, axis=1, out=fy)
        total = np.stack([fx[:, n], fy[:, n]], axis=1)
        pos += vel * DT
        vel *= KEEP
        vel += total * DT
        self.steps += 1
        shared = shared_outputs(pos, self.landmarks, self.steps, local_ratio=self.local_ratio,
                                max_cycles=self.max_cycles,
                                terminate_on_success=self.terminate_on_success)
        return (agent_observations(pos, vel, self.landmarks), shared.rewards,
                shared.terminated, shared.truncated)
