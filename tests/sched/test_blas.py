"""Parallel runtimes cap BLAS's threads while they step and put the setting back after."""

import threading
from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import seer
from seer.blas import blas_cap, blas_threads_now

PARALLEL = ["seer", "static", "static-block", "global", "executor", "optimistic"]


class _Probe(seer.Model):
    """Entity 0 records the BLAS thread counts its handler sees."""

    kinds = ("tick",)
    action_kind = "tick"
    fields = {"x": ((), np.float64)}  # noqa: RUF012

    def __init__(self, n: int = 8) -> None:
        super().__init__(n)
        self.seen: list[list[int]] = []

    def on_tick(self, ctx: seer.Context, event: Any) -> None:
        if ctx.id == 0:
            self.seen.append(blas_threads_now())
        ctx.row.x += 1.0

    def outputs(self, entity: int, state: seer.StateArrays,
                start: seer.StateArrays) -> tuple[Any, float, bool, bool, dict]:
        return None, 0.0, False, False, {}


@pytest.fixture
def two_blas_threads():
    """BLAS at 2 threads around the test (whatever the machine's default)."""
    assert blas_threads_now(), "numpy's BLAS library was not found by threadpoolctl"
    with threadpool_limits(limits=2, user_api="blas"):
        yield


@pytest.mark.parametrize("name", PARALLEL)
def test_blas_is_capped_during_a_step_and_restored_after(name, two_blas_threads):
    model = _Probe()
    with seer.make_runtime(model, name, threads=2) as rt:
        assert rt.blas_threads == 1
        rt.reset(seed=0)
        rt.step([1] * model.n_entities)
        assert blas_threads_now() == [2] * len(blas_threads_now())
    assert model.seen and all(set(counts) == {1} for counts in model.seen)


def test_none_leaves_blas_alone_and_other_values_are_used(two_blas_threads):
    model = _Probe()
    with seer.make_runtime(model, "seer", threads=2) as rt:
        rt.blas_threads = None
        rt.reset(seed=0)
        rt.step([1] * model.n_entities)
        rt.blas_threads = 3
        rt.step([1] * model.n_entities)
    assert {tuple(set(c)) for c in model.seen[:1]} == {(2,)}
    assert set(model.seen[-1]) == {3}


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "1"])
def test_bad_blas_threads_are_refused(bad):
    with seer.make_runtime(_Probe(), "seer", threads=2) as rt:
        with pytest.raises(seer.ModelError, match="blas_threads must be an int >= 1 or None"):
            rt.blas_threads = bad
        assert rt.blas_threads == 1


def test_serial_runtime_leaves_blas_alone(two_blas_threads):
    model = _Probe()
    with seer.make_runtime(model, "serial") as rt:
        rt.reset(seed=0)
        rt.step([1] * model.n_entities)
    assert model.seen and all(set(counts) == {2} for counts in model.seen)


def test_the_first_of_overlapping_caps_sets_and_restores(two_blas_threads):
    entered, release, seen = threading.Event(), threading.Event(), []

    def second():
        with blas_cap(1):  # finds the cap in force: leaves it
            seen.append(blas_threads_now())
            entered.set()
            release.wait()

    with blas_cap(1):
        t = threading.Thread(target=second)
        t.start()
        entered.wait()
        assert set(blas_threads_now()) == {1}
    assert set(blas_threads_now()) == {2}  # restored by the thread that set it
    release.set()
    t.join()
    assert set(seen[0]) == {1} and set(blas_threads_now()) == {2}


def test_a_runtime_stepped_from_another_thread_caps_blas():
    # No limit held by the main thread here: threadpoolctl lets only the thread that set
    # OpenBLAS's limit change it, so a cap from another thread needs nobody else holding one.
    before = blas_threads_now()
    model, errors = _Probe(), []

    def run():
        try:
            with seer.make_runtime(model, "seer", threads=2) as rt:
                rt.reset(seed=0)
                rt.step([1] * model.n_entities)
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert not errors
    assert model.seen and all(set(counts) == {1} for counts in model.seen)
    assert blas_threads_now() == before


def test_a_failed_step_still_restores_blas(two_blas_threads):
    class Failing(_Probe):
        def on_tick(self, ctx, event):
            raise ValueError("boom")

    with seer.make_runtime(Failing(), "seer", threads=2) as rt:
        rt.reset(seed=0)
        with pytest.raises(seer.HandlerError):
            rt.step([1] * 8)
    assert set(blas_threads_now()) == {2}
