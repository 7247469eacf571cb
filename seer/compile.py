"""How a Model is compiled: what :func:`seer.model.compile_model` makes of a model (its
:class:`ModelSpec` and :class:`FieldSpec` tables), the state arrays a runtime allocates
from them (:func:`allocate_state`, :class:`StateArrays`, :func:`read_only`), the row class
a context's ``ctx.row`` is made from (:func:`make_row_class`, :func:`make_row`), and the
values a context holds while ``init_entity`` runs (:data:`INIT_PARENT_SEQ`,
:data:`NO_SNAPSHOT`).

The contract an author writes against is :mod:`seer.model`, which imports this module (and
re-exports its names); this module imports nothing of it, so the two cannot import each
other in a cycle.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from seer.errors import ModelError
from seer.events import DEPTH_SHIFT, Event

__all__ = ["INIT_PARENT_SEQ", "NO_SNAPSHOT", "FieldSpec", "ModelSpec", "RowBase",
           "SnapshotUnavailable", "StateArrays", "allocate_state", "make_row",
           "make_row_class", "read_only"]

#: ``ctx._seq`` while ``init_entity`` runs: a virtual parent of depth -1, so that zero-delay
#: initial events get depth 0.
INIT_PARENT_SEQ = -(1 << DEPTH_SHIFT)


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One state field: ``shape`` is the per-entity row shape."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A validated model, compiled into the lookup tables the runtimes' hot paths use."""

    #: The :class:`seer.model.Model` compiled (typed Any: seer.model imports this module).
    model: Any
    name: str
    n_entities: int
    kinds: tuple[str, ...]
    kind_ids: dict[Any, int]  # kind name or id -> id
    #: The bound ``on_<kind>(ctx, event)`` methods, by kind id (ctx: a seer.model.Context).
    handlers: tuple[Callable[[Any, Event], None], ...]
    fields: tuple[FieldSpec, ...]
    lookahead: float
    step_length: float
    agents: tuple[int, ...]
    #: ``outputs`` takes a fourth argument (a :class:`seer.model.StepInfo`).
    outputs_take_info: bool = False
    #: The model overrides ``step_outputs`` / ``init_episode``.
    has_step_outputs: bool = False
    has_init_episode: bool = False


#: The most bytes numpy can index in one array.
_MAX_ARRAY_BYTES = int(np.iinfo(np.intp).max)


def allocate_state(spec: ModelSpec, copies: int = 1) -> list[dict[str, np.ndarray]]:
    """``copies`` sets of the model's state arrays, zero-filled: per field, an array of shape
    ``(n_entities, *field.shape)`` (a runtime keeps two: the live state and the step-start
    snapshot).

    A field too big raises :class:`ModelError` naming the model, the field, the array's
    full shape, dtype and size, never numpy's bare ``MemoryError``: before anything is
    allocated when the arrays cannot exist (numpy cannot index them) or would not fit in
    this machine's memory, else when numpy's allocation fails."""
    n = spec.n_entities
    sizes = {f.name: n * math.prod(f.shape) * f.dtype.itemsize for f in spec.fields}
    total = copies * sum(sizes.values())
    memory = _physical_memory()
    biggest = max(spec.fields, key=lambda f: sizes[f.name])
    if max(sizes.values()) > _MAX_ARRAY_BYTES:
        raise _field_too_big(spec, biggest, sizes[biggest.name],
                             "more than numpy can index in one array")
    if memory is not None and total > memory:
        what = {1: "the state", 2: "the state and its step-start snapshot"}.get(
            copies, f"{copies} copies of the state")
        raise _field_too_big(spec, biggest, sizes[biggest.name],
                             f"with every field, {what} would take {_size(total)}, more "
                             f"than this machine's {_size(memory)} of memory")
    out = []
    for _ in range(copies):
        arrays = {}
        for f in spec.fields:
            try:
                arrays[f.name] = np.zeros((n, *f.shape), f.dtype)
            except (MemoryError, ValueError) as exc:
                raise _field_too_big(spec, f, sizes[f.name],
                                     f"numpy could not allocate it ({type(exc).__name__}: "
                                     f"{exc})") from None
        out.append(arrays)
    return out


def _field_too_big(spec: ModelSpec, field: FieldSpec, nbytes: int, why: str) -> ModelError:
    shape = (spec.n_entities, *field.shape)
    return ModelError(
        f"state field {field.name!r} of model {spec.name!r} is too big to allocate: an array "
        f"of shape {shape} ({spec.n_entities} entities x row shape {field.shape}) of "
        f"{field.dtype} is {_size(nbytes)} ({nbytes} bytes); {why}. A field's shape is the "
        "shape of one entity's row: make it smaller, or use fewer entities")


