"""The mistakes ``docs/tutorial-scheduler.md`` warns about, each one line away from
:mod:`examples.locality_steal`, and what catches each of them.

    python -m examples.mistakes              # every mistake, with the message it produces
    python -m examples.mistakes plain-read   # one of them

Each claimer bug changes only ``_take``, the claim itself. The last mistake is in a model,
not in a strategy: a handler that reads another entity's *live* row.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import seer
from examples.locality_steal import LocalityClaimer, LocalitySteal, audit_claims
from seer.busywork import BusyWork
from seer.sched import SeerRuntime
from seer.testing import RandomModel, assert_equivalent, assert_states_identical

__all__ = ["MISTAKES", "FullChunksOnly", "LiveNeighbour", "Overlapping", "PlainRead", "main"]


# -- claimers that break "each item to exactly one thread" -----------------------------------
class Overlapping(LocalityClaimer):
    """Mistake 1: an off-by-one hands the first item of the next chunk out twice."""

    __slots__ = ()

    def _take(self, word: int, chunk: int, end: int) -> tuple[int, int] | None:
        start = self._acc.fetch_add(word, chunk)
        return (start, min(start + chunk + 1, end)) if start < end else None  # BUG: + 1


class FullChunksOnly(LocalityClaimer):
    """Mistake 2: only whole chunks are handed out; the short last one is dropped, but the
    cursor has already moved past it, so nobody ever runs those items."""

    __slots__ = ()

    def _take(self, word: int, chunk: int, end: int) -> tuple[int, int] | None:
        start = self._acc.fetch_add(word, chunk)
        if start + chunk > end:  # BUG: should be `start >= end`, and stop = min(..., end)
            return None
        return start, start + chunk


class PlainRead(LocalityClaimer):
    """Mistake 3: read the cursor, then write it: two steps, so two threads can read the
    same value between them and both take the same range. Right on one thread."""

    __slots__ = ()

    def _take(self, word: int, chunk: int, end: int) -> tuple[int, int] | None:
        start = self._acc.load(word)          # BUG: a load ...
        self._acc.store(word, start + chunk)  # ... and a store are not one fetch_add
        return (start, min(start + chunk, end)) if start < end else None


def buggy(claimer: type[LocalityClaimer]) -> LocalitySteal:
    """:class:`LocalitySteal` with ``claimer`` instead of the right one."""
    assignment = LocalitySteal()
    assignment.claimer_class = claimer
    assignment.name = f"locality-{claimer.__name__}"
    return assignment


# -- a model that reads another entity's live row --------------------------------------------
class LiveNeighbour(seer.Model):
    """Mistake 4: every step each entity averages itself with its right neighbour, reading
    the neighbour from ``self.live`` (the runtime's *current* state) instead of
    ``ctx.snapshot`` (the state at the step start). Serially, entity ``e`` runs before
    ``e + 1`` and sees its old value; on threads it depends on who got there first."""

    kinds = ("tick",)
    action_kind = "tick"
    lookahead = 0.5
    fields = {"x": ((), np.float64)}  # noqa: RUF012
    live: Any = None  # set to runtime.state by the user: the mistake

    def __init__(self, n_entities: int) -> None:
        super().__init__(n_entities)
        self.busy = BusyWork(20.0)  # some work per event, so that threads overlap

    def init_entity(self, ctx: seer.Context) -> None:
        ctx.row.x = float(ctx.id)

    def sample_actions(self, step: int) -> list[int]:
        return [0] * self.n_entities

    def on_tick(self, ctx: seer.Context, event: Any) -> None:
        right = (ctx.id + 1) % self.n_entities
        self.busy()
        ctx.row.x = 0.5 * (ctx.row.x + self.live.x[right])  # BUG: ctx.snapshot.x[right]

    def outputs(self, entity: int, state: seer.StateArrays,
                start: seer.StateArrays) -> tuple[Any, float, bool, bool, dict]:
        return float(state.x[entity]), 0.0, False, False, {}


# -- what each mistake produces ----------------------------------------------------------------
def _equivalence(claimer: type[LocalityClaimer], threads: int = 2, models: int = 5) -> str:
    """assert_equivalent on up to ``models`` RandomModels (20 µs per event, so that threads
    overlap); the first failure, or that all passed."""
    for s in range(models):
        model = RandomModel(200, seed=s, fanout=3, lookahead=0.0 if s % 2 else 0.25,
                            cost_us=20.0)
        try:
            assert_equivalent(lambda m: SeerRuntime(m, threads=threads,
                                                         assignment=buggy(claimer)),
                              model, seeds=[s], steps=5)
        except Exception as exc:  # AssertionError, or a HandlerError from the model
            return (f"assert_equivalent ({threads} threads), model {s + 1} of {models}: "
                    f"{type(exc).__name__}: {exc}")
    return f"assert_equivalent ({threads} threads): passed on {models} models (unnoticed)"


def _audit(claimer: type[LocalityClaimer], threads: int, windows: int,
           repeats: int = 1) -> str:
    """audit_claims ``repeats`` times; how many failed, and the first message."""
    failures = []
    for r in range(repeats):
        try:
            audit_claims(buggy(claimer), threads, windows=windows, seed=r)
        except AssertionError as exc:
            failures.append(str(exc))
    runs = f"{repeats} audits" if repeats > 1 else "audit"
    head = f"audit_claims ({threads} threads, {windows} windows), {runs}: "
    if not failures:
        return head + "passed"
    return head + f"{len(failures)} failed; AssertionError: {failures[0]}"


def overlapping() -> list[str]:
    return [_audit(Overlapping, 1, 1), _equivalence(Overlapping)]


def full_chunks_only() -> list[str]:
    from workloads.synthetic import BenchModel

    lines = [_audit(FullChunksOnly, 2, 40), _equivalence(FullChunksOnly)]
    try:  # a model without RandomModel's own time check
        assert_equivalent(lambda m: SeerRuntime(m, threads=2,
                                                     assignment=buggy(FullChunksOnly)),
                          BenchModel(300), seeds=[0], steps=4)
    except AssertionError as exc:
        lines.append(f"assert_equivalent on BenchModel(300): AssertionError: {exc}")
    return lines


def plain_read() -> list[str]:
    lines = [_audit(PlainRead, 1, 200, repeats=5)]  # alone, load + store is as good
    for threads in (2, 4):
        lines.append(_audit(PlainRead, threads, 200, repeats=10))
    lines.append(_equivalence(PlainRead, threads=2))
    lines.append(_equivalence(PlainRead, threads=4))
    return lines


def live_neighbour() -> list[str]:
    lines = []
    for name, threads in (("serial", 1), ("locality", 1), ("locality", 2)):
        ref_model, model = LiveNeighbour(400), LiveNeighbour(400)
        reference = seer.SerialRuntime(ref_model, debug=True)  # debug checks writes only
        candidate = seer.make_runtime(model, name, threads=threads)
        ref_model.live, model.live = reference.state, candidate.state
        with reference, candidate:
            reference.reset(0)
            candidate.reset(0)
            for t in range(3):
                reference.step(ref_model.sample_actions(t))
                candidate.step(model.sample_actions(t))
            try:
                assert_states_identical(reference, candidate, f"{name}({threads}) vs serial "
                                        "after 3 steps: ")
                lines.append(f"{name}({threads}): identical to serial")
            except AssertionError as exc:
                lines.append(f"AssertionError: {exc}")
    return lines


MISTAKES: dict[str, Callable[[], list[str]]] = {
    "overlapping": overlapping, "full-chunks-only": full_chunks_only,
    "plain-read": plain_read, "live-neighbour": live_neighbour}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.mistakes",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("which", nargs="*", metavar="MISTAKE",
                        help=f"some of {', '.join(MISTAKES)} (default: all)")
    args = parser.parse_args(argv)
    for name in args.which:
        if name not in MISTAKES:
            parser.error(f"unknown mistake {name!r}; choose from {', '.join(MISTAKES)}")
    for name in args.which or MISTAKES:
        print(f"== {name}")
        for line in MISTAKES[name]():
            print(f"   {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
