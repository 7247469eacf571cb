"""Pursuit: PettingZoo's ``sisl/pursuit_v5`` as a :class:`seer.Model`.

Pursuers (the agents) chase randomly moving evaders on an ``x_size x y_size`` grid with a
rectangular building in the middle (walls). An evader is caught when pursuers occupy every
open 4-neighbour cell around it (``surround=True``), or when at least ``n_catch`` pursuers
stand on its cell (``surround=False``). Rewards, observations, flags, the spawn algorithm
and every quirk follow PettingZoo 1.27's implementation bit for bit
(``tests/workloads/test_pursuit.py`` steps both side by side); the places where this port
differs are listed at the end.

Entities: ``groups = EntityGroups(pursuers=n_pursuers, evaders=n_evaders)``, so pursuer
``i`` is entity ``i`` and evader ``k`` (PettingZoo's evader index) is entity
``n_pursuers + k``. Both groups share the fields; each uses its own:

==========  ==================  ============================================================
field       used by             meaning
==========  ==================  ============================================================
``pos``     both                ``(x, y)`` cell, int64 (internal axes are ``[x, y]``)
``gone``    evaders             caught (the evader keeps its last position; never again
                                scheduled)
``c_old``   pursuers            evaders tagged from the step-start cell (see rewards)
``c_new``   pursuers            evaders tagged from the cell after this step's move
``mask``    evaders             bit ``d`` set: a pursuer stands on neighbour ``d`` this step
                                (``surround=True``)
``on_cell`` evaders             pursuers on the evader's cell this step (``surround=False``)
==========  ==================  ============================================================

One environment step ``t`` (``step_length = 1``, ``lookahead = 0.25``) is three phases of
events:

* ``τ = t``: ``move`` (the action event, one per pursuer). The pursuer moves (an edge or a
  wall blocks the move; nothing else does), computes ``c_old`` and ``c_new`` against the
  step-start count grid of alive evaders (:meth:`Pursuit.prepare_step`), and sends
  ``adjacent`` (delay = lookahead, payload = direction index) to every alive evader whose
  step-start cell is a 4-neighbour of its new cell (``surround=True``) or is its new cell
  (``surround=False``).
* ``τ = t + 0.25``: ``adjacent`` on an evader ORs the direction bit into ``mask`` (or
  counts one more pursuer on its cell).
* ``τ = t + 0.5``: ``judge``, each alive evader's own recurring self-event (first emitted
  by ``init_entity``, then every step). Caught exactly as PettingZoo decides it: the
  number of distinct occupied neighbour cells ``== need_to_surround(x, y)`` (with its
  ``0 <`` quirk), or ``on_cell >= n_catch``. A caught evader sets ``gone`` and stops; a
  surviving one draws its move (``integers(5)``, unless ``freeze_evaders``), moves, clears
  ``mask``/``on_cell`` and schedules its next judge.

So the catch check sees every pursuer's new cell and every evader's step-start cell, and
evaders move after all catches: PettingZoo's order. :meth:`Pursuit.step_outputs` then
builds, once per step on the caller's thread, the count grids (for observations), the
catch credit ``purs_sur`` (every pursuer on an occupied neighbour cell, or on the cell, of
an evader caught this step), the exact reward vector and the flags; :meth:`Pursuit.outputs`
only slices each pursuer's window. No part of a step costs O(evaders x pursuers); the
reward's N-sub-step sum (below) is O(pursuers²), as in PettingZoo.

Cost (development machine, 2 cores, CPython 3.14t, serial runtime, ``sample_actions``):
256x256 grid, 1000 pursuers, 4000 evaders: about 37 ms and 5,300 events per step (of
which ``step_outputs`` about 4 ms, ``prepare_step`` about 1 ms, ``outputs`` about 1.5 ms).
128x128, 300 pursuers, 1000 evaders: about 8 ms and 1,400 events per step, where
PettingZoo's own ``parallel_env`` takes about 3.3 s per step.

Rewards reproduce PettingZoo's parallel API, which runs ``N = n_pursuers`` AEC sub-steps:
in sub-step ``j`` pursuers ``0..j`` have moved, so
``L_j[i] = (tag_reward * (c_new[i] if i <= j else c_old[i])) / N``, the last sub-step adds
``catch_reward * purs_sur[i]`` and then ``urgency_reward``, each sub-step mixes
``local_ratio * L_j + (1 - local_ratio) * mean(L_j)`` (numpy's pairwise mean), and the
reward is the sum over ``j`` in order, starting from 0. ``c`` counts alive evaders on the
four neighbour cells with coordinates *clipped* to the grid, so a pursuer on an edge also
counts its own cell (twice in a corner), as PettingZoo does. Truncation is
``step >= max_cycles`` and wins: on that step ``terminated`` is False even if the last
evader was just caught; otherwise ``terminated`` is "no evader left".

Observations: ``(obs_range, obs_range, 3)`` float32, axes ``[y, x, channel]`` (channels:
wall or outside the map = 1, pursuer count including the observer, alive evader count),
centred on the pursuer; with an even ``obs_range`` the last row and column stay padding,
as in PettingZoo.

How this port differs from PettingZoo's pursuit, and why:

* **Evader random moves.** PettingZoo draws one ``integers(5)`` per surviving evader, in
  evader order, from one generator that the whole environment shares (the one that also
  placed the agents). The event contract gives each entity its own generator, so here
  evader ``k`` draws ``ctx.rng.integers(5)`` from its own stream: the same distribution,
  different numbers, and an evader's moves no longer depend on which other evaders were
  caught. For a bit-for-bit comparison set :attr:`Pursuit.evader_moves` to a mapping
  ``(step, evader_index) -> action``; the judge then uses it instead of drawing.
* **Initial placement.** :meth:`Pursuit.init_episode` runs PettingZoo's algorithm (two
  ``uniform`` draws for the spawn window, then rejection sampling of pursuers, then of
  evaders, each kind keeping its own cells and their 4-neighbours blocked) on the episode
  generator the runtime hands it, a child of the reset seed, not
  ``np.random.default_rng(seed)``: the same seed gives a different layout than PettingZoo
  (``init_episode(np.random.default_rng(seed))`` gives PettingZoo's exactly). Set
  :attr:`Pursuit.initial_positions` to start from given cells. Where PettingZoo loops
  forever because no feasible cell is left, or fails inside numpy because the spawn window
  is empty, ``reset`` raises :class:`seer.ModelError` saying which.
* ``reset(seed=None)``: PettingZoo continues its previous stream; a runtime seeds afresh.
* A pursuer with no action (missing from a mapping, or None) stays; PettingZoo needs an
  action for every agent. After the episode ends the runtime can still be stepped
  (:class:`seer.marl.SeerParallelEnv` removes every agent, as PettingZoo does).
* Not supported: ``evader_controller``, ``pursuer_controller`` (PettingZoo never calls the
  latter) and ``render_mode``; :meth:`Pursuit.render_frame` draws with matplotlib. Rewards
  come back as a float64 array (PettingZoo: ``np.float64`` values), observations as
  contiguous copies (PettingZoo: non-contiguous views); the values are the same bits.
  :meth:`Pursuit.global_state` is PettingZoo's ``state()``.
* Arguments are validated (:class:`seer.ModelError` naming the argument) where PettingZoo
  would crash, hang or do something meaningless: sizes, counts, ``max_cycles`` and
  ``n_catch`` must be ints >= 1, ``0 < constraint_window <= 1``, rewards finite.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

import seer
from seer.errors import ModelError
from workloads._args import flag, integer, real, shown

__all__ = ["Pursuit"]

#: Action -> (dx, dy): PettingZoo's ``discrete_agent`` order (left, right, "up", "down",
#: stay; "up" is +y).
MOVES = ((-1, 0), (1, 0), (0, 1), (0, -1), (0, 0))
STAY = 4
N_ACTIONS = 5
#: Neighbour offsets of the catch rule and the tag reward (PettingZoo's ``surround_mask``);
#: ``adjacent`` payload ``d`` means "a pursuer stands on evader cell + NEIGHBOURS[d]".
NEIGHBOURS = ((-1, 0), (1, 0), (0, 1), (0, -1))
#: When the evaders' judge runs inside a step (after the ``adjacent`` events at +lookahead).
JUDGE_OFFSET = 0.5
#: Rows of the reward matrix built at a time (bounds its memory for many pursuers).
REWARD_BLOCK_ELEMENTS = 1 << 20


def rectangle_map(x_size: int, y_size: int, x_border: float = 0.3,
                  y_border: float = 0.2) -> np.ndarray:
    """PettingZoo's ``two_d_maps.rectangle_map`` as a bool ``[x, y]`` wall grid: a cell is
    a wall iff ``0.3 < x/x_size < 0.7`` and ``0.2 < y/y_size < 0.8`` (float64, strict)."""
    xs = np.arange(x_size, dtype=np.float64) / float(x_size)
    ys = np.arange(y_size, dtype=np.float64) / float(y_size)
    in_x = (x_border < xs) & (xs < 1.0 - x_border)
    in_y = (y_border < ys) & (ys < 1.0 - y_border)
    return in_x[:, None] & in_y[None, :]


@dataclass(frozen=True, slots=True)
class Layout:
    """The episode's initial cells (``ctx.episode``): tuples of ``(x, y)``."""

    pursuers: tuple[tuple[int, int], ...]
    evaders: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class Prepared:
    """What :meth:`Pursuit.prepare_step` builds from the step-start snapshot.

    Cells are keyed ``x * y_size + y``. ``slot[c]`` (present only for a cell with alive
    evaders) is ``u``: the cell holds ``counts[u]`` of them, whose entity ids are
    ``ids[starts[u]:starts[u] + counts[u]]`` (ascending)."""

    step: int
    slot: dict[int, int]
    counts: list[int]
    starts: list[int]
    ids: list[int]


