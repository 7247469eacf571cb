"""The windowed runtimes pick their calendar's layout from how wide their windows are."""

import pytest

import seer
from seer.sched.calendar import Calendar, DenseCalendar
from seer.testing import RandomModel, assert_equivalent

WINDOWED = ["seer", "static", "static-block", "executor"]  # global keeps one heap


@pytest.mark.parametrize("kind", WINDOWED)
def test_wide_windows_go_dense_and_stay_dense_across_resets(kind):
    model = RandomModel(200, seed=1, lookahead=2.5, fanout=2)  # windows ready ~60 %
    with seer.make_runtime(model, kind, threads=2) as rt:
        rt.reset(0)
        assert type(rt._events.calendar) is Calendar  # an episode's first step: sorted runs
        rt.step()
        rt.step()  # picked at the second step's start, from the first step's windows
        assert type(rt._events.calendar) is DenseCalendar
        rt.reset(1)
        assert type(rt._events.calendar) is DenseCalendar
    assert_equivalent(lambda m: seer.make_runtime(m, kind, threads=2), model, seeds=[3],
                      steps=4)


@pytest.mark.parametrize("kind", WINDOWED)
def test_narrow_rounds_keep_the_sorted_runs(kind):
    # lookahead 0 with same-time chains: hundreds of rounds of one or two entities a step
    model = RandomModel(200, seed=1, lookahead=0.0, p_zero_delay=0.8, fanout=3, ttl=4)
    with seer.make_runtime(model, kind, threads=2) as rt:
        rt.reset(0)
        for _ in range(3):
            rt.step()
        assert type(rt._events.calendar) is Calendar
