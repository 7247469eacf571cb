"""K environments on one pool (seer.vector): each model's results are those of stepping it
alone, bit for bit, on every thread count; the pool's threads run every model's windows."""

from __future__ import annotations

import numpy as np
import pytest

from seer.errors import HandlerError, ModelError, RuntimeStateError
from seer.serial import SerialRuntime
from seer.testing import RandomModel, assert_outputs_identical, assert_states_identical
from seer.vector import VectorRuntime
from workloads.pcs import PCS


def _alone(models, seeds, steps):
    """Each model stepped alone on the serial runtime: outputs after reset and each step,
    and the runtimes (for their states)."""
    runs = []
    for model, seed in zip(models, seeds, strict=True):
        rt = SerialRuntime(model)
        outs = [rt.reset(seed)]
        outs += [rt.step(model.sample_actions(t)) for t in range(steps)]
        runs.append((rt, outs))
    return runs


@pytest.mark.parametrize("split", ["events", "whole", "auto"])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("sizes", [(30,), (20, 45), (10, 60, 25), (200, 10, 10, 10)])
def test_every_model_steps_as_it_does_alone(threads, sizes, split):
    models = [RandomModel(n, seed=100 + i, fanout=2, p_fan_in=0.5, lookahead=0.25 * (i % 2))
              for i, n in enumerate(sizes)]
    steps = 4
    alone = _alone(models, [7 + k for k in range(len(models))], steps)
    with VectorRuntime(models, threads=threads, split=split) as vec:
        outs = [vec.reset(7)]
        outs += [vec.step([m.sample_actions(t) for m in models]) for t in range(steps)]
        for k, (rt, expected) in enumerate(alone):
            for t, exp in enumerate(expected):
                assert_outputs_identical(exp, outs[t][k], f"environment {k}, step {t}: ")
            assert_states_identical(rt, vec.envs[k], f"environment {k}: ")
            rt.close()
        assert sum(env.events_run for env in vec.envs) > 0
        assert all((env.pool is None) == whole for env, whole in zip(vec.envs, vec.whole,
                                                                      strict=True))
        if split != "auto":
            assert vec.whole == [split == "whole"] * len(models)


def test_two_pcs_grids_of_different_sizes():
    models = [PCS(width=8, height=8), PCS(width=12, height=6)]
    alone = _alone(models, [3, 9], 3)
    with VectorRuntime(models, threads=2) as vec:
        vec.reset([3, 9])
        outs = [vec.step([m.sample_actions(t) for m in models]) for t in range(3)]
        for k, (rt, expected) in enumerate(alone):
            assert_outputs_identical(expected[-1], outs[-1][k], f"environment {k}: ")
            assert_states_identical(rt, vec.envs[k])
            rt.close()


class Boom(RandomModel):
    def on_ping(self, ctx, event):  # the planted failure
        if ctx.now > 1.0:
            raise ValueError("boom")
        super().on_ping(ctx, event)


def test_bad_input_is_named_and_a_failed_step_needs_reset():
    models = [RandomModel(20, seed=1), RandomModel(20, seed=2)]
    with VectorRuntime(models, threads=2) as vec:
        with pytest.raises(RuntimeStateError, match="environment 0 needs reset"):
            vec.step()
        vec.reset(0)
        with pytest.raises(ModelError, match="needs 2 actions"):
            vec.step([None])
        with pytest.raises(ModelError, match="an int or 2 seeds"):
            vec.reset([1, 2, 3])
        vec.step()
    with pytest.raises(ModelError, match="at least one model"):
        VectorRuntime([])


def test_a_handler_error_fails_the_step_and_reset_recovers():
    models = [RandomModel(20, seed=1), Boom(20, seed=2)]
    with VectorRuntime(models, threads=2) as vec:
        vec.reset(0)
        with pytest.raises(HandlerError, match="boom"):
            for t in range(6):
                vec.step([m.sample_actions(t) for m in models])
        with pytest.raises(RuntimeStateError):
            vec.step()
        vec.reset(0)
        vec.step([m.sample_actions(0) for m in models])


