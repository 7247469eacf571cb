"""The calendar: when each entity next has work, so a window never scans all entities.

An entry ``(τ, seq, entity)`` says "``entity`` has an event at κ = ``(τ, seq)``". Entries
arrive in batches — the threads that ran a window hand over one :class:`CalendarBatch`
each — and leave as the *ready set* of a later window: :meth:`Calendar.pop_ready` removes
every entry with ``κ < B`` and returns each listed entity once. Duplicates are harmless,
and the windowed runtimes never add an entry below the current bound (see
:mod:`seer.sched.windows`), so no entry is ever stale.

Cost model. A window of a big model readies thousands of entities; a lookahead-0 model
runs many rounds of a few entities. One binary heap of tuples is fine for the second and
costs ~1.5 µs of serial coordinator time per ready entity for the first (measured on PCS,
1600 cells: ~7 ms of every ~110 ms step, all of it on one thread). So the calendar has
two levels:

* a heap of tuples for small batches (fewer than :data:`SMALL` entries): a tiny window
  pays a few heap operations and nothing else;
* numpy *runs* ``(t, s, e, lo)`` for large batches, sorted by ``t`` alone; a window takes
  the prefix ``< B`` of each run with a binary search (``lo`` moves forward). Only a
  lookahead-0 round (``B = (t, s)``) looks inside a group of equal ``t``: it sorts that
  group's live entries by ``s`` first, in place. Sorting by one float key (an introsort)
  instead of ``lexsort`` on two (two stable passes) is what makes a flush cheap: 56 µs
  instead of 590 µs for 4700 entries, and the coordinator runs it alone, every window.
  A new run is merged with the one below it while it holds at least half as many live
  entries (the timsort stack rule), so right after a flush the live sizes more than
  double downwards: O(log n) runs, every entry copied O(log n) times, inside numpy. A
  merge sorts the two runs back to back with numpy's timsort, which merges them in
  linear time.

Only the coordinator uses a :class:`Calendar` (between windows, single-threaded).

:class:`DenseCalendar` is the other layout, for windows that ready a good share of all
entities (PCS readies about half of its cells per window): one key per entity, the
smallest ``(τ, seq)`` listed for it, in two numpy arrays. A window then costs a few
passes over ``n`` numbers, with no sorting and no merging, however many entries arrived.
It keeps only each entity's smallest key, which is enough because of a contract that
every windowed runtime keeps: an entity that a window readied is run, and after its run
it lists its new head (the smallest key of everything still pending for it), so the
other entries it had are not needed. :class:`EntityEvents <seer.sched.windows.
EntityEvents>` picks the layout from how many entities its windows ready
(:func:`prefer_dense`) and moves the entries across when it changes.
"""

from __future__ import annotations

import heapq

import numpy as np

__all__ = ["SMALL", "Calendar", "CalendarBatch", "DenseCalendar", "prefer_dense"]

#: Batches with fewer entries than this go into the heap level.
SMALL = 64

_EMPTY_I = np.empty(0, np.int64)
_INT64_MAX = 2**63 - 1


