"""Where Ctrl-C may surface while a runtime operation runs (``docs/design.md``, "Ctrl-C").

Python raises KeyboardInterrupt in the main thread at almost any bytecode, including
between acquiring a lock and entering the block that releases it (a long-standing CPython
limitation). Raised inside the runtime's own bookkeeping it can leave the operation lock,
a condition's lock or the BLAS cap's lock held, and the runtime or the whole process
stuck. So for the length of every runtime operation on the main thread (``reset``,
``step``, ``resize``, ``close``) the default SIGINT handler is replaced by one that looks
at where the Ctrl-C landed:

* in the model's code (a handler, ``init_entity``, ``prepare_step``, ``outputs`` running
  on the caller's thread: any frame outside the ``seer`` package, once the standard
  library and numpy frames it called are stepped over), it raises KeyboardInterrupt there
  and then, as Python would;
* in SEER's own code (locks, condition waits, the worker pool's hand-over, the BLAS cap,
  status changes, the lock-free queues), it only *records* the Ctrl-C; the operation
  raises KeyboardInterrupt when it ends. Waits that could last for ever (threads that do
  not come back from a handler) poll :func:`hits` and give up at their own safe point.

Either way the first Ctrl-C calls the guard's ``on_interrupt`` (a parallel runtime asks
its threads to stop after their current chunk) and every KeyboardInterrupt the guard
raises calls ``on_raise`` first (the runtime marks itself as needing ``reset``).

Only the default handler is replaced, and only on the main thread; a program's own
handler is left alone (it then decides what Ctrl-C does). Signals are delivered to the
main thread only, so an operation on another thread needs no guard.
"""

from __future__ import annotations

import _signal
import os
import signal
import sys
import sysconfig
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["Guard", "current", "enter", "hits", "in_model_code", "leave"]

_SEER_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class Guard:
    """One runtime operation's Ctrl-C state.

    * ``active``: the guard's handler is installed (main thread, default handler found);
    * ``hits``: Ctrl-Cs that arrived; ``pending``: recorded and not yet seen by the
      operation (one raised in the model's code counts until it reaches the operation);
    * ``on_interrupt``: called for the first Ctrl-C; ``on_raise``: called before any
      KeyboardInterrupt the guard raises;
    * ``previous``: the handler to put back when the outermost operation ends.

    Written only on the main thread (by the operation and by the signal handler, which
    Python runs on the main thread between bytecodes)."""

    __slots__ = ("active", "hits", "on_interrupt", "on_raise", "pending", "previous")

    def __init__(self, on_interrupt: Callable[[], Any] | None,
                 on_raise: Callable[[], Any] | None) -> None:
        self.active = False
        self.hits = 0
        self.pending = 0
        self.on_interrupt = on_interrupt
        self.on_raise = on_raise
        self.previous: Any = None


#: The guards of the operations running on the main thread, innermost last (a handler
#: may step another runtime: operations nest).
_guards: list[Guard] = []
_libraries_found: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] | None = None


