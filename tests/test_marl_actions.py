"""SeerParallelEnv checks actions against the declared action spaces (issue 42, item 3):
a bad action raises ActionError naming the agent, the space and the value, and the
episode goes on as if the call had not been made; check_actions=False skips the check."""

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo.test import parallel_api_test

import seer
from seer.marl import ActionError, SeerParallelEnv
from workloads.aircraft import Aircraft
from workloads.pcs import PCS

MODELS = {
    "aircraft": lambda: Aircraft(12, cost_us=70, density=3.0),
    "pcs": lambda: PCS(4, 4, cost_us=5, step_length=100.0),
}
BOX = "Box(-1.0, 1.0, (2,), float32)"
#: (case, action, what the message says about it)
BAD = {
    "aircraft": [
        ("above", np.array([1.5, 0.0], np.float32), "element [0] is 1.5, above the high bound 1.0"),
        ("below", [0.0, -2], "element [1] is -2.0, below the low bound -1.0"),
        ("nan", [0.0, float("nan")], "element [1] is nan, not a finite number"),
        ("inf", np.array([-np.inf, 0.0]), "element [0] is -inf, not a finite number"),
        ("shape", np.zeros(3), "shape (3,), the space's is (2,)"),
        ("string", "ab", "not numeric: dtype <U2 does not cast to the space's float32"),
        ("strings", ["a", "b"], "not numeric"),
        ("bool", np.array([True, False]), "dtype bool does not cast to the space's float32"),
        ("complex", [1j, 0.0], "dtype complex128 does not cast"),
        ("none", None, "not numeric: dtype object"),
    ],
    "pcs": [
        ("above", 4, "4 is outside 0..3"),
        ("negative", np.int64(-1), "-1 is outside 0..3"),
        ("float", 1.0, "a float, not an int"),
        ("bool", True, "a bool, not an int"),
        ("string", "1", "a str, not an int"),
        ("shape", np.array([1]), "an array of shape (1,), not one int"),
    ],
}
CASES = [(name, case, action, said) for name, bad in BAD.items() for case, action, said in bad]


def good_actions(env, t):
    """A valid action per agent (possible_agents order) that differs by agent and step."""
    if isinstance(env.action_space(env.possible_agents[0]), spaces.Discrete):
        return [(i + t) % 4 for i in range(len(env.possible_agents))]
    return [np.array([np.sin(i + t), 0.5 * np.cos(i)], np.float32)
            for i in range(len(env.possible_agents))]


def state_bytes(env):
    state = env.runtime.state
    return b"".join(state[name].tobytes() for name in state.names)


def step_bytes(out):
    observations, rewards, terminations, truncations, _ = out
    return [(a, observations[a].tobytes(), rewards[a], terminations[a], truncations[a])
            for a in observations]


def pair(name, **options):
    """Two envs in the same state, one step into an episode."""
    envs = [SeerParallelEnv(MODELS[name](), "serial", **options) for _ in range(2)]
    for env in envs:
        env.reset(seed=3)
        env.step(dict(zip(env.possible_agents, good_actions(env, 0), strict=True)))
    return envs


def next_step_matches(env, ref, arrays):
    """The next valid step gives the same outputs and state in ``env`` and ``ref``."""
    actions = good_actions(env, 1)
    if arrays:
        got, want = env.step_arrays(actions), ref.step_arrays(actions)
        assert [x.tobytes() for x in got] == [x.tobytes() for x in want]
    else:
        named = dict(zip(env.possible_agents, actions, strict=True))
        assert step_bytes(env.step(named)) == step_bytes(ref.step(named))
    assert state_bytes(env) == state_bytes(ref)


@pytest.mark.parametrize("arrays", [False, True], ids=["step", "step_arrays"])
@pytest.mark.parametrize(("name", "case", "action", "said"), CASES,
                         ids=[f"{n}-{c}" for n, c, _, _ in CASES])
