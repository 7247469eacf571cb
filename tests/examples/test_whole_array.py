"""examples.whole_array: the event-driven ring smoothing and its numpy form agree bit for bit."""

import numpy as np
import pytest

from examples import whole_array


def test_every_runtime_and_the_numpy_step_end_in_the_same_state():
    times = whole_array.run(64, 3, ("serial", "seer:2", "static:2"))
    assert set(times) == {"serial", "seer:2", "static:2", "numpy"}


def test_a_different_numpy_step_is_caught(monkeypatch):
    monkeypatch.setattr(whole_array, "vector_step", lambda x: 0.5 * x + 0.25 * (
        np.roll(x, 1) + np.roll(x, 1)))
    with pytest.raises(AssertionError, match="differ"):
        whole_array.run(32, 2, ("serial",))