def test_the_benchmark_checks_every_way_against_serial(monkeypatch):
    import bench.vector as bv

    result = bv.measure(bv.SMOKE_SETS["dominant"], threads=2, steps=2, rounds=1)
    assert set(result["ways"]) == {*bv.WAYS, "ceiling"}
    assert all(w["identical"] for w in result["ways"].values())
    assert result["ceiling_gain"] > 0


    class Misseeded(VectorRuntime):  # a planted difference: every environment seeded off by one
        def reset(self, seed=None, **kw):
            return super().reset(seed + 1, **kw)

    monkeypatch.setattr(bv, "VectorRuntime", Misseeded)
    wrong = bv.measure(bv.SMOKE_SETS["equal"], threads=2, steps=1, rounds=1,
                       ways=("serial", "vector", "thread pool"), cost_us=5.0)
    assert wrong["ways"]["vector"]["identical"] is False
    assert wrong["ways"]["thread pool"]["identical"] is True


def test_a_subset_steps_and_resets_alone():
    models = [RandomModel(25, seed=5), RandomModel(35, seed=6), RandomModel(15, seed=7)]
    ref = [SerialRuntime(m) for m in models]
    with VectorRuntime(models, threads=2) as vec:
        vec.reset([1, 2, 3])
        for rt, s in zip(ref, [1, 2, 3], strict=True):
            rt.reset(s)
        plan = [None, [0, 2], [1], None, [2]]  # which models step at each call (None: all)
        for t, which in enumerate(plan):
            ks = range(3) if which is None else which
            outs = vec.step([models[k].sample_actions(ref[k].step_index) for k in ks],
                            envs=which)
            for k, out in zip(ks, outs, strict=True):
                exp = ref[k].step(models[k].sample_actions(ref[k].step_index))
                assert_outputs_identical(exp, out, f"call {t}, environment {k}: ")
        assert [e.step_index for e in vec.envs] == [r.step_index for r in ref] == [3, 3, 4]
        again = vec.reset(11, envs=[1])  # only model 1 starts over, seeded 11
        assert_outputs_identical(ref[1].reset(11), again[0])
        assert [e.step_index for e in vec.envs] == [3, 0, 4]
        for k in range(3):
            assert_states_identical(ref[k], vec.envs[k], f"environment {k}: ")
        with pytest.raises(ModelError, match="distinct indices"):
            vec.step([None, None], envs=[1, 1])
    for rt in ref:
        rt.close()


def _pcs(max_steps):
    return PCS(width=4, height=4, max_steps=max_steps)


def _reference(k, base, schedule):
    """Environment ``k`` stepped alone on serial along ``schedule`` ("step" or "reset"
    for each call after the first reset): the outputs of each call."""
    from seer.vector import _episode_seed

    model = _pcs(2)
    rt = SerialRuntime(model)
    outs, episode = [rt.reset(base + k)], 0
    for what in schedule:
        if what == "reset":
            episode += 1
            outs.append(rt.reset(_episode_seed(base + k, episode)))
        else:
            outs.append(rt.step(model.sample_actions(rt.step_index)))
    rt.close()
    return outs


@pytest.mark.parametrize("threads", [1, 2])
def test_next_step_autoreset_restarts_an_ended_episode_in_the_next_step(threads):
    from seer.vector import SeerVectorEnv

    models = [_pcs(2) for _ in range(3)]
    with SeerVectorEnv(models, threads=threads) as env:
        assert env.metadata["autoreset_mode"].value == "NextStep"
        obs, infos = env.reset(seed=5)
        assert obs.shape == (3, 16, 6) and len(infos) == 3
        calls = []
        for _ in range(5):  # steps 1, 2 (truncated: max_steps), reset, 1, 2
            acts = [m.sample_actions(env.runtime.envs[k].step_index)
                    for k, m in enumerate(models)]
            calls.append(env.step(acts))
        schedule = ["step", "step", "reset", "step", "step"]
        for k in range(3):
            ref = _reference(k, 5, schedule)
            for t, (o, r, term, trunc, _info) in enumerate(calls):
                exp = ref[t + 1]
                assert np.array_equal(o[k], np.stack(exp.observations)), (k, t)
                if schedule[t] == "reset":
                    assert not r[k].any() and not trunc[k].any() and not term[k].any()
                else:
                    assert np.array_equal(r[k], exp.rewards), (k, t)
                    assert trunc[k].all() == (exp.step >= 2), (k, t)