def test_bad_action_is_refused_and_the_episode_goes_on(name, case, action, said, arrays):
    env, ref = pair(name)
    before = state_bytes(env)
    assert before == state_bytes(ref)
    actions = good_actions(env, 1)
    actions[5] = action
    agent = env.possible_agents[5]
    with pytest.raises(ActionError) as refused:
        if arrays:
            env.step_arrays(actions)
        else:
            env.step(dict(zip(env.possible_agents, actions, strict=True)))
    message = str(refused.value)
    space = env.action_space(agent)
    assert f"action for agent {agent!r} refused by its action space {space}: {said}" \
        in message, message
    assert "; got " in message and len(message) < 300
    assert refused.value.agent == agent and refused.value.space is space
    assert isinstance(refused.value, seer.ModelError)
    assert state_bytes(env) == before and env.agents == ref.agents
    next_step_matches(env, ref, arrays)
    env.close()
    ref.close()


@pytest.mark.parametrize("bad", [np.nan, np.inf, 2.0, -1.5])
def test_stacked_array_names_the_agent_and_the_element(bad):
    env, ref = pair("aircraft")
    stacked = np.stack(good_actions(env, 1)).astype(np.float64)  # a policy's float64
    stacked[7, 1] = bad
    with pytest.raises(ActionError, match=r"agent 'aircraft_7' .*: element \[1\] is "):
        env.step_arrays(stacked)
    stacked[7, 1] = 0.0
    got = env.step_arrays(stacked)
    want = ref.step_arrays(stacked)
    assert [x.tobytes() for x in got] == [x.tobytes() for x in want]
    with pytest.raises(ActionError, match=r"agent 'aircraft_0' .*shape \(3,\)"):
        env.step_arrays(np.zeros((12, 3)))
    with pytest.raises(ActionError, match=r"aircraft_0.*dtype bool"):
        env.step_arrays(np.zeros((12, 2), bool))
    env.close()
    ref.close()


def test_stacked_discrete_actions():
    env, ref = pair("pcs")
    with pytest.raises(ActionError, match=r"agent 'pcs_4' .*Discrete\(4\): 4 is outside 0..3"):
        env.step_arrays(np.arange(16))
    with pytest.raises(ActionError, match=r"pcs_0.*a float64, not an int"):
        env.step_arrays(np.zeros(16))
    with pytest.raises(ActionError, match=r"pcs_2.*a bool, not an int"):
        env.step_arrays([0, 1, True] + [0] * 13)
    actions = np.arange(16, dtype=np.int32) % 4
    assert [x.tobytes() for x in env.step_arrays(actions)] == \
        [x.tobytes() for x in ref.step_arrays(actions)]
    env.close()
    ref.close()


@pytest.mark.parametrize("check", [True, False])
def test_unknown_and_missing_agents(check):
    env, ref = pair("pcs", check_actions=check)
    actions = dict(zip(env.possible_agents, good_actions(env, 1), strict=True))
    before = state_bytes(env)
    with pytest.raises(ActionError, match=r"unknown agent 'pcs_99' \(and 1 more\): the agents "
                                          r"are possible_agents \(16: 'pcs_0' .. 'pcs_15'\)"):
        env.step({**actions, "pcs_99": 0, 3: 1})
    with pytest.raises(ActionError, match="unknown agent 'cell_1'"):
        env.step({"cell_1" if a == "pcs_1" else a: v for a, v in actions.items()})
    with pytest.raises(ActionError, match=r"step_arrays\(\) needs 16 actions"):
        env.step_arrays([0] * 15)
    with pytest.raises(ActionError, match=r"step\(\) takes a dict"):
        env.step([0] * 16)
    if check:
        partial = {a: v for a, v in actions.items() if a not in ("pcs_2", "pcs_9")}
        with pytest.raises(ActionError, match=r"no action for agent 'pcs_2' \(and 1 more\)"):
            env.step(partial)
    assert state_bytes(env) == before
    next_step_matches(env, ref, arrays=False)
    env.close()
    ref.close()


