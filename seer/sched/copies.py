"""Per-worker copies of what the workers of a window would otherwise share.

Free-threaded CPython counts references to an object with a plain add on the thread that
made it and with an atomic one on every other thread; two threads that load one object
in a hot loop both pay a contended atomic on its reference count, a cache line that moves
between cores on every load (``docs/performance.md``). The cost is small on 2 cores and
grows with the core count. So SEER's runtime gives each pool thread its own equal copy of
what a handler or its hot loop loads per event, made on that thread, each behind a switch
of the runtime (``SeerRuntime(model, copies=...)``):

==============  ==========================================================================
``contexts``    each entity's context and row, with the values ``emit`` reads (the kind
                table, the lookahead, the entity count, its id), made on its home thread
``handlers``    the bound ``on_<kind>`` methods: one tuple of bound methods per thread
``snapshot``    the ``state``/``snapshot`` wrappers and their read-only array views that
                contexts hand to handlers
``model``       the model object itself (``self`` in handlers and ``outputs``, and
                ``ctx.model``): a copy per thread whose attribute values that thread
                made where they can be copied exactly (:func:`thread_copy`), taken when
                the runtime makes its workers (:func:`worker_model`); the handlers and
                ``outputs`` of that thread are bound to it
==============  ==========================================================================

Every switch leaves results bit-identical: a copy holds equal values (arrays copied
exactly, floats with the same bits), and handlers may not write the model, the snapshot
or another entity's context (the event contract; ``SerialRuntime(debug=True)`` checks it).
:data:`DEFAULT_COPIES` is what SEER's runtime uses unless told otherwise.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterable
from types import MethodType
from typing import Any

import numpy as np

from seer.errors import ModelError

__all__ = ["COPIES", "DEFAULT_COPIES", "own_float", "own_int", "parse_copies", "thread_copy",
           "worker_handlers", "worker_model"]

#: The switches, in the order they are documented.
COPIES = ("contexts", "handlers", "snapshot", "model")
#: The copies SEER's runtime makes unless ``copies=`` says otherwise.
DEFAULT_COPIES = frozenset({"contexts", "handlers", "snapshot"})

_pack_double = struct.Struct("<d").pack
_unpack_double = struct.Struct("<d").unpack
_is_immortal = getattr(sys, "_is_immortal", lambda value: False)  # CPython 3.14+


def parse_copies(copies: str | Iterable[str] | None) -> frozenset[str]:
    """``copies=`` of the runtime as a set of switch names: None (the default,
    :data:`DEFAULT_COPIES`), ``"all"``, ``"none"``, a comma-separated string, or an
    iterable of names from :data:`COPIES`."""
    if copies is None:
        return DEFAULT_COPIES
    if isinstance(copies, str):
        if not copies.strip():
            raise ModelError("copies='' names no switch: give None (the default), 'none', "
                             f"'all', or names from {', '.join(COPIES)}")
        if copies == "all":
            return frozenset(COPIES)
        if copies == "none":
            return frozenset()
        copies = [c.strip() for c in copies.split(",") if c.strip()]
    try:
        names = frozenset(copies)
    except TypeError:
        raise ModelError(f"copies must be None, 'all', 'none', or names from {COPIES}, "
                         f"got {copies!r}") from None
    unknown = sorted(str(c) for c in names - set(COPIES))
    if unknown:
        raise ModelError(f"copies: unknown switch(es) {', '.join(unknown)}; choose from "
                         f"{', '.join(COPIES)} (or 'all', 'none')")
    return names


def own_float(x: float) -> float:
    """An equal float (same bits) that the calling thread made."""
    return _unpack_double(_pack_double(x))[0]


def own_int(x: int) -> int:
    """An equal int that the calling thread made (small ints stay the shared immortals)."""
    return int.from_bytes(x.to_bytes(x.bit_length() // 8 + 1, "little", signed=True),
                          "little", signed=True)


def thread_copy(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """An equal copy of ``value`` made of objects the calling thread makes now, for the
    values whose copy behaves exactly as the original: floats (same bits), ints, strings,
    bytes, numpy scalars, plain ``numpy.ndarray`` s that are C- or Fortran-contiguous (same
    dtype, shape, layout and writeability: numpy picks its kernels by layout, so a strided
    view is left shared), and lists, tuples and dicts of them, rebuilt in order.
    Everything else comes back as it is, shared as without the switch: immortal objects
    (they count no references), sets (a rebuilt set may iterate in another order), array
    subclasses, strided views, and any other object (whose identity or copy semantics the
    model may rely on). ``memo`` keeps shared structure shared within one copy."""
    memo = {} if memo is None else memo
    key = id(value)
    if key in memo:
        return memo[key]
    if _is_immortal(value):
        return value
    cls = value.__class__
    if cls is float:
        out: Any = own_float(value)
    elif cls is int:
        out = own_int(value)
    elif cls is str or cls is bytes:
        out = (value + value[:1])[:len(value)] if value else value  # a new equal object
    elif cls is np.ndarray:
        if not (value.flags.c_contiguous or value.flags.f_contiguous):
            return value
        out = np.array(value, copy=True, order="K")
        if not value.flags.writeable:
            out.flags.writeable = False
    elif isinstance(value, np.generic):
        out = value.copy()
    elif cls is list:
        out = []
        memo[key] = out
        out.extend(thread_copy(v, memo) for v in value)
    elif cls is tuple:
        out = tuple(thread_copy(v, memo) for v in value)
    elif cls is dict:
        out = {}
        memo[key] = out
        for k, v in value.items():
            out[thread_copy(k, memo)] = thread_copy(v, memo)
    else:
        return value
    memo[key] = out
    return out


def worker_model(model: Any) -> Any:
    """A copy of ``model`` for the calling thread: an instance of the model's class made
    without calling ``__init__`` (``object.__new__``), whose attributes — its instance
    dict in the original's order, then its ``__slots__`` — are :func:`thread_copy` copies,
    so that ``self.<name>`` in a handler loads only this thread's objects where they can
    be copied exactly. The copy is made when the runtime makes its workers (construction,
    ``reset``, ``resize``): attributes set on the model after that are not in it (a model
    whose handlers read attributes it sets later should leave ``model`` out of the copies).
    A model that cannot be made so comes back as it is."""
    cls = type(model)
    try:
        twin = object.__new__(cls)
    except TypeError:
        return model
    memo: dict[int, Any] = {id(model): twin}
    names = list(getattr(model, "__dict__", {}))
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else [s for s in slots
                                                        if s not in ("__dict__", "__weakref__")]
    for name in names:
        try:
            value = object.__getattribute__(model, name)
        except AttributeError:
            continue  # an empty slot
        object.__setattr__(twin, name, thread_copy(value, memo))
    return twin


def worker_handlers(handlers: tuple, model: Any, twin: Any | None) -> tuple:
    """The handler table of one thread: each handler bound again, on the calling thread,
    to ``twin`` (the thread's model copy) where it was bound to ``model``, else to the
    object it was bound to; plain functions stay as they are."""
    out = []
    for h in handlers:
        if isinstance(h, MethodType):
            owner = h.__self__
            out.append(MethodType(h.__func__, twin if twin is not None and owner is model
                                  else owner))
        else:
            out.append(h)
    return tuple(out)
