"""workloads.mpe against mpe2's own ``simple_spread_v3.parallel_env``, bit for bit (these
need the marl extra and mpe2, which scripts/bootstrap.sh installs without pygame-ce), and
the whole-array reference against the port.

mpe2 and the port are stepped side by side with the same actions, from mpe2's initial
layout; observations, rewards, flags, positions and velocities must have the same bytes
after every step, on every runtime and through ``SeerParallelEnv``.
"""

from __future__ import annotations

import numpy as np
import pytest

import seer
from seer.marl import SeerParallelEnv
from seer.sched import RUNTIMES
from seer.serial import SerialRuntime
from seer.testing import assert_equivalent, verify
from workloads.mpe import Spread
from workloads.mpe.whole_array import WholeArraySpread

PARALLEL = [f"{kind}:2" for kind in RUNTIMES if kind != "serial"] + ["seer:1", "seer:3"]


@pytest.fixture(scope="module")
def spread_v3():
    pytest.importorskip("pettingzoo")  # the marl extra
    from workloads.mpe.original import import_mpe2_spread

    return import_mpe2_spread()  # raises, saying how to install mpe2, when it is missing


def _runtime(model, label):
    kind, _, threads = label.partition(":")
    return seer.make_runtime(model, kind, threads=int(threads or 1))


def _actions(n, steps, seed=1):
    return np.random.default_rng(seed).integers(0, 5, (steps, n)).tolist()


def record_mpe2(spread_v3, n, steps, *, seed=7, layout=None, **kwargs):
    """mpe2's trajectory: (initial agent and landmark positions, reset observations, one
    (observations, rewards, terminations, truncations, pos, vel) per step, actions)."""
    env = spread_v3.parallel_env(N=n, **kwargs)
    obs, _ = env.reset(seed=seed)
    world = env.unwrapped.world
    if layout is not None:  # start from given positions instead of the drawn ones
        for body, p in zip(world.agents + world.landmarks, np.concatenate(layout), strict=True):
            body.state.p_pos = np.array(p, np.float64)
        obs = {a.name: env.unwrapped.observe(a.name) for a in world.agents}
    agents = np.array([a.state.p_pos for a in world.agents])
    landmarks = np.array([lm.state.p_pos for lm in world.landmarks])
    names = [f"agent_{i}" for i in range(n)]
    assert env.possible_agents == names
    start = np.stack([obs[a] for a in names])
    actions = _actions(n, steps)
    trajectory = []
    for joint in actions:
        if not env.agents:
            break
        o, r, te, tr, _ = env.step(dict(zip(names, joint, strict=True)))
        trajectory.append((np.stack([o[a] for a in names]),
                           np.array([r[a] for a in names], np.float64),
                           np.array([te[a] for a in names]), np.array([tr[a] for a in names]),
                           np.array([a.state.p_pos for a in world.agents]),
                           np.array([a.state.p_vel for a in world.agents])))
    env.close()
    return (agents, landmarks), start, trajectory, actions


def check_runtime(record, model, label):
    """Step ``model`` on runtime ``label`` from mpe2's layout; every step's bytes must be
    mpe2's."""
    layout, start, trajectory, actions = record
    n = model.n_agents
    model.initial_positions = layout
    with _runtime(model, label) as rt:
        out = rt.reset(0)
        assert np.stack(out.observations).tobytes() == start.tobytes(), f"{label}: reset"
        for t, (obs, rewards, term, trunc, pos, vel) in enumerate(trajectory):
            out = rt.step(actions[t])
            where = f"{label}, step {t}"
            assert rt.state.pos[:n].tobytes() == pos.tobytes(), f"{where}: positions"
            assert rt.state.vel[:n].tobytes() == vel.tobytes(), f"{where}: velocities"
            assert np.stack(out.observations).tobytes() == obs.tobytes(), \
                f"{where}: observations"
            assert out.rewards.tobytes() == rewards.tobytes(), f"{where}: rewards"
            assert out.terminations.tolist() == term.tolist(), f"{where}: terminations"
            assert out.truncations.tolist() == trunc.tolist(), f"{where}: truncations"


def check_adapter(record, model, label):
    """The same through SeerParallelEnv with mpe2's agent names."""
    layout, start, trajectory, actions = record
    n = model.n_agents
    model.initial_positions = layout
    kind, _, threads = label.partition(":")
    env = SeerParallelEnv(model, kind, threads=int(threads or 1), prefix="agent")
    try:
        obs, _ = env.reset(seed=0)
        names = [f"agent_{i}" for i in range(n)]
        assert env.possible_agents == names
        assert np.stack([obs[a] for a in names]).tobytes() == start.tobytes()
        for t, (o_ref, r_ref, te_ref, tr_ref, _, _) in enumerate(trajectory):
            o, r, te, tr, _ = env.step(dict(zip(names, actions[t], strict=True)))
            assert np.stack([o[a] for a in names]).tobytes() == o_ref.tobytes(), t
            assert np.array([r[a] for a in names]).tobytes() == r_ref.tobytes(), t
            assert [te[a] for a in names] == te_ref.tolist(), t
            assert [tr[a] for a in names] == tr_ref.tolist(), t
        if trajectory[-1][3].all():  # truncated at max_cycles: every agent has left
            assert env.agents == []
    finally:
        env.close()


