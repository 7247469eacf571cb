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
``model``       the model object itself (``self`` in handlers and ``outputs``): a copy
                per thread whose attribute values that thread made (:func:`thread_copy`);
                the handlers and ``outputs`` of that thread are bound to it
==============  ==========================================================================

Every switch leaves results bit-identical: a copy holds equal values (arrays copied
exactly, floats with the same bits), and handlers may not write the model, the snapshot
or another entity's context (the event contract; ``SerialRuntime(debug=True)`` checks it).
:data:`DEFAULT_COPIES` is what SEER's runtime uses unless told otherwise.
"""

from __future__ import annotations

import copy
import struct
from collections.abc import Iterable
from types import MethodType
from typing import Any

import numpy as np

from seer.errors import ModelError

__all__ = ["COPIES", "DEFAULT_COPIES", "parse_copies", "thread_copy", "worker_handlers",
           "worker_model"]

#: The switches, in the order they are documented.
COPIES = ("contexts", "handlers", "snapshot", "model")
#: The copies SEER's runtime makes unless ``copies=`` says otherwise.
DEFAULT_COPIES = frozenset({"contexts", "handlers", "snapshot"})

_pack_double = struct.Struct("<d").pack
_unpack_double = struct.Struct("<d").unpack


def parse_copies(copies: str | Iterable[str] | None) -> frozenset[str]:
    """``copies=`` of the runtime as a set of switch names: None (the default,
    :data:`DEFAULT_COPIES`), ``"all"``, ``"none"``, a comma-separated string, or an
    iterable of names from :data:`COPIES`."""
    if copies is None:
        return DEFAULT_COPIES
    if isinstance(copies, str):
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


def thread_copy(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """An equal copy of ``value`` made of objects the calling thread makes now: floats
    with the same bits, ints, strings, numpy arrays (same dtype, shape, bytes and writeability)
    and scalars, and lists, tuples, dicts and sets of them rebuilt; anything else through
    :func:`copy.deepcopy`, or ``value`` itself when it cannot be copied (a lock, a
    module: it stays shared). Immortal objects (small ints, ``None``, interned strings)
    cost nothing to share and come back as they are. ``memo`` keeps shared structure
    shared within one copy, as ``deepcopy`` does."""
    memo = {} if memo is None else memo
    key = id(value)
    if key in memo:
        return memo[key]
    cls = value.__class__
    if cls is float:
        out: Any = _unpack_double(_pack_double(value))[0]
    elif cls is int:
        out = int.from_bytes(value.to_bytes(value.bit_length() // 8 + 1, "little",
                                            signed=True), "little", signed=True)
    elif cls is bool or value is None:
        return value
    elif cls is str or cls is bytes:
        out = (value + value[:1])[:len(value)] if value else value  # a new equal object
    elif isinstance(value, np.ndarray):
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
    elif cls is set or cls is frozenset:
        out = cls(thread_copy(v, memo) for v in value)
    else:
        try:
            out = copy.deepcopy(value, memo)
        except Exception:
            out = value  # cannot be copied: shared, as without the switch
    memo[key] = out
    return out


def worker_model(model: Any) -> Any:
    """A copy of ``model`` for the calling thread: a shallow copy of the object whose
    attribute values are :func:`thread_copy` copies, so that ``self.<name>`` in a handler
    loads only this thread's objects. A model without ``__dict__`` (or one that cannot be
    copied) comes back as it is."""
    try:
        twin = copy.copy(model)
    except Exception:
        return model
    attributes = getattr(model, "__dict__", None)
    if attributes is None or twin is model:
        return model
    memo: dict[int, Any] = {id(model): twin}
    for name, value in attributes.items():
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