def test_check_actions_false_lets_an_out_of_bound_action_through():
    env, ref = pair("aircraft", check_actions=False)
    assert env.check_actions is False
    actions = good_actions(env, 1)
    wild = list(actions)
    wild[2] = np.array([1.5, -3.0], np.float32)  # the handler clips to [-1, 1]
    actions[2] = np.array([1.0, -1.0], np.float32)
    assert [x.tobytes() for x in env.step_arrays(wild)] == \
        [x.tobytes() for x in ref.step_arrays(actions)]
    named = dict(zip(env.possible_agents, wild, strict=True))
    env.check_actions = True
    with pytest.raises(ActionError, match=r"aircraft_2.*above the high bound"):
        env.step(named)
    env.close()
    ref.close()


class Toy(seer.Model):
    """Agents with different action spaces: the check goes agent by agent."""

    kinds = ("act",)
    action_kind = "act"
    fields = {"total": ((), np.int64)}  # noqa: RUF012

    def on_act(self, ctx, event):
        ctx.row.total += int(np.sum(event.payload))

    def outputs(self, entity, state, start):
        return np.array([state.total[entity]], np.float32), 0.0, False, False, {}

    def observation_space(self, entity):
        return spaces.Box(-np.inf, np.inf, (1,), np.float32)

    def action_space(self, entity):
        return spaces.Discrete(3) if entity == 0 else spaces.MultiDiscrete([2, 3])


def test_mixed_spaces_and_multidiscrete():
    env = SeerParallelEnv(Toy(3), "serial")
    env.reset(seed=0)
    env.step({"toy_0": 2, "toy_1": [1, 2], "toy_2": np.array([0, 1])})
    before = state_bytes(env)
    for actions, said in [
        ({"toy_0": 3, "toy_1": [1, 2], "toy_2": [0, 0]},
         r"toy_0.*Discrete\(3\): 3 is outside 0..2"),
        ({"toy_0": 0, "toy_1": [1, 3], "toy_2": [0, 0]},
         r"toy_1.*MultiDiscrete\(\[2 3\]\): element \[1\] is 3, outside 0..2"),
        ({"toy_0": 0, "toy_1": [1, 2], "toy_2": [0.5, 0]}, "toy_2.*dtype float64"),
        ({"toy_0": 0, "toy_1": [1, 2], "toy_2": [0]}, r"toy_2.*shape \(1,\)"),
    ]:
        with pytest.raises(ActionError, match=said):
            env.step(actions)
        with pytest.raises(ActionError, match=said):
            env.step_arrays(list(actions.values()))
    assert state_bytes(env) == before
    env.step({"toy_0": 1, "toy_1": [1, 1], "toy_2": [1, 2]})
    assert env.runtime.state.total.tolist() == [3, 5, 4]
    env.close()


def test_a_model_without_spaces_is_told_what_to_define():
    class Bare(Toy):
        observation_space = None
        action_space = spaces.Discrete(3)

    with pytest.raises(seer.ModelError) as refused:
        SeerParallelEnv(Bare(2), "serial")
    message = str(refused.value)
    assert "needs model 'Bare' to define observation_space(self, entity) and " \
        "action_space(self, entity) (Bare.observation_space is a NoneType, not a method)" \
        " (Bare.action_space is a Discrete, not a method)" in message
    assert "def observation_space(self, entity):" in message
    assert "def action_space(self, entity):" in message
    assert "gymnasium.spaces.Box(" in message

    class Wrong(Toy):
        def action_space(self, entity):
            return (0, 1)

    with pytest.raises(seer.ModelError, match=r"Wrong.action_space\(0\) returned \(0, 1\), "
                                              "not a gymnasium space"):
        SeerParallelEnv(Wrong(2), "serial")


@pytest.mark.parametrize("check", [True, False])
def test_parallel_api_with_and_without_the_check(check):
    model = Aircraft(12, cost_us=70, density=3.0, max_steps=5)
    env = SeerParallelEnv(model, "serial", check_actions=check)
    parallel_api_test(env, num_cycles=6)
    env.close()
