"""Exploring schedules: which executions to run, and what a failure looks like.

:func:`explore` runs a check's executions (:mod:`seer.check.execution`) one after another,
each with a fresh set-up, until one fails or the strategy has nothing left:

* ``"dfs"`` (the default): exhaustive depth-first search with *iterative preemption
  bounding* (Musuvathi and Qadeer, "Iterative context bounding for systematic testing of
  multithreaded programs", PLDI 2007, as in CHESS): every schedule with 0 preemptions,
  then every one with at most 1, and so on up to ``preemptions``. Most concurrency bugs
  need one or two preemptions, and the first failure found has the fewest.
* ``"dpor"``: exhaustive search with dynamic partial-order reduction (Flanagan and
  Godefroid, "Dynamic partial-order reduction for model checking software", POPL 2005):
  two operations are dependent when they touch the same word and one of them writes; at
  every state, for every thread that could run, the latest earlier dependent transition
  of another thread that does not happen-before it gets a backtracking point. With sleep
  sets (Godefroid 1996: :class:`_Sleeping`) each ordering of dependent operations runs at
  most once. Without a preemption bound (the default) a pass covers every interleaving
  of the scope (on code that spins without bound it may not finish). With one
  (``preemptions=k``) it is *bounded* partial-order reduction (Coons, Musuvathi and
  McKinley, "Bounded partial-order reduction", OOPSLA 2013): it runs only schedules with
  at most ``k`` preemptions, adding the conservative backtracking points that keep every
  ordering some such schedule reaches (and no sleep sets: :func:`_dpor`), so it runs a
  subset of what DFS runs at the same bound and reaches the same orderings. A failure it
  finds may have more preemptions than needed.
* ``"random"``: ``schedules`` executions, each decision uniformly at random (seeded).
* ``"pct"``: probabilistic concurrency testing (Burckhardt et al., "A randomized
  scheduler with probabilistic guarantees of finding bugs", ASPLOS 2010): random thread
  priorities and ``depth - 1`` random priority change points per execution, for larger
  scopes where a bug of depth ``depth`` is found with probability at least
  ``1 / (n * k ** (depth - 1))`` per execution (``n`` threads, ``k`` steps).

In weak-memory mode (``weak=True``, RC11) every strategy also decides which store each
load and read-modify-write reads and where each store goes in its word's modification
order (:mod:`seer.check.memory`); DFS and DPOR explore all of them. A DFS or DPOR run
stopped by ``schedules`` is INCOMPLETE (:attr:`Report.complete`), never a pass.

A failure is a worker's exception, the invariant failing (an exception, or returning
False), a data race on plain shared data, a deadlock (every live thread blocked), or an
execution longer than ``max_steps``. It comes with its *schedule*, a string that
:func:`replay` reruns exactly, and the interleaving step by step.
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seer.check.execution import Execution, Op, SleepBlocked, Step
from seer.check.session import Session
from seer.queues import atomic

__all__ = [
    "STRATEGIES",
    "CheckFailure",
    "Failure",
    "Report",
    "explore",
    "model_atomics",
    "replay",
]

STRATEGIES = ("dfs", "dpor", "random", "pct")
#: DFS's preemption bound when ``explore`` is given none (DPOR's: unbounded).
DFS_PREEMPTIONS = 2
#: Environment variable that makes every :func:`explore` replay this schedule instead
#: (what ``pytest --seer-replay=SCHEDULE`` sets).
REPLAY_ENV = "SEER_CHECK_REPLAY"


# -- schedules -------------------------------------------------------------------------------
def format_schedule(decisions: list[tuple], weak: bool) -> str:
    """``"sc:0*3,1,0"`` / ``"weak:0,r1,1"``: thread ids (``t*k``: k times in a row) and,
    in weak mode, ``rK``: a load read the store K places before the latest."""
    tokens: list[str] = []
    for kind, alternatives, index, _costs, _pre in decisions:
        tokens.append(str(alternatives[index]) if kind == "thread" else
                      f"{'m' if kind == 'mo' else 'r'}{index}")
    packed: list[str] = []
    for tok in tokens:
        if packed and packed[-1].split("*")[0] == tok:
            head, _, count = packed[-1].partition("*")
            packed[-1] = f"{head}*{int(count or 1) + 1}"
        else:
            packed.append(tok)
    return ("weak:" if weak else "sc:") + ",".join(packed)


_TOKEN = re.compile(r"^([rm]?)(\d+)(?:\*(\d+))?$")


def parse_schedule(schedule: str) -> tuple[bool, list[tuple[str, int]]]:
    """``(weak, [("thread", id) | ("read", k), ...])`` of a schedule string."""
    mode, sep, body = schedule.strip().partition(":")
    if not sep or mode not in ("sc", "weak"):
        raise ValueError(f"schedule {schedule!r} must start with 'sc:' or 'weak:'")
    out: list[tuple[str, int]] = []
    for tok in filter(None, body.split(",")):
        m = _TOKEN.match(tok.strip())
        if m is None:
            raise ValueError(f"schedule {schedule!r}: bad token {tok!r} (a thread id, 'rK' "
                             "or either followed by '*count')")
        kind = {"r": "read", "m": "mo", "": "thread"}[m.group(1)]
        out.extend([(kind, int(m.group(2)))] * int(m.group(3) or 1))
    return mode == "weak", out


# -- results ---------------------------------------------------------------------------------
@dataclass
class Failure:
    """A failing execution: what failed, its schedule, its interleaving."""

    kind: str
    error: BaseException | str
    thread: int
    schedule: str
    preemptions: int
    steps: list[Step]
    state: Any = None
    stale_reads: int = 0  # weak mode: loads that read a store older than the latest
    graph: dict = field(default_factory=dict)  # mo per word, for to_dot

    @property
    def weak_steps(self) -> str:
        """``"1 preemption, 2 stale reads"``: what the schedule needs beyond program
        order. A weak-mode failure with 0 preemptions and stale reads is not sequential:
        it needs the stale reads."""
        text = f"{self.preemptions} preemption{'' if self.preemptions == 1 else 's'}"
        if self.schedule.startswith("weak:"):
            text += f", {self.stale_reads} stale read{'' if self.stale_reads == 1 else 's'}"
        return text

    @property
    def message(self) -> str:
        e = self.error
        text = e if isinstance(e, str) else f"{type(e).__name__}: {e}"
        where = f" in T{self.thread}" if self.thread >= 0 else ""
        return f"{self.kind}{where}: {text}"

    def interleaving(self, *, main: bool = False) -> str:
        """The steps, one line each (``main=True``: the set-up's and the invariant's
        operations too)."""
        head = "step  thr   operation             word/location     value"
        lines = [str(s) for s in self.steps
                 if (main or s.thread >= 0) and (s.kind != "start" or s.detail)]
        return "\n".join([head, *lines])

    def to_trace(self) -> Any:
        """The interleaving as a :class:`seer.trace.Trace`: one track per thread, one
        slice per operation (1 µs per step), a flow arrow from each store to the loads and
        read-modify-writes that read it. Save it with ``.save(path)``; open in Perfetto."""
        from seer.check.explain import failure_trace

        return failure_trace(self)

    def to_dot(self) -> str:
        """The execution graph in Graphviz dot, as GenMC draws it: program order,
        reads-from (bold when it synchronises: an acquire reading a release), modification
        order and from-read (a load to the stores after the one it read) per word."""
        from seer.check.explain import failure_dot

        return failure_dot(self)

    def __str__(self) -> str:
        return (f"{self.message}\nschedule ({self.weak_steps}): {self.schedule!r}\n"
                f"replay: seer.check.replay({self.schedule!r}, setup, *workers, ...) or "
                f"pytest --seer-replay={self.schedule!r}\n{self.interleaving()}")


@dataclass
class Report:
    """What :func:`explore` did: ``schedules`` executions in ``seconds``; ``failure``
    (None: none failed); ``exhaustive``: every schedule within the bound was run.
    ``complete``: the scope finished (exhaustive for DFS and DPOR, every sampled schedule
    for random and PCT, the whole schedule for a replay); a DFS or DPOR run stopped by
    ``schedules=`` is INCOMPLETE, and says so. ``fit`` (a replay): the schedule fitted
    the execution to its end. ``dropped``: executions the memory model found to be no
    RC11 execution (counted in ``schedules``)."""

    strategy: str
    schedules: int
    seconds: float
    failure: Failure | None
    exhaustive: bool
    bound: int | None = None
    notes: list[str] = field(default_factory=list)
    complete: bool = True
    fit: bool = True
    dropped: int = 0

    @property
    def verdict(self) -> str:
        """``"FAILED"``, ``"INCOMPLETE"`` (no failure in an unfinished scope),
        ``"MISFIT"`` (a replayed schedule did not fit and nothing was explored after it)
        or ``"PASSED"``."""
        if self.failure is not None:
            return "FAILED"
        if not self.fit and self.strategy == "replay":
            return "MISFIT"
        return "PASSED" if self.complete else "INCOMPLETE"

    def __str__(self) -> str:
        runs = (f"{self.schedules} schedule{'' if self.schedules == 1 else 's'} in "
                f"{self.seconds:.2f} s")
        notes = "".join(f"\n  note: {n}" for n in self.notes)
        if self.failure is not None:
            return f"seer.check ({self.strategy}): FAILED after {runs}{notes}\n{self.failure}"
        if self.strategy in ("random", "pct"):
            scope = "a random sample of schedules (not exhaustive)"
        elif self.strategy == "replay":
            scope = "the schedule" if self.fit else "the schedule did NOT fit this check"
        elif self.bound is not None and self.strategy == "dpor":
            scope = (f"every ordering of dependent operations that a schedule with at most "
                     f"{self.bound} preemption{'' if self.bound == 1 else 's'} reaches")
        elif self.bound is not None:
            scope = f"every schedule with at most {self.bound} preemptions"
        else:
            scope = "every schedule up to reordering of independent operations"
        if self.verdict == "INCOMPLETE":
            return (f"seer.check ({self.strategy}): INCOMPLETE: {runs}, stopped before "
                    f"{scope} was explored (raise schedules=): no failure so far, no "
                    f"verdict{notes}")
        if self.verdict == "MISFIT":
            return f"seer.check (replay): MISFIT: {scope}{notes}"
        return f"seer.check ({self.strategy}): PASSED: {runs}, {scope}: no failure{notes}"


class CheckFailure(AssertionError):
    """Raised by :func:`explore` (``raises=True``) and :func:`replay`; ``.report``."""

    def __init__(self, report: Report) -> None:
        self.report = report
        super().__init__(str(report))


# -- strategies --------------------------------------------------------------------------------
class _Prefix:
    """Follows ``prefix`` (alternative indices), then the first alternative within
    ``bound`` preemptions (the running thread first, or the latest store)."""

    def __init__(self, prefix: list[int], bound: float, seen: list | None = None) -> None:
        self.prefix, self.bound, self.seen = prefix, bound, seen or []

    def choose(self, ex: Execution, kind: str, alternatives: list, costs: list[int]) -> int:
        k = len(ex.decisions)
        if k < len(self.prefix):
            return _prefix_choice(self.prefix, self.seen, k, kind, alternatives)
        return next(i for i, c in enumerate(costs) if ex.preemptions + c <= self.bound)


def _prefix_choice(prefix: list[int], seen: list, k: int, kind: str,
                   alternatives: list) -> int:
    """Decision ``k`` of a followed prefix: its alternative index, after checking that the
    execution offers what it offered when the prefix was recorded (``seen``)."""
    index = prefix[k]
    if index >= len(alternatives) or (k < len(seen) and seen[k] != (kind, alternatives)):
        raise _nondeterministic(k)
    return index


def _nondeterministic(k: int) -> RuntimeError:
    return RuntimeError(f"the check is not deterministic: decision {k + 1} offers other "
                        "choices than when the same schedule ran before (does it depend on "
                        "something outside the model: time, a random seed, state kept "
                        "between executions, another thread? build everything in setup)")


def _seen(decisions: list[tuple]) -> list[tuple[str, list]]:
    return [(kind, alternatives) for kind, alternatives, *_ in decisions]


def _checked(ex: Execution, prefix: list[int]) -> Execution:
    if ex.failure is None and len(ex.decisions) < len(prefix):
        raise _nondeterministic(len(ex.decisions))
    return ex


class _Replay:
    def __init__(self, decisions: list[tuple[str, int]]) -> None:
        self.decisions = decisions

    def choose(self, ex: Execution, kind: str, alternatives: list, costs: list[int]) -> int:
        k = len(ex.decisions)
        if k >= len(self.decisions):
            raise ReplayError(f"the schedule ends after {len(self.decisions)} decisions but "
                              "the execution goes on (another check, or the code changed?)")
        want_kind, value = self.decisions[k]
        if want_kind != kind:
            raise ReplayError(f"decision {k + 1} of the schedule is a {want_kind} choice; "
                              f"the execution asks for a {kind} choice here")
        if kind == "thread":
            if value not in alternatives:
                raise ReplayError(f"decision {k + 1} runs thread {value}, which cannot run "
                                  f"there (can: {sorted(alternatives)})")
            return alternatives.index(value)
        if value >= len(alternatives):
            what = "places a store at m" if kind == "mo" else "reads store r"
            raise ReplayError(f"decision {k + 1} {what}{value}; only "
                              f"{len(alternatives)} {'places' if kind == 'mo' else 'stores'}"
                              " are possible there")
        return value


class ReplayError(RuntimeError):
    """A schedule that does not fit the check it is replayed on."""


class _Random:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def choose(self, ex: Execution, kind: str, alternatives: list, costs: list[int]) -> int:
        return self.rng.randrange(len(alternatives))


class _Pct:
    """Thread priorities (higher runs first) and change points at which the running
    thread drops below every other."""

    def __init__(self, rng: random.Random, threads: int, depth: int, length: int) -> None:
        self.rng = rng
        self.priority = list(range(depth, depth + threads))
        rng.shuffle(self.priority)
        self.changes = {rng.randint(1, max(1, length)): depth - 1 - i for i in range(depth - 1)}

    def choose(self, ex: Execution, kind: str, alternatives: list, costs: list[int]) -> int:
        if kind != "thread":
            return self.rng.randrange(len(alternatives))
        step = len(ex.transitions) + 1
        if step in self.changes and ex.transitions:
            running = ex.transitions[-1][1]
            self.priority[running] = self.changes.pop(step)
        return max(range(len(alternatives)), key=lambda i: self.priority[alternatives[i]])


# -- DPOR ----------------------------------------------------------------------------------------
def _races(ex: Execution, bounded: bool = False) -> set[tuple[int, int]]:
    """``(transition index j, thread p)``: Flanagan and Godefroid's backtracking points.
    At every state of the execution, for every thread ``p`` that could run there, the
    latest earlier transition ``j`` of another thread that is dependent with ``p``'s next
    operation and does not happen-before ``p`` (program order and dependences so far).
    ``bounded`` (a preemption bound): two arrivals at a barrier are dependent too. They
    commute, but the last to arrive passes first at no cost, so under a bound the order
    of arrivals decides which orders after the barrier fit it (one of the dependences a
    bound adds, as Coons et al. put it)."""
    trans = ex.transitions
    if bounded:
        trans = [(d, t, loc, w or ex.pending_ops[m][t].kind == "barrier")
                 for m, (d, t, loc, w) in enumerate(trans)]
    n = ex.n
    clocks: list[list[int]] = []
    last_of: list[list[int]] = [[0] * n for _ in range(n)]
    count = [0] * n
    out: set[tuple[int, int]] = set()
    for m, (_d, t, loc, write) in enumerate(trans):
        for p, op in ex.pending_ops[m].items():
            if op.location is None:
                continue
            mine = last_of[p]
            writes = op.write or (bounded and op.kind == "barrier")
            for j in range(m - 1, -1, -1):
                _dj, tj, locj, wj = trans[j]
                if tj != p and locj == op.location and (writes or wj) and \
                        mine[tj] < clocks[j][tj]:
                    out.add((j, p))
                    break
        acc = list(last_of[t])
        if loc is not None:
            for j in range(m):
                _dj, _tj, locj, wj = trans[j]
                if locj == loc and (write or wj):
                    for k, v in enumerate(clocks[j]):
                        if v > acc[k]:
                            acc[k] = v
        count[t] += 1
        acc[t] = count[t]
        clocks.append(acc)
        last_of[t] = acc
    return out


# -- explore ---------------------------------------------------------------------------------------
class model_atomics:
    """Context manager: a model session for the calling thread, so that every
    ``AtomicWords`` accessor and view it makes inside is the model path's
    (``seer.queues.atomic``); other threads are not affected. :func:`explore` opens one
    itself; use this directly to build structures outside a check, or to run code on the
    model path free-running (operations one at a time under a lock, no checks).
    ``SEER_ATOMICS=model`` with ``import seer.check`` opens one for every thread."""

    def __enter__(self) -> Session:
        session = _session()
        session.local.depth = getattr(session.local, "depth", 0) + 1
        return session

    def __exit__(self, *exc: object) -> None:
        local = _session().local
        local.depth -= 1


def _session() -> Session:
    """The process's one model session (installed as ``seer.queues.atomic``'s hook)."""
    hooks = atomic.model_hooks
    if not hooks:
        hooks.append(Session())
    return hooks[0]


def _install_process_wide() -> None:
    """Install the hook; ``SEER_ATOMICS=model`` makes it cover every thread."""
    session = _session()
    if os.environ.get("SEER_ATOMICS", "").strip().lower() == "model":
        session.process_wide = True


def _run(session: Session, strategy: Any, setup: Callable, workers: tuple, invariant: Any,
         weak: bool, max_steps: int) -> Execution:
    return Execution(session, len(workers), strategy, weak=weak,
                     max_steps=max_steps).run(setup, workers, invariant)


def _failure(ex: Execution, weak: bool) -> Failure:
    kind, error, thread = ex.failure
    mem = ex.memory
    mo = {mem.names.get(loc, f"word@{loc:#x}"): [
        (-1 if s.thread == mem.main else s.thread, s.step) for s in stores]
        for loc, stores in mem.words.items()}
    return Failure(kind, error, thread, format_schedule(ex.decisions, weak), ex.preemptions,
                   ex.steps, ex.state_object, mem.stale_reads, {"mo": mo})


def explore(setup: Callable[[], Any], *workers: Callable[[Any], Any],
            invariant: Callable[[Any], Any] | None = None, strategy: str = "dfs",
            preemptions: int | None = None, weak: bool = False, schedules: int = 1000,
            seed: int = 0, depth: int = 3, max_steps: int = 10_000,
            raises: bool = True) -> Report:
    """Run ``workers`` (each called with what ``setup()`` returned, on a thread of its
    own) under the schedules ``strategy`` picks (module docstring), then ``invariant``
    (called with the same object after every worker ended; a failure is an exception or
    False). Each execution calls ``setup()`` afresh: build the structures there.

    ``preemptions``: the preemption bound: DFS's (None: :data:`DFS_PREEMPTIONS`, 2) or
    DPOR's (None: unbounded; a number: bounded partial-order reduction, which runs only
    schedules within it, so never more than DFS at the same bound); ``schedules``: the
    most executions to run (for every
    strategy; DFS and DPOR say whether they finished); ``weak``: weak-memory mode;
    ``seed``, ``depth``: random and PCT. Returns a :class:`Report`; with ``raises``
    (default) a failure raises :class:`CheckFailure` carrying it. Under ``pytest
    --seer-replay=SCHEDULE`` (or ``SEER_CHECK_REPLAY``) it replays that schedule instead.
    """
    if not workers:
        raise ValueError("explore() needs at least one worker")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")
    forced = os.environ.get(REPLAY_ENV)
    if forced:
        return replay(forced, setup, *workers, invariant=invariant, max_steps=max_steps,
                      raises=raises)
    started = time.perf_counter()
    with model_atomics() as session:
        report = _EXPLORERS[strategy](session, setup, workers, invariant, weak, preemptions,
                                      schedules, random.Random(seed), depth, max_steps)
    report.seconds = time.perf_counter() - started
    if raises and report.failure is not None:
        raise CheckFailure(report)
    return report


def _dfs(session, setup, workers, invariant, weak, preemptions, schedules, rng, depth,
         max_steps, root: list[int] = (), root_seen: list = (), first_bound: int = 0) -> Report:
    """Iterative preemption bounding without repeats: a bound's search stays within its
    bound, and every alternative that would exceed it is kept as the root of a subtree
    for the next bound (as CHESS does), so each schedule runs once."""
    if preemptions is None:
        preemptions = DFS_PREEMPTIONS
    runs = dropped = 0
    frontier: list[tuple[list[int], list]] = [(list(root), list(root_seen))]
    for bound in range(first_bound, preemptions + 1):
        deeper: list[tuple[list[int], list]] = []
        for root, seen in frontier:
            prefix = root
            while True:
                if runs >= schedules:
                    return Report("dfs", runs, 0.0, None, False, bound,
                                  [f"stopped at schedules={schedules} while exploring "
                                   f"bound {bound} of {preemptions}"], complete=False,
                                  dropped=dropped)
                ex = _checked(_run(session, _Prefix(prefix, bound, seen), setup, workers,
                                   invariant, weak, max_steps), prefix)
                runs += 1
                dropped += ex.infeasible
                if ex.failure is not None:
                    return Report("dfs", runs, 0.0, _failure(ex, weak), False, bound)
                d = ex.decisions
                choices = [x[2] for x in d]
                seen = _seen(d)
                for k in range(len(prefix), len(d)):  # decisions first met in this run
                    _kind, _alts, index, costs, before = d[k]
                    deeper.extend(([*choices[:k], i], seen[:k + 1])
                                  for i in range(index + 1, len(costs))
                                  if before + costs[i] > bound)
                k = len(d) - 1
                while k >= len(root):
                    _kind, _alts, index, costs, before = d[k]
                    nxt = next((i for i in range(index + 1, len(costs))
                                if before + costs[i] <= bound), None)
                    if nxt is not None:
                        prefix = [*choices[:k], nxt]
                        break
                    k -= 1
                if k < len(root):
                    break
        frontier = deeper
        if not frontier:
            break
    return Report("dfs", runs, 0.0, None, True, preemptions, dropped=dropped)


#: Sleep sets in DPOR (switched off only to measure what they save: docs/checking.md).
_SLEEP_SETS = True


def _independent(a: Any, b: Any) -> bool:
    """Do two threads' next operations commute (DPOR's independence, for sleep sets)?
    Different words, or both reads; a thread's start commutes with everything; a spin's
    ``yield`` depends on every store (a store wakes a spinner and, in weak mode, moves
    what it sees when it goes on) and on every other yield (who spins longest goes)."""
    if a.kind == "start" or b.kind == "start":
        return True
    if a.kind == "yield" or b.kind == "yield":
        return not (a.write or b.write or (a.kind == b.kind == "yield"))
    if a.location is None or b.location is None:
        return True
    return a.location != b.location or not (a.write or b.write)


class _Sleeping:
    """DPOR's strategy: follows ``prefix``, then runs the first thread that is not
    asleep (the running one first). A thread falls asleep at a state once its subtree
    there is explored (``explored[k]``: the threads run at decision ``k`` before the one
    now), and stays asleep along a branch while the operations run are independent of
    its next one (Godefroid's sleep sets): running it there would only reorder
    independent operations of a schedule already run. When every thread that could run is
    asleep the execution is given up (:class:`~seer.check.execution.SleepBlocked`).
    ``sleeps`` gets each thread decision's sleep set."""

    def __init__(self, prefix: list[int], seen: list, explored: list, weak: bool,
                 bound: float = float("inf"), sleep_sets: bool = True) -> None:
        self.prefix, self.seen, self.explored, self.weak = prefix, seen, explored, weak
        self.bound, self.sleep_sets = bound, sleep_sets
        self.sleep: dict[int, Any] = {}
        self.sleeps: list[dict[int, Any] | None] = []

    def choose(self, ex: Execution, kind: str, alternatives: list, costs: list[int]) -> int:
        k = len(ex.decisions)
        if k < len(self.prefix):
            index = _prefix_choice(self.prefix, self.seen, k, kind, alternatives)
        elif kind != "thread" or not self.sleep_sets:
            index = 0  # the running thread, or the latest store: no preemption
        else:
            room = self.bound - ex.preemptions
            index = next((i for i, t in enumerate(alternatives)
                          if t not in self.sleep and costs[i] <= room), None)
            if index is None:
                self.sleeps.append(dict(self.sleep))
                raise SleepBlocked
        if kind != "thread":
            self.sleeps.append(None)
            return index
        self.sleeps.append(dict(self.sleep))
        if self.sleep_sets:
            ops = ex.pending_ops[-1]
            t = alternatives[index]
            mine = ops[t]
            asleep = dict(self.sleep)
            if k < len(self.explored) and self.explored[k]:
                asleep.update((q, self._effect(ops[q], wrote)) for q, wrote in
                              self.explored[k].items() if q != t and q in ops)
            self.sleep = {q: op for q, op in asleep.items()
                          if q != t and _independent(op, mine)}
        return index


    def _effect(self, op: Any, wrote: bool) -> Any:
        """The operation a sleeping thread would perform: in sequentially consistent mode
        what it did when its subtree was explored (a compare-exchange that failed there
        fails again while it sleeps, since nothing it depends on ran: a read)."""
        if wrote or not op.write or self.weak:
            return op
        return Op(op.kind, op.location, op.name, False, op.ready)


def _dpor(session, setup, workers, invariant, weak, preemptions, schedules, rng, depth,
          max_steps) -> Report:
    """DPOR with sleep sets; with a preemption bound (``preemptions`` not None), Coons,
    Musuvathi and McKinley's bounded partial-order reduction (BPOR, OOPSLA 2013): only
    schedules within the bound run, and every race adds, besides Flanagan and
    Godefroid's backtracking point, a *conservative* one at the start of the racing
    transition's block (where its thread was switched to): reversing the race there costs
    no preemption more than the schedule that found it, so an ordering the bound forbids
    at the race itself is still reached when some schedule within the bound has it.
    Bounded, it runs without sleep sets: a sleeping thread's operation moved to the front
    can need a preemption more than the schedule the sleep set drops, and random programs
    lost outcomes that way (even with only the thread that went on at no cost put to
    sleep); each schedule still runs at most once, and only within the bound."""
    bound = float("inf") if preemptions is None else preemptions
    runs = 0
    prefix: list[int] = []
    backtrack: list[set | None] = []  # per decision: threads to try (thread decisions)
    # per decision: thread -> did its step write (thread decisions), in the order run
    done: list[dict | None] = []
    sleeps: list[dict | None] = []  # per decision: the sleep set at its state
    seen: list = []
    dropped = 0
    while True:
        strategy = _Sleeping(prefix, seen, done, weak, bound,
                             sleep_sets=_SLEEP_SETS and preemptions is None)
        ex = _checked(_run(session, strategy, setup, workers, invariant, weak, max_steps),
                      prefix)
        runs += 1
        dropped += ex.infeasible
        if ex.failure is not None:
            return Report("dpor", runs, 0.0, _failure(ex, weak), False, preemptions)
        d = ex.decisions
        seen = _seen(d)
        trans = ex.transitions
        wrote = {dk: w for dk, _t, _loc, w in trans}
        for k in range(len(d)):
            kind, alts, index, _c, _p = d[k]
            if k >= len(backtrack):
                backtrack.append({alts[index]} if kind == "thread" else None)
                done.append({} if kind == "thread" else None)
            if kind == "thread":
                done[k][alts[index]] = wrote.get(k, True)
        sleeps = strategy.sleeps[:len(d)]
        for j, t in _races(ex, preemptions is not None):
            points = [trans[j][0]]
            if preemptions is not None:  # BPOR: the start of j's block too
                m, tj = j, trans[j][1]
                while m > 0 and trans[m - 1][1] == tj:
                    m -= 1
                if m != j:
                    points.append(trans[m][0])
            for dj in points:
                alts = d[dj][1]
                backtrack[dj] |= {t} if t in alts else set(alts)
        k = len(d) - 1
        while k >= 0:
            kind, alts, index, costs, before = d[k]
            if kind == "thread":
                asleep = sleeps[k] or {}
                todo = [t for t in backtrack[k] if t not in done[k] and t not in asleep
                        and before + costs[alts.index(t)] <= bound]
                if todo:
                    t = min(todo, key=alts.index)
                    done[k][t] = True  # until its run says
                    prefix = [*(x[2] for x in d[:k]), alts.index(t)]
                    break
            elif index + 1 < len(alts):
                prefix = [*(x[2] for x in d[:k]), index + 1]
                break
            k -= 1
        if k < 0:
            return Report("dpor", runs, 0.0, None, True, preemptions, dropped=dropped)
        del backtrack[k + 1:], done[k + 1:], sleeps[k + 1:]
        if runs >= schedules:
            return Report("dpor", runs, 0.0, None, False, preemptions,
                          [f"stopped at schedules={schedules} with orders left to run"],
                          complete=False, dropped=dropped)


def _random(session, setup, workers, invariant, weak, preemptions, schedules, rng, depth,
            max_steps) -> Report:
    for runs in range(1, schedules + 1):
        ex = _run(session, _Random(rng), setup, workers, invariant, weak, max_steps)
        if ex.failure is not None:
            return Report("random", runs, 0.0, _failure(ex, weak), False)
    return Report("random", schedules, 0.0, None, False)


def _pct(session, setup, workers, invariant, weak, preemptions, schedules, rng, depth,
         max_steps) -> Report:
    length = 0
    for runs in range(1, schedules + 1):
        ex = _run(session, _Pct(rng, len(workers), max(1, depth), length or 50), setup,
                  workers, invariant, weak, max_steps)
        length = max(length, len(ex.transitions))
        if ex.failure is not None:
            return Report("pct", runs, 0.0, _failure(ex, weak), False)
    return Report("pct", schedules, 0.0, None, False)


_EXPLORERS = {"dfs": _dfs, "dpor": _dpor, "random": _random, "pct": _pct}


class _Follow:
    """Follows a parsed schedule while it fits, then (``then``) the first alternative
    (a plain replay: the execution goes its own way) or a :class:`_Prefix`."""

    def __init__(self, decisions: list[tuple[str, int]]) -> None:
        self.decisions = decisions
        self.fitted: int | None = None  # decisions followed before the first misfit
        self.why = ""

    def choose(self, ex: Execution, kind: str, alternatives: list, costs: list[int]) -> int:
        k = len(ex.decisions)
        if self.fitted is None:
            try:
                return _Replay(self.decisions).choose(ex, kind, alternatives, costs)
            except ReplayError as exc:
                self.fitted, self.why = k, str(exc)
        return 0


def replay(schedule: str, setup: Callable[[], Any], *workers: Callable[[Any], Any],
           invariant: Callable[[Any], Any] | None = None, max_steps: int = 10_000,
           raises: bool = True, then: str = "stop", preemptions: int = 2,
           schedules: int = 1000) -> Report:
    """Run the one execution ``schedule`` (a :class:`Failure`'s) describes. Returns a
    :class:`Report` whose ``failure`` is what that execution met (None: it passed) and
    whose ``fit`` says whether the schedule fitted the check to its end (its verdict:
    FAILED, PASSED or MISFIT); with ``raises`` a failure raises :class:`CheckFailure`, and
    a schedule that does not fit (without ``then="explore"``) raises
    :class:`ReplayError`.

    ``then="explore"``: follow the schedule as far as it fits (all of it, or up to the
    first decision the check no longer offers: the code changed), then explore every
    continuation from there with DFS (``preemptions``, ``schedules``): how to check a
    fixed program from the point where the old one failed. The report's verdict is then
    PASSED, FAILED or INCOMPLETE like :func:`explore`'s, with a note on where the schedule
    stopped fitting."""
    if then not in ("stop", "explore"):
        raise ValueError(f"then={then!r}: use 'stop' or 'explore'")
    weak, decisions = parse_schedule(schedule)
    started = time.perf_counter()
    with model_atomics() as session:
        follow = _Follow(decisions)
        ex = _run(session, follow, setup, workers, invariant, weak, max_steps)
        fitted = follow.fitted
        if fitted is None and len(ex.decisions) < len(decisions) and ex.failure is None:
            fitted = len(ex.decisions)
            follow.why = (f"the execution ended after {len(ex.decisions)} of the "
                          f"schedule's {len(decisions)} decisions")
        fit = fitted is None
        note = [] if fit else [f"the schedule fits only its first {fitted} decisions: "
                               f"{follow.why} (another check, or the code changed?)"]
        if then == "explore":
            root_len = len(ex.decisions) if fit else fitted
            root = [d[2] for d in ex.decisions[:root_len]]
            used = sum(d[3][d[2]] for d in ex.decisions[:root_len])  # the prefix's preemptions
            report = _dfs(session, setup, workers, invariant, weak, used + preemptions,
                          schedules, None, 0, max_steps, root=root,
                          root_seen=_seen(ex.decisions[:root_len]), first_bound=used)
            report.strategy, report.fit = "replay+dfs", fit
            report.notes[:0] = [*note, f"explored every continuation after decision "
                                       f"{root_len} with at most {preemptions} more "
                                       "preemptions"]
        else:
            if not fit and raises:
                raise ReplayError(note[0])
            report = Report("replay", 1, 0.0,
                            _failure(ex, weak) if ex.failure is not None else None, True,
                            notes=note, fit=fit)
    report.seconds = time.perf_counter() - started
    if raises and report.failure is not None:
        raise CheckFailure(report)
    return report