def _libraries() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Where the code SEER calls lives, stepped over when deciding whose code a Ctrl-C
    landed in: ``(numpy and threadpoolctl, the standard library, site-packages)``. An
    interpreter's own site-packages may sit inside its standard library folder (a system
    or container Python): what is installed there is not the standard library's. Found
    on the first Ctrl-C."""
    global _libraries_found
    if _libraries_found is None:
        import numpy

        paths = sysconfig.get_paths()
        called = {os.path.dirname(numpy.__file__)}
        try:
            import threadpoolctl  # the BLAS cap's
            called.add(threadpoolctl.__file__)
        except ImportError:
            pass

        def dirs(paths: set[str]) -> tuple[str, ...]:  # a folder ends in "/": no sibling
            return tuple(os.path.join(os.path.abspath(d), "") if os.path.isdir(d)
                         else os.path.abspath(d) for d in paths)

        _libraries_found = (dirs(called), dirs({paths["stdlib"], paths["platstdlib"]}),
                            dirs({paths["purelib"], paths["platlib"]}))
    return _libraries_found


def _whose(frame: FrameType) -> str | None:
    """``"seer"`` or ``"model"`` for the code ``frame`` runs; None for a library's (the
    standard library, numpy) or code made at run time for no module (a namedtuple's
    ``__new__``): its caller decides.

    SEER's code is known by its module's name first (wherever the package is
    installed), then by its folder. Code made at run time (file ``<string>``: a
    dataclass's ``__init__``) belongs to the module whose globals it runs in; a module
    without a file (an interactive ``__main__``) is the user's."""
    name = frame.f_globals.get("__name__")
    if isinstance(name, str) and (name == "seer" or name.startswith("seer.")):
        return "seer"
    filename = frame.f_code.co_filename
    if filename.startswith("<"):
        module = sys.modules.get(name) if isinstance(name, str) else None
        if filename.startswith("<frozen") or module is None:
            return None
        filename = getattr(module, "__file__", None)
        if filename is None:
            return "model"
    path = os.path.abspath(filename)
    if path.startswith(_SEER_DIR):
        return "seer"
    called, stdlib, site = _libraries()
    if path.startswith(called) or (path.startswith(stdlib) and not path.startswith(site)):
        return None
    return "model"


def in_model_code(frame: FrameType | None) -> bool:
    """Whether ``frame`` (where a signal landed) runs the model's code: the first frame
    outward whose owner :func:`_whose` can tell is not SEER's."""
    while frame is not None:
        owner = _whose(frame)
        if owner is not None:
            return owner == "model"
        frame = frame.f_back
    return False


def _handler(signum: int, frame: FrameType | None) -> None:
    """The SIGINT handler while an operation runs (see the module docstring)."""
    if not _guards:  # installed, no guard pushed yet or any more: behave as the default
        raise KeyboardInterrupt
    guard = _guards[-1]
    guard.hits += 1
    if guard.hits == 1 and guard.on_interrupt is not None:
        guard.on_interrupt()
    # Recorded even when raised here at once, in the model's code: the operation forgets
    # it when the KeyboardInterrupt reaches it (``Runtime._operate``), and raises it at
    # its end if the model's code swallowed it (a ``__del__`` ignores what it raises).
    guard.pending += 1
    if in_model_code(frame):
        if guard.on_raise is not None:
            guard.on_raise()
        raise KeyboardInterrupt


def enter(on_interrupt: Callable[[], Any] | None = None,
          on_raise: Callable[[], Any] | None = None) -> Guard:
    """Start guarding an operation; pair every call with :func:`leave` in a ``finally``.

    Installs the handler first and pushes the guard after: a Ctrl-C before the install
    finds nothing changed yet, and one after it is recorded."""
    guard = Guard(on_interrupt, on_raise)
    if threading.current_thread() is not threading.main_thread():
        return guard
    installed = signal.getsignal(signal.SIGINT)
    if installed is _handler:  # an outer operation's (or a leftover of an interrupted one)
        guard.previous = _handler if _guards else signal.default_int_handler
    elif installed is signal.default_int_handler:
        signal.signal(signal.SIGINT, _handler)
        guard.previous = signal.default_int_handler
    else:
        return guard  # the program's own handler: leave it alone
    guard.active = True
    _guards.append(guard)
    return guard


def leave(guard: Guard, result: Any = None) -> Any:
    """End ``guard``'s operation: raise KeyboardInterrupt if a Ctrl-C was recorded (after
    ``on_raise``), else return ``result``. The previous handler is put back as the last
    thing, so a Ctrl-C is recorded up to the moment the operation's own code is done."""
    if not guard.active:
        return result
    if guard.pending:
        guard.pending = 0
        if guard.on_raise is not None:
            guard.on_raise()
        _drop(guard)
        raise KeyboardInterrupt
    return (_drop(guard), result)[1]  # one line: nothing of ours runs after the restore


def _drop(guard: Guard) -> None:
    """Take ``guard`` (and any guard above it, left by an operation that never reached
    :func:`leave`) off the stack; for the outermost, put the previous handler back."""
    guard.active = False
    if guard not in _guards:
        return
    index = _guards.index(guard)
    if index == 0:
        # One line: the guard goes and the handler is back with no line between, and a
        # Ctrl-C raised on it (by either handler) is still this operation's: the runtime
        # is marked. _signal.signal, not signal.signal, whose Python wrapper would run
        # lines of its own after the restore.
        try:
            _guards.clear() or _signal.signal(signal.SIGINT, guard.previous)
        except KeyboardInterrupt:
            if guard.on_raise is not None:
                guard.on_raise()
            raise
    else:
        del _guards[index:]


def current() -> Guard | None:
    """The innermost active guard of the calling thread, or None (not the main thread, no
    operation running, or the program's own SIGINT handler)."""
    if _guards and threading.current_thread() is threading.main_thread():
        return _guards[-1]
    return None


def hits() -> int:
    """Ctrl-Cs that reached the innermost running operation (0 off the main thread)."""
    guard = current()
    return guard.hits if guard is not None else 0
