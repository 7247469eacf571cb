"""workloads.pursuit against PettingZoo's own sisl/pursuit_v5, bit for bit (those tests,
and the adapter's, need the marl extra and scipy; the rest run without them).

PettingZoo and the port are stepped side by side with the same pursuer actions. Two
things are injected into the port because it draws them from other generators (see the
module docstring of ``workloads/pursuit/model.py``): the initial cells (taken from
PettingZoo's reset) and the evaders' random moves (recorded from PettingZoo's step, in the
same call it makes, and handed to the port as ``evader_moves``). Everything else
(movement, catches, rewards, observations, flags, the spawn algorithm) must agree bit for
bit.
"""

from __future__ import annotations

import numpy as np
import pytest

import seer
from seer.sched import RUNTIMES
from seer.testing import assert_equivalent
from workloads.pursuit import Pursuit
from workloads.pursuit.model import MOVES, NEIGHBOURS, rectangle_map


@pytest.fixture(scope="module")
def pz():
    pytest.importorskip("pettingzoo")  # the marl extra
    pytest.importorskip("scipy")  # pursuit's two_d_maps imports scipy.ndimage
    from workloads.pursuit.original import import_pettingzoo_pursuit

    return import_pettingzoo_pursuit()


def _recording_policy(policy_base):
    class RecordingEvaderPolicy(policy_base):
        """Draws exactly as the evader controller it wraps and logs, per frame, which
        evader (original index) got which move."""

        def __init__(self, base):
            self.base, self.inner, self.log, self._k = base, base.evader_controller, {}, None

        def set_rng(self, rng):  # Pursuit._seed hands the new generator to controllers
            set_rng = getattr(self.inner, "set_rng", None)
            if set_rng is not None:
                set_rng(rng)

        def act(self, state):
            b = self.base
            if self._k is None or self._k[0] != b.frames:
                self._k = [b.frames, 0]
            evader = int(np.flatnonzero(~b.evaders_gone)[self._k[1]])  # gone: this step's
            self._k[1] += 1
            action = int(self.inner.act(state))
            self.log[(b.frames, evader)] = action
            return action

    return RecordingEvaderPolicy


def _pz_positions(base):
    pursuers = [tuple(int(v) for v in a.current_position()) for a in base.pursuer_layer.allies]
    alive = np.flatnonzero(~base.evaders_gone)
    evaders = {int(i): tuple(int(v) for v in a.current_position())
               for i, a in zip(alive, base.evader_layer.allies, strict=True)}
    return pursuers, evaders


def _pz_set_positions(base, pursuers, evaders):
    for i, (x, y) in enumerate(pursuers):
        base.pursuer_layer.set_position(i, x, y)
    for i, (x, y) in enumerate(evaders):
        base.evader_layer.set_position(i, x, y)
    base.model_state[1] = base.pursuer_layer.get_state_matrix()
    base.model_state[2] = base.evader_layer.get_state_matrix()


def _port_positions(model, state):
    n = model.n_pursuers
    pursuers = [tuple(int(v) for v in p) for p in state.pos[:n]]
    evaders = {k: tuple(int(v) for v in state.pos[n + k])
               for k in range(model.n_evaders) if not state.gone[n + k]}
    return pursuers, evaders


def _bits(x) -> bytes:
    return np.float64(x).tobytes()


class Stats:
    def __init__(self):
        self.steps = self.catches = self.terminated = self.truncated = 0


