"""The model memory: RC11 for atomic words, a vector-clock race check for plain data.

One :class:`Memory` per execution of a check. Threads are numbered ``0 .. n - 1`` (the
workers) and ``n`` (the *main* thread, which runs the set-up before the workers start and
the invariant after they all end). Each thread has a vector clock; happens-before (HB) is
program order plus synchronisation, as RC11 (Lahav, Vafeiadis, Kang, Hur and Dreyer,
"Repairing sequential consistency in C/C++11", PLDI 2017) defines it:

* a load or read-modify-write with an *acquire* order (acquire, acq_rel, seq_cst) that
  reads a store carrying a release clock joins that clock into its thread's; a relaxed
  load keeps the clock it read, and a later *acquire fence* of its thread joins it;
* a store with a *release* order (release, acq_rel, seq_cst) carries its thread's clock; a
  relaxed store after a *release fence* carries the clock of that fence; a
  read-modify-write also passes on the clock of the store it read. That is the release
  sequence as C++20 defines it (a release store and the read-modify-writes after it in the
  word's modification order; a plain store of the same thread ends it, unlike C++11);
* starting the workers after the set-up, a :class:`~seer.check.Barrier`, a lock hand-off,
  and joining the workers before the invariant.

Each atomic word keeps its modification order (``mo``: every store, with its value,
thread, clock and release clock) and every access to it. In the default *sequentially
consistent* mode every load and read-modify-write reads the latest store and every store
goes last, so an execution is an interleaving and nothing more. In *weak* mode the
execution is an RC11 execution graph built one event at a time in an order of ``po ∪ rf``
(so ``po ∪ rf`` is acyclic: no load buffering, no out-of-thin-air values), and the
explorer decides, like the choice of thread:

* which store a load or read-modify-write reads: any store not older in ``mo`` than a store
  that happens-before it, or that an access which happens-before it wrote or read
  (RC11's coherence, ``hb ; eco?`` irreflexive); a read-modify-write reads a store that no
  other read-modify-write has read, and goes right after it in ``mo`` (atomicity);
* where a store goes in ``mo``: after every store that happens-before it or was read by
  an access that happens-before it, anywhere later (not only last: 2+2W), never between a
  store and the read-modify-write that read it;
* and, once two seq_cst events (accesses or fences) are in the graph, only choices that
  keep RC11's ``psc`` acyclic (:meth:`Memory.psc_acyclic`): seq_cst accesses and SC fences
  are totally ordered consistently with ``scb`` (``po ∪ po|≠loc;hb;po|≠loc ∪ hb|loc ∪
  mo ∪ fr``), fences through ``hb`` and ``hb;eco;hb``. A seq_cst load therefore does not
  always read the latest store: after a *release* store of its own thread it may read an
  older one (store buffering), as C11 and x86 allow.

A thread that spins (:func:`seer.check.yield_now`) sees every store made before it goes on:
C11 promises that stores become visible in finite time, and this keeps spin loops finite;
for the same reason a thread reads one stale store of a word at most
:data:`STALE_REPEATS` (2) times in a row. Those two rules are the model's only
departures from RC11 (they drop executions, never add one).

Plain data (the arena's ``next`` links and side table, ring slots) is checked for races,
as a vector-clock race detector does: a read must happen after the last write, and a write
after the last write and every read since, unless the same thread made them. A race is a
failure of the execution, reported with both accesses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from seer.queues.atomic import ACQ_REL, ACQUIRE, RELEASE, SEQ_CST

__all__ = ["DataRace", "Event", "Memory", "Store"]

#: How many loads in a row may read one stale store of a word (C11's "stores become
#: visible in finite time", made finite: a loop that re-reads a word sees it change).
STALE_REPEATS = 2

_ACQUIRES = frozenset({ACQUIRE, ACQ_REL, SEQ_CST})
_RELEASES = frozenset({RELEASE, ACQ_REL, SEQ_CST})


def _join(into: list[int], other: list[int]) -> None:
    for k, v in enumerate(other):
        if v > into[k]:
            into[k] = v


@dataclass(eq=False)
class Event:
    """A node of the execution graph: a read (``"R"``), a write (``"W"``), a
    read-modify-write (``"U"``) or a fence (``"F"``) by ``thread`` at its clock value
    ``epoch``; ``clock`` is its thread's clock at the event (after what it acquired), so
    ``a`` happens-before ``b`` iff ``a.epoch <= b.clock[a.thread]``."""

    thread: int
    epoch: int
    kind: str
    loc: int | None
    sc: bool
    clock: list[int]
    rf: Store | None = None
    store: Store | None = None
    init: bool = False


@dataclass(eq=False)
class Store:
    """One store in a word's modification order. ``clock`` is the storing thread's
    clock at the store (to tell whether it happens-before a load); ``sync`` is what an
    acquire that reads it joins (None: it synchronises with nothing)."""

    value: int
    thread: int
    step: int
    clock: list[int]
    sync: list[int] | None
    index: int = 0  # position in the modification order
    event: Event | None = None
    taken: bool = False  # a read-modify-write read it (and sits right after it in mo)
    readers: list[Event] = field(default_factory=list)


@dataclass
class _Data:
    """A plain location: its last write and the reads since, each ``(thread, epoch,
    step)``; a later access by another thread must have that thread's clock at or
    above the epoch."""

    write: tuple[int, int, int] | None = None
    reads: dict[int, tuple[int, int]] = field(default_factory=dict)


class DataRace(Exception):
    """Two accesses to plain shared data, by two threads, not ordered by happens-before."""

    def __init__(self, location: str, access: str, thread: int, step: int, other: str,
                 other_thread: int, other_step: int) -> None:
        self.location, self.thread, self.other_thread = location, thread, other_thread
        self.step, self.other_step = step, other_step
        super().__init__(
            f"data race on {location}: thread {thread} {access} it at step {step}, but "
            f"thread {other_thread}'s {other} at step {other_step} does not happen-before "
            "that (no acquire of what published it)")


def _renumber(stores: list[Store], start: int) -> None:
    for k in range(start, len(stores)):
        stores[k].index = k


class Memory:
    """Words and plain locations of one execution (module docstring)."""

    def __init__(self, threads: int, weak: bool) -> None:
        self.n = threads + 1  # the workers and the main thread (index ``threads``)
        self.main = threads
        self.weak = weak
        self.clocks = [[0] * self.n for _ in range(self.n)]
        for t in range(self.n):
            self.clocks[t][t] = 1
        self.words: dict[int, list[Store]] = {}
        # per word: every access (thread, epoch, store written or read), for coherence
        self.accesses: dict[int, list[tuple[int, int, Store]]] = {}
        self.events: list[Event] = []
        self.sc_events = 0
        self.fence_release: list[list[int] | None] = [None] * self.n
        self.pending_acquire: list[list[int]] = [[0] * self.n for _ in range(self.n)]
        # per thread: location -> the latest store when it last yielded (catch_up)
        self.floor: list[dict[int, Store]] = [{} for _ in range(self.n)]
        self.data: dict[object, _Data] = {}
        self.step = 0  # set by the scheduler: the step being run (0: set-up)
        self.writers: list[int] = []  # the thread of every store, in order (spin-waits)
        # per thread: location -> (the stale store its last loads read, how many times in a
        # row): a thread reads one stale store at most STALE_REPEATS times
        self.repeats: list[dict[int, tuple[Store, int]]] = [{} for _ in range(self.n)]
        self.stale_reads = 0  # reads of a store that was not the latest in mo
        self.names: dict[int, str] = {}  # location -> how reports name the word

    # -- thread lifetime -------------------------------------------------------------------
    def start_workers(self) -> None:
        """Every worker starts after the set-up: it inherits the main thread's clock."""
        main = self.clocks[self.main]
        for t in range(self.main):
            _join(self.clocks[t], main)
        main[self.main] += 1

    def join_workers(self) -> None:
        """The invariant runs after every worker ended."""
        main = self.clocks[self.main]
        for t in range(self.main):
            _join(main, self.clocks[t])
        self.floor[self.main].clear()

    def barrier(self, threads: list[int]) -> None:
        """``threads`` pass a barrier together: each one's clock becomes their join."""
        joined = [0] * self.n
        for t in threads:
            _join(joined, self.clocks[t])
        for t in threads:
            self.clocks[t][:] = joined
            self.clocks[t][t] += 1

    # -- atomic words: the graph -------------------------------------------------------------
    def _history(self, loc: int, initial: int) -> list[Store]:
        stores = self.words.get(loc)
        if stores is None:
            # The value the word held before the check: made by the set-up, so it
            # happens-before everything.
            zero = [0] * self.n
            first = Store(initial, self.main, 0, zero, None)
            first.event = Event(self.main, 0, "W", loc, False, zero, store=first, init=True)
            stores = self.words[loc] = [first]
            self.accesses[loc] = [(self.main, 0, first)]
            self.events.append(first.event)
        return stores

    def _low(self, t: int, loc: int) -> int:
        """The mo index of the newest store of ``loc`` that ``t`` must not read before
        (or write before): written or read by an access that happens-before it."""
        clock = self.clocks[t]
        low = 0
        for u, epoch, s in self.accesses[loc]:
            if s.index > low and epoch <= clock[u]:
                low = s.index
        return low

    def _add(self, event: Event) -> None:
        self.events.append(event)
        if event.sc:
            self.sc_events += 1

    def _remove(self, event: Event) -> None:
        self.events.pop()
        if event.sc:
            self.sc_events -= 1

    def _needs_psc(self, sc: bool) -> bool:
        return self.weak and self.sc_events + sc >= 2

    def _read_event(self, t: int, loc: int, order: int, store: Store, kind: str) -> Event:
        clock = list(self.clocks[t])
        if store.sync is not None and order in _ACQUIRES:
            _join(clock, store.sync)
        return Event(t, clock[t], kind, loc, order == SEQ_CST, clock, rf=store)

    def _try_read(self, t: int, loc: int, order: int, store: Store) -> bool:
        """Would ``t`` reading ``store`` keep psc acyclic?"""
        ev = self._read_event(t, loc, order, store, "R")
        self._add(ev)
        store.readers.append(ev)
        try:
            return self.psc_acyclic()
        finally:
            store.readers.pop()
            self._remove(ev)

    def _insert(self, stores: list[Store], position: int, store: Store) -> None:
        stores.insert(position, store)
        _renumber(stores, position)

    def _uninsert(self, stores: list[Store], position: int) -> None:
        del stores[position]
        _renumber(stores, position)

    def _write_event(self, t: int, loc: int, order: int, value: int,
                     rf: Store | None = None) -> Event:
        clock = list(self.clocks[t])
        if rf is not None and rf.sync is not None and order in _ACQUIRES:
            _join(clock, rf.sync)
        if order in _RELEASES:
            sync = list(clock)
        else:
            fence = self.fence_release[t]
            sync = list(fence) if fence is not None else None
        if rf is not None and rf.sync is not None:  # the release sequence it continues
            if sync is None:
                sync = rf.sync
            else:
                _join(sync, rf.sync)
        store = Store(value, t, self.step, clock, sync)
        ev = Event(t, clock[t], "U" if rf is not None else "W", loc, order == SEQ_CST,
                   clock, rf=rf, store=store)
        store.event = ev
        return ev

    def _try_write(self, t: int, loc: int, order: int, position: int) -> bool:
        stores = self.words[loc]
        ev = self._write_event(t, loc, order, 0)
        self._add(ev)
        self._insert(stores, position, ev.store)
        try:
            return self.psc_acyclic()
        finally:
            self._uninsert(stores, position)
            self._remove(ev)

    def _try_rmw(self, t: int, loc: int, order: int, store: Store) -> bool:
        stores = self.words[loc]
        ev = self._write_event(t, loc, order, 0, rf=store)
        self._add(ev)
        store.readers.append(ev)
        self._insert(stores, store.index + 1, ev.store)
        try:
            return self.psc_acyclic()
        finally:
            self._uninsert_rmw(stores, store, ev)

    def _uninsert_rmw(self, stores: list[Store], store: Store, ev: Event) -> None:
        self._uninsert(stores, store.index + 1)
        store.readers.pop()
        self._remove(ev)

    # -- atomic words: what may be read and where a store may go ---------------------------
    def _coherent(self, t: int, loc: int, stores: list[Store]) -> list[Store]:
        """The stores coherence (and the spin rules) let ``t`` read, the latest first."""
        low = self._low(t, loc)
        floor = self.floor[t].get(loc)
        if floor is not None and floor.index > low:
            low = floor.index
        rep = self.repeats[t].get(loc)
        if rep is not None and rep[1] >= STALE_REPEATS and rep[0].index + 1 < len(stores):
            low = max(low, rep[0].index + 1)  # time passes: that store is not readable again
        return stores[low:][::-1]

    def readable(self, t: int, loc: int, initial: int, order: int) -> list[Store]:
        """The stores a load by ``t`` with ``order`` may read, the latest first."""
        stores = self._history(loc, initial)
        if not self.weak or len(stores) == 1:
            return [stores[-1]]
        out = self._coherent(t, loc, stores)
        if self._needs_psc(order == SEQ_CST):
            out = [s for s in out if self._try_read(t, loc, order, s)]
        return out

    def rmw_readable(self, t: int, loc: int, initial: int, order: int,
                     expected: int | None = None, failure: int = ACQUIRE) -> list[Store]:
        """The stores a read-modify-write by ``t`` may read, the latest first: one that no
        other read-modify-write read (for a compare-exchange, a store whose value is not
        ``expected`` is a failed one's read, with the ``failure`` order)."""
        stores = self._history(loc, initial)
        if not self.weak:
            return [stores[-1]]
        out = []
        for s in self._coherent(t, loc, stores):
            if expected is not None and s.value != expected:
                if not self._needs_psc(failure == SEQ_CST) or \
                        self._try_read(t, loc, failure, s):
                    out.append(s)
            elif not s.taken and (not self._needs_psc(order == SEQ_CST) or
                                  self._try_rmw(t, loc, order, s)):
                out.append(s)
        return out

    def positions(self, t: int, loc: int, initial: int, order: int) -> list[int]:
        """Where in ``loc``'s modification order a store by ``t`` may go, the end first."""
        stores = self._history(loc, initial)
        if not self.weak:
            return [len(stores)]
        low = self._low(t, loc)
        # never between a store and the read-modify-write that read it
        out = [p for p in range(len(stores), low, -1) if not stores[p - 1].taken]
        if self._needs_psc(order == SEQ_CST):
            out = [p for p in out if self._try_write(t, loc, order, p)]
        return out

    # -- atomic words: performing ----------------------------------------------------------
    def _record(self, t: int, loc: int, store: Store, stale_count: bool) -> None:
        clock = self.clocks[t]
        self.accesses[loc].append((t, clock[t], store))
        if stale_count:
            repeats = self.repeats[t]
            if store.index == len(self.words[loc]) - 1:
                repeats.pop(loc, None)
            else:
                self.stale_reads += 1
                prev = repeats.get(loc)
                repeats[loc] = (store, prev[1] + 1 if prev and prev[0] is store else 1)

    def _took(self, t: int, loc: int, store: Store, ev: Event, order: int) -> list[int]:
        """``t``'s load or RMW ``ev`` has read ``store``: ``t``'s clock becomes the
        event's, a relaxed read keeps the store's release clock for a later acquire fence,
        and the access is recorded. Returns ``t``'s clock (the caller ticks it)."""
        clock = self.clocks[t]
        clock[:] = ev.clock
        if store.sync is not None and order not in _ACQUIRES:
            _join(self.pending_acquire[t], store.sync)
        self._record(t, loc, store, True)
        return clock

    def read(self, t: int, loc: int, store: Store, order: int) -> int:
        """``t`` loads ``store`` (one of :meth:`readable`) with ``order``."""
        ev = self._read_event(t, loc, order, store, "R")
        self._add(ev)
        store.readers.append(ev)
        self._took(t, loc, store, ev, order)[t] += 1
        return store.value

    def write(self, t: int, loc: int, initial: int, value: int, order: int,
              position: int | None = None) -> Store:
        """A plain (non-RMW) atomic store, at ``position`` in mo (default: last)."""
        stores = self._history(loc, initial)
        ev = self._write_event(t, loc, order, value)
        self._add(ev)
        self._insert(stores, len(stores) if position is None else position, ev.store)
        self.writers.append(t)
        self._record(t, loc, ev.store, False)
        self.clocks[t][t] += 1
        return ev.store

    def rmw(self, t: int, loc: int, initial: int, order: int, new: object,
            store: Store | None = None) -> int:
        """A read-modify-write: reads ``store`` (one of :meth:`rmw_readable`; default
        the latest) and stores ``new(old)`` right after it; returns the old value."""
        stores = self._history(loc, initial)
        store = stores[-1] if store is None else store
        ev = self._write_event(t, loc, order, new(store.value), rf=store)
        self._add(ev)
        store.readers.append(ev)
        store.taken = True
        self._insert(stores, store.index + 1, ev.store)
        self.writers.append(t)
        clock = self._took(t, loc, store, ev, order)
        self.accesses[loc].append((t, clock[t], ev.store))
        clock[t] += 1
        return store.value

    def fence(self, t: int, order: int) -> None:
        """``atomic_thread_fence(order)`` by ``t``: an acquire fence joins what its
        thread's earlier relaxed reads read; a release fence makes its thread's later
        relaxed stores carry its clock; a seq_cst fence is both and is in psc."""
        clock = self.clocks[t]
        if order in _ACQUIRES:
            _join(clock, self.pending_acquire[t])
        if order in _RELEASES:
            self.fence_release[t] = list(clock)
        self._add(Event(t, clock[t], "F", None, order == SEQ_CST, list(clock)))
        clock[t] += 1

    def catch_up(self, t: int) -> None:
        """After ``t`` yielded (a spin-wait): its later loads read the latest store of
        every word, or a newer one. C11 promises that stores become visible in finite time;
        this makes it "by the next spin", which keeps spin loops finite (otherwise a load
        could read a stale value forever) without hiding a bug that needs one stale read."""
        floor = self.floor[t]
        for loc, stores in self.words.items():
            floor[loc] = stores[-1]

    def latest(self, loc: int, initial: int) -> Store:
        return self._history(loc, initial)[-1]

    # -- RC11's psc ----------------------------------------------------------------------------
    def psc_acyclic(self) -> bool:
        """Is RC11's partial SC relation ``psc = psc_base ∪ psc_F`` of the graph so far
        acyclic? (Lahav et al., PLDI 2017, section 3.)"""
        return psc_acyclic(self.events, self.words)