def test_same_step_autoreset_returns_the_final_observations_in_the_info():
    from seer.vector import SeerVectorEnv

    models = [_pcs(2) for _ in range(2)]
    with SeerVectorEnv(models, threads=2, autoreset_mode="SameStep") as env:
        env.reset(seed=9)
        out1 = env.step([m.sample_actions(0) for m in models])
        out2 = env.step([m.sample_actions(1) for m in models])
        for k in range(2):
            ref = _reference(k, 9, ["step", "step", "reset"])
            assert np.array_equal(out1[0][k], np.stack(ref[1].observations))
            assert np.array_equal(out2[4][k]["final_obs"], np.stack(ref[2].observations))
            assert out2[3][k].all()  # the step ended the episode (max_steps)
            assert np.array_equal(out2[0][k], np.stack(ref[3].observations))  # reset now
            assert env.runtime.envs[k].step_index == 0


def test_disabled_autoreset_and_a_masked_reset():
    from seer.vector import SeerVectorEnv

    with pytest.raises(ModelError, match="autoreset_mode"):
        SeerVectorEnv([_pcs(2)], autoreset_mode="sometimes")
    with SeerVectorEnv(lambda: _pcs(None), num_envs=2, autoreset_mode="Disabled") as env:
        env.reset(seed=1)
        env.step([None, None])
        env.reset(seed=[None, 4], options={"reset_mask": np.array([False, True])})
        assert [e.step_index for e in env.runtime.envs] == [1, 0]


# -- send / recv: environments out of lockstep --------------------------------------------------
def _send_recv_run(models, threads, seeds, plan_seed, calls, split="auto"):
    """Random sends and recvs on a VectorRuntime: every result received, as (model, step,
    result), and the order the models arrived in."""
    rng = np.random.default_rng(plan_seed)
    got, order = [], []
    with VectorRuntime(models, threads=threads, split=split) as vec:
        vec.reset(seeds)
        idle = list(range(len(models)))
        for _ in range(calls):
            if idle and (not vec.in_flight or rng.random() < 0.5):
                ks = sorted(rng.choice(idle, size=rng.integers(1, len(idle) + 1),
                                       replace=False).tolist())
                vec.send([models[k].sample_actions(vec.envs[k].step_index) for k in ks], ks)
                idle = [k for k in idle if k not in ks]
            else:
                for k, r in vec.recv(int(rng.integers(1, len(vec.in_flight) + 1))):
                    got.append((k, r.step, r))
                    order.append(k)
                    idle.append(k)
        if vec.in_flight:
            for k, r in vec.recv(len(vec.in_flight)):
                got.append((k, r.step, r))
                order.append(k)
    return got, order


@pytest.mark.parametrize("split", ["events", "whole", "auto"])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_send_recv_results_are_each_environment_alone(threads, split):
    models = [RandomModel(n, seed=40 + i, fanout=2, p_fan_in=0.5, lookahead=0.25 * (i % 2))
              for i, n in enumerate((30, 12, 150, 20))]
    seeds = [3, 1, 4, 1]
    got, order = _send_recv_run(models, threads, seeds, plan_seed=threads, calls=40,
                                split=split)
    ref = [SerialRuntime(m) for m in models]
    for rt, s in zip(ref, seeds, strict=True):
        rt.reset(s)
    for k, step, result in got:  # per model, results arrive in its step order
        assert ref[k].step_index == step - 1
        exp = ref[k].step(models[k].sample_actions(ref[k].step_index))
        assert_outputs_identical(exp, result, f"environment {k}, step {step}: ")
    assert len(got) >= 10 and len(set(order)) == 4
    for rt in ref:
        rt.close()


def test_which_environments_arrive_first_depends_on_windows_never_on_timing():
    models = [RandomModel(n, seed=60 + i, lookahead=0.1 * i) for i, n in enumerate((25, 25, 90))]
    # events across the pool: by windows, whatever the thread count
    orders = [_send_recv_run(models, t, [5, 6, 7], plan_seed=9, calls=30, split="events")[1]
              for t in (1, 3)]
    assert orders[0] == orders[1]
    # the automatic split: the same order on every run at one thread count
    again = [_send_recv_run(models, 2, [5, 6, 7], plan_seed=9, calls=30)[1] for _ in range(2)]
    assert again[0] == again[1]


def test_the_automatic_split_runs_only_a_dominant_model_across_the_pool():
    from seer.vector import _split

    big, small = PCS(width=16, height=16), [PCS(width=4, height=4) for _ in range(3)]
    assert _split([big, *small], 2, "auto") == [False, True, True, True]
    assert _split([PCS(width=8, height=8) for _ in range(4)], 2, "auto") == [True] * 4
    assert _split([big], 2, "auto") == [False]  # one model: its events across the pool
    assert _split([big, *small], 1, "auto") == [True] * 4  # one thread: all whole
    with pytest.raises(ModelError, match="split must be one of"):
        VectorRuntime([big], split="fast")


