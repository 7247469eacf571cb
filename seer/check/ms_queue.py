"""Bounded-exhaustive checks of the Michael-Scott intakes (:mod:`seer.queues.ms`).

They drive :class:`~seer.queues.ms.MsWorker` through the calls the runtime makes
(``set_epoch``, ``send``/``send_all``, ``merge``; a barrier between windows) under
:func:`seer.check.explore`, like :func:`seer.check.queues.leq_check` does for the Treiber
intakes, and state what the intake protocol (:mod:`seer.queues.protocol`) demands at the
end: nothing lost, nothing duplicated, every record accounted for once.

==============  =============================================================  ==============
check           what runs                                                      planted bugs
==============  =============================================================  ==============
``ms``          two producers send to entity 0 across two windows while its    ``plain-link``,
                claimer merges it (window 1) and forwards what it got to       ``no-recheck``,
                entity 1 in the records it just freed (the old dummies), so    ``relaxed-link``
                records are reused while a producer may hold a stale tail;
                window 2: producer 0 sends again, the claimer merges both
==============  =============================================================  ==============

The planted bugs change one operation of the unchanged :class:`~seer.queues.ms.MsWorker`
through its accessor:

* ``plain-link``: the link CAS of the enqueue as a load, a compare and a store. Two
  producers that both saw the tail's NIL link both "succeed"; one record is lost, and
  the claimer walks off the end of the list (1 preemption).
* ``no-recheck``: the enqueue's re-read of ``Tail`` sees no change. A producer that read
  ``Tail = d`` is preempted; the claimer dequeues past ``d``, frees it and reuses it to
  forward an event to entity 1; the producer then CASes ``d``'s fresh NIL link and its
  event lands in entity 1's queue: MS's stale-tail ABA (1 preemption).
* ``relaxed-link``: the producers' link CAS with a relaxed order instead of release. Every
  schedule still delivers every event (on x86 it would always work), but the claimer
  reads the record's side-table slot with nothing ordering the sender's write before
  it: the explorer's race check reports a data race on ``ev_side`` (1 preemption).

Bounds: every schedule with at most 1 preemption (670 schedules, about 1.5 s); with 2
(``ms_check().run(preemptions=2)``) 21,372 schedules, about 50 s, also pass.

``python -c "from seer.check.ms_queue import run_all; run_all(progress=print)"`` runs them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from seer.check import queues
from seer.check.barrier import Barrier
from seer.check.explorer import Report
from seer.check.queues import Check, _ev, intake_producer
from seer.queues.atomic import ACQUIRE, RELAXED, RELEASE
from seer.queues.ms import MsIntakes, MsWorker

__all__ = ["CHECKS", "ms_check", "run_all"]

BUGS = ("plain-link", "no-recheck", "relaxed-link")


class _PlainLinkAccessor:
    """A planted bug: the accessor's compare-exchange on ``next`` words (index ``>=
    first_link``) is a load, a compare in Python and a store: two scheduling points, so
    two producers that both saw a NIL link both "succeed" and one record is lost."""

    def __init__(self, acc: Any, first_link: int) -> None:
        self._acc, self._first = acc, first_link
        self.words, self.arg, self.desired, self.result = acc.words, acc.arg, acc.desired, \
            acc.result
        self.fn_load, self.fn_store = acc.fn_load, acc.fn_store
        self._s = acc.scratch_view()

    def scratch_view(self) -> memoryview:
        return self._s

    def fn_cas(self, i: int, arg: int, desired: int, order: int, failure: int) -> bool:
        if i < self._first:
            return self._acc.fn_cas(i, arg, desired, order, failure)
        s, acc = self._s, self._acc
        expected, new = s[arg], s[desired]
        observed = acc.load(i, ACQUIRE)
        if observed != expected:
            s[arg] = observed
            return False
        acc.store(i, new, RELEASE)  # BUG: another link may have landed since the load
        return True


class _NoRecheckAccessor(_PlainLinkAccessor):
    """A planted bug: the enqueue's relaxed re-read of ``Tail`` (words ``n .. 2n``)
    returns what the acquire read before it saw, as if the re-check were not there. A
    producer holding a stale tail then CASes the link of a record that was freed and
    reused meanwhile."""

    def __init__(self, acc: Any, n: int) -> None:
        super().__init__(acc, 1 << 62)  # every CAS the real one
        self._n = n
        self._last: dict[int, int] = {}
        self.fn_load = self._load_tail

    def _load_tail(self, i: int, order: int, result: int) -> None:
        s = self._s
        if self._n <= i < 2 * self._n and order == RELAXED and i in self._last:
            s[result] = self._last.pop(i)  # BUG: the re-check sees no change
            return
        self._acc.fn_load(i, order, result)
        if self._n <= i < 2 * self._n and order == ACQUIRE:
            self._last[i] = s[result]


class _RelaxedLinkAccessor(_PlainLinkAccessor):
    """A planted bug: the link CAS (words ``>= first_link``) with a *relaxed* success
    order in place of release, so it publishes nothing: the claimer reads the record's
    side-table slot with no happens-before from the sender's write (a data race)."""

    def __init__(self, acc: Any, first_link: int) -> None:
        super().__init__(acc, first_link)
        self.fn_cas = self._relaxed_cas

    def _relaxed_cas(self, i: int, arg: int, desired: int, order: int, failure: int) -> bool:
        if i >= self._first:
            order = RELAXED  # BUG: the link must be a release
        return self._acc.fn_cas(i, arg, desired, order, failure)


