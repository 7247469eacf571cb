"""Deliver Ctrl-C to a parallel step at a safe point.

Python raises KeyboardInterrupt in the main thread between any two bytecodes, including
between acquiring a lock in a ``with`` statement and entering its block (a long-standing
CPython limitation), which can leave a lock held and the worker threads that need it stuck
forever. While a parallel step runs, SIGINT is therefore only *recorded*: the handler asks
the workers to stop after their current entity, and KeyboardInterrupt is raised once every
worker has stopped. Only the default SIGINT handler is replaced, and only on the main
thread; a program's own handler is left alone. A second Ctrl-C raises at once.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

__all__ = ["deferred_interrupt"]


@contextlib.contextmanager
def deferred_interrupt(on_interrupt: Callable[[], None]) -> Iterator[list[bool]]:
    """Within the block, SIGINT calls ``on_interrupt()`` and sets the yielded flag list;
    on leaving the block, KeyboardInterrupt is raised if SIGINT arrived."""
    hit: list[bool] = []
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield hit
        return

    def handler(signum: int, frame: object) -> None:
        if hit:  # a second Ctrl-C: the user insists (a handler may never return)
            signal.signal(signal.SIGINT, previous)
            raise KeyboardInterrupt
        hit.append(True)
        on_interrupt()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield hit
    finally:
        signal.signal(signal.SIGINT, previous)
        if hit:
            raise KeyboardInterrupt
