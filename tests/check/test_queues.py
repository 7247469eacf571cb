"""The runtime's own structures pass their bounded-exhaustive checks, and each check
finds the bug planted in its structure (seer.check.queues)."""

from __future__ import annotations

import pytest

from seer.check.queues import CHECKS, claims_check, leq_check, pel_check


@pytest.mark.parametrize("name", list(CHECKS))
def test_the_structure_passes_every_schedule_within_its_bound(name):
    factory, _bug = CHECKS[name]
    report = factory().run()
    assert report.failure is None
    assert report.exhaustive, f"{name}: stopped after {report.schedules} schedules"
    assert report.schedules > 10  # it explored something


@pytest.mark.parametrize("name", list(CHECKS))
def test_the_planted_bug_is_found(name):
    factory, bug = CHECKS[name]
    failure = factory(bug=bug).run(raises=False).failure
    assert failure is not None, f"{name}/{bug} was not found"
    expected = {"leq": "lost", "arena": "data race on ev_side", "pel": "more than once",
                "ring": "data race on ring_data"}[name]
    assert expected in failure.message


@pytest.mark.parametrize("weak", [False, True])
@pytest.mark.parametrize("name", list(CHECKS))
def test_the_planted_bug_is_found_by_bounded_dpor(name, weak):
    """DPOR at each check's own preemption bound (BPOR) finds every planted bug too."""
    factory, bug = CHECKS[name]
    report = factory(bug=bug).run(raises=False, strategy="dpor", weak=weak)
    assert report.failure is not None, f"{name}/{bug} was not found"
    assert report.bound == factory().options["preemptions"]


def test_the_ring_is_complete_under_bounded_dpor():
    """Unbounded DPOR does not finish the MPMC ring (its spins); at the check's bound
    (1 preemption) it does, in fewer schedules than DFS there."""
    check = CHECKS["ring"][0]()
    dpor = check.run(strategy="dpor")
    assert dpor.verdict == "PASSED" and dpor.bound == 1
    assert dpor.schedules < check.run().schedules


def test_pel_claims_at_three_threads():
    report = pel_check(threads=3, items=7).run()
    assert report.exhaustive and report.failure is None
    assert pel_check(threads=3, items=7, bug="double-claim").run(raises=False).failure


def test_the_other_assignments_hand_out_every_item_once():
    for assignment in ("round-robin", "block"):
        report = claims_check(assignment, threads=2, items=5).run()
        assert report.failure is None and report.exhaustive


def test_stealing_that_backs_off_hands_out_every_item_once():
    from seer.sched.assignment import Steal

    for threads, items in ((2, 6), (3, 7)):
        report = claims_check(Steal(backoff=1), threads=threads, items=items).run()
        assert report.failure is None and report.exhaustive


def test_every_claimer_mistake_of_the_tutorial_is_caught():
    from examples.locality_steal import LocalitySteal
    from examples.mistakes import FullChunksOnly, Overlapping, PlainRead, buggy

    assert claims_check(LocalitySteal(), threads=2, items=6).run().failure is None
    found = {m.__name__: claims_check(buggy(m), threads=2, items=6).run(raises=False).failure
             for m in (Overlapping, FullChunksOnly, PlainRead)}
    assert "more than once" in found["Overlapping"].message
    assert "never" in found["FullChunksOnly"].message and "[1, 3, 5] never" in \
        found["FullChunksOnly"].message
    # the race: right on one thread, found with one preemption (stress rarely hits it)
    assert "more than once" in found["PlainRead"].message
    assert found["PlainRead"].preemptions == 1


def test_unknown_planted_bugs_are_refused():
    with pytest.raises(ValueError, match="no planted bug"):
        leq_check(bug="typo")


@pytest.mark.parametrize("name", list(CHECKS))
def test_the_structure_passes_in_weak_memory_mode(name):
    factory, _bug = CHECKS[name]
    report = factory().run(weak=True)
    assert report.failure is None and report.exhaustive


def test_a_claim_that_lands_past_the_end_counts_as_a_miss():
    """HomeClaimer.misses (the PEL's contention counter in worker_stats): some schedule has
    a thief's fetch_add land after the owner took the segment's last items."""
    misses = set()
    check = pel_check(threads=2, items=4)
    original = check.invariant

    def invariant(state):
        original(state)
        misses.add(sum(c.misses for c in state.claimers))

    check.invariant = invariant
    report = check.run()
    assert report.exhaustive and 0 in misses and max(misses) >= 1
