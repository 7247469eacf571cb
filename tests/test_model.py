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


@pytest.mark.parametrize("runtime", ["serial", "seer", "optimistic"])
def test_a_field_too_big_to_allocate_is_named(runtime):
    """Refused before anything is allocated: a ModelError naming the field, its full
    shape, dtype and size, not numpy's bare MemoryError."""
    m = Minimal(10)
    m.fields = {"ok": ((), np.int64), "x": ((10**7, 10**6), np.float64)}
    with pytest.raises(seer.ModelError, match=(
            r"^state field 'x' of model 'Minimal' is too big to allocate: an array of shape "
            r"\(10, 10000000, 1000000\) \(10 entities x row shape \(10000000, 1000000\)\) of "
            r"float64 is 727\.6 TiB \(800000000000000 bytes\); with every field, the state and "
            r"its step-start snapshot would take 1\.4 PiB, more than this machine's "
            r".* of memory\. A field's shape is the shape of one entity's row")):
        seer.make_runtime(m, runtime)
    m.fields = {"x": ((10**10, 10**10), np.float64)}  # more than numpy can index
    with pytest.raises(seer.ModelError, match=r"state field 'x' .* shape \(10, 10000000000, "
                       r"10000000000\) .* of float64 is .* PiB .*; more than numpy can index"):
        seer.SerialRuntime(m)


def test_a_failed_allocation_is_named(monkeypatch):
    """Where the machine's memory is unknown, numpy's own failure is wrapped."""
    import seer.compile

    monkeypatch.setattr(seer.compile, "_physical_memory", lambda: None)
    m = Minimal(4)
    m.fields = {"grid": ((2**29, 2**29), np.uint8)}  # 2**60 bytes: beyond any address space
    with pytest.raises(seer.ModelError, match=r"state field 'grid' of model 'Minimal' is too "
                       r"big to allocate: an array of shape \(4, 536870912, 536870912\) .* "
                       r"of uint8 is 1024\.0 PiB \(1152921504606846976 bytes\); numpy could "
                       r"not allocate it \(MemoryError: "):
        seer.SerialRuntime(m)


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
