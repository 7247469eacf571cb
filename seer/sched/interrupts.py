"""Deliver Ctrl-C to a parallel step at a safe point.

Python raises KeyboardInterrupt in the main thread between any two bytecodes, including
between acquiring a lock in a ``with`` statement and entering its block (a long-standing
CPython limitation), which can leave a lock held and the worker threads that need it stuck
forever. While a parallel step runs, SIGINT is therefore only *recorded*: the handler asks
the workers to stop after their current chunk, and KeyboardInterrupt is raised once every
worker has stopped. Only the default SIGINT handler is replaced, and only on the main
thread; a program's own handler is left alone. A second Ctrl-C raises at once, and the
runtime stops waiting for threads that do not come back (a handler that never returns):
it is then unusable, and says which entity, event and thread did not return.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

__all__ = ["Deferral", "deferred_interrupt"]


class Deferral:
    """What :func:`deferred_interrupt` yields: ``active`` says whether SIGINT is deferred
    here (main thread, default handler); ``hits`` counts the Ctrl-Cs that arrived."""

    __slots__ = ("active", "hits")

    def __init__(self, active: bool) -> None:
        self.active = active
        self.hits = 0


@contextlib.contextmanager
def deferred_interrupt(on_interrupt: Callable[[], None]) -> Iterator[Deferral]:
    """Within the block, the first SIGINT calls ``on_interrupt()``; on leaving the block,
    KeyboardInterrupt is raised if SIGINT arrived. A second SIGINT raises at once."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield Deferral(False)
        return
    state = Deferral(True)

    def handler(signum: int, frame: object) -> None:
        state.hits += 1
        if state.hits > 1:  # a second Ctrl-C: the user insists (a handler may never return)
            signal.signal(signal.SIGINT, previous)
            raise KeyboardInterrupt
        on_interrupt()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield state
    finally:
        signal.signal(signal.SIGINT, previous)
        if state.hits:
            raise KeyboardInterrupt