# -- plain data ------------------------------------------------------------------------
    def _happened(self, t: int, access: tuple[int, int, int] | tuple[int, int]) -> bool:
        return access[0] == t or access[1] <= self.clocks[t][access[0]]

    def _location(self, loc: object) -> _Data:
        d = self.data.get(loc)
        if d is None:
            d = self.data[loc] = _Data()
        return d

    def data_read(self, t: int, loc: object, name: str) -> None:
        d = self._location(loc)
        w = d.write
        if w is not None and not self._happened(t, w):
            raise DataRace(name, "reads", t, self.step, "write", w[0], w[2])
        d.reads[t] = (self.clocks[t][t], self.step)

    def data_write(self, t: int, loc: object, name: str) -> None:
        d = self._location(loc)
        w = d.write
        if w is not None and not self._happened(t, w):
            raise DataRace(name, "writes", t, self.step, "write", w[0], w[2])
        for r, (epoch, step) in d.reads.items():
            if r != t and epoch > self.clocks[t][r]:
                raise DataRace(name, "writes", t, self.step, "read", r, step)
        d.write = (t, self.clocks[t][t], self.step)
        d.reads = {}


# -- RC11's psc --------------------------------------------------------------------------------
def _compose(a: list[int], b: list[int]) -> list[int]:
    """``a ; b`` for relations as bit rows."""
    out = []
    for row in a:
        acc = 0
        while row:
            low = row & -row
            acc |= b[low.bit_length() - 1]
            row ^= low
        out.append(acc)
    return out


