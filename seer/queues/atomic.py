"""Atomic int64 words over one shared buffer, done by the ``atomics`` package.

An :class:`AtomicWords` is ``n`` int64 words in a single buffer: a numpy array for the
in-process case, or a ``multiprocessing.shared_memory`` block so that several processes
can work on the same words. Threads never read or write a word that another thread may
change concurrently except through an *accessor*:

* ``load(i)``, ``store(i, v)``, ``exchange(i, v) -> old``,
  ``compare_exchange(i, expected, desired) -> observed`` (success iff
  ``observed == expected``), ``fetch_add(i, delta) -> old``.

Every operation takes a memory order (``order=``, and ``failure=`` for compare-exchange):
:data:`RELAXED`, :data:`ACQUIRE`, :data:`RELEASE`, :data:`ACQ_REL` or :data:`SEQ_CST`,
C11's orders. The defaults are what the runtime's structures need (below); a call site that
needs another order names it.

Three accessor paths give the same results (tested against each other):

* **public**: ``atomics.atomicview`` views, one cached per word per accessor. About 4-8 µs
  per operation: the library re-validates and dispatches on every call.
* **fast**: the patomic function pointers that ``atomics`` itself loads
  (``atomics._impl.patomic.Patomic.ops(8)``), called directly (through cffi) with the word's
  address and pointers to per-accessor scratch values. About 0.5 µs per operation. It relies on
  ``atomics==1.0.3`` internals, which is why that version is pinned; it is self-tested once
  at import and abandoned (with a :class:`RuntimeWarning`) if anything disagrees.
  ``SEER_ATOMICS=public`` forces the public path.
* **model**: :mod:`seer.check`'s accessor, in which every operation is a scheduling point of
  a deterministic explorer and the orders are simulated (``SEER_ATOMICS=model``, or
  :func:`seer.check.model_atomics`).

Default orders: loads *acquire*, stores *release*, read-modify-writes *acq_rel* (failure
order *acquire* for compare-exchange). That is exactly what publication needs: a producer
fills plain (non-atomic) record fields, then publishes the record's handle with a release
RMW; a consumer that acquires the handle sees the fields. Nothing here needs sequential
consistency (no algorithm reads two different words and relies on a single total order of
their writes). The fast path passes the order to patomic; the public path ignores it and is
always seq_cst, which is stronger.

**Raw ops.** Each accessor also offers the calls its methods are made of, so that a hot loop
can bind them once at construction and pay no method call per operation, on every path
alike: ``fn_load(p, order, result)``, ``fn_store(p, arg, order)``,
``fn_exchange(p, arg, order, result)``, ``fn_cas(p, arg, desired, order, failure) -> bool``
(on failure the observed value is written into ``arg``), ``fn_fetch_add(p, arg, order,
result)``. ``p`` is ``words + i`` (word ``i``); ``arg``, ``desired`` and ``result`` name the
accessor's scratch values, which a caller reads and writes through ``scratch_view()``
(an int64 memoryview: ``[0]`` arg, ``[1]`` desired, ``[2]`` result). On the fast path these
are cffi function pointers and pointers; on the others, Python functions and indices.

**Plain views.** Shared memory that atomics publish but that is read and written plainly
(the arena's ``next`` links, ring slots) and plain reads of atomic words (an LEQ head as a
first guess) go through :func:`data_view` and :meth:`AtomicWords.plain`, so that the model
path can see them: a plain read of data whose publishing atomic was not acquired is a data
race there.

Accessors hold scratch values and cached views, so each thread must make its own
(``words.accessor()``): no Python object is shared by threads on the hot path, which is what
free-threaded CPython needs to scale (shared objects mean contended reference counts).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import warnings
import weakref
from multiprocessing import shared_memory
from typing import Protocol

import numpy as np

from seer.platform import attach_shared_memory, create_shared_memory

__all__ = [
    "ACQUIRE",
    "ACQ_REL",
    "ORDER_NAMES",
    "RELAXED",
    "RELEASE",
    "SEQ_CST",
    "AtomicWords",
    "FastAccessor",
    "PublicAccessor",
    "WordAccessor",
    "check_order",
    "data_slots",
    "data_view",
    "fast_path_available",
    "selected_path",
    "shared_lock",
]

# patomic's memory-order enum (atomics._impl.enums.MemoryOrder); C11 values.
RELAXED, ACQUIRE, RELEASE, ACQ_REL, SEQ_CST = 0, 2, 3, 4, 5
#: order -> its C11 name.
ORDER_NAMES = {RELAXED: "relaxed", ACQUIRE: "acquire", RELEASE: "release",
               ACQ_REL: "acq_rel", SEQ_CST: "seq_cst"}
_VALID = {
    "load": (RELAXED, ACQUIRE, SEQ_CST),
    "store": (RELAXED, RELEASE, SEQ_CST),
    "rmw": (RELAXED, ACQUIRE, RELEASE, ACQ_REL, SEQ_CST),
    "failure": (RELAXED, ACQUIRE, SEQ_CST),
    "fence": (ACQUIRE, RELEASE, ACQ_REL, SEQ_CST),
}


def check_order(kind: str, order: int) -> int:
    """``order`` if C11 allows it for ``kind`` ("load", "store", "rmw", "failure", the
    failure order of a compare-exchange, or "fence": a relaxed fence does nothing, so it is
    refused as a mistake, as Rust's ``fence`` does); otherwise a ValueError that names both. The
    fast path does not check (patomic's behaviour on an invalid order is undefined): the
    model path does, so a check run catches a wrong order before it ships."""
    if order not in _VALID[kind]:
        allowed = ", ".join(ORDER_NAMES[o] for o in _VALID[kind])
        raise ValueError(f"memory order {ORDER_NAMES.get(order, order)!r} is not valid for "
                         f"an atomic {kind} (allowed: {allowed})")
    return order


class WordAccessor(Protocol):
    """Per-thread access to the words of one :class:`AtomicWords` (module docstring: the
    orders, and the raw ops each accessor also has)."""

    path: str

    def load(self, i: int, order: int = ACQUIRE) -> int: ...
    def store(self, i: int, value: int, order: int = RELEASE) -> None: ...
    def exchange(self, i: int, value: int, order: int = ACQ_REL) -> int: ...
    def compare_exchange(self, i: int, expected: int, desired: int, order: int = ACQ_REL,
                         failure: int = ACQUIRE) -> int: ...
    def fetch_add(self, i: int, delta: int, order: int = ACQ_REL) -> int: ...
    def fence(self, order: int = SEQ_CST) -> None: ...
    def scratch_view(self) -> memoryview: ...


#: The model path's hooks, installed by :mod:`seer.check` when it is imported (``[]``
#: before): ``covers()`` (is the calling thread in a model session?), ``accessor(words)``,
#: ``plain(words)``, ``data_view(name, view)``, ``data_slots(name, table)``, ``lock()``.
#: A hook, not an import: the queues do not depend on the checker. A session covers the
#: threads that opened it (and the explorer's workers), so other threads of the process
#: keep their own paths.
model_hooks: list = []


def _model():
    """The model session covering the calling thread, or None."""
    if model_hooks and model_hooks[0].covers():
        return model_hooks[0]
    return None


class AtomicWords:
    """``n`` int64 words in one 8-byte-aligned buffer.

    ``buffer`` may be any writable buffer (for example ``SharedMemory.buf``) of at least
    ``offset + 8 * n`` bytes; by default a zero-filled numpy buffer is allocated.
    ``array`` is a numpy view of the words, for initialisation before threads start and for
    inspection after they stop; concurrent code must use an accessor.
    """

    def __init__(self, n: int, *, buffer: object | None = None, offset: int = 0,
                 name: str = "words") -> None:
        if n < 1:
            raise ValueError(f"AtomicWords needs at least one word, got n={n}")
        self.name = name  # how the model path's reports name word i: f"{name}[{i}]"
        if buffer is None:
            self.array = np.zeros(n, np.int64)
        else:
            self.array = np.ndarray((n,), np.int64, buffer=buffer, offset=offset)
        self.n = n
        self.address = self.array.ctypes.data
        if self.address % 8:
            raise ValueError(f"AtomicWords buffer at offset {offset} is not 8-byte aligned")

    @classmethod
    def shared(cls, n: int, name: str | None = None) -> tuple[AtomicWords,
                                                              shared_memory.SharedMemory]:
        """Words in a new (``name=None``) or existing ``multiprocessing.shared_memory``
        block. The caller owns the returned block: close it (and unlink it, if created)."""
        if name is None:
            shm = create_shared_memory(8 * n)
            np.ndarray((n,), np.int64, buffer=shm.buf)[:] = 0
        else:
            # Untracked: an attaching process must not unlink the block when it exits.
            shm = attach_shared_memory(name)
        return cls(n, buffer=shm.buf), shm

    def accessor(self, path: str | None = None) -> WordAccessor:
        """A new accessor for the calling thread; ``path`` is "fast", "public" or "model",
        default :func:`selected_path`."""
        path = path or selected_path()
        if path == "model":
            return _model_hook().accessor(self)
        if path == "fast":
            if not fast_path_available():
                raise RuntimeError("the atomics fast path is not available here: "
                                   f"{_fast_status[1]}")
            return FastAccessor(self)
        if path == "public":
            return PublicAccessor(self)
        raise ValueError(f"unknown atomics path {path!r}; use 'fast', 'public' or 'model'")

    def plain(self) -> memoryview:
        """A plain int64 view of the words, for reads whose staleness the caller's
        algorithm tolerates (a first guess that a CAS then checks) or that a barrier makes
        exact. Under a model session, a view whose reads and writes are relaxed atomic
        operations the explorer schedules."""
        if (model := _model()) is not None:
            return model.plain(self)
        return memoryview(self.array).cast("B").cast("q")

    def release(self) -> None:
        """Drop this object's views of the buffer (needed before ``SharedMemory.close``)."""
        self.array = None  # type: ignore[assignment]


def data_view(name: str, buffer: object, offset: int, n: int) -> memoryview:
    """``n`` int64 words of plain (non-atomic) shared data at byte ``offset`` of
    ``buffer``, as a memoryview. Under a model session, a view that records every access
    for the explorer's data-race check instead (named ``name`` in its reports)."""
    view = memoryview(buffer).cast("B")[offset: offset + 8 * n].cast("q")
    if (model := _model()) is not None:
        return model.data_view(name, view)
    return view


def data_slots(name: str, table: list[list]) -> list[list]:
    """A two-level table of Python object slots (``table[chunk][slot]``: the arena's side
    table) as a plain-data view, the same way as :func:`data_view`: ``table`` itself, or
    under a model session a view whose slot accesses the explorer records."""
    if (model := _model()) is not None:
        return model.data_slots(name, table)
    return table


def shared_lock() -> threading.Lock:
    """A ``threading.Lock`` for state the structures guard by a lock (the arena's pool);
    under a model session, a lock the explorer schedules and whose hand-off it counts as
    synchronisation (so that records passed through the pool are not reported as races)."""
    if (model := _model()) is not None:
        return model.lock()
    return threading.Lock()


def _model_hook():
    if _model() is None:
        raise RuntimeError("the 'model' atomics path needs a model session: run the code "
                           "under seer.check.explore() or seer.check.model_atomics()")
    return model_hooks[0]


class FastAccessor:
    """Direct calls of patomic's 8-byte explicit ops (see the module docstring).

    The function pointers come from the op table that ``atomics`` loads with ctypes; they are
    called through cffi, whose calls cost about half of a ctypes call. Their pointer
    arguments are declared ``int64_t *`` and passed as cffi pointers (``words + i``,
    ``arg``): converting a pointer object is cheaper than converting an address held in a
    Python int (a multi-digit int), about 0.15 µs of a 0.6 µs call. Values travel through
    ``scratch``, a per-accessor ``int64_t[4]``: ``[0]`` argument/expected (``arg``), ``[1]``
    desired (``desired``), ``[2]`` result (``result``).

    Structures on the hot path may call ``fn_*`` with ``words + i`` and these pointers
    themselves, inline, to save a method call; they must keep to the same conventions.
    """

    __slots__ = ("_words", "arg", "desired", "fn_cas", "fn_exchange", "fn_fetch_add",
                 "fn_load", "fn_store", "path", "result", "scratch", "scratch_buffer",
                 "words")

    def __init__(self, words: AtomicWords) -> None:
        ffi, table = _fast_table()
        self.path = "fast"
        self._words = words  # keeps the buffer alive
        # This accessor's own function objects and pointers, made on the thread that makes
        # it: one cffi object used by two threads would have its reference count contended
        # on every load (docs/performance.md).
        self.fn_load, self.fn_store, self.fn_exchange, self.fn_cas, self.fn_fetch_add = (
            ffi.cast(signature, address) for signature, address in table)
        self.words = ffi.cast("int64_t *", words.address)  # word i is words + i
        self.scratch = ffi.new("int64_t[4]")
        self.arg, self.desired, self.result = self.scratch + 0, self.scratch + 1, \
            self.scratch + 2
        self.scratch_buffer = ffi.buffer(self.scratch)  # the same 32 bytes, as a buffer

    def load(self, i: int, order: int = ACQUIRE) -> int:
        self.fn_load(self.words + i, order, self.result)
        return self.scratch[2]

    def store(self, i: int, value: int, order: int = RELEASE) -> None:
        self.scratch[0] = value
        self.fn_store(self.words + i, self.arg, order)

    def exchange(self, i: int, value: int, order: int = ACQ_REL) -> int:
        s = self.scratch
        s[0] = value
        self.fn_exchange(self.words + i, self.arg, order, self.result)
        return s[2]

    def compare_exchange(self, i: int, expected: int, desired: int, order: int = ACQ_REL,
                         failure: int = ACQUIRE) -> int:
        s = self.scratch
        s[0] = expected
        s[1] = desired
        if self.fn_cas(self.words + i, self.arg, self.desired, order, failure):
            return expected
        return s[0]  # patomic wrote the observed value into `expected`

    def fetch_add(self, i: int, delta: int, order: int = ACQ_REL) -> int:
        s = self.scratch
        s[0] = delta
        self.fn_fetch_add(self.words + i, self.arg, order, self.result)
        return s[2]

    def fence(self, order: int = SEQ_CST) -> None:
        """``atomic_thread_fence(order)``. patomic has no fence, so every order does a
        seq_cst ``fetch_add(0)`` on this accessor's private scratch word ``[3]`` (no other
        thread touches it: no contention). That is at least as strong as the fence on the
        hardware the project runs on: on x86-64 it is a ``lock xadd``, and a locked
        instruction orders every earlier load and store before every later one (Intel SDM
        vol. 3, 8.2.2: what ``mfence`` gives for ordinary memory); on AArch64 with LSE it is
        ``ldaddal``, which Linux's fully ordered atomics rely on as a full barrier. It is
        not one in the C11 model itself (an RMW on a private word orders nothing there),
        which is why checks use :meth:`fence` and the model path simulates RC11's fences.
        """
        check_order("fence", order)
        word = self.scratch + 3
        self.fn_fetch_add(word, word, SEQ_CST, word)  # 0 + 0: the word stays 0

    def scratch_view(self) -> memoryview:
        """The scratch values as an int64 memoryview (cheaper to store through than
        cffi's indexing)."""
        return memoryview(self.scratch_buffer).cast("B").cast("q")


_table_lock = threading.Lock()
_table: list = []


def _fast_table() -> tuple:
    """``(ffi, (load, store, exchange, cmpxchg_strong, fetch_add))`` as ``(cffi signature,
    address)`` pairs, read once per process from ``atomics``' own op table; each accessor
    casts its own function objects from them."""
    with _table_lock:
        if not _table:
            import cffi
            from atomics._impl.patomic import Patomic

            ops = Patomic.ops(8)
            ffi = cffi.FFI()

            def fn(pointer: object, signature: str) -> tuple[str, int]:
                address = ctypes.cast(pointer, ctypes.c_void_p).value
                if not address:
                    raise RuntimeError(f"patomic provides no {signature} for 8-byte words")
                return signature, address

            _table.append((ffi, (
                fn(ops.fp_load, "void(*)(int64_t *, int, int64_t *)"),
                fn(ops.fp_store, "void(*)(int64_t *, int64_t *, int)"),
                fn(ops.xchg_ops.fp_exchange, "void(*)(int64_t *, int64_t *, int, int64_t *)"),
                fn(ops.xchg_ops.fp_cmpxchg_strong,
                   "int(*)(int64_t *, int64_t *, int64_t *, int, int)"),
                fn(ops.signed_ops.fp_fetch_add,
                   "void(*)(int64_t *, int64_t *, int, int64_t *)"),
            )))
        return _table[0]


class PythonRawOps:
    """The raw ops (module docstring) of an accessor whose operations are Python methods
    (the public and model paths): ``p`` is the word index (``words`` is 0) and ``arg``,
    ``desired`` and ``result`` index the scratch view. A subclass provides the five
    methods and calls :meth:`_init_scratch`."""

    __slots__ = ()
    words, arg, desired, result = 0, 0, 1, 2

    def _init_scratch(self) -> None:
        self._scratch = memoryview(bytearray(32)).cast("q")

    def scratch_view(self) -> memoryview:
        return self._scratch

    def fn_load(self, i: int, order: int, result: int) -> None:
        self._scratch[result] = self.load(i, order)

    def fn_store(self, i: int, arg: int, order: int) -> None:
        self.store(i, self._scratch[arg], order)

    def fn_exchange(self, i: int, arg: int, order: int, result: int) -> None:
        s = self._scratch
        s[result] = self.exchange(i, s[arg], order)

    def fn_cas(self, i: int, arg: int, desired: int, order: int, failure: int) -> bool:
        s = self._scratch
        expected = s[arg]
        observed = self.compare_exchange(i, expected, s[desired], order, failure)
        if observed == expected:
            return True
        s[arg] = observed
        return False

    def fn_fetch_add(self, i: int, arg: int, order: int, result: int) -> None:
        s = self._scratch
        s[result] = self.fetch_add(i, s[arg], order)


class PublicAccessor(PythonRawOps):
    """The documented ``atomics.atomicview`` API, one view per word (cached). Every
    operation is seq_cst, whatever order it is given."""

    __slots__ = ("__weakref__", "_close", "_contexts", "_mv", "_scratch", "_views", "_words",
                 "path")

    def __init__(self, words: AtomicWords) -> None:
        self.path = "public"
        self._words = words
        self._init_scratch()
        self._mv = memoryview(words.array).cast("B")
        self._views: dict[int, object] = {}
        self._contexts: list[object] = []
        # A finaliser, not __del__: the garbage collector runs weakref callbacks before any
        # __del__, so the views are closed before atomics' own contexts are collected
        # (which refuse to be collected while open).
        self._close = weakref.finalize(self, _close_views, self._contexts, self._views,
                                       self._mv)

    def _view(self, i: int):
        view = self._views.get(i)
        if view is None:
            import atomics

            if not 0 <= i < self._words.n:
                raise IndexError(f"atomic word {i} out of range({self._words.n})")
            ctx = atomics.atomicview(buffer=self._mv[8 * i: 8 * i + 8], atype=atomics.INT)
            view = ctx.__enter__()
            self._contexts.append(ctx)
            self._views[i] = view
        return view

    def load(self, i: int, order: int = ACQUIRE) -> int:
        return self._view(i).load()

    def store(self, i: int, value: int, order: int = RELEASE) -> None:
        self._view(i).store(value)

    def exchange(self, i: int, value: int, order: int = ACQ_REL) -> int:
        return self._view(i).exchange(value)

    def compare_exchange(self, i: int, expected: int, desired: int, order: int = ACQ_REL,
                         failure: int = ACQUIRE) -> int:
        result = self._view(i).cmpxchg_strong(expected, desired)
        return expected if result.success else result.expected

    def fetch_add(self, i: int, delta: int, order: int = ACQ_REL) -> int:
        return self._view(i).fetch_add(delta)

    def fence(self, order: int = SEQ_CST) -> None:
        """``atomic_thread_fence(order)``: a seq_cst ``fetch_add(0)`` on a private word
        (as :meth:`FastAccessor.fence`; every operation of this path is seq_cst anyway)."""
        check_order("fence", order)
        view = self._views.get(-1)
        if view is None:
            import atomics

            ctx = atomics.atomicview(buffer=memoryview(bytearray(8)), atype=atomics.INT)
            view = self._views[-1] = ctx.__enter__()
            self._contexts.append(ctx)
        view.fetch_add(0)

    def close(self) -> None:
        """Release the cached views (and with them the buffer exports). Idempotent."""
        self._close()


def _close_views(contexts: list, views: dict, mv: memoryview) -> None:
    for ctx in contexts:
        with contextlib.suppress(Exception):
            ctx.__exit__(None, None, None)
    contexts.clear()
    views.clear()
    mv.release()


# -- fast path self-test --------------------------------------------------------------------
_fast_status: list = [None, ""]  # [available: bool | None, reason]
_status_lock = threading.Lock()


def _self_test() -> tuple[bool, str]:
    try:
        words = AtomicWords(4)
        fast = FastAccessor(words)
        fast.store(0, 41)
        checks = [
            fast.load(0) == 41,
            fast.fetch_add(0, 1) == 41,
            fast.exchange(0, -7) == 42,
            fast.compare_exchange(0, 5, 9) == -7,  # fails, reports what it saw
            fast.compare_exchange(0, -7, 2**62) == -7,
            fast.load(0) == 2**62,
            fast.fetch_add(1, -3) == 0,
            int(words.array[1]) == -3,
            int(words.array[2]) == 0,  # neighbouring words untouched
        ]
        public = PublicAccessor(words)
        checks.append(public.load(0) == 2**62 and public.fetch_add(1, 3) == -3)
        public.close()
        if not all(checks):
            return False, f"patomic op-table results disagree with expectations: {checks}"
        return True, "ok"
    except Exception as exc:  # any failure means: do not trust the fast path
        return False, f"{type(exc).__name__}: {exc}"


def fast_path_available() -> bool:
    """True when the op-table fast path passed its self-test in this process."""
    with _status_lock:
        if _fast_status[0] is None:
            ok, reason = _self_test()
            _fast_status[0], _fast_status[1] = ok, reason
            if not ok:
                warnings.warn(f"seer.queues: the atomics fast path failed its self-test "
                              f"({reason}); using the public atomics API (4-8x slower)",
                              RuntimeWarning, stacklevel=2)
        return bool(_fast_status[0])


def selected_path() -> str:
    """The default path: "model" in a model session (the calling thread's); else
    ``SEER_ATOMICS`` ("fast", "public" or "model") if set, else "fast" when available, else
    "public"."""
    if _model() is not None:
        return "model"
    forced = os.environ.get("SEER_ATOMICS", "").strip().lower()
    if forced in ("public", "model"):
        return forced
    if forced not in ("", "fast"):
        raise ValueError(f"SEER_ATOMICS={forced!r}: use 'fast', 'public' or 'model'")
    return "fast" if fast_path_available() else "public"


# Self-test at import, in the importing thread: it also makes atomics load its library here
# (its lazy ctypes set-up is not safe to race from several threads).
fast_path_available()
