import math

import numpy as np
import pytest

import seer
from seer.model import compile_model
from tests.helpers import Recorder


class Minimal(seer.Model):
    kinds = ("a",)
    fields = {"x": ((), np.float64)}  # noqa: RUF012

    def on_a(self, ctx, event):
        pass


@pytest.mark.parametrize(
    ("n", "message"),
    [
        (-3, "n_entities must be between 1 and 16777215, got -3"),
        (0, "n_entities must be between 1 and 16777215, got 0"),
        (2**24, "n_entities must be between 1 and 16777215, got 16777216"),
        (2.5, "n_entities must be an int, got float 2.5"),
        (True, "n_entities must be an int, got bool True"),
    ],
)
def test_bad_entity_count(n, message):
    with pytest.raises(seer.ModelError, match="^" + message.replace("(", r"\(") + "$"):
        Minimal(n)


@pytest.mark.parametrize(
    ("attr", "value", "message"),
    [
        ("step_length", math.inf, "step_length of model 'Minimal' must be finite and > 0, got inf"),
        ("step_length", math.nan, "step_length of model 'Minimal' must be finite and > 0, got nan"),
        ("step_length", 0.0, "step_length of model 'Minimal' must be finite and > 0, got 0.0"),
        ("step_length", "x", "step_length of model 'Minimal' must be a number, got 'x'"),
        ("lookahead", -1.0, "lookahead of model 'Minimal' must be finite and >= 0, got -1.0"),
        ("lookahead", math.inf, "lookahead of model 'Minimal' must be finite and >= 0, got inf"),
    ],
)
def test_bad_times(attr, value, message):
    m = Minimal(3)
    setattr(m, attr, value)
    with pytest.raises(seer.ModelError) as info:
        seer.SerialRuntime(m)
    assert str(info.value) == message


def test_unknown_action_kind():
    m = Minimal(2)
    m.action_kind = "jump"
    with pytest.raises(seer.ModelError, match=r"action_kind 'jump' of model 'Minimal' is not "
                       r"one of its kinds \('a',\)"):
        compile_model(m)


def test_kind_without_handler():
    m = Minimal(2)
    m.kinds = ("a", "b")
    with pytest.raises(seer.ModelError, match=r"declares kind 'b' but has no handler method "
                       r"on_b\(self, ctx, event\)"):
        compile_model(m)


@pytest.mark.parametrize("kinds", [(), ("a", "a"), ("a", "")])
def test_bad_kind_lists(kinds):
    m = Minimal(2)
    m.kinds = kinds
    with pytest.raises(seer.ModelError, match="kind"):
        compile_model(m)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "declares no state fields"),
        ({"x": (2,)}, "state field 'x' of model 'Minimal' must be \\(shape, dtype\\)"),
        ({"x": ((0,), float)}, "state field 'x' of model 'Minimal' has a non-positive dimension"),
        ({"x": ((), object)}, "state field 'x' of model 'Minimal' has object dtype"),
        ({"_x": ((), float)}, "state field name '_x' of model 'Minimal' must be a public"),
        ({"x": ((), "not-a-dtype")}, "state field 'x' of model 'Minimal' must be"),
    ],
)
def test_bad_fields(fields, message):
    m = Minimal(2)
    m.fields = fields
    with pytest.raises(seer.ModelError, match=message):
        compile_model(m)


def test_bad_agents():
    m = Minimal(2)
    m.agent_entities = lambda: [0, 5]
    with pytest.raises(seer.ModelError, match=r"names entities outside range\(2\): \[5\]"):
        compile_model(m)
    m.agent_entities = lambda: [1, 1]
    with pytest.raises(seer.ModelError, match="repeats an entity"):
        compile_model(m)


def test_not_a_model():
    with pytest.raises(seer.ModelError, match=r"expected a seer\.Model instance, got dict"):
        seer.SerialRuntime({})


def test_int_shape_and_kind_ids_accept_names_and_ids():
    m = Recorder(3)
    m.fields = {"v": (4, np.float32)}
    spec = compile_model(m)
    assert spec.fields[0].shape == (4,)
    assert spec.kind_ids["hit"] == spec.kind_ids[1] == 1


def test_default_outputs_are_row_copies():
    m = Minimal(2)
    rt = seer.SerialRuntime(m)
    out = rt.reset(seed=0)
    assert set(out.observations[0]) == {"x"}
    assert out.rewards.tolist() == [0.0, 0.0]