# -- against mpe2 -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def short_records(spread_v3):
    """100 agents for 4 steps; 12 agents for a whole 40-step episode (truncated at the
    end)."""
    return [(100, record_mpe2(spread_v3, 100, 4, max_cycles=25)),
            (12, record_mpe2(spread_v3, 12, 40, max_cycles=40, seed=3))]


def test_init_episode_draws_mpe2s_layout(spread_v3):
    for n, seed in ((1, 0), (5, 11), (40, 2)):
        (agents, landmarks), *_ = record_mpe2(spread_v3, n, 0, seed=seed)
        layout = Spread(n).init_episode(np.random.default_rng(seed))
        assert layout.agents.tobytes() == agents.tobytes()
        assert layout.landmarks.tobytes() == landmarks.tobytes()


@pytest.mark.parametrize("label", ["serial", *PARALLEL])
def test_bit_for_bit_with_mpe2_short(short_records, label):
    for n, record in short_records:
        check_runtime(record, Spread(n, max_cycles=25 if n == 100 else 40), label)


@pytest.mark.parametrize("label", ["serial", "seer:2"])
def test_adapter_bit_for_bit_with_mpe2_short(short_records, label):
    for n, record in short_records:
        check_adapter(record, Spread(n, max_cycles=25 if n == 100 else 40), label)


def test_the_contact_forces_are_exercised(short_records):
    # The comparison means something only if agents overlap: count colliding pairs.
    n, (layout, *_rest) = short_records[0]
    d = np.linalg.norm(layout[0][:, None] - layout[0][None], axis=-1)
    assert ((d < 0.3).sum() - n) // 2 > 50


def test_termination_on_success_as_mpe2(spread_v3):
    # Every agent starts on its landmark, far from the others: covered at once.
    n = 4
    agents = np.array([[-0.8, -0.8], [0.8, -0.8], [-0.8, 0.8], [0.8, 0.8]])
    landmarks = agents + 0.01
    record = record_mpe2(spread_v3, n, 3, layout=(agents, landmarks), max_cycles=25,
                         terminate_on_success=True)
    assert record[2][0][2].all() and len(record[2]) == 1  # mpe2 terminated after step 1
    model = Spread(n, terminate_on_success=True)
    check_runtime(record, model, "serial")
    check_adapter(record, Spread(n, terminate_on_success=True), "seer:2")


@pytest.fixture(scope="module")
def long_record(spread_v3):
    return record_mpe2(spread_v3, 100, 300, max_cycles=300)


@pytest.mark.slow
@pytest.mark.parametrize("label", ["serial", *PARALLEL, "adapter-serial", "adapter-seer:2"])
def test_bit_for_bit_with_mpe2_300_steps_100_agents(long_record, label):
    # mpe2 takes about 70 s for these 300 steps (recorded once); each runtime about 2-5 s.
    assert long_record[2][-1][3].all()  # truncated at the last step
    if label.startswith("adapter-"):
        check_adapter(long_record, Spread(100, max_cycles=300), label[len("adapter-"):])
    else:
        check_runtime(long_record, Spread(100, max_cycles=300), label)


# -- the port on its own ------------------------------------------------------------------------
@pytest.mark.parametrize("label", PARALLEL)
def test_every_runtime_matches_serial(label):
    assert_equivalent(lambda m: _runtime(m, label), Spread(30, max_cycles=12), seeds=[0, 5],
                      steps=14)


def test_seer_verify_passes():
    report = verify(lambda: Spread(16, max_cycles=8), threads=2, steps=10, seeds=(0, 1))
    assert report.ok, str(report)
    assert report.contract_error is None and report.results
    assert all(d is None for d in report.results.values())


def test_seer_verify_command_on_the_registered_name(capsys):
    from seer.cli import main

    assert main(["verify", "mpe-spread", "n_agents=12", "--steps", "4", "--runtimes",
                 "seer:2", "optimistic:2"]) == 0
    out = capsys.readouterr().out
    assert "no contract broken" in out
    assert "OK: all 2 runtime(s) gave serial's results bit for bit" in out


def test_debug_mode_raises_no_false_alarm_and_changes_nothing():
    model = Spread(20)
    plain, debug = SerialRuntime(model), SerialRuntime(model, debug=True)
    for rt in (plain, debug):
        rt.reset(4)
    for t in range(10):
        a, b = plain.step(model.sample_actions(t)), debug.step(model.sample_actions(t))
        assert a.rewards.tobytes() == b.rewards.tobytes()
        assert debug.state.pos.tobytes() == plain.state.pos.tobytes()


