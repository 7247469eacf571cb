"""examples/mappo.py and examples/marl_policy.py: the GIL stays off, training on serial
and on seer(2) logs identical numbers, and so does training on K environments through
seer.vector.SeerVectorEnv (1 or 2 threads) against K serial environments stepped in turn;
the script writes checkpoints and a plot, the hand-written pieces (GAE, log-probabilities)
are right, and Adam is torch.optim.Adam's update bit for bit."""

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("pettingzoo")

from examples.mappo import (  # noqa: E402
    LOGGED,
    Config,
    compare,
    describe,
    gae,
    main,
    make_envs,
    train,
)
from examples.marl_policy import ActorCritic, Adam, PolicySpec  # noqa: E402
from seer import platform as seer_platform  # noqa: E402

TINY = {"aircraft": {"size": 12, "cost_us": 70.0}, "pcs": {"size": 4, "cost_us": 5.0}}


def tiny(workload: str, **kw) -> Config:
    return Config(workload=workload, updates=3, steps=6, epochs=2, minibatches=2,
                  hidden=16, **{**TINY[workload], **kw})


def test_imports_keep_the_gil_off():
    # a torch.optim optimizer (or use_deterministic_algorithms) would import triton,
    # which re-enables the GIL on a free-threaded build
    assert "triton" not in sys.modules
    if seer_platform.free_threaded_build():
        assert sys._is_gil_enabled() is False


@pytest.mark.parametrize("workload", ["aircraft", "pcs"])
def test_seer_and_serial_training_log_identical_numbers(workload):
    serial = train(tiny(workload, runtime="serial", threads=1), progress=False)
    seer2 = train(tiny(workload, runtime="seer", threads=2), progress=False)
    assert compare(serial["history"], seer2["history"]) is None
    assert len(serial["history"]) == 3
    for row in serial["history"]:
        assert all(math.isfinite(row[k]) for k in LOGGED)
    # the comparison can fail: another seed gives other numbers
    other = train(tiny(workload, runtime="serial", threads=1, seed=1), progress=False)
    assert compare(serial["history"], other["history"]) is not None
    if seer_platform.free_threaded_build():
        assert sys._is_gil_enabled() is False


@pytest.mark.parametrize("workload", ["aircraft", "pcs"])
def test_k_environments_log_identical_numbers_however_they_are_stepped(workload):
    runs = {}
    for runtime, threads, how in [("serial", 1, "in-turn"), ("seer", 1, "vector"),
                                  ("seer", 2, "vector")]:
        cfg = tiny(workload, runtime=runtime, threads=threads, envs=3, stepping=how)
        runs[describe(cfg)] = train(cfg, progress=False)["history"]
    assert list(runs) == ["serial in turn x3", "seer(1) vector x3", "seer(2) vector x3"]
    reference = runs["serial in turn x3"]
    for name, history in runs.items():
        assert compare(reference, history) is None, name
    assert all(math.isfinite(row[k]) for row in reference for k in LOGGED)
    # the comparison can fail: one environment, or other seeds, give other numbers
    one = train(tiny(workload, runtime="seer", threads=2), progress=False)["history"]
    assert compare(reference, one) is not None
    other = train(tiny(workload, runtime="seer", threads=2, envs=3, seed=1),
                  progress=False)["history"]
    assert compare(reference, other) is not None
    if seer_platform.free_threaded_build():
        assert sys._is_gil_enabled() is False


def test_one_environment_in_the_vector_env_trains_as_the_single_env():
    single = train(tiny("pcs", runtime="seer", threads=2), progress=False)
    vector = train(tiny("pcs", runtime="seer", threads=2, stepping="vector"), progress=False)
    assert compare(single["history"], vector["history"]) is None


@pytest.mark.parametrize("how", ["vector", "in-turn"])
def test_the_k_environments_get_their_own_seeds_and_stacked_arrays(how):
    envs = make_envs(tiny("pcs", runtime="seer", threads=2, envs=2, stepping=how))
    try:
        assert envs.vector == (how == "vector")
        obs = envs.reset([5, 6])
        assert obs.shape == (2, 16, 6) and obs.dtype == np.float32
        actions = np.tile(np.arange(16) % 4, (2, 1))
        steps = [envs.step(actions) for _ in range(3)]
        assert steps[-1][0].shape == (2, 16, 6) and steps[-1][1].shape == (2, 16)
        assert steps[-1][1].dtype == np.float64
        # seeds 5 and 6 are two different episodes
        assert any(not np.array_equal(o[0], o[1]) for o, _ in steps)
        again = envs.reset([6, 5])  # the same seeds, swapped: the same episodes, swapped
        assert np.array_equal(again[::-1], obs)
    finally:
        envs.close()


