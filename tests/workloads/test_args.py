"""The workloads' constructor argument checks (workloads/_args.py)."""

import numpy as np
import pytest

import seer
from workloads._args import flag, integer, real, shown


def test_integer_takes_ints_and_numpy_ints_in_range_as_plain_ints():
    assert integer("M", "n", 3, minimum=1) == 3
    value = integer("M", "n", np.int32(7), minimum=0, maximum=7)
    assert value == 7 and type(value) is int
    assert integer("M", "n", None, minimum=1, none=True) is None
    assert integer("M", "n", -5) == -5


@pytest.mark.parametrize(("value", "bounds", "message"), [
    ("3", dict(minimum=1, maximum=16), "M n must be an int in 1..16, got '3'"),
    (2.5, dict(minimum=2), "M n must be an int >= 2, got 2.5"),
    (4.0, dict(minimum=2), "M n must be an int >= 2, got 4.0"),
    (True, dict(minimum=0), "M n must be an int >= 0, got True"),
    (np.True_, dict(minimum=0), "M n must be an int >= 0, got np.True_"),
    (-1, dict(minimum=0), "M n must be an int >= 0, got -1"),
    (17, dict(minimum=1, maximum=16), "M n must be an int in 1..16, got 17"),
    (9, dict(maximum=8), "M n must be an int <= 8, got 9"),
    (None, dict(minimum=1), "M n must be an int >= 1, got None"),
    ("x", dict(minimum=1, none=True), "M n must be an int >= 1 or None, got 'x'"),
    (0, dict(minimum=1, none=True), "M n must be an int >= 1 or None, got 0"),
    (1j, {}, "M n must be an int, got 1j"),
])
def test_integer_refuses_by_name_with_the_allowed_values(value, bounds, message):
    with pytest.raises(seer.ModelError) as info:
        integer("M", "n", value, **bounds)
    assert str(info.value).splitlines()[0] == message


def test_real_takes_numbers_and_numpy_numbers_as_plain_floats():
    for given in (2, 2.0, np.float32(2.0), np.int64(2)):
        value = real("M", "x", given, above=0)
        assert value == 2.0 and type(value) is float
    assert real("M", "x", 0, at_least=0) == 0.0
    assert real("M", "x", 1, above=0, at_most=1) == 1.0
    assert real("M", "x", -3.5) == -3.5


@pytest.mark.parametrize(("value", "bounds", "message"), [
    ("x", dict(at_least=0), "M x must be a finite number >= 0, got 'x'"),
    (False, dict(above=0), "M x must be a finite number > 0, got False"),
    (0, dict(above=0), "M x must be a finite number > 0, got 0"),
    (float("nan"), {}, "M x must be a finite number, got nan"),
    (np.float64("inf"), dict(above=0), "M x must be a finite number > 0, got np.float64(inf)"),
    pytest.param(10**400, {}, "M x must be a finite number, got 100000000000000000..."
                 "0000000000000000000", id="int-beyond-float"),
    (1e6, dict(at_least=0, below=1e6), "M x must be a finite number in [0, 1e+06), got "
                                        "1000000.0"),
    (1.5, dict(above=0, at_most=1), "M x must be a finite number in (0, 1], got 1.5"),
    (2, dict(at_most=1), "M x must be a finite number <= 1, got 2"),
    (1, dict(below=1), "M x must be a finite number < 1, got 1"),
    (1 + 0j, {}, "M x must be a finite number, got (1+0j)"),
    (None, {}, "M x must be a finite number, got None"),
])
def test_real_refuses_by_name_with_the_allowed_values(value, bounds, message):
    with pytest.raises(seer.ModelError) as info:
        real("M", "x", value, **bounds)
    assert str(info.value).splitlines()[0] == message


def test_flag_takes_only_bools():
    assert flag("M", "on", True) is True and flag("M", "on", np.False_) is False
    for bad in (1, 0, "True", None):
        with pytest.raises(seer.ModelError, match=r"^M on must be a bool \(True or False\), "):
            flag("M", "on", bad)


def test_shown_keeps_a_message_on_one_short_line():
    assert shown("3") == "'3'" and shown((0.5, 1)) == "(0.5, 1)"
    assert len(shown("x" * 10_000)) < 80
    assert "\n" not in shown(np.ma.masked_array([0.1, 0.2], [0, 1]))
    assert "digits" in shown(10**5000)  # beyond int's str limit, still no error
