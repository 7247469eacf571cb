"""Which Python objects the workers of a window share: an audit of SEER's runtime.

Free-threaded CPython gives every object an owning thread (``ob_tid`` in its header, the
thread that made it): that thread counts references to it with a plain add, every other
thread with an atomic add on a second field, and two threads loading the object in a hot
loop keep moving that field's cache line between their cores. :func:`sharing_audit`
steps a model on SEER's runtime with a trace, sees which entities each pool thread ran,
and lists what each thread reaches on the way to a handler and inside it — the handler
table and the object its handlers are bound to (the model, and its attribute values and
their elements), each run entity's context, row, generator, snapshot views and the
values ``emit`` reads — with each object's owner. An object is *shared* when a thread
reaches it that does not own it (*contended* when several threads reach it; an object
whose owner let go of it is *merged*, owned by no thread, and counted atomically by all);
immortal objects (``None``, small ints, interned strings)
count no references, and objects with deferred reference counting (functions, classes,
modules: the interpreter loads them without counting), are left out.

"Reaches" is a census of what the hot loop and a handler can load, not a record of every
load: a handler that reads one attribute of the model reaches only that one, and one that
walks a structure deeper than an attribute's elements reaches more than is listed. The
per-worker copies (:mod:`seer.sched.copies`) are what make the list short: with
``copies="all"`` what remains is what the copies leave shared on purpose (the step's
``prepare_step`` result and the episode, one object for all entities).

It reads object headers with :mod:`ctypes`, whose layout it checks first (CPython 3.13t
and 3.14t: ``ob_tid`` at offset 0, ``ob_gc_bits`` at 11, ``ob_ref_local`` at 12,
``ob_type`` at 24); on a build
with the GIL it refuses, since nothing there is counted per thread.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from seer.model import Model, sample_actions_of

__all__ = ["SharingReport", "SharingRow", "owner_of", "sharing_audit", "uncounted"]

_IMMORTAL_LOCAL = 0xFFFFFFFF  # ob_ref_local of an immortal object
_GC_BITS_DEFERRED = 1 << 6  # ob_gc_bits: deferred reference counting
#: Elements listed per container attribute of the model (enough to see a pattern).
_ELEMENTS = 64


def _header_ok() -> bool:
    """Whether object headers have the free-threaded layout this module reads: a
    free-threaded build (``Py_GIL_DISABLED``), whose ``ob_type`` sits at offset 24."""
    import sysconfig

    if not sysconfig.get_config_var("Py_GIL_DISABLED"):
        return False
    probe = [1.5]
    return ctypes.c_void_p.from_address(id(probe) + 24).value == id(list)


_FREE_THREADED_HEADER = _header_ok()


def _check_header() -> None:
    if not _FREE_THREADED_HEADER:
        raise RuntimeError("seer.sched.sharing reads free-threaded CPython's object headers "
                           "(the owning thread of each object): run it on a free-threaded "
                           "build (python3.13t / python3.14t); this interpreter has the GIL "
                           "build's headers, where no reference is counted per thread")


def owner_of(obj: Any) -> int:
    """The owning thread's id (``ob_tid``) of ``obj``: 0 when no thread owns it, which is
    so for immortal objects and for *merged* ones, whose owner let go of its last local
    reference while others held some (every thread then counts references atomically)."""
    _check_header()
    return ctypes.c_uint64.from_address(id(obj)).value


def uncounted(obj: Any) -> bool:
    """Whether loading ``obj`` counts no reference: it is immortal, or its references are
    deferred (functions, classes, modules)."""
    _check_header()
    address = id(obj)
    return (ctypes.c_uint32.from_address(address + 12).value == _IMMORTAL_LOCAL
            or bool(ctypes.c_uint8.from_address(address + 11).value & _GC_BITS_DEFERRED))


@dataclass
class SharingRow:
    """Objects reached at one place (``path``; ``[*]`` for any index or entity) that some
    thread reaches without owning them: how many, of which types, which pool threads
    reach them, and which threads own them (``"main"`` is the caller's thread,
    ``"thread i"`` pool thread ``i``, ``"nobody (merged)"`` no thread, ``"other"`` a thread
    no longer in the pool)."""

    path: str
    types: list[str]
    objects: int
    reached_by: list[int]
    owners: list[str]
    #: of ``objects``, those that more than one thread reaches (the others are reached by
    #: one thread that does not own them: counted atomically, but not contended)
    contended: int = 0

    def line(self) -> str:
        return (f"{self.path:<34} {self.objects:>7} {self.contended:>9}  "
                f"{'/'.join(self.types):<14} reached by "
                f"{','.join(map(str, self.reached_by)):<6} owned by {', '.join(self.owners)}")


@dataclass
class SharingReport:
    """What :func:`sharing_audit` found: the rows (shared places), and the objects it
    looked at and how many of them were shared."""

    model: str
    threads: int
    copies: str
    rows: list[SharingRow] = field(default_factory=list)
    objects: int = 0
    shared: int = 0
    contended: int = 0

    def paths(self, contended: bool = False) -> set[str]:
        """The shared places (``contended``: only those that several threads reach)."""
        return {row.path for row in self.rows if row.contended or not contended}

    def lines(self) -> list[str]:
        head = (f"objects the {self.threads} threads of seer({self.threads}) reach on "
                f"{self.model} (copies: {self.copies}): {self.objects}, shared: "
                f"{self.shared}, contended: {self.contended}")
        if not self.rows:
            return [head, "  nothing shared"]
        return [head, f"{'place':<34} {'objects':>7} {'contended':>9}  {'types':<14} threads",
                *(row.line() for row in self.rows)]

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _attribute_values(obj: Any, path: str) -> Iterator[tuple[str, Any]]:
    """``obj``'s attribute values and, for containers, their first elements."""
    for name, value in getattr(obj, "__dict__", {}).items():
        where = f"{path}.{name}"
        yield where, value
        if isinstance(value, (list, tuple)):
            for item in value[:_ELEMENTS]:
                yield f"{where}[*]", item
        elif isinstance(value, dict):
            for i, (key, item) in enumerate(value.items()):
                if i >= _ELEMENTS:
                    break
                yield f"{where}[*]", item
                yield f"{where}<key>", key


