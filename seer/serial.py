"""The serial reference runtime: one thread, one global heap in κ order.

It is the oracle every parallel runtime is compared against, and the headline baseline,
so its loop is kept lean: events are tuples compared by ``heapq`` in C, handlers are
looked up by integer kind in a tuple, and nothing is allocated per event except the
events a handler emits.
"""

from __future__ import annotations

import heapq
import pickle
import sys
import threading
import time
import types
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from seer.actions import ActionBatch
from seer.errors import (
    ContractError,
    IsolationError,
    SharedStateError,
    StepLimitError,
    tag_event,
)
from seer.events import Event, seq_origin
from seer.model import Model
from seer.runtime import Runtime, run_event

__all__ = ["SerialRuntime", "SharedState"]


class SerialRuntime(Runtime):
    """Runs every event of a step in global κ = (τ, seq) order on the calling thread.

    ``debug=True`` additionally checks, for finding bugs (O(state size) per event, not for
    production), that after every handler no row of another entity changed, that no
    payload changed between its emit and its delivery (the sender kept and mutated it) or
    while its receiver handled it, and that the handler changed no state outside the rows
    (:class:`SharedState`: the model's attributes, what they hold, and the mutable globals
    of the model's modules; a change raises :class:`~seer.errors.SharedStateError`). With
    ``debug=False`` none of this runs: the step loop is :meth:`_run`, untouched.
    """

    name = "serial"
    parallel = False

    def __init__(self, model: Model, *, debug: bool = False,
                 max_events_per_step: int | None = None, trace: bool | Any = False) -> None:
        self._heap: list[Event] = []
        self._payload_copies: dict[int, bytes] = {}  # debug: seq -> payload at emit
        super().__init__(model, debug=debug, max_events_per_step=max_events_per_step,
                         trace=trace)
        if self.trace is not None:
            self.trace.ensure(1, [threading.current_thread().name])

    def _make_push(self, e: int) -> Callable[[Event], Any]:
        if self.debug:
            return self._push_recording_payload
        return partial(heapq.heappush, self._heap)

    def _push_recording_payload(self, ev: Event) -> None:
        frozen = _frozen(ev.payload)
        if frozen is not None:
            self._payload_copies[ev.seq] = frozen
        heapq.heappush(self._heap, ev)

    def _push_externals(self, batch: ActionBatch) -> None:
        push, heap = heapq.heappush, self._heap
        for ev in batch.events():
            push(heap, ev)

    def _clear_events(self) -> None:
        self._heap.clear()
        self._payload_copies.clear()

    def _pending(self) -> tuple[int, tuple[float, int] | None]:
        heap = self._heap
        return len(heap), (heap[0][:2] if heap else None)

    def _run(self, t_end: float) -> None:
        if self.debug or self.trace is not None:
            self._run_checked(t_end)
            return
        heap = self._heap
        pop = heapq.heappop
        contexts = self._contexts
        handlers = self._handlers
        limit = self._event_limit
        ran = 0  # events run in this step
        ev = None
        # The dispatch of run_event(), inlined: this loop is the baseline every speed-up is
        # measured against, and a call per event would slow it by a measurable amount.
        # Events are read by position (seer.events, "Layout": a name costs more here).
        try:
            while heap and heap[0][0] < t_end:  # the head's tau
                ev = pop(heap)
                ctx = contexts[ev[2]]  # target
                ctx.now = ev[0]  # tau
                ctx._seq = ev[1]  # seq
                handlers[ev[3]](ctx, ev)  # kind
                ran += 1
                if ran > limit:
                    raise self._step_limit_error(ev.target, ev, f"{ran} events so far")
        except StepLimitError:
            self._mark_failed()
            raise
        except BaseException as exc:
            self._raise_failure(tag_event(exc, ev))
        finally:
            self.events_run += ran

    def _run_checked(self, t_end: float) -> None:
        """The same loop, plus (debug) the isolation and payload checks after each
        handler, and (trace) a ``run`` slice per stretch of one entity's events. A twin
        of :meth:`_run`, not checks inside it: each would cost the baseline loop a test
        per event, and this one calls :func:`run_event` per event."""
        heap = self._heap
        debug = self.debug
        shadow = {name: a.copy() for name, a in self._arrays.items()} if debug else {}
        shared = SharedState(self.model, frozenset(
            id(a) for a in (*self._arrays.values(), *self._start_arrays.values()))) \
            if debug else None
        run = _TracedRun(self.trace) if self.trace is not None else None
        ran = 0
        try:
            while heap and heap[0].tau < t_end:
                ev = heapq.heappop(heap)
                if run is not None:
                    run.event(ev)
                try:
                    if debug:
                        frozen = self._payload_copies.pop(ev.seq, None)
                        self._check_payload(ev, frozen, "between its emit and its delivery "
                                            "(the sender kept a reference and changed it)")
                    run_event(self._handlers, self._contexts[ev.target], ev)
                    if debug:
                        self._check_isolation(ev.target, shadow)
                        self._check_payload(ev, frozen, "by its receiver's handler")
                        shared.check(ev, self._kind_name(ev.kind))
                except BaseException as exc:
                    self._raise_failure(tag_event(exc, ev))
                self.events_run += 1
                ran += 1
                if ran > self._event_limit:
                    self._mark_failed()
                    raise self._step_limit_error(ev.target, ev, f"{ran} events so far")
        finally:
            if run is not None:
                run.close()

    def _check_payload(self, ev: Event, frozen: bytes | None, when: str) -> None:
        if frozen is not None and _frozen(ev.payload) != frozen:
            raise ContractError(
                f"the payload of this {self._kind_name(ev.kind)!r} event (emitted by entity "
                f"{seq_origin(ev.seq)}) was mutated {when}; payloads are shared, not copied: "
                "emit a fresh object and never change one after emitting or receiving it",
                model=self.spec.name, entity=ev.target, kind=None, time=ev.tau)

    def _check_isolation(self, e: int, shadow: dict[str, np.ndarray]) -> None:
        for name, live in self._arrays.items():
            before = shadow[name]
            before[e] = live[e]
            # Compare bytes, not values: NaN payloads and -0.0 must count as changes too.
            live_b = live.reshape(live.shape[0], -1).view(np.uint8)
            before_b = before.reshape(before.shape[0], -1).view(np.uint8)
            if not np.array_equal(live_b, before_b):
                changed = np.flatnonzero((live_b != before_b).any(axis=1))
                before[changed] = live[changed]
                raise IsolationError(
                    f"handler wrote to field {name!r} of entity {int(changed[0])} "
                    f"(entities changed: {changed[:8].tolist()}); a handler may write only "
                    "its own entity's rows and must emit an event to affect another",
                    model=self.spec.name, entity=e, kind=None, time=self._contexts[e].now,
                    field=name, other_entities=changed.tolist())