def test_send_recv_misuse_is_named_and_changes_nothing():
    models = [RandomModel(20, seed=1), RandomModel(20, seed=2)]
    with VectorRuntime(models, threads=2) as vec:
        with pytest.raises(RuntimeStateError, match="environment 0 needs reset"):
            vec.send([None], [0])
        vec.reset(0)
        with pytest.raises(ModelError, match="would wait forever"):
            vec.recv(1)
        vec.send([None], [1])
        for bad in (lambda: vec.send([None], [1]), lambda: vec.step([None], envs=[1]),
                    lambda: vec.reset(0, envs=[1])):
            with pytest.raises(RuntimeStateError, match="environment 1 is in flight"):
                bad()
        with pytest.raises(ModelError, match="recv\\(2\\) would wait forever"):
            vec.recv(2)
        with pytest.raises(ModelError, match="count >= 1"):
            vec.recv(0)
        assert vec.in_flight == [1]
        vec.step([None], envs=[0])  # a model not in flight still steps on its own
        [(k, result)] = vec.recv(1)
        assert (k, result.step) == (1, 1) and vec.in_flight == []


def test_a_handler_error_in_recv_drops_every_flight_and_reset_recovers():
    models = [RandomModel(20, seed=1), Boom(20, seed=2)]
    with VectorRuntime(models, threads=2) as vec:
        vec.reset(0)
        with pytest.raises(HandlerError, match="boom"):
            for t in range(6):
                vec.send([m.sample_actions(t) for m in models], [0, 1])
                vec.recv(2)
        assert vec.in_flight == []
        with pytest.raises(RuntimeStateError, match="needs reset"):
            vec.send([None], [0])
        vec.reset(0)
        vec.send([None, None], [0, 1])
        assert sorted(k for k, _r in vec.recv(2)) == [0, 1]


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_vector_env_send_recv_in_batches_matches_each_environment_alone(mode):
    from seer.vector import SeerVectorEnv, _episode_seed

    k_envs, base = 4, 20
    models = [_pcs(3) for _ in range(k_envs)]
    with SeerVectorEnv(models, threads=2, batch_size=2, autoreset_mode=mode) as env:
        env.async_reset(seed=base)
        ref = [SerialRuntime(m) for m in models]
        episodes = [0] * k_envs
        last = [rt.reset(base + k) for k, rt in enumerate(ref)]
        for _ in range(12):
            obs, rew, _term, _trunc, infos, ids = env.recv()
            assert obs.shape[0] == rew.shape[0] == len(infos) == len(ids) == 2
            for i, k in enumerate(ids):
                assert infos[i]["env_id"] == k
                rt = ref[k]
                if mode == "SameStep" and "final_obs" in infos[i]:
                    episodes[k] += 1
                    last[k] = rt.reset(_episode_seed(base + k, episodes[k]))
                assert np.array_equal(obs[i], np.stack(last[k].observations)), k
                if last[k].step > 0:  # the first observations of an episode: no reward
                    assert np.array_equal(rew[i], last[k].rewards), k
            acts = [models[k].sample_actions(env.runtime.envs[k].step_index) for k in ids]
            for k, a in zip(ids, acts, strict=True):
                rt = ref[k]
                if mode == "NextStep" and rt.step_index >= 3:
                    episodes[k] += 1
                    last[k] = rt.reset(_episode_seed(base + k, episodes[k]))
                else:
                    last[k] = rt.step(a)
            env.send(acts)  # to the environments of the last recv()
        assert sum(episodes) >= k_envs  # every environment went through an autoreset
        with pytest.raises(RuntimeStateError, match="recv\\(\\) them first"):
            env.step([None] * k_envs)
        for rt in ref:
            rt.close()