def ms_check(*, producers: int = 2, bug: str | None = None) -> Check:
    """The MS intakes of two entities over two windows (module docstring).

    Window 1: producer ``i`` sends one event to entity 0 (``send`` for even ``i``,
    ``send_all`` for odd, as the runtime's publish); the claimer merges entity 0 and sends
    each event it got on to entity 1 (sequence + 100), in the records the merge freed.
    Window 2 (after the barrier): producer 0 sends another event to entity 0; the claimer
    merges entities 0 and 1. The invariant merges what is left (a window 3), then: every
    event sent to entity 0 is in entity 0's heap or was forwarded, once; entity 1's heap
    holds only events for entity 1; and every arena record is in exactly one place (a
    slab's free list, the pool, a queue, or a dummy)."""
    if bug not in (None, *BUGS):
        raise ValueError(f"ms_check has no planted bug {bug!r} (use one of {BUGS})")
    threads = producers + 1

    class State:
        def __init__(self) -> None:
            self.q = MsIntakes.create(2, 16, n_slabs=threads, batch=2)
            arena = self.q.arena
            self.workers: list[MsWorker] = []
            for i in range(threads):
                slab = arena.slab(i)
                acc = self.q.words.accessor()
                if bug == "plain-link":
                    acc = _PlainLinkAccessor(acc, 2 * self.q.n_entities)
                elif bug == "relaxed-link" and i < producers:
                    acc = _RelaxedLinkAccessor(acc, 2 * self.q.n_entities)
                elif bug == "no-recheck" and i < producers:
                    acc = _NoRecheckAccessor(acc, self.q.n_entities)
                self.workers.append(MsWorker(self.q, slab, acc))
            self.barrier = Barrier(threads)
            self.sent: list[Any] = []  # events sent to entity 0 (intake_producer)
            self.forwarded: list[int] = []

    def claimer(state: State) -> None:
        w = state.workers[-1]
        w.set_epoch(1)
        heap = w.merge(0)
        out = [_ev(3.0, ev.seq + 100, 1) for ev in heap]  # the window's cross events
        state.forwarded += [ev.seq for ev in heap]
        heap.clear()
        w.send_all(out)  # reuses the freed dummies of entity 0
        state.barrier.wait()
        w.set_epoch(2)
        w.merge(0)
        w.merge(1)

    def invariant(state: State) -> None:
        q, w = state.q, state.workers[-1]
        w.set_epoch(3)
        w.merge(0)
        w.merge(1)
        h0, h1 = q.heaps
        assert all(ev.target == 0 for ev in h0) and all(ev.target == 1 for ev in h1), (
            f"an event in the wrong queue: entity 0 has {sorted(h0)}, entity 1 {sorted(h1)}")
        got0 = sorted(ev.seq for ev in h0)
        got1 = sorted(ev.seq - 100 for ev in h1)
        assert got1 == sorted(state.forwarded), (
            f"forwarded {sorted(state.forwarded)}, entity 1 received {got1}")
        got = sorted(got0 + state.forwarded)
        want = sorted(ev.seq for ev in state.sent)
        assert got == want, (f"sent {want} to entity 0; merged {got} (lost "
                             f"{sorted(set(want) - set(got))})")
        held = [h for wk in state.workers for h in wk.slab.free_list]
        held += q.arena._pool + q.dummies()
        assert sorted(held) == list(range(q.arena.capacity)), (
            f"records not each in one place: {sorted(held)}")

    return Check(f"ms{'/' + bug if bug else ''}", State,
                 (*(intake_producer(i) for i in range(producers)), claimer), invariant,
                 {"preemptions": 1},
                 f"{producers} producers, 1 claimer forwarding to a 2nd entity, 2 windows; "
                 "every schedule with <= 1 preemption")


#: name -> (check factory, its planted bugs)
CHECKS: dict[str, tuple[Callable[..., Check], tuple[str, ...]]] = {"ms": (ms_check, BUGS)}


def run_all(*, planted: bool = True, progress: Callable[[str], None] | None = None
            ) -> list[tuple[str, Report]]:
    """Run the MS check, and with ``planted`` each planted bug; ``[(name, report)]``."""
    return queues.run_all(planted=planted, progress=progress, checks=CHECKS)