class SharedState:
    """Fingerprints of the state a handler must not write (debug mode): the model's
    attributes, and the mutable module globals of the modules that define the model's
    class and its bases (seer's own modules excepted).

    Arrays are compared by dtype, shape and bytes; lists, tuples, dicts, sets and plain
    objects (their ``__dict__`` and slots) by their contents, two levels below the
    attribute, and by identity below that; a numpy Generator by its bit generator's state;
    anything else (functions, classes, modules, locks) by identity. The state arrays the
    runtime owns (the rows, and views of them) are skipped. Dunder names are skipped (the
    ``warnings`` module writes ``__warningregistry__`` into a module's globals).

    :meth:`check` compares the fingerprints taken when the object was made (the start of
    a step's events: after ``prepare_step``, so that what it and ``init_episode`` leave on
    the model is the baseline) with the current ones, and raises
    :class:`~seer.errors.SharedStateError` naming the first attribute that changed.
    O(size of the model's attributes) per call.
    """

    __slots__ = ("_baseline", "_model", "_modules", "_roots")

    def __init__(self, model: Any, roots: frozenset[int]) -> None:
        self._model = model
        self._roots = roots
        self._modules = _model_modules(type(model))
        self._baseline = self.fingerprints()

    def fingerprints(self) -> dict[str, Any]:
        """``{"model.name": fingerprint, "module.NAME": fingerprint, ...}``."""
        roots = self._roots
        out: dict[str, Any] = {}
        for name, value in _attributes(self._model):
            out[f"model.{name}"] = _fingerprint(value, roots, 0)
        for module in self._modules:
            prefix = module.__name__
            for name, value in list(vars(module).items()):
                if not (name.startswith("__") and name.endswith("__")):
                    out[f"{prefix}.{name}"] = _fingerprint(value, roots, 0)
        return out

    def check(self, ev: Any, kind: str | None = None) -> None:
        """Raise :class:`SharedStateError` if anything changed since the baseline."""
        now = self.fingerprints()
        if now == self._baseline:
            return
        before = self._baseline
        changed = [k for k in before if k not in now or now[k] != before[k]]
        changed += [k for k in now if k not in before]
        path = changed[0]
        if path not in before:
            what = "added it (a new attribute or global)"
        elif path not in now:
            what = "deleted it"
        else:
            what = f"changed it ({_describe(before[path], now[path])})"
        self._baseline = now  # one report per change
        model_name = getattr(self._model, "name", type(self._model).__name__)
        kind_text = f"a {kind!r} event" if kind is not None else "an event"
        raise SharedStateError(
            f"the handler of {kind_text} wrote {path} outside the rows: it {what}. "
            "Model attributes, what they hold, and module globals are shared by every "
            "thread of a parallel runtime, so writes to them during a step race and "
            "parallel results differ from serial ones. Keep per-entity state in fields "
            "(ctx.row), take scratch space from ctx.scratch(name, shape, dtype), and build "
            "per-step or per-episode data in prepare_step or init_episode"
            + (f" (also changed: {', '.join(changed[1:6])})" if len(changed) > 1 else ""),
            model=model_name, entity=ev.target, kind=None, time=ev.tau, attribute=path,
            attributes=changed)


