"""Run functions on N threads that start together; re-raise the first failure."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def run_threads(n: int, target: Callable[[int], Any], timeout: float = 120.0) -> list[Any]:
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def body(i: int) -> None:
        try:
            barrier.wait()
            results[i] = target(i)
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=body, args=(i,), name=f"stress-{i}") for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), f"{t.name} hung"
    if errors:
        raise errors[0]
    return results
