"""bench.bench_queues.on_threads: setups run untimed before the start, failures surface."""

import threading

import pytest

from bench.bench_queues import on_threads


def test_setup_runs_on_each_thread_before_the_body():
    seen: list[tuple[str, int, str]] = []
    lock = threading.Lock()

    def setup(i):
        with lock:
            seen.append(("setup", i, threading.current_thread().name))

    def body(i, loops):
        with lock:
            seen.append(("body", i, threading.current_thread().name))

    assert on_threads(2, body, 5, setup=setup) >= 0.0
    setups = {(i, name) for what, i, name in seen if what == "setup"}
    bodies = {(i, name) for what, i, name in seen if what == "body"}
    assert setups == bodies and len(bodies) == 2
    assert [what for what, _, _ in seen[:2]] == ["setup", "setup"]  # all before any body


def test_a_failed_setup_cancels_every_body_and_is_raised():
    ran = []

    def setup(i):
        if i == 1:
            raise ValueError("setup of thread 1")

    with pytest.raises(ValueError, match="setup of thread 1"):
        on_threads(2, lambda i, loops: ran.append(i), 1, setup=setup)
    assert ran == []


def test_a_failed_body_is_raised():
    def body(i, loops):
        if i == 0:
            raise RuntimeError("body of thread 0")

    with pytest.raises(RuntimeError, match="body of thread 0"):
        on_threads(2, body, 1)
