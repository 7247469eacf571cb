"""A lock under the model (``seer.queues.atomic.shared_lock``): :class:`ModelLock`.

Acquiring is a scheduling point that is enabled only while no thread holds the lock, so a
thread that would block is never chosen (and all blocked is a deadlock the execution
reports); a hand-off orders the critical sections in the race check's vector clocks.
"""

from __future__ import annotations

import threading

from seer.check.execution import Op, Routing

__all__ = ["ModelLock"]


class ModelLock:
    """A lock under a model session (``seer.queues.atomic.shared_lock``): acquiring is a
    scheduling point, blocked while another thread holds it, and acquires what the last
    release published (so a lock hand-off orders the critical sections for the race
    check, as a mutex does). Outside an execution, a real lock."""

    def __init__(self, session: Routing) -> None:
        self._session = session
        self._real = threading.Lock()
        self._holder = -1
        self._clock: list[int] | None = None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        ex, t = self._session.bound()
        if ex is None:
            return self._real.acquire(blocking, timeout)
        if t != ex.memory.main:
            ex.point(t, Op("lock", id(self), "lock", True, ready=lambda: self._holder < 0))
        if self._holder >= 0:
            raise RuntimeError(f"deadlock: the main thread of a check waits for a lock that "
                               f"T{self._holder} holds")
        self._holder = t
        clock = ex.memory.clocks[t]
        if self._clock is not None:
            for k, v in enumerate(self._clock):
                if v > clock[k]:
                    clock[k] = v
        clock[t] += 1
        return True

    def release(self) -> None:
        ex, t = self._session.bound()
        if ex is None:
            self._real.release()
            return
        clock = ex.memory.clocks[t]
        self._clock = list(clock)
        clock[t] += 1
        self._holder = -1

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