def lockstep(pz, config, seed, runtimes=("serial", "seer"), *, adapter=False,
             positions=None, actions=None):
    """Step PettingZoo and the port (on each runtime named, and on SeerParallelEnv when
    ``adapter``) side by side until the episode ends; everything must agree bit for bit.
    ``positions``: start cells for both; ``actions``: a list of joint actions (default:
    :func:`chase` with a generator seeded with ``seed``). Frozen evaders draw nothing, so
    then the port runs without injected moves."""
    pursuit_v5, policy_base = pz
    env = pursuit_v5.parallel_env(**config)
    base = env.unwrapped.env
    recorder = _recording_policy(policy_base)(base)
    base.evader_controller = recorder
    pz_obs, _ = env.reset(seed=seed)
    if positions is not None:
        _pz_set_positions(base, *positions)
        pz_obs = {a: env.aec_env.observe(a) for a in env.agents}
    start_p, start_e = _pz_positions(base)

    model = Pursuit(**config)
    model.initial_positions = (start_p, [start_e[k] for k in range(model.n_evaders)])
    if not model.freeze_evaders:
        model.evader_moves = recorder.log  # read by key (step, evader); grows as PZ steps
    n = model.n_pursuers
    names = [f"pursuer_{i}" for i in range(n)]
    rts = [seer.make_runtime(model, name, threads=None if name == "serial" else 2)
           for name in runtimes]
    ad = None
    if adapter:
        from seer.marl import SeerParallelEnv

        ad = SeerParallelEnv(model, "seer", threads=2, prefix="pursuer")
    stats = Stats()
    rng = np.random.default_rng(seed)
    try:
        outs = [rt.reset(seed=seed + 1) for rt in rts]
        if ad is not None:
            ad_obs, _ = ad.reset(seed=seed + 1)
            assert ad.possible_agents == env.possible_agents == names
            assert all(ad_obs[a].tobytes() == _as_bytes(pz_obs[a]) for a in names)
        for t in range(10**6):
            joint = (chase(rng, *_pz_positions(base), model) if actions is None
                     else [int(a) for a in actions[t]])
            alive_before = len(base.evader_layer.allies)
            pz_obs_new, pz_rew, pz_term, pz_trunc, _ = env.step(dict(zip(names, joint,
                                                                         strict=True)))
            new_outs = []
            for rt, out in zip(rts, outs, strict=True):
                where = f"{config} seed {seed} {type(rt).__name__}: step {t}"
                out_new = rt.step(joint)
                new_outs.append(out_new)
                for i, a in enumerate(names):
                    # the previous step's observations are not changed by this one
                    assert out.observations[i].tobytes() == _as_bytes(pz_obs[a]), where
                    assert out_new.observations[i].tobytes() == _as_bytes(pz_obs_new[a]), \
                        f"{where}: observation of {a}"
                    assert out_new.rewards[i].tobytes() == _bits(pz_rew[a]), \
                        f"{where}: reward of {a}: {out_new.rewards[i]!r} vs {pz_rew[a]!r}"
                    assert bool(out_new.terminations[i]) is pz_term[a], where
                    assert bool(out_new.truncations[i]) is pz_trunc[a], where
                assert _port_positions(model, rt.state) == _pz_positions(base), where
                assert model.global_state(rt.state).tobytes() == _as_bytes(base.state()), where
            outs = new_outs
            if ad is not None:
                o, r, te, tr, _ = ad.step(dict(zip(names, joint, strict=True)))
                for a in names:
                    assert o[a].tobytes() == _as_bytes(pz_obs_new[a]), f"adapter step {t}"
                    assert _bits(r[a]) == _bits(pz_rew[a]), f"adapter step {t}: reward {a}"
                    assert te[a] is pz_term[a] and tr[a] is pz_trunc[a], f"adapter step {t}"
                assert ad.agents == env.agents
            stats.steps += 1
            stats.catches += alive_before - len(base.evader_layer.allies)
            pz_obs = pz_obs_new
            if not env.agents:
                stats.terminated += pz_term[names[0]]
                stats.truncated += pz_trunc[names[0]]
                break
    finally:
        for rt in rts:
            rt.close()
        if ad is not None:
            ad.close()
    return stats


def chase(rng, pursuers, evaders, model, p_random=0.4):
    """Pursuer actions that make catches happen: each pursuer heads for a cell next to
    (``surround``) or on its nearest alive evader, with some random moves mixed in."""
    if not evaders:
        return [int(a) for a in rng.integers(0, 5, size=len(pursuers))]
    cells = np.array(list(evaders.values()))
    joint = []
    for i, (x, y) in enumerate(pursuers):
        random_move = int(rng.integers(0, 5))
        if rng.random() < p_random:
            joint.append(random_move)
            continue
        ex, ey = cells[np.argmin(np.abs(cells - (x, y)).sum(axis=1))]
        if model.surround:
            dx, dy = NEIGHBOURS[i % 4]
            ex, ey = ex + dx, ey + dy
        dx, dy = int(ex) - x, int(ey) - y
        if dx == dy == 0:
            joint.append(4)
        elif abs(dx) >= abs(dy):
            joint.append(0 if dx < 0 else 1)
        else:
            joint.append(3 if dy < 0 else 2)
    return joint


