"""PCS: a communication-heavy cellular network, after the ROSS PCS model.

Entities are cells on a ``width x height`` torus; every cell is an agent. Portables live in
cells and move between 4-neighbours. ROSS defaults: 10 channels per cell, mean call
interval 360, mean call duration 180, mean move interval 4500, 16 portables per cell,
exponential times. Five event kinds:

* ``arrival``: a call attempt in the cell (Poisson, rate ``portables / 360``, times the
  hotspot factor). Blocked if fewer than ``reserve + 1`` channels are free (the reserve is
  kept for handoffs), else a channel is taken and a ``completion`` is scheduled.
* ``completion``: a call ends and frees its channel.
* ``handoff_out``: a portable leaves (rate ``portables / 4500``) for a random neighbour;
  if it was on a call (probability ``busy / portables``) the channel is freed and the call
  travels with it. Sends ``handoff_in`` with a signalling delay (the lookahead).
* ``handoff_in``: the portable arrives; its call takes a channel (reserved ones included)
  or is dropped (a handoff block).
* ``recheck``: the agent's action event at each step start: applies the new reserve and
  runs a numpy channel/interference re-check over the cell's channels against the
  neighbours' loads in the boundary snapshot (the complexity knob sizes it); a channel whose
  interference is too high drops its call.

Calls that leave by handoff leave their pending ``completion`` behind: the cell counts
them as *orphans* and the next completion consumes an orphan instead of freeing a channel
(exponential holding times are memoryless, so which one is consumed does not matter).

A traffic hotspot (a Gaussian bump in call rate, peak ``hotspot_gain``) moves across the
torus, so load is uneven and moves. Blocking probability as in ROSS:
``(call blocks + handoff blocks) / (call attempts - busy lines at the end)``.

Complexity knob: ``cost_us`` sizes the recheck's numpy work (a ``side x side`` fading
matrix, ``side = round(2 * sqrt(cost_us))``, and its largest singular value), so it is
roughly the recheck's own cost; the other four kinds are plain Python (about 6-9 µs each
here, scheduling included).

Calibration (development machine: 2 cores, CPython 3.14.7t; serial runtime, 10 steps
after 2 warm-up steps, step_length 30; ``python -m workloads.calibrate pcs --steps 10``),
40x40 cells, measured after the recheck lost its numpy calls on single numbers (which
halved the mean event time without changing a result; ``docs/performance.md``):

=======  ===================  ===============  ==========================
cost_us  mean event µs (all)  events per step  cross-entity events / step
=======  ===================  ===============  ==========================
5        10.1                 5982             168
10       10.4                 5949             164
15       10.7                 5971             168
20       12.4                 5975             167
40       14.0                 5990             166
=======  ===================  ===============  ==========================

About 20 µs per event on average takes ``cost_us=120`` (a 22x22 matrix). Against cell
count (cost_us=15): 400 cells: 1465 events/step, 40 cross-entity; 900: 3342, 92; 1600:
5971, 168; 2500: 9298, 258; 4900: 18297, 509 (mean event 10.4-12.9 µs).
Cross-entity events are the handoffs; ``interaction`` > 1 makes portables move more often.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import seer
from seer.errors import ModelError
from workloads._args import flag, integer, real, shown

__all__ = ["PCS"]

# recheck size (channels x interferers) per requested µs, fixed from the development
# machine's measurements (see the docstring): matrix side = round(sqrt(cost_us) * SIDE_PER_SQRT_US)
SIDE_PER_SQRT_US = 2.0
#: The largest ``cost_us`` taken (a 2000 x 2000 fading matrix).
MAX_COST_US = 1e6
_svd = np.linalg.svd


class PCS(seer.Model):
    """Cellular network on a torus; see the module docstring."""

    kinds = ("arrival", "completion", "handoff_out", "handoff_in", "recheck")
    action_kind = "recheck"

    def __init__(self, width: int = 40, height: int = 40, *, cost_us: float = 15.0,
                 hotspot: bool = True, interaction: float = 1.0, seed: int = 0,
                 channels: int = 10, portables: int = 16, call_interval: float = 360.0,
                 call_duration: float = 180.0, move_interval: float = 4500.0,
                 step_length: float = 30.0, signal_delay: float = 5.0,
                 hotspot_gain: float = 2.0, max_steps: int | None = None) -> None:
        p = "PCS"
        width = integer(p, "width", width, minimum=1)
        height = integer(p, "height", height, minimum=1)
        channels = integer(p, "channels", channels, minimum=1)
        portables = integer(p, "portables", portables, minimum=1)
        if width < 3 or height < 3:
            raise ModelError(f"PCS torus must be at least 3x3, got {width}x{height}")
        super().__init__(width * height)
        # at most 1 s: a 2000x2000 matrix per recheck; beyond, it soon fails to allocate
        cost_us = real(p, "cost_us", cost_us, above=0, at_most=MAX_COST_US)
        hotspot = flag(p, "hotspot", hotspot)
        interaction = real(p, "interaction", interaction, above=0)
        seed = integer(p, "seed", seed, minimum=0)
        call_interval = real(p, "call_interval", call_interval, above=0)
        call_duration = real(p, "call_duration", call_duration, above=0)
        move_interval = real(p, "move_interval", move_interval, above=0)
        step_length = real(p, "step_length", step_length, above=0)
        signal_delay = real(p, "signal_delay", signal_delay, above=0)
        hotspot_gain = real(p, "hotspot_gain", hotspot_gain, at_least=0)
        max_steps = integer(p, "max_steps", max_steps, minimum=1, none=True)
        self.name = f"PCS({width}x{height}, cost={cost_us:g}us)"
        self.width, self.height = width, height
        self.channels = channels
        self.portables = portables
        self.cost_us = cost_us
        self.side = max(2, round(math.sqrt(cost_us) * SIDE_PER_SQRT_US))
        self.call_interval = call_interval
        self.call_duration = call_duration
        self.move_interval = move_interval / interaction
        self.step_length = step_length
        self.lookahead = signal_delay
        self.hotspot = hotspot
        self.hotspot_gain = hotspot_gain if hotspot else 0.0
        self.seed = seed
        self.max_steps = max_steps
        self._xy = [(e % width, e // width) for e in range(self.n_entities)]
        self._nbrs = [tuple(((x + dx) % width) + ((y + dy) % height) * width
                            for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)))
                      for x, y in self._xy]
        rng = np.random.default_rng(np.random.SeedSequence([seed, 0x9C5]))
        self._hot_start = rng.uniform(0, width), rng.uniform(0, height)
        self._hot_velocity = (width / 200.0 / step_length, height / 300.0 / step_length)
        self._hot_sigma = max(width, height) / 8.0

    fields = {  # noqa: RUF012
        "portables": ((), np.int64),
        "busy": ((), np.int64),
        "orphans": ((), np.int64),
        "reserve": ((), np.int64),
        "attempts": ((), np.int64),
        "blocked": ((), np.int64),
        "handoff_attempts": ((), np.int64),
        "handoff_blocked": ((), np.int64),
        "dropped": ((), np.int64),
        "interference": ((), np.float64),
    }

    # -- rates ------------------------------------------------------------------------------
    def hotspot_factor(self, cell: int, t: float) -> float:
        if not self.hotspot_gain:
            return 1.0
        x, y = self._xy[cell]
        hx = (self._hot_start[0] + self._hot_velocity[0] * t) % self.width
        hy = (self._hot_start[1] + self._hot_velocity[1] * t) % self.height
        dx = min(abs(x - hx), self.width - abs(x - hx))
        dy = min(abs(y - hy), self.height - abs(y - hy))
        return 1.0 + self.hotspot_gain * math.exp(-(dx * dx + dy * dy)
                                                  / (2 * self._hot_sigma ** 2))

    def _next_arrival(self, ctx: seer.Context) -> None:
        n = int(ctx.row.portables)
        if n > 0:
            rate = n / self.call_interval * self.hotspot_factor(ctx.id, ctx.now)
            ctx.emit(ctx.id, float(ctx.rng.exponential(1.0 / rate)), "arrival")

    def _next_move(self, ctx: seer.Context) -> None:
        n = int(ctx.row.portables)
        if n > 0:
            ctx.emit(ctx.id, float(ctx.rng.exponential(self.move_interval / n)), "handoff_out")

    # -- episode ------------------------------------------------------------------------------
    def init_entity(self, ctx: seer.Context) -> None:
        ctx.row.portables = self.portables
        # start each process at a random phase (the chains re-arm themselves)
        self._next_arrival(ctx)
        self._next_move(ctx)

    # -- handlers -----------------------------------------------------------------------------
    def _take_channel(self, ctx: seer.Context) -> None:
        ctx.row.busy += 1
        ctx.emit(ctx.id, float(ctx.rng.exponential(self.call_duration)), "completion")

    def on_arrival(self, ctx: seer.Context, event: Any) -> None:
        row = ctx.row
        row.attempts += 1
        if self.channels - int(row.busy) > int(row.reserve):
            self._take_channel(ctx)
        else:
            row.blocked += 1
        self._next_arrival(ctx)

    def on_completion(self, ctx: seer.Context, event: Any) -> None:
        row = ctx.row
        if int(row.orphans) > 0:
            row.orphans -= 1
        elif int(row.busy) > 0:
            row.busy -= 1

    def on_handoff_out(self, ctx: seer.Context, event: Any) -> None:
        row = ctx.row
        n = int(row.portables)
        if n == 0:
            return
        rng = ctx.rng
        on_call = rng.random() * n < int(row.busy)
        if on_call:
            row.busy -= 1
            row.orphans += 1
        row.portables -= 1
        target = self._nbrs[ctx.id][int(rng.integers(4))]
        ctx.emit(target, self.lookahead, "handoff_in", 1 if on_call else 0)
        self._next_move(ctx)

    def on_handoff_in(self, ctx: seer.Context, event: Any) -> None:
        row = ctx.row
        was_idle = int(row.portables) == 0
        row.portables += 1
        if event.payload:
            row.handoff_attempts += 1
            if int(row.busy) < self.channels:
                self._take_channel(ctx)
            else:
                row.handoff_blocked += 1
        if was_idle:  # the cell's call and move processes were dormant: restart them
            self._next_arrival(ctx)
            self._next_move(ctx)

    #: Actions are reserves in ``range(RESERVE_CHOICES)`` (the action space).
    RESERVE_CHOICES = 4

    def action_events(self, actions: Any) -> list[tuple[int, Any, Any]]:
        """As :meth:`seer.Model.action_events`; each action must be an integer reserve in
        ``range(RESERVE_CHOICES)`` (the action space), refused with the cell named
        otherwise, before anything runs."""
        events = super().action_events(actions)
        choices = self.RESERVE_CHOICES
        # The common case (plain ints) in one pass that calls nothing; anything else is
        # looked at item by item, in order, so the first bad action is the one named.
        if all(a.__class__ is int and 0 <= a < choices for _, _, a in events):
            return events
        for entity, _, action in events:
            if isinstance(action, bool) or not isinstance(action, (int, np.integer)) \
                    or not 0 <= action < choices:
                raise ModelError(f"PCS action for cell {entity} must be an int reserve in "
                                 f"0..{choices - 1}, got {shown(action)}")
        return events

    def on_recheck(self, ctx: seer.Context, event: Any) -> None:
        # Written for two threads at once (docs/performance.md): Python ints for scalars
        # (``min``/``max``, ``array.item``) instead of numpy calls on one number, and the
        # largest singular value straight from ``svd`` (what ``norm(gains, 2)`` computes
        # after its argument checks and axis moves). The results are bit-identical to
        # the np.clip / sum(int(...)) / np.linalg.norm form this replaced
        # (tests/workloads/test_fixed_episodes.py).
        row = ctx.row
        row.reserve = min(max(int(event.payload), 0), self.channels - 1)
        item = ctx.snapshot.busy.item
        a, b, c, d = self._nbrs[ctx.id]
        load = (item(a) + item(b) + item(c) + item(d)) / (4.0 * self.channels)
        m = self.side
        fading = ctx.rng.standard_normal((m, m))
        gains = fading @ fading.T / m  # channel x channel coupling
        level = float(_svd(gains, compute_uv=False)[0]) * (0.2 + load) / m
        row.interference = level
        if level > 0.9 and int(row.busy) > 0:  # rare: a badly interfered channel drops
            row.busy -= 1
            row.orphans += 1
            row.dropped += 1

    # -- outputs ------------------------------------------------------------------------------
    def sample_actions(self, step: int) -> list[int]:
        return [1] * self.n_entities

    def outputs(self, entity: int, state: seer.StateArrays,
                start: seer.StateArrays) -> tuple[Any, float, bool, bool, dict]:
        nbr_busy = sum(int(state.busy[j]) for j in self._nbrs[entity]) / (4.0 * self.channels)
        obs = np.array([state.busy[entity] / self.channels, state.reserve[entity],
                        float(state.handoff_attempts[entity] - start.handoff_attempts[entity]),
                        nbr_busy, state.portables[entity] / self.portables,
                        state.interference[entity]], np.float32)
        lost = ((state.blocked[entity] - start.blocked[entity])
                + (state.handoff_blocked[entity] - start.handoff_blocked[entity])
                + (state.dropped[entity] - start.dropped[entity]))
        return obs, -float(lost), False, False, {}

    @staticmethod
    def blocking_probability(state: seer.StateArrays) -> float:
        """ROSS's figure: (call blocks + handoff blocks) / (call attempts - busy lines)."""
        blocks = int(state.blocked.sum()) + int(state.handoff_blocked.sum())
        denominator = int(state.attempts.sum()) - int(state.busy.sum())
        return blocks / denominator if denominator > 0 else 0.0

    def observation_space(self, entity: int) -> Any:
        from gymnasium import spaces

        return spaces.Box(-np.inf, np.inf, (6,), np.float32)

    def action_space(self, entity: int) -> Any:
        from gymnasium import spaces

        return spaces.Discrete(self.RESERVE_CHOICES)  # channels held back for handoffs

    def render_frame(self, ax: Any, state: seer.StateArrays) -> None:
        """Heat map of channel occupancy."""
        grid = (state.busy / self.channels).reshape(self.height, self.width)
        ax.imshow(grid, vmin=0, vmax=1, cmap="inferno", origin="lower")
        ax.set_title(f"{self.name}: channel occupancy")