_MAX_DEPTH = 2  # attribute (0) -> what it holds (1) -> what that holds (2); ids below
_FINGERPRINT_SCALARS = (type(None), bool, int, complex, str, bytes)
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
           types.MethodType, partial)


def _model_modules(cls: type) -> list[types.ModuleType]:
    """The modules whose globals the check watches: those defining ``cls`` and its bases,
    except seer's own and the standard library's builtins."""
    modules: list[types.ModuleType] = []
    for klass in cls.__mro__:
        name = klass.__module__
        if name == "builtins" or name == "seer" or name.startswith("seer."):
            continue
        module = sys.modules.get(name)
        if module is not None and module not in modules:
            modules.append(module)
    return modules


def _attributes(obj: Any) -> list[tuple[str, Any]]:
    """``obj``'s instance attributes: its ``__dict__`` and any filled ``__slots__``."""
    items = list(getattr(obj, "__dict__", {}).items())
    for klass in type(obj).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                items.append((slot, getattr(obj, slot)))
    return items


def _array_root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _fingerprint(value: Any, roots: frozenset[int], depth: int) -> Any:
    cls = value.__class__
    if cls in _FINGERPRINT_SCALARS:
        return value
    if cls is float:
        return ("float", value.hex())  # NaN equals itself, -0.0 differs from 0.0
    if isinstance(value, np.ndarray):
        if id(_array_root(value)) in roots:
            return ("rows",)  # the runtime's state: the isolation check watches it
        if value.dtype.hasobject:
            return ("array", value.shape, tuple(_fingerprint(x, roots, _MAX_DEPTH)
                                                for x in value.flat))
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str, value.tobytes())
    if isinstance(value, np.random.Generator):
        return ("rng", id(value), repr(value.bit_generator.state))
    if isinstance(value, _OPAQUE) or depth >= _MAX_DEPTH:
        if isinstance(value, (list, dict, set, bytearray, deque)):
            return ("id", id(value), len(value))
        return ("id", id(value))
    if isinstance(value, (bytearray, memoryview)):
        return ("bytes", bytes(value))
    if isinstance(value, (set, frozenset)):
        return (cls.__name__, frozenset(_fingerprint(x, roots, depth + 1) for x in value))
    if isinstance(value, dict):
        return (cls.__name__, tuple((_fingerprint(k, roots, depth + 1),
                                     _fingerprint(v, roots, depth + 1))
                                    for k, v in list(value.items())))
    if isinstance(value, (list, tuple, deque)):
        return (cls.__name__, tuple(_fingerprint(x, roots, depth + 1) for x in list(value)))
    attrs = _attributes(value)
    if attrs:  # a plain object: its attributes
        return ("object", id(value), tuple((k, _fingerprint(v, roots, depth + 1))
                                            for k, v in attrs))
    return ("id", id(value))


def _describe(before: Any, now: Any) -> str:
    """A few words on how a fingerprint changed."""
    if isinstance(before, tuple) and before and isinstance(now, tuple) and now \
            and before[0] == now[0]:
        kind = before[0]
        if kind == "array":
            return "the bytes of a numpy array it holds"
        if kind in ("list", "tuple", "deque", "dict", "set", "frozenset") \
                and len(before) == 2 and isinstance(before[1], (tuple, frozenset)):
            if len(before[1]) != len(now[1]):
                return f"a {kind} it holds went from {len(before[1])} to {len(now[1])} items"
            return f"an item of a {kind} it holds"
        if kind == "rng":
            return "drew from a numpy Generator the model holds: draw from ctx.rng"
        if kind == "object":
            return "an attribute of an object it holds"
        if kind == "id":
            return "rebound it, or changed something it holds"
    return "rebound it to a new value"


class _TracedRun:
    """Coalesces consecutive events of one entity into one ``run`` slice (serial)."""

    __slots__ = ("count", "entity", "first", "last", "start", "trace")

    def __init__(self, trace: Any) -> None:
        self.trace = trace
        self.entity = -1
        self.count = 0

    def event(self, ev: Event) -> None:
        if ev.target != self.entity:
            self.close()
            self.entity, self.first, self.count = ev.target, ev[:2], 0
            self.start = time.perf_counter_ns()
        self.count += 1
        self.last = ev[:2]  # its key

    def close(self) -> None:
        if self.count:
            self.trace.slice(0, "run", self.start, time.perf_counter_ns(), entity=self.entity,
                             events=self.count, first=self.first, last=self.last)
        self.entity, self.count = -1, 0


_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes)


def _frozen(payload: Any) -> bytes | None:
    """A byte image of ``payload`` to detect later mutation (None: immutable or unpicklable,
    nothing to check)."""
    if payload.__class__ in _IMMUTABLE:
        return None
    try:
        return pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # an object pickle cannot copy: not checked
        return None
