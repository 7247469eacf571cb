"""Work assignment: how the ready entities of a window reach the threads.

The windowed dual-queue runtime (:mod:`seer.sched.dual_queue`) does everything else the
same way for every assignment — windows, LEQs, the PEL, the pool, the calendar, outputs —
so an assignment is only two decisions (``docs/design.md``, "Assignment strategies"):

* :meth:`Assignment.publish`: put the window's ready entities into the PEL, grouped into
  one *home segment* per thread;
* :meth:`Assignment.claimer`: the per-thread claim handle that hands out ``(start, stop)``
  ranges of PEL items to run (``reset(segments)`` at the start of each window, ``claim()``
  until it returns None, and ``claims``/``steals`` counters, which the runtime adds to
  ``WorkerStats`` after every window and sets back to 0; optionally a ``misses`` counter
  of claim attempts that came back empty, handled the same way: the claimers' contention).

Three strategies ship:

==============  ============================================================================
``steal``       SEER: home ``e % T``; a thread claims guided chunks of its own segment with
                one ``fetch_add`` each, then steals chunks from the other segments
``round-robin`` the ``static`` peer (ROSS-T-like): home ``e % T``, own segment only
``block``       the ``static-block`` peer: ROSS's linear mapping, contiguous id blocks
                (home ``e * T // n``), own segment only
==============  ============================================================================

Invariant every strategy must keep: each PEL item of a window is handed to exactly one
thread (an entity claimed twice in one window would run on two threads at once).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Protocol

import numpy as np

from seer.errors import ModelError
from seer.queues.pel import OwnSegmentClaimer, ParallelExecutiveList

__all__ = ["ASSIGNMENTS", "Assignment", "Block", "Claimer", "RoundRobin", "Steal",
           "get_assignment", "register_assignment"]


class Claimer(Protocol):
    """A thread's claim handle on the PEL (see the module docstring). ``claims``: chunks
    handed out; ``steals``: those from another thread's home segment. A claimer may also
    have ``misses``: atomic claim attempts that came back empty because other threads had
    taken the segment's last items (``WorkerStats.claim_misses``)."""

    claims: int
    steals: int

    def reset(self, segments: int) -> None: ...
    def claim(self) -> tuple[int, int] | None: ...


class Assignment(ABC):
    """How ready entities are grouped onto threads and claimed; one instance per runtime."""

    name: ClassVar[str]

    @abstractmethod
    def publish(self, pel: ParallelExecutiveList, ready: np.ndarray, threads: int,
                n_entities: int) -> None:
        """Publish ``ready`` (distinct entity ids) as one home segment per thread
        (coordinator only, between windows)."""

    @abstractmethod
    def claimer(self, pel: ParallelExecutiveList, index: int, threads: int,
                path: str | None) -> Claimer:
        """The claim handle of thread ``index`` (made on the coordinator, used by that
        thread only). ``path`` selects the atomics path for claimers that use atomics."""

    def home(self, entities: np.ndarray, threads: int, n_entities: int) -> np.ndarray:
        """The thread that usually runs each entity (its home segment's thread). The
        runtime makes each entity's context and row on that thread, so that the thread
        which runs the entity owns the objects it touches (``docs/performance.md``).
        A hint only: any thread may run any entity. Default: ``e % T``."""
        return entities % threads


class Steal(Assignment):
    """Home ``e % T``, guided chunks from the own segment first, then steals.

    ``backoff``: a thief leaves a segment with fewer than ``backoff * T`` items left to its
    owner (0, the default: it steals while anything is left). Stealing a chunk moves its
    entities' contexts, rows and heaps to another core, and their objects' reference
    counts become atomic; near a segment's end that can cost what the steal saves
    (``docs/performance.md``, "Stealing at many cores")."""

    name = "steal"

    def __init__(self, backoff: int = 0) -> None:
        if isinstance(backoff, bool) or not isinstance(backoff, int) or backoff < 0:
            raise ModelError(f"Steal(backoff=...) must be an int >= 0, got {backoff!r}")
        self.backoff = backoff
        if backoff:  # named apart in stats and thread names
            self.name = f"steal(backoff={backoff})"  # type: ignore[misc]

    def publish(self, pel: ParallelExecutiveList, ready: np.ndarray, threads: int,
                n_entities: int) -> None:
        pel.publish_homed(ready, self.home(ready, threads, n_entities), threads)

    def claimer(self, pel: ParallelExecutiveList, index: int, threads: int,
                path: str | None) -> Claimer:
        return pel.home_claimer(index, threads, path=path,
                                steal_min=max(1, self.backoff * threads))


class RoundRobin(Assignment):
    """Home ``e % T``, never shared."""

    name = "round-robin"
    #: Entities run between two looks at the abort flag.
    chunk = 32

    def publish(self, pel: ParallelExecutiveList, ready: np.ndarray, threads: int,
                n_entities: int) -> None:
        pel.publish_homed(ready, self.home(ready, threads, n_entities), threads)

    def claimer(self, pel: ParallelExecutiveList, index: int, threads: int,
                path: str | None) -> Claimer:
        return OwnSegmentClaimer(pel, index, self.chunk)


class Block(RoundRobin):
    """Contiguous id blocks per thread (ROSS's linear mapping), never shared."""

    name = "block"

    def publish(self, pel: ParallelExecutiveList, ready: np.ndarray, threads: int,
                n_entities: int) -> None:
        pel.publish_homed(ready, self.home(ready, threads, n_entities), threads)

    def home(self, entities: np.ndarray, threads: int, n_entities: int) -> np.ndarray:
        return entities * threads // n_entities


ASSIGNMENTS: dict[str, type[Assignment]] = {cls.name: cls for cls in (Steal, RoundRobin, Block)}


def register_assignment(cls: type[Assignment] | None = None, *, replace: bool = False):
    """Make the :class:`Assignment` subclass ``cls`` available by ``cls.name`` wherever an
    assignment is named (``SeerRuntime(model, assignment=name)``,
    ``seer.check.queues.claims_check(name)``); also a decorator. A name that is taken by
    another class is an error unless ``replace=True``. Returns ``cls``."""

    def add(cls: type[Assignment]) -> type[Assignment]:
        if not (isinstance(cls, type) and issubclass(cls, Assignment)):
            raise TypeError(f"register_assignment needs an Assignment subclass, got {cls!r}")
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"{cls.__name__} needs a class attribute name (a non-empty str)")
        if ASSIGNMENTS.get(name, cls) is not cls and not replace:
            raise ValueError(f"assignment {name!r} is already registered "
                             f"({ASSIGNMENTS[name].__name__}); pass replace=True")
        ASSIGNMENTS[name] = cls
        return cls

    return add if cls is None else add(cls)


def get_assignment(assignment: str | Assignment) -> Assignment:
    """An :class:`Assignment` instance from a name in :data:`ASSIGNMENTS` or an instance."""
    if isinstance(assignment, Assignment):
        return assignment
    try:
        return ASSIGNMENTS[assignment]()
    except (KeyError, TypeError):
        raise ModelError(f"unknown assignment {assignment!r}; choose one of "
                         f"{sorted(ASSIGNMENTS)} or pass an Assignment instance") from None
