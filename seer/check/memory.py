"""The model memory: atomic words with store histories, plain data with race checks.

One :class:`Memory` per execution of a check. Threads are numbered ``0 .. n - 1`` (the
workers) and ``n`` (the *main* thread, which runs the set-up before the workers start and
the invariant after they all end). Each thread has a vector clock; happens-before (HB) is
program order plus synchronisation:

* a load or read-modify-write with an *acquire* order (acquire, acq_rel, seq_cst) that
  reads a store carrying a release clock joins that clock into its thread's;
* a store with a *release* order (release, acq_rel, seq_cst) carries its thread's clock;
  a read-modify-write that is not a release passes on the clock of the store it read
  (C11's release sequence: a release store and the RMWs after it in the word's
  modification order); a relaxed plain store ends the sequence;
* starting the workers after the set-up, a :class:`~seer.check.Barrier`, and joining the
  workers before the invariant.

Each atomic word keeps its whole modification order (every store, with its value, thread,
clock and release clock). In the default *sequentially consistent* mode every load reads
the latest store, so an execution is an interleaving and nothing more. In *weak* mode a
relaxed or acquire load may read any store that C11's coherence rules allow:

* not older than the newest store this thread has already read or written in that word
  (read-read and write-read coherence);
* not older than the newest store that happens-before the load (a store that HB the load
  hides the ones before it).

That choice is a decision of the explorer, like the choice of thread, so a check in weak
mode also explores which store each load reads. A thread that spins
(:func:`seer.check.yield_now`) sees every store made before it goes on: C11 promises that
stores become visible in finite time, and this keeps spin loops finite; for the same reason
a thread reads one stale store of a word at most :data:`STALE_REPEATS` (2) times in a row.
Read-modify-writes always read the latest store (C11 guarantees it); seq_cst loads read the
latest store too, which is stronger than C11 when seq_cst and weaker orders are mixed on one
word. Fences are not modelled (the project has none), nor is out-of-thin-air reasoning: a
load can only read a store that an execution has already made.

Plain data (the arena's ``next`` links and side table, ring slots) is checked for races,
as a vector-clock race detector does: a read must happen after the last write, and a write
after the last write and every read since, unless the same thread made them. A race is a
failure of the execution, reported with both accesses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from seer.queues.atomic import ACQ_REL, ACQUIRE, RELEASE, SEQ_CST

__all__ = ["DataRace", "Memory", "Store"]

#: How many loads in a row may read one stale store of a word (C11's "stores become
#: visible in finite time", made finite: a loop that re-reads a word sees it change).
STALE_REPEATS = 2

_ACQUIRES = frozenset({ACQUIRE, ACQ_REL, SEQ_CST})
_RELEASES = frozenset({RELEASE, ACQ_REL, SEQ_CST})


def _join(into: list[int], other: list[int]) -> None:
    for k, v in enumerate(other):
        if v > into[k]:
            into[k] = v


@dataclass
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


class Memory:
    """Words and plain locations of one execution (module docstring)."""

    def __init__(self, threads: int, weak: bool) -> None:
        self.n = threads + 1  # the workers and the main thread (index ``threads``)
        self.main = threads
        self.weak = weak
        self.clocks = [[0] * self.n for _ in range(self.n)]
        for t in range(self.n):
            self.clocks[t][t] = 1
        # per thread: location -> index of the newest store it read or wrote
        self.seen: list[dict[int, int]] = [{} for _ in range(self.n)]
        self.words: dict[int, list[Store]] = {}
        self.data: dict[object, _Data] = {}
        self.step = 0  # set by the scheduler: the step being run (0: set-up)
        self.writers: list[int] = []  # the thread of every store, in order (spin-waits)
        # per thread: location -> (index of the stale store its last loads read, how many
        # times in a row): a thread reads one stale store at most STALE_REPEATS times
        self.repeats: list[dict[int, tuple[int, int]]] = [{} for _ in range(self.n)]

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
            self.seen[self.main].update(
                {loc: max(i, self.seen[self.main].get(loc, -1))
                 for loc, i in self.seen[t].items()})

    def barrier(self, threads: list[int]) -> None:
        """``threads`` pass a barrier together: each one's clock becomes their join."""
        joined = [0] * self.n
        for t in threads:
            _join(joined, self.clocks[t])
        for t in threads:
            self.clocks[t][:] = joined
            self.clocks[t][t] += 1

    # -- atomic words ----------------------------------------------------------------------
    def _history(self, loc: int, initial: int) -> list[Store]:
        stores = self.words.get(loc)
        if stores is None:
            # The value the word held before the check: made by the set-up, so it
            # happens-before everything (clock all zeros).
            stores = self.words[loc] = [Store(initial, self.main, 0, [0] * self.n, None)]
        return stores

    def readable(self, t: int, loc: int, initial: int, order: int) -> list[Store]:
        """The stores a load by ``t`` with ``order`` may read, the latest first."""
        stores = self._history(loc, initial)
        if not self.weak or order == SEQ_CST or len(stores) == 1:
            return [stores[-1]]
        clock = self.clocks[t]
        low = self.seen[t].get(loc, 0)
        index, count = self.repeats[t].get(loc, (-1, 0))
        if count >= STALE_REPEATS and index + 1 < len(stores):
            low = max(low, index + 1)  # time passes: that store is not readable again
        for s in reversed(stores):
            if s.index <= low:
                break
            if s.clock[s.thread] <= clock[s.thread]:  # s happens-before the load
                low = s.index
                break
        return stores[low:][::-1]

    def read(self, t: int, loc: int, store: Store, order: int) -> int:
        """``t`` loads ``store`` (one of :meth:`readable`) with ``order``."""
        self.seen[t][loc] = max(store.index, self.seen[t].get(loc, 0))
        repeats = self.repeats[t]
        if store.index == len(self.words[loc]) - 1:
            repeats.pop(loc, None)
        else:
            index, count = repeats.get(loc, (-1, 0))
            repeats[loc] = (store.index, count + 1 if index == store.index else 1)
        clock = self.clocks[t]
        if store.sync is not None and order in _ACQUIRES:
            _join(clock, store.sync)
        clock[t] += 1
        return store.value

    def write(self, t: int, loc: int, initial: int, value: int, order: int) -> None:
        """A plain (non-RMW) atomic store."""
        stores = self._history(loc, initial)
        clock = self.clocks[t]
        sync = list(clock) if order in _RELEASES else None
        stores.append(Store(value, t, self.step, list(clock), sync, len(stores)))
        self.writers.append(t)
        self.seen[t][loc] = len(stores) - 1
        clock[t] += 1

    def rmw(self, t: int, loc: int, initial: int, order: int, new: object) -> int:
        """A read-modify-write: reads the latest store, and (``new(old)`` not None)
        stores ``new(old)`` after it; returns the old value."""
        stores = self._history(loc, initial)
        last = stores[-1]
        clock = self.clocks[t]
        if last.sync is not None and order in _ACQUIRES:
            _join(clock, last.sync)
        value = new(last.value)
        if value is not None:
            if order in _RELEASES:
                sync = list(clock)
                if last.sync is not None:  # the release sequence it continues
                    _join(sync, last.sync)
            else:
                sync = last.sync
            stores.append(Store(value, t, self.step, list(clock), sync, len(stores)))
            self.writers.append(t)
        self.seen[t][loc] = len(stores) - 1
        clock[t] += 1
        return last.value

    def catch_up(self, t: int) -> None:
        """After ``t`` yielded (a spin-wait): its later loads read the latest store of
        every word, or a newer one. C11 promises that stores become visible in finite time;
        this makes it "by the next spin", which keeps spin loops finite (otherwise a load
        could read a stale value forever) without hiding a bug that needs one stale read."""
        seen = self.seen[t]
        for loc, stores in self.words.items():
            seen[loc] = len(stores) - 1

    def latest(self, loc: int, initial: int) -> Store:
        return self._history(loc, initial)[-1]

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