def test_vector_env_batch_size_and_step_async():
    from seer.vector import SeerVectorEnv

    with pytest.raises(ModelError, match="batch_size"):
        SeerVectorEnv(lambda: _pcs(None), num_envs=2, batch_size=3)
    models = [_pcs(None) for _ in range(2)]
    twins = [_pcs(None) for _ in range(2)]
    with SeerVectorEnv(models, threads=2) as a, SeerVectorEnv(twins, threads=1) as b:
        a.reset(seed=1)
        b.reset(seed=1)
        with pytest.raises(RuntimeStateError, match="step_async"):
            a.step_wait()
        acts = [m.sample_actions(0) for m in models]
        a.step_async(acts)
        out_a, out_b = a.step_wait(), b.step(acts)
        for x, y in zip(out_a[:4], out_b[:4], strict=True):
            assert np.array_equal(x, y)


def test_threads_auto_runs_one_preflight_of_every_model_together():
    from seer.stpa.preflight import run_preflight

    models = [PCS(width=8, height=8), PCS(width=6, height=4), PCS(width=5, height=5)]
    with VectorRuntime(models, threads="auto") as vec:
        info = vec.stpa
        assert vec.threads == info["threads"] and 1 <= vec.threads <= info["t_max"]
        assert info["static"]["entities"] == sum(m.n_entities for m in models)
        alone = run_preflight(models[0])
        assert info["static"]["events_per_step"] > alone.static["events_per_step"]
        alone_runs = _alone(models, [2, 3, 4], 2)
        outs = [vec.reset(2)]
        outs += [vec.step([m.sample_actions(t) for m in models]) for t in range(2)]
        for k, (rt, expected) in enumerate(alone_runs):
            assert_outputs_identical(expected[-1], outs[-1][k], f"environment {k}: ")
            rt.close()
    with VectorRuntime(models, threads=2) as vec:
        assert vec.stpa is None
        vec.reset(0)
        vec.step()
        assert vec.stats["events_run"] == sum(e.stats["events_run"] for e in vec.envs) > 0


def test_vector_env_spaces_per_environment_and_actions_checked_against_them():
    from seer.spaces import ActionError
    from seer.vector import SeerVectorEnv

    models = [PCS(width=4, height=4), PCS(width=3, height=3)]
    with SeerVectorEnv(models, threads=2) as env:
        assert [len(a) for a in env.possible_agents] == [16, 9]
        assert env.possible_agents[1][5] == "pcs_5"
        assert env.observation_space("pcs_5", env=1).shape == (6,)
        assert env.action_space("pcs_0").n == PCS.RESERVE_CHOICES
        env.reset(seed=0)
        good = [m.sample_actions(0) for m in models]
        bad = [list(good[0]), list(good[1])]
        bad[1][3] = PCS.RESERVE_CHOICES  # out of Discrete's range
        with pytest.raises(ActionError, match=r"environment 1: .*pcs_3") as info:
            env.step(bad)
        assert info.value.agent == "pcs_3"
        with pytest.raises(ActionError, match="environment 0: needs one action per agent"):
            env.step([good[0][:5], good[1]])
        with pytest.raises(ActionError, match=r"environment 1: .*pcs_2"):
            env.step([good[0], {2: -1}])  # a mapping entity -> action is checked too
        assert [e.step_index for e in env.runtime.envs] == [0, 0]  # nothing ran
        with pytest.raises(ActionError, match="environment 1"):
            env.send(bad, [0, 1])
        assert env.runtime.in_flight == []
        env.step(good)
    with SeerVectorEnv(models, threads=2, check_actions=False) as env:
        env.reset(seed=0)
        with pytest.raises(ModelError, match="environment 1: "):  # the model's own refusal
            env.step(bad)
    with SeerVectorEnv([RandomModel(10, seed=1)], threads=2) as env:
        assert env.spaces == [None]
        with pytest.raises(ModelError, match="observation_space"):
            env.observation_space("x")


class CtrlC(RandomModel):
    """Sends this process one SIGINT from a handler (on a pool thread: Python runs the
    handler on the main thread, inside SEER's code)."""

    sent = False

    def on_ping(self, ctx, event):
        if not CtrlC.sent and ctx.now > 0.5:
            CtrlC.sent = True
            import os
            import signal

            os.kill(os.getpid(), signal.SIGINT)
        super().on_ping(ctx, event)


