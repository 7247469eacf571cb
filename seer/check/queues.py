"""Bounded-exhaustive checks of the runtime's own lock-free structures.

Each check drives the project's classes (the LEQ worker, the arena's slabs, the PEL's
claimers, the MPMC ring) through the calls the runtime makes, at 2-3 threads and small
sizes, under :func:`seer.check.explore`, and states what must hold at the end. Each has a
planted bug (``bug=...``) that the same check must find, so a check that cannot fail is
caught too:

==============  ========================================================  ==================
check           what runs                                                 planted bug
==============  ========================================================  ==================
``leq``         two producers ``send``/``send_all`` to one entity across  ``lost-take``: the
                two window parities while its claimer ``merge``\\ s it     take as a load and
                (the exchange in the first, the plain take of the         a store, not one
                previous parity in the second; a barrier between)         exchange
``arena``       records cross slabs: T0 sends, T1 merges (freeing into    ``late-write``: a
                its slab) and sends them on with the freed records; T0    record written
                merges them after the barrier (race check on ``next``     after its push
                and the side table)                                       published it
``pel``         2-3 home claimers (the ``steal`` assignment) claim one    ``double-claim``:
                window's items                                            fetch_add as load
                                                                          + store
``ring``        two producers and a consumer over ``MpmcRing``            ``relaxed-seq``:
                                                                          slots published
                                                                          with relaxed stores
==============  ========================================================  ==================

:func:`claims_check` checks any assignment strategy's claimers the same way (the
tutorial's own strategies and mistakes included). ``python -m seer.check`` runs them all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from seer.check.barrier import Barrier
from seer.check.explorer import Report, explore
from seer.events import make_event
from seer.interprocess.ring import MpmcRing
from seer.queues import NIL, LeqWorker, LocalEventQueues, ParallelExecutiveList
from seer.queues.atomic import RELAXED

__all__ = ["CHECKS", "Check", "arena_check", "claims_check", "intake_producer", "leq_check",
           "pel_check", "ring_check", "run_all"]


@dataclass
class Check:
    """A check ready for :func:`explore`: ``run()`` explores it with its own bounds."""

    name: str
    setup: Callable[[], Any]
    workers: tuple[Callable[[Any], Any], ...]
    invariant: Callable[[Any], Any] | None
    options: dict[str, Any] = field(default_factory=dict)
    bounds: str = ""

    def run(self, **overrides: Any) -> Report:
        options = {"schedules": 100_000, **self.options, **overrides}
        return explore(self.setup, *self.workers, invariant=self.invariant, **options)


# -- LEQ ------------------------------------------------------------------------------------
class _LostTakeWorker(LeqWorker):
    """The planted bug: ``take`` as a load then a store, not one exchange, so a push
    between the two is lost."""

    __slots__ = ()

    def take(self, entity: int) -> int:
        acc = self._acc
        h = acc.load(self.offset + entity)
        acc.store(self.offset + entity, NIL)
        return h


def _ev(tau: float, seq: int, target: int) -> Any:
    return make_event(tau, seq, target, 0, None)


def intake_producer(i: int) -> Callable[[Any], None]:
    """Producer ``i`` of an intake check: in window 1 it sends one event to entity 0
    (``send`` for even ``i``, ``send_all``, the runtime's publish, for odd); after the
    barrier, producer 0 sends another. Each event goes into ``state.sent`` first. The
    state has ``workers`` (producer ``i``'s is ``workers[i]``), ``barrier`` and ``sent``."""
    def run(state: Any) -> None:
        w = state.workers[i]
        w.set_epoch(1)
        ev = _ev(1.0, 10 + i, 0)
        state.sent.append(ev)
        if i % 2:
            w.send_all([ev])
        else:
            w.send(0, ev)
        state.barrier.wait()
        w.set_epoch(2)
        if i == 0:
            ev = _ev(2.0, 20, 0)
            state.sent.append(ev)
            w.send(0, ev)
    return run


def leq_check(*, producers: int = 2, bug: str | None = None) -> Check:
    """The LEQ intake of one entity across two window parities (module docstring): in
    window 1 the producers push one event each (``send``, ``send_all``) while the claimer
    merges, taking the intake with the exchange; after the barrier, producer 0 pushes
    again while the claimer merges window 1's leftovers with the plain take."""
    if bug not in (None, "lost-take"):
        raise ValueError(f"leq_check has no planted bug {bug!r} (use 'lost-take')")
    threads = producers + 1

    class State:
        def __init__(self) -> None:
            self.leqs = LocalEventQueues.create(1, 32, n_slabs=threads, batch=4, epochs=2)
            self.workers = [self.leqs.worker(self.leqs.arena.slab(i)) for i in range(threads)]
            if bug == "lost-take":
                self.workers[-1] = _LostTakeWorker(self.leqs, self.leqs.arena.slab(producers),
                                                   self.leqs.words.accessor())
            self.barrier = Barrier(threads)
            self.sent: list[Any] = []

    def claimer(state: State) -> None:
        w = state.workers[-1]
        w.set_epoch(1)
        w.merge(0)
        state.barrier.wait()
        w.set_epoch(2)
        w.merge(0)

    def invariant(state: State) -> None:
        w = state.workers[-1]
        for epoch in (3, 4):  # the next windows' merges take what is left
            w.set_epoch(epoch)
            w.merge(0)
        got, want = sorted(state.leqs.heaps[0]), sorted(state.sent)
        assert got == want, (f"{len(want)} events sent, the claimer's heap has {len(got)}: "
                             f"lost {sorted(set(want) - set(got))}")
        held = [h for wk in state.workers for h in wk.slab.free_list]
        assert len(held) == len(set(held)), "a record is free in two slabs"

    return Check(f"leq{'/' + bug if bug else ''}", State,
                 (*(intake_producer(i) for i in range(producers)), claimer), invariant,
                 {"preemptions": 2},
                 f"{producers} producers, 1 claimer, 2 window parities; every schedule "
                 "with <= 2 preemptions")


# -- arena ------------------------------------------------------------------------------------
def _send_late(w: Any, events: list) -> int:
    """The planted bug: each record is pushed first and written after (the push's
    release published nothing)."""
    for ev in events:
        h = w.slab.alloc()
        w.push(ev.target, h)
        w.slab.write_event(h, ev)
    return len(events)


def arena_check(*, bug: str | None = None) -> Check:
    """Records that cross slabs (module docstring). Window 1: T0 sends two events to
    entity 1. Window 2: T0 sends a third while T1 merges entity 1 (the plain take of
    window 1's chain, and the exchange if the third is there) and sends each event on to
    entity 0 in the records it just freed. Window 3: T0 merges entity 0 while T1 merges
    entity 1 again and sends on what it finds. Entity 0 must end with all three."""
    if bug not in (None, "late-write"):
        raise ValueError(f"arena_check has no planted bug {bug!r} (use 'late-write')")

    class State:
        def __init__(self) -> None:
            self.leqs = LocalEventQueues.create(2, 8, n_slabs=2, batch=2, epochs=2)
            self.workers = [self.leqs.worker(self.leqs.arena.slab(i)) for i in range(2)]
            self.barrier = Barrier(2)

    def first(state: State) -> None:
        w = state.workers[0]
        w.set_epoch(1)
        w.send_all([_ev(1.0, 1, 1), _ev(1.0, 2, 1)])
        state.barrier.wait()
        w.set_epoch(2)
        if bug:
            _send_late(w, [_ev(2.0, 3, 1)])
        else:
            w.send_all([_ev(2.0, 3, 1)])
        state.barrier.wait()
        w.set_epoch(3)
        w.merge(0)

    def second(state: State) -> None:
        w = state.workers[1]
        for epoch in (1, 2, 3):
            w.set_epoch(epoch)
            if epoch > 1:
                heap = w.merge(1)  # frees the records it takes into this slab ...
                w.send_all([_ev(3.0, ev.seq + 10, 0) for ev in heap])  # ... and reuses them
                heap.clear()
            if epoch < 3:
                state.barrier.wait()

    def invariant(state: State) -> None:
        w = state.workers[0]
        w.set_epoch(4)
        w.merge(0)
        got = sorted(ev.seq for ev in state.leqs.heaps[0])
        assert got == [11, 12, 13], f"entity 0 received {got}, not [11, 12, 13]"

    return Check(f"arena{'/' + bug if bug else ''}", State, (first, second), invariant,
                 {"preemptions": 2}, "2 slabs, 3 records sent on through the other slab "
                 "over 3 windows; every schedule with <= 2 preemptions")


# -- PEL ---------------------------------------------------------------------------------------
class _LostUpdateAccessor:
    """An accessor whose ``fetch_add`` is a load then a store (not one atomic)."""

    def __init__(self, acc: Any) -> None:
        self._acc = acc

    def load(self, i: int, order: int = RELAXED) -> int:
        return self._acc.load(i, order)

    def fetch_add(self, i: int, delta: int, order: int = RELAXED) -> int:
        old = self._acc.load(i, RELAXED)
        self._acc.store(i, old + delta, RELAXED)
        return old


def claims_check(assignment: Any = "steal", *, threads: int = 2, items: int = 6,
                 wrap: Callable[[Any], Any] | None = None, name: str = "pel") -> Check:
    """Every item of one window handed to exactly one claimer, for ``assignment`` (a name
    or an :class:`~seer.sched.assignment.Assignment`) at ``threads`` threads.
    ``wrap(claimer)`` may replace a claimer (a planted bug)."""
    from seer.sched.assignment import get_assignment

    strategy = get_assignment(assignment)

    class State:
        def __init__(self) -> None:
            self.pel = ParallelExecutiveList.create(items, segments=threads)
            strategy.publish(self.pel, np.arange(items, dtype=np.int64), threads, items)
            self.claimers = [strategy.claimer(self.pel, i, threads, None)
                             for i in range(threads)]
            if wrap is not None:
                self.claimers = [wrap(c) for c in self.claimers]
            self.got: list[list[int]] = [[] for _ in range(threads)]

    def claimer(i: int) -> Callable[[State], None]:
        def run(state: State) -> None:
            c = state.claimers[i]
            c.reset(threads)
            items_ = state.pel.items
            while (chunk := c.claim()) is not None:
                state.got[i].extend(int(x) for x in items_[chunk[0]:chunk[1]])
        return run

    def invariant(state: State) -> None:
        every = sorted(x for got in state.got for x in got)
        twice = sorted({x for x in every if every.count(x) > 1})
        never = sorted(set(range(items)) - set(every))
        assert not twice and not never, (f"items {twice} handed out more than once, "
                                         f"{never} never (claims: {state.got})")

    return Check(name, State, tuple(claimer(i) for i in range(threads)), invariant,
                 {"preemptions": 2 if threads == 2 else 1},
                 f"{threads} claimers, {items} items in {threads} home segments; every "
                 f"schedule with <= {2 if threads == 2 else 1} preemptions")


def pel_check(*, threads: int = 2, items: int = 6, bug: str | None = None) -> Check:
    """The PEL's home claimers (the ``steal`` assignment) on one window."""
    if bug not in (None, "double-claim"):
        raise ValueError(f"pel_check has no planted bug {bug!r} (use 'double-claim')")

    def wrap(c: Any) -> Any:
        c._acc = _LostUpdateAccessor(c._acc)
        return c

    return claims_check("steal", threads=threads, items=items,
                        wrap=wrap if bug else None,
                        name=f"pel{'/' + bug if bug else ''}")


# -- ring ---------------------------------------------------------------------------------------
def ring_check(*, bug: str | None = None) -> Check:
    """Two producers (two values each) and one consumer over an :class:`MpmcRing` of two
    slots: every value received once, each producer's in order."""
    if bug not in (None, "relaxed-seq"):
        raise ValueError(f"ring_check has no planted bug {bug!r} (use 'relaxed-seq')")
    from seer.check.execution import yield_now

    class State:
        def __init__(self) -> None:
            self.ring = MpmcRing.create(2)
            self.ports = [self.ring.port() for _ in range(3)]
            if bug == "relaxed-seq":
                for port in self.ports:
                    seq = port._seq
                    port._seq = _RelaxedStores(seq)
            self.got: list[int] = []

    def producer(i: int) -> Callable[[State], None]:
        def run(state: State) -> None:
            port = state.ports[i]
            for k in range(2):
                while not port.try_push(10 * (i + 1) + k):
                    yield_now()
        return run

    def consumer(state: State) -> None:
        port = state.ports[2]
        while len(state.got) < 4:
            v = port.try_pop()
            if v is None:
                yield_now()
            else:
                state.got.append(v)

    def invariant(state: State) -> None:
        got = state.got
        assert sorted(got) == [10, 11, 20, 21], f"received {got}"
        for first, second in ((10, 11), (20, 21)):
            assert got.index(first) < got.index(second), f"out of order: {got}"

    return Check(f"ring{'/' + bug if bug else ''}", State,
                 (producer(0), producer(1), consumer), invariant, {"preemptions": 1},
                 "2 producers x 2 values, 1 consumer, 2 slots; every schedule with <= 1 "
                 "preemption")


class _RelaxedStores:
    def __init__(self, acc: Any) -> None:
        self._acc = acc

    def load(self, i: int, *order: int) -> int:
        return self._acc.load(i, *order)

    def store(self, i: int, value: int, order: int = RELAXED) -> None:
        self._acc.store(i, value, RELAXED)  # BUG: the slot's publication must be release


#: name -> (check factory, its planted bug)
CHECKS: dict[str, tuple[Callable[..., Check], str]] = {
    "leq": (leq_check, "lost-take"),
    "arena": (arena_check, "late-write"),
    "pel": (pel_check, "double-claim"),
    "ring": (ring_check, "relaxed-seq"),
}


def run_all(names: list[str] | None = None, *, planted: bool = True,
            progress: Callable[[str], None] | None = None,
            checks: dict[str, tuple[Callable[..., Check], str | tuple[str, ...]]] = CHECKS,
            ) -> list[tuple[str, Report]]:
    """Run the checks ``names`` of ``checks`` (default: all of them), and with ``planted``
    each one's planted bugs too; ``[(name, report)]``. Raises nothing: read each report's
    ``failure``."""
    out = []
    for name in names or list(checks):
        factory, bugs = checks[name]
        bugs = (bugs,) if isinstance(bugs, str) else bugs
        for variant in ([None, *bugs] if planted else [None]):
            check = factory(bug=variant)
            report = check.run(raises=False)
            out.append((check.name, report))
            if progress is not None:
                progress(f"{check.name}: {report.schedules} schedules, {report.seconds:.2f} s, "
                         f"{'FAILED' if report.failure else 'ok'}")
    return out