def _reached(runtime: Any, index: int, entities: Iterable[int]) -> Iterator[tuple[str, Any]]:
    """What pool thread ``index`` of SEER's runtime ``runtime`` reaches when it runs
    ``entities``: see the module docstring."""
    w = runtime._workers[index]
    yield "handlers", w.handlers
    for h in w.handlers:
        yield "handlers[*]", h
        yield "handlers[*].__func__", getattr(h, "__func__", h)
    yield "model", w.model
    yield from _attribute_values(w.model, "model")
    yield "worker.state", w.state
    yield "worker.snapshot", w.snapshot
    for name, view in getattr(w.snapshot, "_arrays", {}).items():
        yield f"worker.snapshot[{name}]", view
    contexts = runtime._contexts
    for e in entities:
        ctx = contexts[e]
        yield "contexts[*]", ctx
        yield "contexts[*].row", ctx.row
        yield "contexts[*].rng", ctx.rng
        yield "contexts[*]._kind_ids", ctx._kind_ids
        yield "contexts[*]._lookahead", ctx._lookahead
        yield "contexts[*]._n", ctx._n
        yield "contexts[*].id", ctx.id
        yield "contexts[*].prepared", ctx.prepared
        yield "contexts[*].episode", ctx.episode


def _thread_ids(runtime: Any) -> list[int]:
    """The ``ob_tid`` of each pool thread (0: the caller), from an object each makes."""
    ids = [0] * runtime.threads

    def probe(index: int) -> None:
        ids[index] = owner_of(object())

    runtime.pool.run_setup(probe)
    return ids


def sharing_audit(model: Model, *, threads: int = 2, steps: int = 2, seed: int = 0,
                  copies: str | Iterable[str] | None = None,
                  **options: Any) -> SharingReport:
    """Step ``model`` ``steps`` times on ``SeerRuntime(model, threads=threads,
    copies=copies, trace=True, **options)`` and list what its threads share (see the module
    docstring). The model's ``sample_actions(step)`` gives the actions, if it has one."""
    _check_header()
    from seer.sched.dual_queue import SeerRuntime

    actions = sample_actions_of(model)
    with SeerRuntime(model, threads=threads, copies=copies, trace=True, **options) as rt:
        rt.reset(seed)
        rt.trace.clear()
        for step in range(steps):
            rt.step(actions(step))
        ran: list[set[int]] = [set() for _ in range(rt.threads)]
        for run in rt.trace.runs():
            ran[run["thread"]].add(run["entity"])
        tids = _thread_ids(rt)
        names = {tid: ("main" if index == 0 else f"thread {index}")
                 for index, tid in enumerate(tids)}
        names[0] = "nobody (merged)"
        seen: dict[int, tuple[str, Any, set[int]]] = {}
        for index in range(rt.threads):
            for path, obj in _reached(rt, index, sorted(ran[index])):
                if uncounted(obj):
                    continue  # immortal or deferred: no reference counting on a load
                entry = seen.setdefault(id(obj), (path, obj, set()))
                entry[2].add(index)
        rows: dict[str, SharingRow] = {}
        shared = 0
        for path, obj, reached in seen.values():
            owner = owner_of(obj)
            if owner in tids and reached == {tids.index(owner)}:
                continue  # only its owner reaches it
            shared += 1
            row = rows.setdefault(path, SharingRow(path, [], 0, [], []))
            row.objects += 1
            row.contended += len(reached) > 1
            kind = type(obj).__name__ if not isinstance(obj, np.ndarray) else "ndarray"
            if kind not in row.types:
                row.types.append(kind)
            row.reached_by = sorted(set(row.reached_by) | reached)
            who = names.get(owner, "other")
            if who not in row.owners:
                row.owners.append(who)
        report = SharingReport(rt.spec.name, rt.threads,
                               ",".join(sorted(rt.copies)) or "none",
                               sorted(rows.values(), key=lambda r: r.path), len(seen),
                               shared, sum(r.contended for r in rows.values()))
    return report