def _physical_memory() -> int | None:
    """This machine's physical memory in bytes (None where the OS does not say)."""
    try:
        pages, page = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * page if pages > 0 and page > 0 else None


def _size(nbytes: int) -> str:
    """``nbytes`` for a person: ``32.0 TiB``."""
    if nbytes < 1024:
        return f"{nbytes} bytes"
    size = float(nbytes)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        size /= 1024
        if size < 1024:
            return f"{size:.1f} {unit}"
    return f"{size / 1024:.1f} PiB"


class StateArrays:
    """Named full-state arrays (one row per entity), by attribute or by ``[name]``.

    The runtime hands out read-only instances: ``ctx.snapshot`` (state at the step start)
    and ``runtime.state`` (live state, read-only outside handlers).

    The arrays are plain instance attributes, so ``state.busy`` is one specialised
    attribute load. A ``__getattr__`` hook (a friendlier message for a missing field)
    would make every load a call through the hook, about 10x slower, and on free-threaded
    CPython the hook's lookup counts references to one shared function object, which
    costs another 3x when two threads read state at once (``docs/performance.md``). A
    missing field gets Python's own message, which names it and suggests the nearest
    field. ``names`` lists the fields (a field named ``names`` is read as ``state["names"]``).
    """

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        object.__setattr__(self, "_arrays", dict(arrays))
        object.__setattr__(self, "_names", tuple(arrays))
        for name, array in arrays.items():
            object.__setattr__(self, name, array)

    @property
    def names(self) -> tuple[str, ...]:
        """The field names, in declaration order."""
        return self._names

    def __getitem__(self, name: str) -> np.ndarray:
        return self._arrays[name]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("state arrays cannot be rebound; write through ctx.row instead")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("state arrays cannot be removed")

    def __repr__(self) -> str:
        return f"StateArrays({', '.join(self.names)})"


def read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (the array itself stays writable)."""
    view = array.view()
    view.flags.writeable = False
    return view


class RowBase:
    """Base of the per-model row class: the fields of one entity, read and written by name.

    Reading a scalar field (row shape ``()``) gives its *value* (a numpy scalar), so
    ``old = row.hits; row.hits = 0`` keeps ``old``. Reading an array field gives a writable
    view of the entity's row (``row.pos[0] += 1`` writes through; copy it to keep a value).
    Assigning writes into the entity's state: ``row.hits += 1``, ``row.pos = new_pos``.
    Assigning a name that is not a field raises AttributeError.
    """

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return "Row(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields) + ")"


# The accessors are generated, as namedtuple does, so that each is one attribute load and
# one index: a read of a scalar field costs about as much as a slot load.
_ACCESSORS = """
def scalar_get(self):
    return self.{slot}[0]
def scalar_set(self, value):
    self.{slot}[0] = value
def array_get(self):
    return self.{slot}
def array_set(self, value):
    self.{slot}[...] = value
"""


def _field_property(field: FieldSpec) -> property:
    namespace: dict[str, Any] = {"__name__": __name__}  # the accessors are this module's
    exec(_ACCESSORS.format(slot="_f_" + field.name), namespace)
    if field.shape == ():
        return property(namespace["scalar_get"], namespace["scalar_set"],
                        doc=f"scalar field {field.name!r} ({field.dtype})")
    return property(namespace["array_get"], namespace["array_set"],
                    doc=f"field {field.name!r}: a {field.shape} {field.dtype} view")


def make_row_class(fields: Sequence[FieldSpec]) -> type[RowBase]:
    """A row class for these fields: slots ``_f_<name>`` hold the entity's views (a
    one-element view for scalar fields), properties ``<name>`` read and write them."""
    namespace: dict[str, Any] = {"__slots__": tuple("_f_" + f.name for f in fields),
                                 "_fields": tuple(f.name for f in fields)}
    for f in fields:
        namespace[f.name] = _field_property(f)
    return type("Row", (RowBase,), namespace)


def make_row(row_class: type[RowBase], arrays: Mapping[str, np.ndarray], entity: int) -> RowBase:
    row = row_class.__new__(row_class)
    for name in row_class._fields:
        array = arrays[name]
        view = array[entity:entity + 1] if array.ndim == 1 else array[entity, ...]
        object.__setattr__(row, "_f_" + name, view)
    return row


class SnapshotUnavailable:
    """What ``ctx.snapshot`` is during ``init_entity``: any use says why it is missing."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        raise ModelError("ctx.snapshot is not available in init_entity: the boundary snapshot "
                         "is taken once every entity is initialised. Use ctx.episode (see "
                         "Model.init_episode) for shared initial data, or emit an event at "
                         "t >= 0 that reads the snapshot")

    __getitem__ = __getattr__

    def __repr__(self) -> str:
        return "<no snapshot during init_entity>"


NO_SNAPSHOT = SnapshotUnavailable()