@pytest.mark.parametrize("split", ["events", "whole"])
def test_a_ctrl_c_ends_the_step_and_each_environment_recovers_alone(split):
    import threading

    CtrlC.sent = False
    models = [CtrlC(40, seed=1), RandomModel(40, seed=2)]
    before = threading.active_count()
    with VectorRuntime(models, threads=2, split=split) as vec:
        vec.reset(0)
        with pytest.raises(KeyboardInterrupt):
            for t in range(20):
                vec.step([m.sample_actions(t) for m in models])
        assert CtrlC.sent
        with pytest.raises(RuntimeStateError, match="needs reset"):
            vec.step()
        vec.reset(5, envs=[1])  # the other still needs its reset: no Ctrl-C left over
        alone = SerialRuntime(models[1])
        alone.reset(5)
        assert_outputs_identical(alone.step(models[1].sample_actions(0)),
                                 vec.step([models[1].sample_actions(0)], envs=[1])[0])
        alone.close()
    assert threading.active_count() <= before


def test_refusals_leave_every_environment_as_it_was():
    import threading

    from seer.spaces import ActionError
    from seer.vector import SeerVectorEnv

    models = [_pcs(1), _pcs(None)]
    with SeerVectorEnv(models, threads=2) as env:
        env.reset(seed=[3, 4])
        env.step([m.sample_actions(0) for m in models])  # environment 0's episode ends
        with pytest.raises(ActionError, match="environment 1: action for 99"):
            env.step([None, {99: 1}])
        with pytest.raises(ActionError, match="environment 1: needs one action per agent"):
            env.step([None, 5])
        assert [e.step_index for e in env.runtime.envs] == [1, 1]  # no autoreset either
        with pytest.raises(ModelError, match="seed must be"):
            env.reset(seed=[10, "bad"])
        with pytest.raises(ModelError, match="reset_mask must be a bool array"):
            env.reset(options={"reset_mask": np.array([True])})
        assert [e.step_index for e in env.runtime.envs] == [1, 1]
        with pytest.raises(ModelError, match="envs must be distinct indices"):
            env.runtime.step([None], envs=[True])
    before = threading.active_count()
    with pytest.raises(ModelError, match="batch_size"):
        SeerVectorEnv(lambda: _pcs(None), num_envs=2, batch_size=0)
    with pytest.raises(ModelError, match="not a gymnasium space"):
        bad = _pcs(None)
        bad.observation_space = lambda entity: "a box"
        SeerVectorEnv([bad], threads=2)
    assert threading.active_count() == before  # a failed constructor leaves no threads


def test_a_failed_whole_step_begins_no_more_whole_steps():
    models = [Boom(20, seed=1)] + [RandomModel(20, seed=2 + i) for i in range(5)]
    with VectorRuntime(models, threads=1, split="whole") as vec:
        vec.reset(0)
        with pytest.raises(HandlerError, match="boom"):
            for t in range(6):
                vec.step([m.sample_actions(t) for m in models])
        steps = [e.step_index for e in vec.envs]
        assert steps == [steps[0]] * 6  # the models after the failed one did not step


def test_a_full_reset_drops_what_is_in_flight():
    from seer.vector import SeerVectorEnv

    with SeerVectorEnv(lambda: _pcs(None), num_envs=3, batch_size=1, threads=2) as env:
        env.async_reset(seed=0)
        env.recv()
        env.send([[1] * 16], [0])
        env.reset(seed=1)  # gymnasium's reset works whatever was sent
        assert env.runtime.in_flight == [] and [e.step_index for e in env.runtime.envs] == [0] * 3


@pytest.mark.parametrize("kind", ["serial", "static", "global", "optimistic", "executor"])
def test_any_runtime_kind_steps_each_model_as_it_does_alone(kind):
    models = [RandomModel(n, seed=80 + i, fanout=2, p_fan_in=0.5) for i, n in
              enumerate((60, 15, 15))]
    alone = _alone(models, [1, 2, 3], 3)
    with VectorRuntime(models, threads=2, kind=kind) as vec:
        outs = [vec.reset(1)]
        outs += [vec.step([m.sample_actions(t) for m in models]) for t in range(3)]
        vec.send([m.sample_actions(3) for m in models], [0, 1, 2])
        assert sorted(k for k, _r in vec.recv(3)) == [0, 1, 2]
        for k, (rt, expected) in enumerate(alone):
            for t, exp in enumerate(expected):
                assert_outputs_identical(exp, outs[t][k], f"{kind}, environment {k}, step {t}: ")
            rt.close()
        assert vec.alone == [kind in ("global", "optimistic", "executor")] * 3
        if kind == "serial":
            assert vec.whole == [True] * 3
    with pytest.raises(ModelError, match="unknown runtime kind"):
        VectorRuntime(models, kind="turbo")