def _as_bytes(array) -> bytes:
    return np.ascontiguousarray(array, dtype=np.float32).tobytes()


# -- bit for bit against PettingZoo -----------------------------------------------------------
CONFIGS = {
    "defaults": dict(max_cycles=120),
    "dense": dict(x_size=12, y_size=12, n_pursuers=16, n_evaders=20, max_cycles=150),
    "no_surround": dict(x_size=12, y_size=12, n_pursuers=10, n_evaders=20, surround=False,
                        n_catch=2, max_cycles=150),
    "local_reward": dict(x_size=10, y_size=10, n_pursuers=9, n_evaders=6,
                         shared_reward=False, max_cycles=150),
    "obs_range_3": dict(x_size=11, y_size=9, n_pursuers=8, n_evaders=7, obs_range=3,
                        max_cycles=100),
    "obs_range_6": dict(x_size=9, y_size=13, n_pursuers=7, n_evaders=6, obs_range=6,
                        max_cycles=100),
    "frozen": dict(x_size=10, y_size=10, n_pursuers=8, n_evaders=5, freeze_evaders=True,
                   max_cycles=150),
    "big_window": dict(x_size=7, y_size=5, n_pursuers=3, n_evaders=4, obs_range=11,
                       constraint_window=0.8, tag_reward=0.25, catch_reward=2.0,
                       urgency_reward=-0.3, max_cycles=80),
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_bit_for_bit_with_pettingzoo(pz, name, seed):
    stats = lockstep(pz, CONFIGS[name], seed)
    assert stats.terminated + stats.truncated == 1  # stepped to the episode's end


def test_catches_terminations_and_truncations_are_covered(pz):
    """The configurations above exercise what matters: catches in both modes, an episode
    that ends with no evader left, and one that is truncated."""
    dense = lockstep(pz, CONFIGS["dense"], 2)
    assert dense.catches > 0 and dense.truncated == 1
    loose = lockstep(pz, CONFIGS["no_surround"], 2)
    assert loose.catches == 20 and loose.terminated == 1, "all evaders caught: terminated"
    short = lockstep(pz, dict(CONFIGS["defaults"], max_cycles=5), 0)
    assert short.truncated == 1 and short.steps == 5


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_every_runtime_and_the_adapter(pz, runtime):
    stats = lockstep(pz, CONFIGS["dense"], 7, runtimes=(runtime,),
                     adapter=runtime == "seer")
    assert stats.terminated + stats.truncated == 1  # stepped to the episode's end


def test_corner_catch_on_the_truncating_step(pz):
    """Two pursuers close in on an evader in the corner: catch reward, tag reward counted
    with clipping, and truncation beats termination on the last cycle."""
    config = dict(x_size=6, y_size=6, n_pursuers=2, n_evaders=1)
    positions = ([(2, 0), (0, 2)], [(0, 0)])
    moves = [[0, 3]]  # left, "down": onto (1, 0) and (0, 1)
    truncated = lockstep(pz, dict(config, max_cycles=1), 0, positions=positions,
                         actions=moves)
    assert truncated.catches == 1 and truncated.truncated == 1
    assert truncated.terminated == 0
    ended = lockstep(pz, dict(config, max_cycles=2), 0, positions=positions, actions=moves)
    assert ended.terminated == 1 and ended.truncated == 0

    model = Pursuit(**config, max_cycles=2)
    model.initial_positions = positions
    rt = seer.SerialRuntime(model)
    rt.reset(seed=0)
    out = rt.step(moves[0])
    assert out.rewards.tolist() == [4.907500000000001] * 2  # the value PettingZoo gives
    assert out.terminations.all() and not out.truncations.any()
    out = rt.step([1, 2])  # stepping on with no evader left works (and truncates here)
    assert out.truncations.all() and not out.terminations.any()
    assert rt.state.pos[:2].tolist() == [[2, 0], [0, 2]]


def test_scripted_edge_cases(pz):
    """Pursuers standing on evaders at the edge (tag counted twice in a corner), stacked
    pursuers, moves blocked by walls and edges, even window, frozen evaders."""
    config = dict(x_size=8, y_size=8, n_pursuers=5, n_evaders=4, obs_range=4,
                  freeze_evaders=True, max_cycles=6, shared_reward=False)
    positions = ([(0, 0), (7, 7), (2, 3), (2, 5), (0, 4)],
                 [(0, 0), (7, 6), (2, 4), (5, 7)])
    moves = [[0, 2, 1, 1, 4], [3, 1, 4, 4, 1], [1, 3, 0, 2, 2], [4, 4, 4, 4, 4],
             [2, 0, 1, 3, 0], [0, 0, 0, 0, 0]]
    stats = lockstep(pz, config, 0, positions=positions, actions=moves)
    assert stats.steps == 6 and stats.truncated == 1


def test_spawn_algorithm_matches_pettingzoo(pz):
    """init_episode on np.random.default_rng(seed) places exactly as PettingZoo's reset."""
    pursuit_v5, _ = pz
    for config in (CONFIGS["defaults"], CONFIGS["dense"], CONFIGS["big_window"],
                   dict(x_size=20, y_size=14, n_pursuers=6, n_evaders=8,
                        constraint_window=0.7)):
        env = pursuit_v5.parallel_env(**config)
        model = Pursuit(**config)
        for seed in range(4):
            env.reset(seed=seed)
            pursuers, evaders = _pz_positions(env.unwrapped.env)
            layout = model.init_episode(np.random.default_rng(seed))
            assert list(layout.pursuers) == pursuers
            assert list(layout.evaders) == [evaders[k] for k in range(model.n_evaders)]


def test_map_and_spaces_match_pettingzoo(pz):
    pursuit_v5, _ = pz
    from pettingzoo.sisl.pursuit.utils import two_d_maps

    for xs in range(1, 41):
        for ys in (1, 2, 3, 5, 7, 10, 16, 23, 40, 47):
            assert np.array_equal(two_d_maps.rectangle_map(xs, ys) == -1,
                                  rectangle_map(xs, ys)), (xs, ys)
    for xs, ys in ((16, 16), (7, 5), (12, 31), (2, 9)):
        env = pursuit_v5.parallel_env(x_size=xs, y_size=ys, n_pursuers=1, n_evaders=1)
        env.reset(seed=0)
        need = [env.unwrapped.env.need_to_surround(x, y) for x in range(xs) for y in range(ys)]
        assert Pursuit(x_size=xs, y_size=ys, n_pursuers=1, n_evaders=1)._need == need
    env = pursuit_v5.parallel_env()
    model = Pursuit()
    assert model.observation_space(0) == env.observation_space("pursuer_0")
    assert model.action_space(0) == env.action_space("pursuer_0")


# -- the port on its own ----------------------------------------------------------------------
def run(model, seed, steps, runtime="serial"):
    with seer.make_runtime(model, runtime, threads=None if runtime == "serial" else 2) as rt:
        outs = [rt.reset(seed)]
        for t in range(steps):
            outs.append(rt.step(model.sample_actions(t)))
        return {k: v.copy() for k, v in rt.state._arrays.items()}, outs


def test_deterministic_for_a_seed_and_seed_dependent():
    model = Pursuit(x_size=12, y_size=12, n_pursuers=10, n_evaders=12)
    a, _ = run(model, 3, 15)
    b, _ = run(model, 3, 15)
    c, _ = run(model, 4, 15)
    assert all(a[k].tobytes() == b[k].tobytes() for k in a)
    assert a["pos"].tobytes() != c["pos"].tobytes()


@pytest.mark.parametrize("surround", [True, False])
def test_seer_equals_serial_without_injection(surround):
    model = Pursuit(x_size=12, y_size=12, n_pursuers=14, n_evaders=16, surround=surround,
                    max_cycles=30)
    assert_equivalent(lambda m: seer.make_runtime(m, "seer", threads=2), model, seeds=[0, 1],
                      steps=30)


def test_each_evader_draws_from_its_own_generator():
    """Evader k's moves are integers(5) from entity n_pursuers + k's own generator
    (SeedSequence(seed).spawn(n_entities)), whatever happens to the other evaders."""
    model = Pursuit(x_size=16, y_size=16, n_pursuers=4, n_evaders=10)
    model.initial_positions = ([(0, 0), (0, 2), (0, 4), (0, 6)],
                               [(15, y) for y in range(0, 15, 3)]
                               + [(x, 15) for x in range(1, 15, 3)])
    seed, steps = 11, 25
    with seer.SerialRuntime(model) as rt:
        rt.reset(seed)
        trail = [rt.state.pos.copy()]
        for _ in range(steps):
            rt.step([4] * 4)  # pursuers stay in their corner
            trail.append(rt.state.pos.copy())
        assert not rt.state.gone.any()
    children = np.random.SeedSequence(seed).spawn(model.n_entities)
    for e in model.groups.evaders:
        draws = np.random.default_rng(children[e])
        x, y = trail[0][e]
        for t in range(steps):
            x, y = model._moved(int(x), int(y), int(draws.integers(5)))
            assert (x, y) == tuple(trail[t + 1][e]), (e, t)


def test_injected_moves_replace_the_draws():
    model = Pursuit(x_size=10, y_size=10, n_pursuers=2, n_evaders=3)
    model.initial_positions = ([(0, 0), (0, 9)], [(9, 0), (9, 5), (8, 9)])
    model.evader_moves = {(t, k): 1 if k == 0 else 0 for t in range(3) for k in range(3)}
    with seer.SerialRuntime(model) as rt:
        rt.reset(123)
        for _ in range(3):
            rt.step([4, 4])
        pos = rt.state.pos[2:].tolist()
    assert pos == [[9, 0], [7, 5], [5, 9]]  # the edge and the building (6, 5) block moves


def test_rewards_match_a_per_row_mean():
    """The vectorised reward equals the N-sub-step sum written out with np.mean per row."""
    rng = np.random.default_rng(0)
    for n, shared in ((1, True), (7, True), (8, False), (33, True), (300, False)):
        model = Pursuit(n_pursuers=n, n_evaders=5, shared_reward=shared, tag_reward=0.37,
                        catch_reward=-1.5, urgency_reward=-0.1)
        c_old, c_new = rng.integers(0, 9, n), rng.integers(0, 9, n)
        credit = rng.random(n) < 0.3
        total = 0
        for j in range(n):
            local = model.tag_reward * np.where(np.arange(n) <= j, c_new, c_old) / n
            if j == n - 1:
                local += model.catch_reward * credit
                local += model.urgency_reward
            total = total + (model.local_ratio * local
                             + (1 - model.local_ratio) * local.mean())
        assert model._rewards(c_old, c_new, credit).tobytes() == total.tobytes(), n


def test_pettingzoo_parallel_api():
    pytest.importorskip("pettingzoo")
    from pettingzoo.test import parallel_api_test

    from seer.marl import SeerParallelEnv

    env = SeerParallelEnv(Pursuit(x_size=10, y_size=10, n_pursuers=6, n_evaders=5,
                                            max_cycles=12), "seer", threads=2)
    parallel_api_test(env, num_cycles=20)
    env.close()


def test_render_frame():
    pytest.importorskip("pettingzoo")
    pytest.importorskip("matplotlib")
    from seer.marl import SeerParallelEnv
    env = SeerParallelEnv(Pursuit(), "serial", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.std() > 0
    env.close()


def test_moves_follow_pettingzoo_directions():
    assert MOVES == ((-1, 0), (1, 0), (0, 1), (0, -1), (0, 0))
    model = Pursuit()
    assert model._moved(0, 0, 0) == (0, 0) and model._moved(0, 0, 1) == (1, 0)
    assert model._moved(4, 5, 1) == (4, 5)  # (5, 5) is a wall
    assert model._moved(15, 15, 2) == (15, 15) and model._moved(3, 3, 3) == (3, 2)


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(x_size=0), "Pursuit x_size must be an int >= 1, got 0"),
    (dict(y_size=2.0), "Pursuit y_size must be an int >= 1, got 2.0"),
    (dict(max_cycles=0), "Pursuit max_cycles must be an int >= 1, got 0"),
    (dict(n_evaders=0), "Pursuit n_evaders must be an int >= 1, got 0"),
    (dict(n_pursuers=True), "Pursuit n_pursuers must be an int >= 1, got True"),
    (dict(obs_range=-1), "Pursuit obs_range must be an int >= 1, got -1"),
    (dict(n_catch=0), "Pursuit n_catch must be an int >= 1, got 0"),
    (dict(shared_reward=1), r"Pursuit shared_reward must be a bool \(True or False\), got 1"),
    (dict(freeze_evaders="no"),
     r"Pursuit freeze_evaders must be a bool \(True or False\), got 'no'"),
    (dict(surround=None), r"Pursuit surround must be a bool \(True or False\), got None"),
    (dict(tag_reward=float("nan")), "Pursuit tag_reward must be a finite number, got nan"),
    (dict(catch_reward="5"), "Pursuit catch_reward must be a finite number, got '5'"),
    (dict(urgency_reward=float("-inf")),
     "Pursuit urgency_reward must be a finite number, got -inf"),
    (dict(constraint_window=0.0),
     r"Pursuit constraint_window must be a finite number in \(0, 1\], got 0.0"),
    (dict(constraint_window=1.5),
     r"Pursuit constraint_window must be a finite number in \(0, 1\], got 1.5"),
])
def test_bad_parameters(kwargs, message):
    with pytest.raises(seer.ModelError, match="^" + message + "$"):
        Pursuit(**kwargs)