class _SharedBufferSpread(Spread):
    """The everyday numpy habit debug mode must catch: a work array kept on the model."""

    def __init__(self, n):
        super().__init__(n)
        self.buf = np.zeros((n, 2))

    def on_move(self, ctx, event):
        np.subtract(ctx.snapshot.pos[ctx.id], ctx.snapshot.pos[:self.n_agents], out=self.buf)
        super().on_move(ctx, event)


def test_debug_mode_still_catches_a_buffer_on_the_model():
    model = _SharedBufferSpread(6)
    rt = SerialRuntime(model, debug=True)
    rt.reset(0)
    with pytest.raises(seer.errors.SharedStateError, match=r"model\.buf"):
        rt.step(model.sample_actions(0))


def test_registered_as_mpe_spread():
    from seer.specs import load_model

    model = load_model("mpe-spread", {"n_agents": 7})
    assert isinstance(model, Spread) and model.n_agents == 7


@pytest.mark.parametrize("n", [1, 2, 60])
def test_whole_array_reference_is_bit_identical_to_the_port(n):
    steps = 40
    model = Spread(n, max_cycles=30)
    reference = WholeArraySpread(n, max_cycles=30)
    with seer.make_runtime(model, "serial") as rt:
        out = rt.reset(2)
        obs = reference.reset(rt.state.pos[:n], rt.state.pos[n:])
        assert obs.tobytes() == np.stack(out.observations).tobytes()
        for joint in _actions(n, steps, seed=9):
            out = rt.step(joint)
            obs, rewards, terminated, truncated = reference.step(np.array(joint))
            assert reference.pos.tobytes() == rt.state.pos[:n].tobytes()
            assert reference.vel.tobytes() == rt.state.vel[:n].tobytes()
            assert obs.tobytes() == np.stack(out.observations).tobytes()
            assert rewards.tobytes() == out.rewards.tobytes()
            assert [terminated] * n == out.terminations.tolist()
            assert [truncated] * n == out.truncations.tolist()
    assert truncated  # the episode ran past max_cycles


# -- the adapter and actions ----------------------------------------------------------------------
def test_adapter_names_spaces_and_truncation():
    model = Spread(5, max_cycles=3)
    env = SeerParallelEnv(model, "serial", prefix="agent")
    assert env.possible_agents == [f"agent_{i}" for i in range(5)]
    space = env.observation_space("agent_3")
    assert space.shape == (4 + 2 * 5 + 4 * 4,) and space.dtype == np.float32
    assert env.action_space("agent_0").n == 5
    obs, _ = env.reset(seed=1)
    assert space.contains(obs["agent_3"])
    for t in range(3):
        assert env.agents, t
        _, _, _, truncations, _ = env.step({a: 0 for a in env.agents})
    assert all(truncations.values()) and env.agents == []
    assert SeerParallelEnv(Spread(2), "serial").possible_agents == ["spread_0", "spread_1"]


def test_actions_are_checked_and_missing_ones_are_no_push():
    model = Spread(4)
    with seer.make_runtime(model, "serial") as rt:
        rt.reset(0)
        with pytest.raises(seer.ModelError, match=r"entity 'agent_0' .* integers in range\(4\)"):
            rt.step({"agent_0": 1})
        with pytest.raises(seer.ModelError, match=r"action for agent 2 must be an int in 0\.\.4"):
            rt.step([0, 1, 5, 0])
        with pytest.raises(seer.ModelError, match="action for agent 0 must be an int"):
            rt.step([True, 0, 0, 0])
        with pytest.raises(seer.ModelError, match="action for agent 1 must be an int"):
            rt.step({1: 0.5})
        missing = rt.step({1: 2}).observations
    with seer.make_runtime(model, "serial") as rt:
        rt.reset(0)
        explicit = rt.step([0, 2, 0, 0]).observations
    assert np.stack(missing).tobytes() == np.stack(explicit).tobytes()


@pytest.mark.parametrize("kwargs, message", [
    ({"n_agents": 0}, "n_agents must be an int >= 1"),
    ({"n_agents": 2.0}, "n_agents must be an int >= 1"),
    ({"local_ratio": 1.5}, r"local_ratio must be a finite number in \[0, 1\]"),
    ({"max_cycles": 0}, "max_cycles must be an int >= 1"),
    ({"terminate_on_success": 1}, "terminate_on_success must be a bool"),
])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(seer.ModelError, match=message):
        Spread(**kwargs)


def test_bad_initial_positions_are_named():
    model = Spread(3)
    with pytest.raises(seer.ModelError, match="3 finite"):
        model.initial_positions = (np.zeros((2, 2)), np.zeros((3, 2)))
    with pytest.raises(seer.ModelError, match="initial landmark positions"):
        model.initial_positions = (np.zeros((3, 2)), np.full((3, 2), np.nan))
