"""SEER's scheduler, and the registry that builds any runtime by name.

``make_runtime(model, runtime, threads=...)`` builds one by name (``docs/design.md``,
"The runtime hierarchy"): ``serial`` (:class:`~seer.SerialRuntime`, the oracle) and
``seer`` (:class:`SeerRuntime`: windows over LEQs + PEL on a worker pool, assignment
``steal``) are the product; the peers it is measured against (``static``,
``static-block``, ``seer-ms``, ``global``, ``executor``, ``optimistic``) live in
:mod:`seer.peers`, which :data:`RUNTIMES` loads the first time one of their names is
asked for or the names are listed.

The hierarchy is one level deep::

    Runtime                 seer/runtime.py          state, seeding, actions, outputs,
    │                                                threads, one operation at a time
    ├── SerialRuntime       seer/serial.py           the oracle
    ├── SeerRuntime         seer/sched/dual_queue.py windows, PEL, pool, LEQs
    │   └── (peers)         seer/peers/static.py     static, static-block, seer-ms: other
    │                                                assignment or intakes, no overrides
    └── (peers)             seer/peers/              global, executor, optimistic

The modules here, one job each: ``dual_queue`` (the SEER runtime), ``worker`` (a thread's
state and the hot loop), ``windows`` (the window bound and pending events by entity),
``calendar`` (when each entity next has work), ``assignment`` (who runs which ready
entity), ``pool`` (the worker threads and their barrier), ``copies`` (per-worker copies
of what workers share, behind switches), and, loaded only when used, ``sharing`` (an
audit of what they still share).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from seer.errors import ModelError
from seer.model import Model
from seer.runtime import MAX_THREADS, Runtime, validate_threads
from seer.sched.assignment import ASSIGNMENTS, Assignment
from seer.sched.dual_queue import SeerRuntime
from seer.sched.pool import WorkerPool, WorkerStats
from seer.serial import SerialRuntime

__all__ = [
    "ASSIGNMENTS",
    "MAX_THREADS",
    "MOVED_MODULES",
    "PEER_CLASSES",
    "RUNTIMES",
    "RUNTIME_PROVIDERS",
    "Assignment",
    "SeerRuntime",
    "ThreadChooser",
    "WorkerPool",
    "WorkerStats",
    "make_runtime",
    "register_runtime",
    "register_thread_chooser",
    "validate_threads",
]

#: Modules that register more runtimes when imported (:func:`register_runtime`), loaded by
#: :data:`RUNTIMES` the first time a name it does not hold is asked for or the names are
#: listed. A package of runtimes may add its module here.
RUNTIME_PROVIDERS: list[str] = ["seer.peers"]


class RuntimeRegistry(MutableMapping[str, type[Runtime]]):
    """Runtime name -> class: the product's runtimes at once, every provider's
    (:data:`RUNTIME_PROVIDERS`) once something asks for a name it does not hold, or for
    the names (iteration, ``len``): so ``import seer`` loads no peer, and nothing that
    lists the runtimes misses one."""

    def __init__(self, classes: dict[str, type[Runtime]]) -> None:
        self._classes = classes
        self._loaded = 0  # providers imported so far
        # Several threads may ask at once (replicas build runtimes on threads): one loads,
        # the others wait for it. Re-entrant: a provider registers while it is imported.
        self._lock = threading.RLock()

    def _load(self) -> None:
        """Import every provider not imported yet; one that fails raises (its error, not
        "unknown runtime" later) and is tried again next time."""
        if self._loaded == len(RUNTIME_PROVIDERS):
            return
        with self._lock:
            while self._loaded < len(RUNTIME_PROVIDERS):
                importlib.import_module(RUNTIME_PROVIDERS[self._loaded])
                self._loaded += 1

    def __getitem__(self, name: str) -> type[Runtime]:
        try:
            return self._classes[name]
        except KeyError:
            self._load()
            return self._classes[name]

    def __contains__(self, name: object) -> bool:
        if name in self._classes:
            return True
        self._load()
        return name in self._classes

    def provide(self, cls: type[Runtime]) -> None:
        """Register a provider's runtime under ``cls.name``, unless something registered
        that name first (a user's runtime wins over a provider's)."""
        self._classes.setdefault(_checked_runtime(cls).name, cls)

    def __setitem__(self, name: str, cls: type[Runtime]) -> None:
        self._classes[name] = cls

    def __delitem__(self, name: str) -> None:
        del self._classes[name]

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(list(self._classes))

    def __len__(self) -> int:
        self._load()
        return len(self._classes)

    def __repr__(self) -> str:
        return f"RuntimeRegistry({dict(self._classes)!r})"


#: Runtime name -> class, for :func:`make_runtime` (the peers load on first use).
RUNTIMES: RuntimeRegistry = RuntimeRegistry({cls.name: cls
                                             for cls in (SerialRuntime, SeerRuntime)})


def _checked_runtime(cls: Any) -> type[Runtime]:
    """``cls`` if it is a :class:`Runtime` subclass with a name of its own, else the
    :class:`ModelError` that says what is missing."""
    if not (isinstance(cls, type) and issubclass(cls, Runtime)):
        raise ModelError(f"register_runtime needs a Runtime subclass, got {cls!r}")
    name = cls.name
    if not isinstance(name, str) or not name or name == Runtime.name:
        raise ModelError(f"{cls.__name__} needs a class attribute name = '...' to be "
                         "registered")
    return cls


def register_runtime(cls: type[Runtime], *, replace: bool = False) -> type[Runtime]:
    """Make ``cls`` available to :func:`make_runtime` (and the benchmarks) under
    ``cls.name``; returns ``cls``, so it can decorate a class. A name already taken is an
    error unless ``replace``."""
    name = _checked_runtime(cls).name
    taken = RUNTIMES._classes.get(name)
    if taken is None and not replace:
        taken = RUNTIMES.get(name)  # a provider's runtime, loaded now
    if taken is not None and taken is not cls and not replace:
        raise ModelError(f"runtime name {name!r} is taken by {taken.__name__}")
    RUNTIMES[name] = cls
    return cls


#: Modules that moved: their old paths still import (the same module object), with a
#: DeprecationWarning.
MOVED_MODULES: dict[str, str] = {
    "seer.sched.executor": "seer.peers.executor",
    "seer.sched.global_queue": "seer.peers.global_queue",
    "seer.sched.optimistic": "seer.peers.optimistic",
    "seer.sched.blas": "seer.blas",
    "seer.sched.threaded": "seer.runtime",  # MAX_THREADS, validate_threads; Runtime owns threads
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import seer.sched.executor`` (and the other :data:`MOVED_MODULES`): the module at
    its new path, under the old name too, with a DeprecationWarning that names the new."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec: Any) -> Any:
        new = MOVED_MODULES[spec.name]
        message = f"{spec.name} moved to {new}; import it from there"
        try:
            warnings.warn(message, DeprecationWarning, stacklevel=2,
                          skip_file_prefixes=("<frozen importlib",))
        except TypeError:  # Python before 3.12: no skip_file_prefixes
            warnings.warn(message, DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module: Any) -> None:
        """The module at the new path is already executed."""


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.append(_MovedModules())

#: The peers' classes, which moved to seer.peers: ``seer.sched.StaticRuntime`` and
#: ``seer.StaticRuntime`` load them on first use.
PEER_CLASSES = frozenset({"StaticRuntime", "StaticBlockRuntime", "SeerMsRuntime",
                          "GlobalQueueRuntime", "ExecutorRuntime", "OptimisticRuntime"})


def __getattr__(name: str) -> Any:
    """The peers' classes (from :mod:`seer.peers`, loaded now); ``DualQueueRuntime``,
    SEER's runtime's former name (deprecated); what ``ThreadedRuntime`` and
    ``WindowedRuntime`` did, named in the AttributeError."""
    if name in PEER_CLASSES:
        RUNTIMES._load()
        return getattr(sys.modules[RUNTIME_PROVIDERS[0]], name)
    if name == "DualQueueRuntime":
        warnings.warn("seer.sched.DualQueueRuntime is now seer.sched.SeerRuntime (it takes "
                      "the same assignment= and queues=)", DeprecationWarning, stacklevel=2)
        return SeerRuntime
    if name == "ThreadedRuntime":
        raise AttributeError("seer.sched.ThreadedRuntime is gone: seer.runtime.Runtime owns "
                             "the threads now (its hooks: docs/design.md, 'The runtime "
                             "hierarchy'); to ask whether a runtime runs on several threads, "
                             "read its class attribute parallel")
    if name == "WindowedRuntime":
        raise AttributeError("seer.sched.WindowedRuntime is gone: SeerRuntime and the "
                             "executor peer compose seer.sched.windows.EntityEvents (the "
                             "per-entity heaps, the calendar and the window sequence) "
                             "instead of inheriting it")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: ``chooser(model, runtime_name) -> (threads, info)``: decides ``threads="auto"``; ``info``
#: ends up in ``runtime.stpa``.
ThreadChooser = Callable[[Model, str], tuple[int, dict[str, Any]]]

# The chooser make_runtime asks for threads="auto". seer/__init__.py registers one that
# imports seer.stpa on first use (and importing seer.stpa registers its predictor), so
# that this package never imports seer.stpa, which builds on it.
_thread_chooser: ThreadChooser | None = None


def register_thread_chooser(chooser: ThreadChooser | None) -> ThreadChooser | None:
    """Make ``chooser`` decide ``make_runtime(..., threads="auto")`` (None: nothing does);
    returns the chooser it replaces. ``import seer`` registers STPA's
    :func:`seer.stpa.choose_threads`."""
    global _thread_chooser
    if chooser is not None and not callable(chooser):
        raise ModelError(f"register_thread_chooser needs a callable, got {chooser!r}")
    previous, _thread_chooser = _thread_chooser, chooser
    return previous


def make_runtime(model: Model, runtime: str = "seer", *, threads: int | str | None = None,
                 **options: Any) -> Runtime:
    """Build the runtime named ``runtime`` for ``model``; keyword options go to the
    runtime's constructor (``max_events_per_step``, ``trace``, ...).

    ``threads``: an int in ``1..MAX_THREADS``, ``"auto"``, or None (the default: the
    runtime's own default, 2 for the parallel runtimes). ``serial`` runs on one thread: it
    takes None, 1 or ``"auto"`` and refuses any other count with :class:`ModelError`.

    ``threads="auto"`` asks the registered thread chooser (:func:`register_thread_chooser`):
    by default STPA's preflight (a few steps of ``model`` on a separate runtime, with a
    seed of its own), and builds the runtime at the predicted thread count;
    ``runtime.stpa`` then holds the prediction, the probe count, the preflight time and
    the features. STPA's chooser needs the ``stpa`` extra (xgboost)."""
    try:
        cls = RUNTIMES[runtime]
    except (KeyError, TypeError):
        raise ModelError(f"unknown runtime {runtime!r}; choose one of "
                         f"{sorted(RUNTIMES)}") from None
    if not cls.parallel:
        one = f"runtime {runtime!r} runs on one thread"
        if not (threads is None or (threads.__class__ is int and threads == 1)
                  or (isinstance(threads, str) and threads == "auto")):
            raise ModelError(f"{one}: threads must be 1, 'auto' or left out (None), got "
                             f"{threads!r} (for more threads choose a parallel runtime, such "
                             "as 'seer')")
        return cls(model, **options)
    threads = _threads_option(threads, runtime)
    stpa = None
    if threads == "auto":
        chooser = _thread_chooser
        if chooser is None:
            raise ModelError(f"threads='auto' for runtime {runtime!r}: no thread chooser is "
                             "registered (import seer.stpa, or call "
                             "seer.sched.register_thread_chooser)")
        threads, stpa = chooser(model, runtime)
    rt = cls(model, **options) if threads is None else cls(model, threads=threads, **options)
    rt.stpa = stpa
    return rt


def _threads_option(threads: Any, runtime: str) -> int | str | None:
    """``make_runtime``'s ``threads``, checked: None, ``"auto"`` or an int in
    ``1..MAX_THREADS``; anything else is a :class:`ModelError` that lists all three."""
    if threads is None or (isinstance(threads, str) and threads == "auto"):
        return threads
    try:
        return validate_threads(threads)
    except ModelError:
        hint = ""
        if isinstance(threads, str) and threads.strip().lower() == "auto":
            hint = " (write 'auto' in lower case)"
        elif isinstance(threads, str) and threads.strip().isdigit():
            hint = f" (pass the number itself: threads={int(threads.strip())})"
        raise ModelError(f"threads must be an int in 1..{MAX_THREADS}, got {threads!r}; "
                         f"make_runtime(model, {runtime!r}, threads=...) also takes 'auto' "
                         f"(STPA picks the count) or None (the runtime's default){hint}") \
            from None
