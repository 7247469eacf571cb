import pytest

import seer
from seer.busywork import BusyWork, busy_ns_per_element


def test_busy_work_scales_with_the_requested_cost():
    assert busy_ns_per_element() > 0
    assert BusyWork(0).elements == 0
    small, large = BusyWork(10), BusyWork(200)
    assert large.elements >= 10 * small.elements
    large()  # runs without touching any state
    with pytest.raises(seer.ModelError, match="busy-work cost must be a finite number"):
        BusyWork(-1)