def test_numpy_numbers_are_arguments_too():
    model = Pursuit(x_size=np.int64(8), y_size=np.int32(8), n_pursuers=np.uint8(3),
                    n_evaders=np.int64(2), tag_reward=np.float32(0.5), surround=np.True_,
                    constraint_window=np.float64(1))
    assert (model.x_size, model.n_pursuers, model.n_entities) == (8, 3, 5)
    assert type(model.tag_reward) is float and model.surround is True


@pytest.mark.parametrize(("actions", "message"), [
    ([0, 1, 5], "Pursuit action for pursuer 2 must be an int in 0..4, got 5"),
    ([0, -1, 4], "Pursuit action for pursuer 1 must be an int in 0..4, got -1"),
    ([1.0, 0, 0], "Pursuit action for pursuer 0 must be an int in 0..4, got 1.0"),
    ([True, 0, 0], "Pursuit action for pursuer 0 must be an int in 0..4, got True"),
    ([0, 1 + 0j, 0], r"Pursuit action for pursuer 1 must be an int in 0..4, got \(1\+0j\)"),
    ([0, 0, "2"], "Pursuit action for pursuer 2 must be an int in 0..4, got '2'"),
    ([0, np.ma.masked, 0], "Pursuit action for pursuer 1 must be an int in 0..4, got masked"),
    ([0, 0, 10**400], r"Pursuit action for pursuer 2 must be an int in 0..4, got 1000.*000$"),
    (np.array([0, 1, 2.0]), r"Pursuit action for pursuer 0 must be an int in 0..4, got "
                            r"np.float64\(0.0\)"),
    ({0: 1, 4: 2}, r"name entities that are not agents: \[4\]"),
    ([0, 1], "has length 2; expected 3"),
])
def test_bad_actions_are_refused_before_anything_runs(actions, message):
    model = Pursuit(x_size=8, y_size=8, n_pursuers=3, n_evaders=2)
    with seer.SerialRuntime(model) as rt:
        rt.reset(0)
        before = rt.state.pos.copy()
        with pytest.raises(seer.ModelError, match=message):
            rt.step(actions)
        assert np.array_equal(rt.state.pos, before)
        rt.step({1: 1})  # the episode goes on; the others stay
        assert rt.state.pos[0].tolist() == before[0].tolist()


def test_initial_positions_and_impossible_spawns():
    model = Pursuit(x_size=8, y_size=8, n_pursuers=2, n_evaders=1)
    with pytest.raises(seer.ModelError, match="has 1 pursuer cells; expected 2"):
        model.initial_positions = ([(0, 0)], [(1, 1)])
    with pytest.raises(seer.ModelError, match=r"evader 0 at \(3, 3\) is outside"):
        model.initial_positions = ([(0, 0), (0, 1)], [(3, 3)])  # a wall
    with pytest.raises(seer.ModelError, match="sequences of"):
        model.initial_positions = 5
    crowded = Pursuit(x_size=3, y_size=3, n_pursuers=6, n_evaders=1)
    with pytest.raises(seer.ModelError, match=r"cannot place pursuer \d of 6: no open cell"):
        seer.SerialRuntime(crowded).reset(0)
    # where PettingZoo's reset would loop forever (no cell left for an evader)
    tight = Pursuit(x_size=20, y_size=14, n_pursuers=12, n_evaders=20, constraint_window=0.5)
    with pytest.raises(seer.ModelError, match="cannot place evader"):
        tight.init_episode(np.random.default_rng(0))