def test_script_trains_k_environments_and_checks_them_against_serial(tmp_path, capsys):
    argv = ["--workload", "pcs", "--size", "4", "--cost-us", "5", "--updates", "2",
            "--steps", "4", "--hidden", "16", "--envs", "2", "--verify", "--no-progress",
            "--out", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert ("seer(2) vector x2 against serial in turn x2: every logged number identical"
            in out)
    assert (tmp_path / "pcs-seer-vector-x2" / "history.json").exists()
    assert (tmp_path / "pcs-serial-in-turn-x2").is_dir()
    auto = tmp_path / "auto"  # STPA chooses for the vector env from a preflight of both
    assert main([*argv[:-1], str(auto), "--threads", "auto"]) == 0
    out = capsys.readouterr().out
    assert "seer(auto: " in out and "vector x2 against serial in turn x2: every logged" in out
    assert sorted(p.name for p in auto.iterdir()) == ["pcs-seer-vector-x2",
                                                      "pcs-serial-in-turn-x2"]


def test_script_writes_checkpoints_history_and_plot(tmp_path, capsys):
    argv = ["--workload", "pcs", "--size", "4", "--cost-us", "5", "--updates", "2",
            "--steps", "4", "--hidden", "16", "--checkpoint-every", "1", "--verify",
            "--no-progress", "--out", str(tmp_path)]
    assert main(argv) == 0
    assert "every logged number identical" in capsys.readouterr().out
    run = tmp_path / "pcs-seer"
    assert (run / "learning_curve_pcs.png").stat().st_size > 1000
    assert (run / "history.json").exists() and (tmp_path / "pcs-serial").is_dir()
    ckpt = torch.load(run / "checkpoint_0002.pt")  # weights_only: plain data only
    assert ckpt["update"] == 2 and ckpt["config"]["workload"] == "pcs"
    policy = ActorCritic(PolicySpec(obs_dim=6, n_actions=4), hidden=16)
    policy.load_state_dict(ckpt["policy"])  # the normaliser's statistics travel too
    assert float(policy.norm.count) > 1
    assert (run / "checkpoint_0001.pt").exists()


def test_gae_matches_the_recursion_by_hand():
    rewards = np.array([[1.0], [0.0], [2.0]])
    values = np.array([[0.5], [0.2], [0.1], [0.3]])
    g, lam = 0.9, 0.8
    d = [rewards[t, 0] + g * values[t + 1, 0] - values[t, 0] for t in range(3)]
    expect = [d[0] + g * lam * (d[1] + g * lam * d[2]), d[1] + g * lam * d[2], d[2]]
    adv, ret = gae(rewards, values, g, lam)
    assert np.allclose(adv[:, 0], expect)
    assert np.allclose(ret, adv + values[:-1])


def test_log_probabilities_match_torch_distributions():
    from torch.distributions import Categorical, Normal

    torch.manual_seed(0)
    gauss = ActorCritic(PolicySpec(obs_dim=3, act_dim=2), hidden=8)
    with torch.no_grad():
        gauss.log_std.copy_(torch.tensor([-0.3, 0.4]))
    head, actions = torch.randn(5, 2), torch.randn(5, 2)
    logp, ent = gauss.log_prob(head, actions)
    normal = Normal(head, gauss.log_std.exp())
    assert torch.allclose(logp, normal.log_prob(actions).sum(-1), atol=1e-5)
    assert torch.allclose(ent, normal.entropy().sum(-1), atol=1e-5)
    cat = ActorCritic(PolicySpec(obs_dim=3, n_actions=4), hidden=8)
    logits, picks = torch.randn(5, 4), torch.tensor([0, 3, 1, 2, 3])
    logp, ent = cat.log_prob(logits, picks)
    ref = Categorical(logits=logits)
    assert torch.allclose(logp, ref.log_prob(picks), atol=1e-5)
    assert torch.allclose(ent, ref.entropy(), atol=1e-5)


def test_batched_forward_covers_every_agent_and_the_critic_sees_the_team():
    torch.manual_seed(0)
    policy = ActorCritic(PolicySpec(obs_dim=4, act_dim=2), hidden=8)
    obs = torch.randn(7, 4)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        actions, logp, value, _ = policy.act(obs, gen)
        assert actions.shape == (7, 2) and logp.shape == (7,) and value.shape == (7,)
        changed = obs.clone()
        changed[6] += 5.0  # another agent's observation moves every agent's value
        assert not torch.equal(policy.act(changed, torch.Generator())[2][0], value[0])
    env_actions = policy.env_actions(actions * 100)
    assert env_actions.dtype == np.float64 and np.abs(env_actions).max() <= 1.0


def test_one_forward_pass_over_k_environments_keeps_each_team_apart():
    torch.manual_seed(0)
    policy = ActorCritic(PolicySpec(obs_dim=4, n_actions=3), hidden=8)
    obs = torch.randn(2, 5, 4)  # K=2 environments of 5 agents
    with torch.no_grad():
        actions, logp, value, _ = policy.act(obs, torch.Generator().manual_seed(0))
        assert actions.shape == logp.shape == value.shape == (2, 5)
        # each environment's critic sees its own team, as if it were alone
        for k in range(2):
            alone = policy.act(obs[k], torch.Generator())[2]
            assert torch.allclose(value[k], alone, atol=1e-6)
        # one sampler draw per agent of each environment, in order: as for K*N agents
        flat = policy.act(obs.reshape(10, 4), torch.Generator().manual_seed(0))[0]
        assert torch.equal(actions.reshape(10), flat)


def test_adam_minimises_a_quadratic_and_round_trips_its_state():
    p = torch.nn.Parameter(torch.tensor([3.0, -2.0]))
    opt = Adam([p], lr=0.1, max_grad_norm=None)
    for _ in range(200):
        opt.zero_grad()
        (p.square().sum()).backward()
        opt.step()
    assert p.abs().max() < 0.05
    clone = Adam([torch.nn.Parameter(p.detach().clone())], lr=0.5)
    clone.load_state_dict(opt.state_dict())
    assert clone.t == 200 and clone.lr == 0.1 and torch.equal(clone.m[0], opt.m[0])


SAME_AS_TORCH = textwrap.dedent("""
    import sys
    import torch
    from examples.marl_policy import Adam

    def train(ours, clip):
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
        params = list(net.parameters())
        opt = (Adam(params, lr=3e-3, max_grad_norm=clip) if ours
               else torch.optim.Adam(params, lr=3e-3, eps=1e-5, foreach=False))
        gen, norms = torch.Generator().manual_seed(1), []
        for _ in range(30):
            opt.zero_grad()
            net(torch.randn(32, 6, generator=gen)).square().mean().backward()
            if ours:
                norms.append(opt.step())
            else:
                grads = [p.grad for p in params]
                norms.append(float(torch.nn.utils.clip_grad_norm_(params, clip, foreach=False)
                                   if clip else torch.nn.utils.get_total_norm(grads)))
                opt.step()
        return [p.detach() for p in params], norms

    gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else None
    ours = {clip: train(True, clip) for clip in (None, 0.5)}
    gil_after_ours = sys._is_gil_enabled() if gil is not None else None
    for clip, (params, norms) in ours.items():
        ref_params, ref_norms = train(False, clip)  # torch.optim: may turn the GIL on
        assert norms == ref_norms, (clip, norms[:3], ref_norms[:3])
        assert all(torch.equal(a, b) for a, b in zip(params, ref_params)), clip
    print(gil, gil_after_ours)
""")


def test_adam_is_torch_optim_adam_bit_for_bit():
    # in a child process: building torch.optim.Adam imports triton, which would turn this
    # process's GIL on (and fail a SEER_REQUIRE_NOGIL=1 session)
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", SAME_AS_TORCH],
                          cwd=Path(__file__).parents[2], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    if seer_platform.free_threaded_build():
        assert done.stdout.split() == ["False", "False"], done.stdout
