import threading

import pytest

from seer.sched import WorkerPool


def test_every_thread_runs_every_task_once():
    with WorkerPool(3) as pool:
        seen = []
        lock = threading.Lock()

        def task(i):
            with lock:
                seen.append(i)

        for _ in range(200):
            pool.run(task)
        assert sorted(seen) == sorted([0, 1, 2] * 200)
        assert [s.tasks for s in pool.stats] == [200, 200, 200]
        assert pool.busy == 0


def test_errors_are_reraised_after_all_workers_finish():
    finished = []

    def task(i):
        if i == 2:
            raise ValueError("worker 2 failed")
        if i == 1:
            raise KeyError("worker 1 failed")
        finished.append(i)

    with WorkerPool(3) as pool:
        with pytest.raises(KeyError, match="worker 1 failed"):  # lowest index wins
            pool.run(task)
        assert pool.busy == 0
        pool.run(lambda i: finished.append(i))  # still usable
    assert sorted(finished) == [0, 0, 1, 2]


def test_abort_is_called_when_the_caller_fails():
    stop = threading.Event()

    def task(i):
        if i == 0:
            raise RuntimeError("caller failed")
        stop.wait(10)  # a worker that would run long unless aborted

    with WorkerPool(2) as pool, pytest.raises(RuntimeError, match="caller failed"):
        pool.run(task, abort=stop.set)
    assert stop.is_set()


def test_resize_and_close_leave_no_threads():
    before = threading.active_count()
    pool = WorkerPool(4)
    assert threading.active_count() == before + 3
    pool.resize(2)
    assert threading.active_count() == before + 1 and pool.threads == 2
    pool.run(lambda i: None)
    pool.resize(5)
    assert threading.active_count() == before + 4
    pool.run(lambda i: None)
    pool.close()
    pool.close()
    assert threading.active_count() == before
    with pytest.raises(RuntimeError, match="is closed"):
        pool.run(lambda i: None)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_thread_counts(bad):
    with pytest.raises(ValueError, match="threads must be an int >= 1"):
        WorkerPool(bad)


class _Wakes:
    """A stand-in trace that keeps each worker wake-up's ``parked`` flag."""

    def __init__(self) -> None:
        self.parked: list[bool] = []

    def instant(self, index, name, **args):
        if name == "wake":
            self.parked.append(args["parked"])


@pytest.mark.parametrize("hot", [True, False])
def test_a_hot_pool_catches_the_next_task_spinning(hot):
    import time

    # No ordinary spin at all; up to 2 s of it while hot. The pause between the tasks
    # (20 ms) is far inside the hot spin and far outside the ordinary one. On one core
    # the pool never spins (two threads, one core), so there the worker parks either way.
    with WorkerPool(2, spin_us=0.0, hot_spin_us=2_000_000.0) as pool:
        spins = pool._hot_spin > 0
        wakes = pool.trace = _Wakes()
        pool.hot = hot
        pool.run(lambda i: None)
        time.sleep(0.02)
        pool.run(lambda i: None)
        pool.hot = False
        assert wakes.parked[1] is not (hot and spins)


def test_hot_spin_is_never_shorter_than_the_ordinary_one():
    with WorkerPool(2, spin_us=80.0, hot_spin_us=10.0) as pool:
        assert pool._hot_spin_us == 80.0
        assert pool._hot_spin == pool._spin  # both 0 where the pool does not spin
