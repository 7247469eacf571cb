import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

from seer.marl import SeerParallelEnv
from workloads.aircraft import Aircraft
from workloads.pcs import PCS

MODELS = {
    "aircraft": lambda: Aircraft(24, cost_us=70, density=3.0, max_steps=6),
    "pcs": lambda: PCS(4, 4, cost_us=5, step_length=100.0, max_steps=6),
}


@pytest.mark.parametrize("kind", ["serial", "seer"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_parallel_api(name, kind):
    env = SeerParallelEnv(MODELS[name](), kind, threads=None if kind == "serial" else 2)
    parallel_api_test(env, num_cycles=8)
    env.close()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_parallel_seed(name):
    parallel_seed_test(lambda: SeerParallelEnv(MODELS[name](), "seer", threads=2))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_stacked_arrays_and_render(name):
    env = SeerParallelEnv(MODELS[name](), "seer", threads=2, render_mode="rgb_array")
    obs, _infos = env.reset(seed=0)
    stacked = env.observations_array()
    assert stacked.shape[0] == len(env.possible_agents)
    assert np.array_equal(stacked[0], obs[env.possible_agents[0]])
    actions = [env.action_space(a).sample() for a in env.possible_agents]
    o, r, _te, _tr = env.step_arrays(actions)
    assert o.shape == stacked.shape and r.shape == (len(actions),)
    frame = env.render()
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.std() > 0
    env.close()


def test_agents_are_truncated_at_max_steps():
    env = SeerParallelEnv(MODELS["pcs"](), "serial")
    env.reset(seed=1)
    for _ in range(6):
        *_, truncations, _ = env.step({a: 0 for a in env.agents})
    assert all(truncations.values()) and env.agents == []
    env.close()
