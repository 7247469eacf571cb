"""Work assignment is a strategy of one runtime: every strategy is serial-equivalent,
named in stats and thread names, and a user's own strategy plugs in."""

import threading

import numpy as np
import pytest

import seer
import seer.queues
from seer.queues.pel import OwnSegmentClaimer
from seer.sched import ASSIGNMENTS, Assignment, SeerRuntime
from seer.testing import RandomModel, assert_equivalent


@pytest.mark.parametrize("assignment", sorted(ASSIGNMENTS))
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_every_assignment_matches_serial(assignment, threads):
    model = RandomModel(70, seed=5, fanout=2, p_fan_in=0.5)
    assert_equivalent(lambda m: SeerRuntime(m, threads=threads, assignment=assignment),
                      model, seeds=[0, 1], steps=4)


@pytest.mark.parametrize(("runtime", "assignment"), [
    ("seer", "steal"), ("static", "round-robin"), ("static-block", "block")])
def test_runtime_names_keep_their_assignment(runtime, assignment):
    rt = seer.make_runtime(RandomModel(10), runtime, threads=2)
    try:
        assert rt.stats["runtime"] == runtime and rt.stats["assignment"] == assignment
        names = [t.name for t in threading.enumerate() if t.name.startswith("seer-")]
        assert any(f"seer-{runtime}[{assignment}]-" in n for n in names), names
    finally:
        rt.close()


class Reversed(Assignment):
    """A user's strategy: highest ids on thread 0, own segment only, one entity a claim."""

    name = "reversed"

    def publish(self, pel, ready, threads, n_entities):
        pel.publish_homed(ready, (n_entities - 1 - ready) * threads // n_entities, threads)

    def claimer(self, pel, index, threads, path):
        return OwnSegmentClaimer(pel, index, chunk=1)


def test_a_custom_assignment_plugs_in():
    model = RandomModel(50, seed=2, fanout=3, lookahead=0.0)
    assert_equivalent(lambda m: SeerRuntime(m, threads=3, assignment=Reversed()), model,
                      seeds=[3], steps=4)
    rt = SeerRuntime(model, threads=2, assignment=Reversed())
    assert rt.stats["assignment"] == "reversed"
    rt.close()


def test_register_assignment_plugs_a_strategy_in_by_name():
    assert seer.register_assignment(Reversed) is Reversed
    try:
        rt = SeerRuntime(RandomModel(20, seed=1), threads=2, assignment="reversed")
        assert rt.stats["assignment"] == "reversed"
        rt.close()
        from seer.check.queues import claims_check

        assert claims_check("reversed", threads=2, items=4).run().failure is None
        seer.register_assignment(Reversed)  # the same class again: fine
        with pytest.raises(ValueError, match="already registered"):
            seer.register_assignment(type("Other", (Reversed,), {}))
        with pytest.raises(TypeError, match="Assignment subclass"):
            seer.register_assignment(object)

        @seer.register_assignment(replace=True)
        class Again(Reversed):
            pass

        assert ASSIGNMENTS["reversed"] is Again
    finally:
        del ASSIGNMENTS["reversed"]


def test_unknown_assignment_names_the_choices():
    with pytest.raises(seer.ModelError, match=r"unknown assignment 'random'; choose one of "
                       r"\['block', 'round-robin', 'steal'\]"):
        SeerRuntime(RandomModel(5), assignment="random")


def test_own_segment_claims_cover_the_segment_once_in_chunks():
    pel = seer.queues.ParallelExecutiveList.create(100, segments=3)
    ready = np.arange(100, dtype=np.int64)
    pel.publish_homed(ready, ready % 3, 3)
    got = []
    for k in range(3):
        claimer = OwnSegmentClaimer(pel, k, chunk=7)
        claimer.reset(3)
        while (chunk := claimer.claim()) is not None:
            assert chunk[1] - chunk[0] <= 7
            got += pel.items[chunk[0]:chunk[1]].tolist()
        assert claimer.steals == 0
    assert sorted(got) == list(range(100))


def test_registering_a_runtime_with_a_custom_assignment():
    from seer.sched import RUNTIMES, register_runtime

    @register_runtime
    class ReversedRuntime(SeerRuntime):
        name = "test-reversed"
        default_assignment = Reversed()

    try:
        rt = seer.make_runtime(RandomModel(12), "test-reversed", threads=2)
        assert isinstance(rt, ReversedRuntime) and rt.stats["assignment"] == "reversed"
        rt.close()
        with pytest.raises(seer.ModelError, match="runtime name 'test-reversed' is taken"):
            register_runtime(type("Other", (SeerRuntime,), {"name": "test-reversed"}))
        with pytest.raises(seer.ModelError, match="needs a class attribute name"):
            register_runtime(type("Nameless", (SeerRuntime,), {"name": "abstract"}))
    finally:
        RUNTIMES.pop("test-reversed", None)


@pytest.mark.parametrize("backoff", [1, 2, 8])
@pytest.mark.parametrize("threads", [2, 3])
def test_stealing_that_backs_off_matches_serial(backoff, threads):
    from seer.sched.assignment import Steal

    model = RandomModel(70, seed=11, fanout=2, p_fan_in=0.5)
    assert_equivalent(lambda m: SeerRuntime(m, threads=threads,
                                            assignment=Steal(backoff=backoff)),
                      model, seeds=range(3), steps=4)
    with pytest.raises(seer.ModelError, match="backoff"):
        Steal(backoff=-1)