class CalendarBatch:
    """Entries made by one thread during a window, as three parallel lists (appending to
    lists of plain floats and ints allocates no tuple per entry)."""

    __slots__ = ("entity", "seq", "tau")

    def __init__(self) -> None:
        self.tau: list[float] = []
        self.seq: list[int] = []
        self.entity: list[int] = []

    def add(self, tau: float, seq: int, entity: int) -> None:
        self.tau.append(tau)
        self.seq.append(seq)
        self.entity.append(entity)

    def clear(self) -> None:
        self.tau.clear()
        self.seq.clear()
        self.entity.clear()

    def __len__(self) -> int:
        return len(self.entity)

    def take_arrays(self, sort: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The entries as ``(tau, seq, entity)`` arrays, sorted by ``tau`` if ``sort``
        (what a calendar's :meth:`~Calendar.extend_sorted` needs: its ``SORTED``); the
        batch is left empty.

        Called by the thread that filled the batch, before the window's barrier: the
        conversion then runs in parallel, and it reads floats and ints that this thread
        made. Had the coordinator copied them out of the lists instead, free-threaded
        CPython would count each reference with an atomic and hand each object back to
        its owner thread's queue when the lists are cleared (``docs/performance.md``)."""
        tau = np.array(self.tau, np.float64)
        seq = np.array(self.seq, np.int64)
        entity = np.array(self.entity, np.int64)
        self.clear()
        if not sort:
            return tau, seq, entity
        order = np.argsort(tau)
        return tau[order], seq[order], entity[order]


class _Run:
    """Live entries ``[lo:]`` of arrays sorted by ``tau`` (equal ``tau`` in any order)."""

    __slots__ = ("entity", "lo", "seq", "tau")

    def __init__(self, tau: np.ndarray, seq: np.ndarray, entity: np.ndarray) -> None:
        self.tau, self.seq, self.entity, self.lo = tau, seq, entity, 0

    def __len__(self) -> int:
        return len(self.tau) - self.lo

    def live(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lo = self.lo
        return self.tau[lo:], self.seq[lo:], self.entity[lo:]


def _sorted_run(tau: np.ndarray, seq: np.ndarray, entity: np.ndarray) -> _Run:
    order = np.argsort(tau)  # by tau only: see the module docstring
    return _Run(tau[order], seq[order], entity[order])


class _PendingEntries:
    """Entries come in through a pending batch that the reading methods flush first."""

    _pending: CalendarBatch

    def add(self, tau: float, seq: int, entity: int) -> None:
        """One entry (kept pending until the next :meth:`head` / :meth:`pop_ready`)."""
        self._pending.add(tau, seq, entity)

    def add_many(self, tau: list[float], seq: list[int], entity: list[int]) -> None:
        """Entries given as three parallel lists (kept pending, as :meth:`add`)."""
        p = self._pending
        p.tau += tau
        p.seq += seq
        p.entity += entity

    def extend(self, batch: CalendarBatch) -> None:
        """All of ``batch``'s entries (the batch is left as it is)."""
        self.add_many(batch.tau, batch.seq, batch.entity)

    def __bool__(self) -> bool:
        return len(self) > 0


class Calendar(_PendingEntries):
    """Entries ``(τ, seq, entity)`` ordered by κ; see the module docstring."""

    #: :meth:`extend_sorted` needs its arrays sorted by ``tau``.
    SORTED = True

    def __init__(self, n_entities: int) -> None:
        self._heap: list[tuple[float, int, int]] = []
        self._runs: list[_Run] = []
        self._pending = CalendarBatch()
        # first_seen[e]: scratch for removing duplicate entities without sorting
        self._first_seen = np.zeros(max(1, n_entities), np.int64)

    # -- adding (and add, add_many, extend) ----------------------------------------------------
    def extend_sorted(self, tau: np.ndarray, seq: np.ndarray, entity: np.ndarray) -> None:
        """Entries given as arrays sorted by ``tau`` (:meth:`CalendarBatch.take_arrays`)."""
        if len(entity) < SMALL:  # a few entries: pending, for the heap level
            self.add_many(tau.tolist(), seq.tolist(), entity.tolist())
        else:
            self._push_run(_Run(tau, seq, entity))

    def _push_run(self, run: _Run) -> None:
        runs = self._runs
        while runs and 2 * len(run) >= len(runs[-1]):
            below = runs.pop()
            tau1, seq1, entity1 = below.live()
            tau2, seq2, entity2 = run.live()
            tau = np.concatenate((tau1, tau2))
            # Two sorted runs back to back: timsort ("stable") finds them and merges them
            # in one linear pass, 4-5x faster than the introsort of a fresh run.
            order = np.argsort(tau, kind="stable")
            run = _Run(tau[order], np.concatenate((seq1, seq2))[order],
                       np.concatenate((entity1, entity2))[order])
        runs.append(run)

    def _flush(self) -> None:
        p = self._pending
        n = len(p.entity)
        if n == 0:
            return
        if n < SMALL:
            push, heap = heapq.heappush, self._heap
            for entry in zip(p.tau, p.seq, p.entity, strict=True):
                push(heap, entry)
        else:
            self._push_run(_sorted_run(np.array(p.tau, np.float64), np.array(p.seq, np.int64),
                                       np.array(p.entity, np.int64)))
        p.clear()

    # -- reading ----------------------------------------------------------------------------
    def head(self) -> tuple[float, int] | None:
        """The smallest κ listed, or None when the calendar is empty."""
        self._flush()
        best = self._heap[0][:2] if self._heap else None
        for run in self._runs:
            lo = run.lo
            tau = run.tau
            t_min = tau[lo]
            if best is not None and t_min > best[0]:
                continue
            last = int(np.searchsorted(tau, t_min, "right"))  # the group of equal tau
            key = (float(t_min), int(run.seq[lo:last].min()))
            if best is None or key < best:
                best = key
        return best

    def pop_ready(self, bound: tuple[float, int]) -> np.ndarray:
        """Remove every entry with ``κ < bound``; return their entities, each once, in the
        order of their first entry taken (int64 array)."""
        self._flush()
        b_tau, b_seq = bound
        parts = []
        heap = self._heap
        if heap and heap[0] < bound:
            pop = heapq.heappop
            found = []
            while heap and heap[0] < bound:
                found.append(pop(heap)[2])  # the entry's entity
            parts.append(np.array(found, np.int64))
        runs = self._runs
        taken = False
        for run in runs:
            lo = run.lo
            if run.tau[lo] > b_tau:
                continue
            tau = run.tau
            end = int(np.searchsorted(tau, b_tau, "left"))
            if b_seq >= 0:  # a lookahead-0 round: some entries at τ == b_tau may be ready too
                last = int(np.searchsorted(tau, b_tau, "right"))
                if b_seq > _INT64_MAX:  # depth-63 round: every int64 seq is below the bound
                    end = last
                elif last > lo:
                    # Order the live part of the τ == b_tau group by seq (earlier rounds took
                    # entries below their bound from it, so what is left starts at lo).
                    start = end if end > lo else lo
                    seq = run.seq
                    if last - start > 1:
                        order = np.argsort(seq[start:last], kind="stable") + start
                        seq[start:last] = seq[order]
                        run.entity[start:last] = run.entity[order]
                    end = start + int(np.searchsorted(seq[start:last], b_seq, "left"))
            if end > lo:
                parts.append(run.entity[lo:end])
                run.lo = end
                taken = True
        if taken:
            runs[:] = [r for r in runs if len(r)]
        if not parts:
            return _EMPTY_I
        ready = parts[0] if len(parts) == 1 else np.concatenate(parts)
        if len(ready) < 2:
            return ready
        # Keep each entity's first occurrence, in O(len) without sorting: first[e] ends as
        # the smallest position of e (ufunc.at is unbuffered, so repeated ids accumulate).
        first, positions = self._first_seen, np.arange(len(ready))
        first[ready] = len(ready)
        np.minimum.at(first, ready, positions)
        return ready[first[ready] == positions]

    def __len__(self) -> int:
        return len(self._heap) + sum(len(r) for r in self._runs) + len(self._pending)

    def clear(self) -> None:
        self._heap.clear()
        self._runs.clear()
        self._pending.clear()

    def entries(self) -> list[tuple[float, int, int]]:
        """Every live entry, sorted by κ then entity (for tests and debugging)."""
        self._flush()
        out = list(self._heap)
        for run in self._runs:
            tau, seq, entity = run.live()
            out.extend(zip(tau.tolist(), seq.tolist(), entity.tolist(), strict=True))
        return sorted(out)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every live entry as ``(tau, seq, entity)`` arrays sorted by ``tau`` (for moving
        them to another calendar)."""
        self._flush()
        parts = [r.live() for r in self._runs]
        if self._heap:
            tau, seq, entity = zip(*self._heap, strict=True)
            parts.append((np.array(tau, np.float64), np.array(seq, np.int64),
                          np.array(entity, np.int64)))
        if not parts:
            return np.empty(0, np.float64), _EMPTY_I, _EMPTY_I
        tau = np.concatenate([p[0] for p in parts])
        order = np.argsort(tau, kind="stable")
        return (tau[order], np.concatenate([p[1] for p in parts])[order],
                np.concatenate([p[2] for p in parts])[order])


#: :func:`prefer_dense`: go dense when a window readies at least this share of the
#: entities, and back when it readies less than half of it (no flapping at the edge).
DENSE_SHARE = 1 / 16


def prefer_dense(dense_now: bool, ready: int, windows: int, n_entities: int) -> bool:
    """Whether a runtime whose last step ran ``windows`` windows readying ``ready``
    entities in all should use a :class:`DenseCalendar`.

    A dense window costs a handful of passes over all ``n_entities`` keys (about 10-15 µs
    at 1600 entities, in numpy); the sorted runs cost about 0.1-0.2 µs per entry, sorting
    and merging included, but almost nothing for a window of a few entries. So the dense
    layout pays once a window readies a few percent of the entities (``DENSE_SHARE``)."""
    if windows == 0:
        return dense_now
    share = ready / (windows * max(1, n_entities))
    return share >= (DENSE_SHARE / 2 if dense_now else DENSE_SHARE)


class DenseCalendar(_PendingEntries):
    """Each entity's smallest listed key ``(τ, seq)`` in two arrays; see the module
    docstring for when it is used and the contract it relies on (a readied entity lists
    its new head after it ran). Same interface as :class:`Calendar`, except that it keeps
    one entry per entity (:meth:`entries`, ``len``) and :meth:`pop_ready` returns the
    ready entities in id order.

    ``_tau[e]`` is ``inf`` when nothing is listed for ``e``; ``_seq[e]`` is then
    meaningless. Coordinator only, as :class:`Calendar`."""

    #: :meth:`extend_sorted` takes its arrays in any order.
    SORTED = False

    def __init__(self, n_entities: int) -> None:
        n = max(1, n_entities)
        self._tau = np.full(n, np.inf)
        self._seq = np.zeros(n, np.int64)
        self._pending = CalendarBatch()

    # -- adding (and add, add_many, extend) ----------------------------------------------------
    def extend_sorted(self, tau: np.ndarray, seq: np.ndarray, entity: np.ndarray) -> None:
        """Entries given as arrays, in any order (the name is :class:`Calendar`'s)."""
        if len(entity):
            self._lower(tau, seq, entity)

    def _flush(self) -> None:
        if self._pending.entity:
            self._lower(*self._pending.take_arrays(False))

    def _lower(self, tau: np.ndarray, seq: np.ndarray, entity: np.ndarray) -> None:
        """``key[e] = min(key[e], (tau_i, seq_i))`` for every entry ``i`` of ``e``, in κ
        order; an entity may appear several times (``ufunc.at`` is unbuffered)."""
        keys_t, keys_s = self._tau, self._seq
        old = keys_t[entity]
        np.minimum.at(keys_t, entity, tau)
        new = keys_t[entity]
        moved = new < old
        if moved.any():  # a smaller τ: the old seq no longer counts
            keys_s[entity[moved]] = _INT64_MAX
        tied = tau == new  # the entries at the entity's (new) τ compete on seq
        np.minimum.at(keys_s, entity[tied], seq[tied])

    # -- reading ----------------------------------------------------------------------------
    def head(self) -> tuple[float, int] | None:
        """The smallest κ listed, or None when the calendar is empty."""
        self._flush()
        keys_t = self._tau
        t_min = keys_t[keys_t.argmin()]
        if t_min == np.inf:
            return None
        return (float(t_min), int(self._seq[keys_t == t_min].min()))

    def pop_ready(self, bound: tuple[float, int]) -> np.ndarray:
        """Remove the key of every entity listed below ``bound`` and return those
        entities, in id order (int64 array). Each must then be run and list its new head
        (the class docstring's contract)."""
        self._flush()
        b_tau, b_seq = bound
        keys_t = self._tau
        ready = keys_t < b_tau
        if b_seq >= 0:  # a lookahead-0 round: the entities at τ == b_tau below the depth bound
            at = keys_t == b_tau
            ready |= at if b_seq > _INT64_MAX else at & (self._seq < b_seq)
        ready = np.flatnonzero(ready)
        keys_t[ready] = np.inf
        return ready

    def __len__(self) -> int:
        return int(np.count_nonzero(self._tau != np.inf)) + len(self._pending)

    def clear(self) -> None:
        self._tau.fill(np.inf)
        self._pending.clear()

    def entries(self) -> list[tuple[float, int, int]]:
        """Each listed entity's key as ``(τ, seq, entity)``, sorted (tests, debugging)."""
        return sorted(zip(*(a.tolist() for a in self.arrays()), strict=True))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each listed entity's key as ``(tau, seq, entity)`` arrays sorted by ``tau``."""
        self._flush()
        entity = np.flatnonzero(self._tau != np.inf)
        tau = self._tau[entity]
        order = np.argsort(tau, kind="stable")
        return tau[order], self._seq[entity][order], entity[order]