def _closure(rel: list[int]) -> list[int]:
    """The transitive closure (Warshall on bit rows)."""
    rel = list(rel)
    for k in range(len(rel)):
        bit = 1 << k
        rk = rel[k]
        for i in range(len(rel)):
            if rel[i] & bit:
                rel[i] |= rk
    return rel


def psc_acyclic(events: list[Event], words: dict[int, list[Store]]) -> bool:
    """RC11's SC condition on a graph: ``psc`` acyclic, where (Lahav et al., PLDI 2017)

    * ``scb = po ∪ po|≠loc ; hb ; po|≠loc ∪ hb|loc ∪ mo ∪ fr``
    * ``psc_base = ([E_sc] ∪ [F_sc] ; hb?) ; scb ; ([E_sc] ∪ hb? ; [F_sc])``
    * ``psc_F = [F_sc] ; (hb ∪ hb ; eco ; hb) ; [F_sc]``, ``eco = (rf ∪ mo ∪ fr)+``.
    """
    sc = [k for k, e in enumerate(events) if e.sc]
    if len(sc) < 2:
        return True
    n = len(events)
    index = {id(e): k for k, e in enumerate(events)}
    hb = [0] * n
    po = [0] * n
    same = [0] * n
    for i, a in enumerate(events):
        row = prow = srow = 0
        for j, b in enumerate(events):
            if i == j:
                continue
            if a.init:
                if not b.init:
                    row |= 1 << j
            elif not b.init and a.epoch <= b.clock[a.thread]:
                row |= 1 << j
                if a.thread == b.thread:
                    prow |= 1 << j
            if a.loc is not None and a.loc == b.loc:
                srow |= 1 << j
        hb[i], po[i], same[i] = row, prow, srow
    rf = [0] * n
    mo = [0] * n
    fr = [0] * n
    for stores in words.values():
        ids = [index[id(s.event)] for s in stores]
        after = 0
        for k in range(len(stores) - 1, -1, -1):
            s = stores[k]
            i = ids[k]
            mo[i] |= after
            for r in s.readers:
                j = index.get(id(r))
                if j is None:
                    continue
                rf[i] |= 1 << j
                fr[j] |= after & ~(1 << j)
            after |= 1 << i
    po_nl = [po[i] & ~same[i] for i in range(n)]
    scb = [po[i] | (hb[i] & same[i]) | mo[i] | fr[i] for i in range(n)]
    mid = _compose(_compose(po_nl, hb), po_nl)
    scb = [scb[i] | mid[i] for i in range(n)]
    fences = [k for k in sc if events[k].kind == "F"]
    sc_mask = 0
    for k in sc:
        sc_mask |= 1 << k
    hb_pred = [0] * n
    for i in range(n):
        row = hb[i]
        while row:
            low = row & -row
            hb_pred[low.bit_length() - 1] |= 1 << i
            row ^= low
    psc = {}
    for a in sc:
        left = (1 << a) | (hb[a] if events[a].kind == "F" else 0)
        reach = 0
        row = left
        while row:
            low = row & -row
            reach |= scb[low.bit_length() - 1]
            row ^= low
        targets = 0
        for b in sc:
            right = (1 << b) | (hb_pred[b] if events[b].kind == "F" else 0)
            if reach & right:
                targets |= 1 << b
        psc[a] = targets
    if len(fences) >= 2:
        eco = _closure([rf[i] | mo[i] | fr[i] for i in range(n)])
        through = _compose(_compose(hb, eco), hb)
        fmask = 0
        for f in fences:
            fmask |= 1 << f
        for f in fences:
            psc[f] |= (hb[f] | through[f]) & fmask
    # acyclic? (Kahn on the SC events)
    indeg = {a: 0 for a in sc}
    for a in sc:
        row = psc[a] & sc_mask
        while row:
            low = row & -row
            indeg[low.bit_length() - 1] += 1
            row ^= low
    ready = [a for a in sc if indeg[a] == 0]
    seen = 0
    while ready:
        a = ready.pop()
        seen += 1
        row = psc[a] & sc_mask
        while row:
            low = row & -row
            b = low.bit_length() - 1
            indeg[b] -= 1
            if indeg[b] == 0:
                ready.append(b)
            row ^= low
    return seen == len(sc)
