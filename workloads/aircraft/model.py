"""Aircraft: a compute-heavy UAV swarm (navigation + numpy collision avoidance).

Entities are UAVs; every UAV is an agent. Each step, each UAV gets one ``act`` event (its
action: a heading change and a speed change, both in [-1, 1]). Its handler

1. senses neighbours within ``sense_radius`` from the boundary snapshot, through a uniform
   grid that :meth:`Aircraft.prepare_step` builds once per step;
2. evaluates ``candidates`` candidate velocities around the desired one (towards the next
   waypoint, adjusted by the action) against every neighbour over ``horizon`` look-ahead
   points (numpy: ``candidates x neighbours x horizon`` distance tests) and keeps the
   cheapest (deviation + separation penalty);
3. integrates, tracks its waypoints, accounts energy (``|Δv|²``) and progress;
4. sends a ``conflict`` event (delay = lookahead) to each neighbour closer than
   ``separation``; a conflict nudges the receiver's velocity away from the sender.

So the work per UAV grows with local density. UAVs belong to *hubs* of very unequal sizes
(the largest holds about a third of the swarm); every UAV's waypoints follow a real flight
track (see ``PROVENANCE.md``), scaled, rotated and placed relative to its hub, and hubs
drift on circles, so the dense clusters move over time.

Complexity knob: ``cost_us`` picks ``candidates`` from a calibration made on the
development machine (see the table below); the mapping is fixed, never measured at run
time, so results depend only on the parameters and the seed, not on the machine.

Calibration (development machine: 2 cores, CPython 3.14.7t; serial runtime, 10 steps
after 2 warm-up steps; ``python -m workloads.calibrate aircraft --steps 10``). Mean time
of all events (act and conflict) against the knob, 800 UAVs:

=======  ==========  ==================  ===============  ==========================
cost_us  candidates  mean event µs       events per step  cross-entity events / step
=======  ==========  ==================  ===============  ==========================
70       4 (floor)   114.9               938              138
100      5           104.4               956              156
200      41          201.6               968              168
400      113         375.1               963              163
=======  ==========  ==================  ===============  ==========================

The floor is about 100 µs (numpy call overheads of one act event). Against entity count
(cost_us=200): 200 UAVs: 257 events/step, 57 cross-entity; 400: 554, 154; 800: 968, 168;
1400: 1748, 348 (mean event 221, 205, 201, 208 µs).
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

import seer
from seer.errors import ModelError
from workloads._args import flag, integer, real, shown

__all__ = ["Aircraft", "load_tracks"]

TRACKS = Path(__file__).with_name("tracks.npz")
# Per-event cost model measured on the development machine (see the module docstring):
# mean µs ~= BASE_US + PER_CANDIDATE_US * candidates, at the default density.
BASE_US = 86.0
PER_CANDIDATE_US = 2.79
#: The largest ``cost_us`` taken (about 358,000 candidates).
MAX_COST_US = 1e6


@cache
def load_tracks() -> np.ndarray:
    """The real trajectories: float32 array (tracks, points, 2), km east/north."""
    with np.load(TRACKS) as data:
        tracks = data["tracks"]
    tracks.flags.writeable = False
    return tracks


_REALS = (int, float, np.integer, np.floating)


def _real_pair(action: Any) -> bool:
    """Whether ``action`` is two finite real numbers (see :meth:`Aircraft.action_events`)."""
    if action.__class__ is tuple and len(action) == 2:  # the common case, without numpy
        turn, throttle = action
        if turn.__class__ is float and throttle.__class__ is float:
            return math.isfinite(turn) and math.isfinite(throttle)
    if type(action) is np.ndarray:  # exactly: a masked array (a subclass) is refused
        if action.dtype.kind not in "iuf":
            return False
    elif isinstance(action, (tuple, list)):
        if len(action) != 2 or not all(isinstance(x, _REALS) and not isinstance(x, bool)
                                        for x in action):
            return False
    else:
        return False
    try:
        pair = np.asarray(action, np.float64)
    except OverflowError:  # an int beyond the float range
        return False
    return pair.shape == (2,) and bool(np.isfinite(pair).all())


class Aircraft(seer.Model):
    """UAV swarm; see the module docstring. ``n_uavs`` UAVs at ``density`` per km²."""

    kinds = ("act", "conflict")
    action_kind = "act"
    step_length = 1.0
    lookahead = 0.5

    def __init__(self, n_uavs: int = 800, *, cost_us: float = 200.0, hotspots: bool = True,
                 interaction: float = 1.0, density: float = 1.0, seed: int = 0,
                 k_neighbours: int = 4, horizon: int = 8, max_steps: int | None = None) -> None:
        super().__init__(n_uavs)
        a = "Aircraft"
        # at most 1 s per event: beyond, the candidate arrays alone would not fit in memory
        cost_us = real(a, "cost_us", cost_us, above=0, at_most=MAX_COST_US)
        hotspots = flag(a, "hotspots", hotspots)
        interaction = real(a, "interaction", interaction, above=0)
        density = real(a, "density", density, above=0)
        seed = integer(a, "seed", seed, minimum=0)
        k_neighbours = integer(a, "k_neighbours", k_neighbours, minimum=1, maximum=16)
        horizon = integer(a, "horizon", horizon, minimum=2, maximum=64)
        max_steps = integer(a, "max_steps", max_steps, minimum=1, none=True)
        self.name = f"Aircraft(n={n_uavs}, cost={cost_us:g}us)"
        self.cost_us = cost_us
        self.candidates = max(4, round((cost_us - BASE_US) / PER_CANDIDATE_US))
        self.horizon = horizon
        self.k = k_neighbours
        self.max_steps = max_steps
        self.hotspots = hotspots
        self.seed = seed
        self.size = math.sqrt(n_uavs / density)  # km, side of the square airspace
        self.sense_radius = 1.2 * interaction
        self.separation = 0.2 * interaction
        self.speed = 0.25  # km per step
        tracks = load_tracks()
        rng = np.random.default_rng(np.random.SeedSequence([seed, 0xA1C]))
        n_hubs = 6
        # very unequal hub sizes with hotspots: the largest holds about a third of the UAVs
        weights = 1.0 / np.arange(1, n_hubs + 1) ** 1.2 if hotspots else np.ones(n_hubs)
        self._hub_of = rng.choice(n_hubs, size=n_uavs, p=weights / weights.sum())
        self._hub_radius = rng.uniform(0.15, 0.3, n_hubs) * self.size
        self._hub_phase = rng.uniform(0, 2 * math.pi, n_hubs)
        self._hub_omega = rng.choice([-1, 1], n_hubs) * rng.uniform(0.004, 0.01, n_hubs)
        self._track_of = rng.integers(len(tracks), size=n_uavs)
        angle = rng.uniform(0, 2 * math.pi, n_uavs)
        self._rot = np.stack([np.stack([np.cos(angle), -np.sin(angle)], -1),
                              np.stack([np.sin(angle), np.cos(angle)], -1)], -2)
        spread = self.size * (0.12 if hotspots else 0.3)
        self._offset = rng.normal(0.0, spread, (n_uavs, 2))
        extent = np.abs(tracks).max(axis=(1, 2))
        self._scale = (0.1 * self.size / extent)[self._track_of] * rng.uniform(0.5, 1.0, n_uavs)
        self._shift = rng.integers(tracks.shape[1], size=n_uavs)
        angles = np.linspace(-math.pi / 2, math.pi / 2, self.candidates)
        self._cand_rot = np.stack([np.stack([np.cos(angles), -np.sin(angles)], -1),
                                   np.stack([np.sin(angles), np.cos(angles)], -1)], -2)
        self._cand_speed = np.where(np.arange(self.candidates) % 2 == 0, 1.0, 0.7)
        self._times = np.linspace(0.25, 3.0, horizon)

    fields = {  # noqa: RUF012
        "pos": ((2,), np.float64),
        "vel": ((2,), np.float64),
        "wp": ((), np.int64),
        "progress": ((), np.float64),
        "energy": ((), np.float64),
        "violations": ((), np.int64),
        "conflicts": ((), np.int64),
        "to_wp": ((2,), np.float64),
        "nbrs": ((4, 2), np.float64),
    }

    def state_fields(self) -> dict[str, tuple[Any, Any]]:
        fields = dict(self.fields)
        fields["nbrs"] = ((self.k, 2), np.float64)
        return fields

    # -- geometry ---------------------------------------------------------------------------
    def hub_centre(self, hub: int, t: float) -> np.ndarray:
        a = self._hub_phase[hub] + self._hub_omega[hub] * t
        r = self._hub_radius[hub]
        return np.array([0.5 * self.size + r * math.cos(a), 0.5 * self.size + r * math.sin(a)])

    def waypoint(self, uav: int, k: int, t: float) -> np.ndarray:
        track = load_tracks()[self._track_of[uav]]
        p = track[(k + self._shift[uav]) % track.shape[0]].astype(np.float64)
        return (self.hub_centre(self._hub_of[uav], t) + self._offset[uav]
                + self._scale[uav] * (self._rot[uav] @ p))

    # -- episode ------------------------------------------------------------------------------
    def init_entity(self, ctx: seer.Context) -> None:
        e = ctx.id
        ctx.row.pos = self.waypoint(e, 0, 0.0) + ctx.rng.normal(0.0, 0.05, 2)
        ctx.row.wp = 1
        heading = self.waypoint(e, 1, 0.0) - ctx.row.pos
        ctx.row.vel = self.speed * heading / max(float(np.hypot(*heading)), 1e-9)
        ctx.row.to_wp = heading

    def prepare_step(self, snapshot: seer.StateArrays, step: int) -> tuple:
        """A uniform grid over the snapshot positions (cell = sense radius)."""
        cell = self.sense_radius
        c = np.floor(snapshot.pos / cell).astype(np.int64) + (1 << 20)
        keys = (c[:, 0] << 21) | c[:, 1]
        order = np.argsort(keys, kind="stable")
        return cell, order, keys[order]

    def _neighbours(self, grid: tuple, pos: np.ndarray, me: int) -> np.ndarray:
        cell, order, keys = grid
        cx, cy = (np.floor(pos / cell).astype(np.int64) + (1 << 20)).tolist()
        probe = np.array([((cx + dx) << 21) | (cy + dy) for dx in (-1, 0, 1)
                          for dy in (-1, 0, 1)], np.int64)
        lo = np.searchsorted(keys, probe, "left").tolist()
        hi = np.searchsorted(keys, probe, "right").tolist()
        idx = np.concatenate([order[a:b] for a, b in zip(lo, hi, strict=True)])
        return idx[idx != me]

    # -- handlers -----------------------------------------------------------------------------
    def action_events(self, actions: Any) -> list[tuple[int, Any, Any]]:
        """As :meth:`seer.Model.action_events`; each action must be two finite real numbers
        ``(turn, throttle)``: a tuple or list of ints or floats (numpy's too, not bool), or
        a plain numpy array of shape (2,) with an integer or floating dtype. Values outside
        [-1, 1] are clipped by the handler. Anything else (NaN, inf, a number too large for
        a float, complex, strings, masked arrays) is refused here, before anything runs,
        with the UAV named: NaN or inf would poison the UAV's state for the rest of the
        episode, and a complex or masked value would silently lose a part."""
        events = super().action_events(actions)
        if type(actions) is np.ndarray and actions.dtype.kind in "iuf" \
                and actions.shape == (len(events), 2) and np.isfinite(actions).all():
            return events  # a policy's (agents, 2) array, checked at once
        for entity, _, action in events:
            if not _real_pair(action):
                raise ModelError(f"Aircraft action for UAV {entity} must be two finite real "
                                 f"numbers (turn, throttle), got {shown(action)}")
        return events

    def on_act(self, ctx: seer.Context, event: Any) -> None:
        row, snap, e = ctx.row, ctx.snapshot, ctx.id
        pos = row.pos.copy()
        vel = row.vel.copy()
        nb = self._neighbours(ctx.prepared, pos, e)
        rel = snap.pos[nb] - pos
        dist = np.hypot(rel[:, 0], rel[:, 1])
        near = dist < self.sense_radius
        nb, rel, dist = nb[near], rel[near], dist[near]
        # desired velocity: towards the waypoint, adjusted by the action
        target = self.waypoint(e, int(row.wp), ctx.now)
        to_wp = target - pos
        d_wp = float(np.hypot(*to_wp))
        turn, throttle = np.clip(np.asarray(event.payload, np.float64), -1.0, 1.0)
        c, s = math.cos(0.3 * turn), math.sin(0.3 * turn)
        desired = self.speed * (1.0 + 0.3 * throttle) * np.array(
            [c * to_wp[0] - s * to_wp[1], s * to_wp[0] + c * to_wp[1]]) / max(d_wp, 1e-9)
        # candidate velocities checked against every neighbour over the horizon
        cands = (self._cand_rot @ desired) * self._cand_speed[:, None]
        cost = np.sum((cands - desired) ** 2, axis=1)
        if len(nb):
            relv = snap.vel[nb][None, :, :] - cands[:, None, :]
            future = rel[None, :, None, :] + relv[:, :, None, :] * self._times[None, None, :,
                                                                              None]
            closest = np.min(np.sum(future * future, axis=-1), axis=(1, 2))
            cost = cost + 10.0 * (closest < self.separation ** 2) + 0.01 / (closest + 1e-3)
        new_vel = cands[int(np.argmin(cost))]
        new_pos = pos + new_vel
        row.energy += float(np.sum((new_vel - vel) ** 2))
        row.vel = new_vel
        row.pos = new_pos
        d_after = float(np.hypot(*(target - new_pos)))
        row.progress += d_wp - d_after
        row.to_wp = target - new_pos
        if d_after < 2.0 * self.speed:
            row.wp += 1
        # k nearest neighbours (relative), for the observation
        nbrs = np.zeros((self.k, 2))
        if len(nb):
            nearest = np.argsort(dist, kind="stable")[: self.k]
            nbrs[: len(nearest)] = rel[nearest]
        row.nbrs = nbrs
        # separation violations: tell the intruders
        close = nb[dist < self.separation]
        if len(close):
            row.violations += len(close)
            payload = (float(new_pos[0]), float(new_pos[1]))
            for j in close.tolist():
                ctx.emit(j, self.lookahead, "conflict", payload)

    def on_conflict(self, ctx: seer.Context, event: Any) -> None:
        row = ctx.row
        away = row.pos - np.asarray(event.payload)
        norm = float(np.hypot(*away))
        if norm > 1e-9:
            row.vel = row.vel + 0.05 * away / norm
        row.conflicts += 1

    # -- MARL ---------------------------------------------------------------------------------
    def sample_actions(self, step: int) -> list[tuple[float, float]]:
        """A deterministic joint action for benchmarks: gentle weaving."""
        return [(math.sin(0.1 * step + e), 0.0) for e in range(self.n_entities)]

    def observation_size(self) -> int:
        return 6 + 2 * self.k

    def outputs(self, entity: int, state: seer.StateArrays,
                start: seer.StateArrays) -> tuple[Any, float, bool, bool, dict]:
        pos = state.pos[entity]
        obs = np.empty(self.observation_size(), np.float32)
        obs[0:2] = pos
        obs[2:4] = state.vel[entity]
        obs[4:6] = state.to_wp[entity]
        obs[6:] = state.nbrs[entity].ravel()
        reward = (float(state.progress[entity] - start.progress[entity])
                  - 1.0 * float(state.violations[entity] - start.violations[entity])
                  - 0.5 * float(state.energy[entity] - start.energy[entity]))
        return obs, reward, False, False, {}

    def observation_space(self, entity: int) -> Any:
        from gymnasium import spaces

        return spaces.Box(-np.inf, np.inf, (self.observation_size(),), np.float32)

    def action_space(self, entity: int) -> Any:
        from gymnasium import spaces

        return spaces.Box(-1.0, 1.0, (2,), np.float32)

    def render_frame(self, ax: Any, state: seer.StateArrays) -> None:
        """Draw UAV positions coloured by hub, conflicts in red."""
        pos = state.pos
        ax.scatter(pos[:, 0], pos[:, 1], s=4, c=self._hub_of, cmap="tab10")
        hot = state.conflicts > 0
        ax.scatter(pos[hot, 0], pos[hot, 1], s=8, c="red")
        ax.set_xlim(0, self.size)
        ax.set_ylim(0, self.size)
        ax.set_aspect("equal")
        ax.set_title(self.name)