@dataclass(frozen=True, slots=True)
class Shared:
    """What :meth:`Pursuit.step_outputs` computes once per step."""

    grid: np.ndarray  # (y_size + 2 off, x_size + 2 off, 3) float32, [y, x, c], padded
    rewards: np.ndarray  # (n_pursuers,) float64
    terminated: bool
    truncated: bool
    catch_credit: np.ndarray  # (n_pursuers,) bool: PettingZoo's purs_sur


def _int_arg(name: str, value: Any) -> int:
    return integer("Pursuit", name, value, minimum=1)


def _real_arg(name: str, value: Any) -> float:
    return real("Pursuit", name, value)


class Pursuit(seer.Model):
    """PettingZoo's pursuit_v5 as events; see the module docstring. The arguments are
    pursuit_v5's, with its defaults."""

    kinds = ("move", "adjacent", "judge")
    action_kind = "move"
    step_length = 1.0
    lookahead = 0.25
    fields = {  # noqa: RUF012
        "pos": ((2,), np.int64),
        "gone": ((), np.bool_),
        "c_old": ((), np.int64),
        "c_new": ((), np.int64),
        "mask": ((), np.int64),
        "on_cell": ((), np.int64),
    }

    def __init__(self, x_size: int = 16, y_size: int = 16, max_cycles: int = 500,
                 shared_reward: bool = True, n_evaders: int = 30, n_pursuers: int = 8,
                 obs_range: int = 7, n_catch: int = 2, freeze_evaders: bool = False,
                 tag_reward: float = 0.01, catch_reward: float = 5.0,
                 urgency_reward: float = -0.1, surround: bool = True,
                 constraint_window: float = 1.0) -> None:
        self.x_size = _int_arg("x_size", x_size)
        self.y_size = _int_arg("y_size", y_size)
        self.max_cycles = _int_arg("max_cycles", max_cycles)
        self.shared_reward = flag("Pursuit", "shared_reward", shared_reward)
        self.n_evaders = _int_arg("n_evaders", n_evaders)
        self.n_pursuers = _int_arg("n_pursuers", n_pursuers)
        self.obs_range = _int_arg("obs_range", obs_range)
        self.n_catch = _int_arg("n_catch", n_catch)
        self.freeze_evaders = flag("Pursuit", "freeze_evaders", freeze_evaders)
        self.tag_reward = _real_arg("tag_reward", tag_reward)
        self.catch_reward = _real_arg("catch_reward", catch_reward)
        self.urgency_reward = _real_arg("urgency_reward", urgency_reward)
        self.surround = flag("Pursuit", "surround", surround)
        self.constraint_window = real("Pursuit", "constraint_window", constraint_window,
                                      above=0, at_most=1)
        self.groups = seer.EntityGroups(pursuers=self.n_pursuers, evaders=self.n_evaders)
        super().__init__(len(self.groups))
        self.name = (f"Pursuit({self.x_size}x{self.y_size}, {self.n_pursuers} pursuers, "
                     f"{self.n_evaders} evaders)")
        self.local_ratio = 1.0 - float(self.shared_reward)
        self.obs_offset = int((self.obs_range - 1) / 2)
        #: Injected evader moves, ``(step, evader_index) -> action`` in 0..4 (or None:
        #: draw, or stay with ``freeze_evaders``). ``step`` counts from 0 after reset. Read
        #: by the judges during a step (a missing key fails the step with a HandlerError);
        #: change it only between steps.
        self.evader_moves: Mapping[tuple[int, int], int] | None = None
        self._initial_positions: Layout | None = None

        X, Y = self.x_size, self.y_size
        self.walls = rectangle_map(X, Y)
        self._open = (~self.walls).ravel().tolist()  # [x * Y + y]: not a wall
        self._need = self._need_to_surround_grid().ravel().tolist()
        off = self.obs_offset
        # The padded [y, x, c] grid the observations are cut from: outside = wall.
        template = np.zeros((Y + 2 * off, X + 2 * off, 3), np.float32)
        template[..., 0] = 1.0
        template[off:off + Y, off:off + X, 0] = self.walls.T
        self._grid_template = template
        R = self.obs_range
        pad = np.zeros((R, R, 3), np.float32)
        pad[..., 0] = 1.0
        self._obs_pad = pad
        self._window = 2 * off + 1

    # -- geometry ---------------------------------------------------------------------------
    def _need_to_surround_grid(self) -> np.ndarray:
        """PettingZoo's ``need_to_surround(x, y)`` for every cell: 4, minus 1 on an x edge,
        minus 1 on a y edge, minus 1 per wall neighbour with ``0 < xn < x_size`` and
        ``0 < yn < y_size`` (strict ``0 <``, as there)."""
        X, Y = self.x_size, self.y_size
        xs, ys = np.arange(X), np.arange(Y)
        need = (4 - ((xs == 0) | (xs == X - 1)).astype(np.int64)[:, None]
                - ((ys == 0) | (ys == Y - 1)).astype(np.int64)[None, :])
        walls = np.zeros((X + 2, Y + 2), np.bool_)  # walls[x + 1, y + 1]; border open
        walls[1:-1, 1:-1] = self.walls
        for dx, dy in NEIGHBOURS:
            xn, yn = xs + dx, ys + dy
            counted = ((xn > 0) & (xn < X))[:, None] & ((yn > 0) & (yn < Y))[None, :]
            need -= (counted & walls[xn[:, None] + 1, yn[None, :] + 1]).astype(np.int64)
        return need

    def _moved(self, x: int, y: int, action: int) -> tuple[int, int]:
        dx, dy = MOVES[action]
        nx, ny = x + dx, y + dy
        if 0 <= nx < self.x_size and 0 <= ny < self.y_size and self._open[nx * self.y_size
                                                                          + ny]:
            return nx, ny
        return x, y

    # -- episode ----------------------------------------------------------------------------
    @property
    def initial_positions(self) -> Layout | None:
        """None (place from the episode generator) or the cells every episode starts
        from: set it to ``(pursuer_cells, evader_cells)``, sequences of ``(x, y)``."""
        return self._initial_positions

    @initial_positions.setter
    def initial_positions(self, value: Any) -> None:
        if value is None:
            self._initial_positions = None
            return
        try:
            pursuers, evaders = value
            pursuers = tuple((int(x), int(y)) for x, y in pursuers)
            evaders = tuple((int(x), int(y)) for x, y in evaders)
        except (TypeError, ValueError):
            raise ModelError("Pursuit initial_positions must be None or (pursuer_cells, "
                             "evader_cells), sequences of (x, y)") from None
        for kind, cells, n in (("pursuer", pursuers, self.n_pursuers),
                               ("evader", evaders, self.n_evaders)):
            if len(cells) != n:
                raise ModelError(f"Pursuit initial_positions has {len(cells)} {kind} cells; "
                                 f"expected {n}")
            for i, (x, y) in enumerate(cells):
                if not (0 <= x < self.x_size and 0 <= y < self.y_size) \
                        or self.walls[x, y]:
                    raise ModelError(f"Pursuit initial_positions: {kind} {i} at {(x, y)} is "
                                     f"outside the {self.x_size}x{self.y_size} map or in a "
                                     "wall")
        self._initial_positions = Layout(pursuers, evaders)

    def init_episode(self, rng: np.random.Generator) -> Layout:
        """PettingZoo's spawn (``Pursuit.reset``): the window start ``uniform(0, 1 - cw)``
        for x then y, then pursuers and then evaders by rejection sampling, ``integers``
        for x then y, from ``rng``. :attr:`initial_positions` overrides it (no draws)."""
        if self._initial_positions is not None:
            return self._initial_positions
        cw = self.constraint_window
        xw = rng.uniform(0.0, 1.0 - cw)
        yw = rng.uniform(0.0, 1.0 - cw)
        X, Y = self.x_size, self.y_size
        xlb, xub = int(X * xw), int(X * (xw + cw))
        ylb, yub = int(Y * yw), int(Y * (yw + cw))
        if xub <= xlb or yub <= ylb:
            raise ModelError(f"Pursuit spawn window x in [{xlb}, {xub}), y in [{ylb}, {yub}) "
                             f"is empty (constraint_window={cw!r} is too small for the map)")
        window = (xlb, xub, ylb, yub)
        return Layout(self._place(rng, "pursuer", self.n_pursuers, window),
                      self._place(rng, "evader", self.n_evaders, window))

    def _place(self, rng: np.random.Generator, kind: str, n: int,
               window: tuple[int, int, int, int]) -> tuple[tuple[int, int], ...]:
        """PettingZoo's ``create_agents(randinit=True)``: each agent at a uniformly drawn
        open, unblocked cell of the window; its cell and 4-neighbours become blocked."""
        xlb, xub, ylb, yub = window
        opened = self._open
        Y = self.y_size
        blocked: set[tuple[int, int]] = set()
        free = sum(opened[x * Y + y] for x in range(xlb, xub) for y in range(ylb, yub))
        integers = rng.integers
        cells = []
        for i in range(n):
            if free == 0:  # PettingZoo would loop forever here
                raise ModelError(f"Pursuit cannot place {kind} {i} of {n}: no open cell of "
                                 f"the spawn window x in [{xlb}, {xub}), y in [{ylb}, {yub}) "
                                 f"is left that is not next to another {kind}")
            while True:
                x = int(integers(xlb, xub))
                y = int(integers(ylb, yub))
                if opened[x * Y + y] and (x, y) not in blocked:
                    break
            cells.append((x, y))
            for dx, dy in ((0, 0), *NEIGHBOURS):
                c = (x + dx, y + dy)
                if c not in blocked:
                    blocked.add(c)
                    if xlb <= c[0] < xub and ylb <= c[1] < yub and opened[c[0] * Y + c[1]]:
                        free -= 1
        return tuple(cells)

    def init_entity(self, ctx: seer.Context) -> None:
        e = ctx.id
        n = self.n_pursuers
        if e < n:
            ctx.row.pos = ctx.episode.pursuers[e]
        else:
            ctx.row.pos = ctx.episode.evaders[e - n]
            ctx.emit(e, JUDGE_OFFSET, "judge")

    # -- per step ---------------------------------------------------------------------------
    def prepare_step(self, snapshot: seer.StateArrays, step: int) -> Prepared:
        """The step-start grid of alive evaders: counts per cell and a cell -> ids index."""
        n = self.n_pursuers
        alive = np.flatnonzero(~snapshot.gone[n:])
        pos = snapshot.pos[n:][alive]
        keys = pos[:, 0] * self.y_size + pos[:, 1]
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        first = np.ones(len(sorted_keys), np.bool_)
        np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        counts = np.diff(starts, append=len(sorted_keys))
        slot = dict(zip(sorted_keys[starts].tolist(), range(len(starts)), strict=True))
        return Prepared(step, slot, counts.tolist(), starts.tolist(),
                        (alive[order] + n).tolist())

    def on_move(self, ctx: seer.Context, event: Any) -> None:
        """A pursuer's action: move, count tags before and after, tell the evaders."""
        row = ctx.row
        pos = row.pos
        x, y = int(pos[0]), int(pos[1])
        nx, ny = self._moved(x, y, event.payload)
        pos[0] = nx
        pos[1] = ny
        prep = ctx.prepared
        slot, counts = prep.slot, prep.counts
        row.c_old = self._tags(slot, counts, x, y)
        row.c_new = self._tags(slot, counts, nx, ny)
        X, Y = self.x_size, self.y_size
        ids, starts = prep.ids, prep.starts
        delay = self.lookahead
        emit = ctx.emit
        if self.surround:
            # The evader at (nx, ny) - NEIGHBOURS[d] sees this pursuer in direction d.
            for d, (dx, dy) in enumerate(NEIGHBOURS):
                ex, ey = nx - dx, ny - dy
                if 0 <= ex < X and 0 <= ey < Y:
                    u = slot.get(ex * Y + ey)
                    if u is not None:
                        s = starts[u]
                        for target in ids[s:s + counts[u]]:
                            emit(target, delay, "adjacent", d)
        else:
            u = slot.get(nx * Y + ny)
            if u is not None:
                s = starts[u]
                for target in ids[s:s + counts[u]]:
                    emit(target, delay, "adjacent", -1)

    def _tags(self, slot: dict[int, int], counts: list[int], x: int, y: int) -> int:
        """Alive evaders on the 4 neighbours of (x, y), coordinates clipped to the grid
        (PettingZoo's ``reward()``: on an edge the pursuer's own cell counts too)."""
        Y = self.y_size
        xm = x - 1 if x > 0 else 0
        xp = x + 1 if x < self.x_size - 1 else x
        ym = y - 1 if y > 0 else 0
        yp = y + 1 if y < Y - 1 else y
        get = slot.get
        total = 0
        for c in (xm * Y + y, xp * Y + y, x * Y + yp, x * Y + ym):
            u = get(c)
            if u is not None:
                total += counts[u]
        return total

    def on_adjacent(self, ctx: seer.Context, event: Any) -> None:
        """A pursuer's new cell is next to (or on) this evader's step-start cell."""
        row = ctx.row
        d = event.payload
        if d >= 0:
            row.mask = int(row.mask) | (1 << d)
        else:
            row.on_cell += 1

    def on_judge(self, ctx: seer.Context, event: Any) -> None:
        """An evader, after every pursuer has moved: caught, or move and come back."""
        row = ctx.row
        pos = row.pos
        x, y = int(pos[0]), int(pos[1])
        if self.surround:
            caught = int(row.mask).bit_count() == self._need[x * self.y_size + y]
        else:
            caught = int(row.on_cell) >= self.n_catch
        if caught:
            row.gone = True
            return
        row.mask = 0
        row.on_cell = 0
        moves = self.evader_moves
        if moves is not None:
            action = moves[(ctx.prepared.step, ctx.id - self.n_pursuers)]
        elif self.freeze_evaders:
            action = STAY
        else:
            action = int(ctx.rng.integers(N_ACTIONS))
        nx, ny = self._moved(x, y, action)
        pos[0] = nx
        pos[1] = ny
        ctx.emit(ctx.id, self.step_length, "judge")

    # -- actions ----------------------------------------------------------------------------
    def agent_entities(self) -> range:
        return self.groups.pursuers

    def action_events(self, actions: Any) -> list[tuple[int, Any, Any]]:
        """As :meth:`seer.Model.action_events`, for pursuers only; each action must be an
        int in 0..4 (refused with the pursuer named, before anything runs). A pursuer with
        no action (None, or missing from a mapping) stays: every pursuer gets a move."""
        events = super().action_events(actions)
        n = self.n_pursuers
        chosen = [STAY] * n
        for entity, _, action in events:
            if isinstance(entity, bool) or not isinstance(entity, (int, np.integer)) \
                    or not 0 <= entity < n:
                raise ModelError(f"Pursuit actions go to pursuers (entities 0..{n - 1}); "
                                 f"got an action for entity {shown(entity)}")
            if isinstance(action, (bool, np.bool_)) \
                    or not isinstance(action, (int, np.integer)) \
                    or not 0 <= action < N_ACTIONS:
                raise ModelError(f"Pursuit action for pursuer {entity} must be an int in "
                                 f"0..{N_ACTIONS - 1}, got {shown(action)}")
            chosen[int(entity)] = int(action)
        return [(e, "move", a) for e, a in enumerate(chosen)]

    def sample_actions(self, step: int) -> list[int]:
        """A deterministic joint action for benchmarks and tests."""
        return [(3 * i + step + (i * step) // 7) % N_ACTIONS for i in range(self.n_pursuers)]

    # -- outputs ----------------------------------------------------------------------------
    def _count_grid(self, pos: np.ndarray) -> np.ndarray:
        keys = pos[:, 0] * self.y_size + pos[:, 1]
        return np.bincount(keys, minlength=self.x_size * self.y_size).reshape(
            self.x_size, self.y_size)

    def global_state(self, state: seer.StateArrays) -> np.ndarray:
        """PettingZoo's ``state()``: ``(y_size, x_size, 3)`` float32, ``[y, x, c]``."""
        off = self.obs_offset
        return self._grid(state)[off:off + self.y_size, off:off + self.x_size].copy()

    def _grid(self, state: seer.StateArrays) -> np.ndarray:
        n = self.n_pursuers
        off = self.obs_offset
        grid = self._grid_template.copy()
        inner = grid[off:off + self.y_size, off:off + self.x_size]
        inner[..., 1] = self._count_grid(state.pos[:n]).T
        evaders = state.pos[n:][~state.gone[n:]]
        inner[..., 2] = self._count_grid(evaders).T
        return grid

    def step_outputs(self, state: seer.StateArrays, start: seer.StateArrays,
                     step: int) -> Shared:
        n = self.n_pursuers
        grid = self._grid(state)
        caught = state.gone[n:] & ~start.gone[n:]
        credit = self._catch_credit(state, caught)
        if step == 0:
            rewards = np.zeros(n, np.float64)
        else:
            rewards = self._rewards(state.c_old[:n], state.c_new[:n], credit)
        truncated = step >= self.max_cycles
        terminated = (not truncated) and bool(state.gone[n:].all())
        return Shared(grid, rewards, terminated, truncated, credit)

    def _catch_credit(self, state: seer.StateArrays, caught: np.ndarray) -> np.ndarray:
        """PettingZoo's ``purs_sur``: pursuers standing on an occupied neighbour cell
        (``surround``), or on the cell, of an evader caught this step."""
        n = self.n_pursuers
        pursuers = state.pos[:n]
        if not caught.any():
            return np.zeros(n, np.bool_)
        cells = state.pos[n:][caught]
        marked = np.zeros((self.x_size + 2, self.y_size + 2), np.bool_)  # 1-cell border
        if self.surround:
            for dx, dy in NEIGHBOURS:
                marked[cells[:, 0] + 1 + dx, cells[:, 1] + 1 + dy] = True
        else:
            marked[cells[:, 0] + 1, cells[:, 1] + 1] = True
        return marked[pursuers[:, 0] + 1, pursuers[:, 1] + 1]

    def _rewards(self, c_old: np.ndarray, c_new: np.ndarray,
                 credit: np.ndarray) -> np.ndarray:
        """The parallel API's reward: the sum over the N AEC sub-steps, bit for bit."""
        n = self.n_pursuers
        old = self.tag_reward * c_old.astype(np.float64) / n
        new = self.tag_reward * c_new.astype(np.float64) / n
        last = (new + self.catch_reward * credit.astype(np.float64)) + self.urgency_reward
        lr, shared = self.local_ratio, 1 - self.local_ratio
        index = np.arange(n)
        total = np.zeros(n, np.float64)
        block = max(1, REWARD_BLOCK_ELEMENTS // n)
        for j0 in range(0, n, block):
            j1 = min(n, j0 + block)
            # Row j is sub-step j: pursuers 0..j have moved.
            local = np.empty((j1 - j0, n), np.float64)
            local[:] = old
            np.copyto(local, new, where=index[None, :] <= index[j0:j1, None])
            if j1 == n:
                local[-1] = last
            # numpy's mean along axis 1 of a C-contiguous matrix gives each row's np.mean
            # bit for bit (tested for 1..5000 columns and in tests/workloads/test_pursuit.py)
            means = local.mean(axis=1)
            local *= lr
            local += shared * means[:, None]
            for row in local:  # the parallel API's running sum, sub-step by sub-step
                np.add(total, row, out=total)
        return total

    def outputs(self, entity: int, state: seer.StateArrays, start: seer.StateArrays,
                info: seer.StepInfo) -> tuple[Any, float, bool, bool, dict]:
        shared: Shared = info.shared
        pos = state.pos[entity]
        x, y = int(pos[0]), int(pos[1])
        w = self._window
        window = shared.grid[y:y + w, x:x + w]
        if w == self.obs_range:
            obs = window.copy()
        else:  # even obs_range: the last row and column stay padding
            obs = self._obs_pad.copy()
            obs[:w, :w] = window
        return (obs, float(shared.rewards[entity]), shared.terminated, shared.truncated, {})

    def observation_space(self, entity: int) -> Any:
        from gymnasium import spaces

        R = self.obs_range
        return spaces.Box(0, max(self.n_pursuers, self.n_evaders), (R, R, 3), np.float32)

    def action_space(self, entity: int) -> Any:
        from gymnasium import spaces

        return spaces.Discrete(N_ACTIONS)

    def render_frame(self, ax: Any, state: seer.StateArrays) -> None:
        """Walls grey, pursuers red, alive evaders blue (x right, y down, as PettingZoo)."""
        n = self.n_pursuers
        ax.imshow(self.walls.T, cmap="Greys", vmin=0, vmax=2, origin="upper")
        p = state.pos[:n]
        e = state.pos[n:][~state.gone[n:]]
        ax.scatter(p[:, 0], p[:, 1], s=30, c="red", marker="s", label="pursuers")
        ax.scatter(e[:, 0], e[:, 1], s=20, c="blue", label="evaders")
        ax.set_xlim(-0.5, self.x_size - 0.5)
        ax.set_ylim(self.y_size - 0.5, -0.5)
        ax.set_title(f"{self.name}: {len(e)} evaders left")
