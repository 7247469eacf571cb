"""seer.check's explorer: strategies, schedules, replay, failures of every kind."""

from __future__ import annotations

import pytest

from seer.check import (
    Barrier,
    CheckFailure,
    ReplayError,
    explore,
    format_schedule,
    name_words,
    parse_schedule,
    replay,
    yield_now,
)
from seer.check.examples import free_list_check
from seer.queues import AtomicWords
from seer.queues.atomic import RELAXED, RELEASE, data_view, shared_lock


class Counter:
    def __init__(self) -> None:
        self.w = AtomicWords(2, name="counter")


def lost_update(state: Counter) -> None:
    acc = state.w.accessor()
    acc.store(0, acc.load(0) + 1)


def atomic_add(state: Counter) -> None:
    state.w.accessor().fetch_add(0, 1)


def counted_two(state: Counter) -> None:
    assert state.w.array[0] == 2, f"counter is {state.w.array[0]}"


@pytest.mark.parametrize("strategy", ["dfs", "dpor", "random", "pct"])
def test_every_strategy_finds_a_lost_update(strategy):
    report = explore(Counter, lost_update, lost_update, invariant=counted_two,
                     strategy=strategy, raises=False, schedules=500)
    assert report.failure is not None
    assert report.failure.kind == "invariant"
    assert "counter is 1" in report.failure.message


@pytest.mark.parametrize("strategy", ["dfs", "dpor"])
def test_exhaustive_strategies_pass_a_correct_counter(strategy):
    report = explore(Counter, atomic_add, atomic_add, atomic_add, invariant=lambda s:
                     s.w.array[0] == 3, strategy=strategy)
    assert report.failure is None and report.exhaustive and report.schedules > 1


def test_dfs_finds_the_failure_with_the_fewest_preemptions():
    report = explore(Counter, lost_update, lost_update, invariant=counted_two, raises=False)
    assert report.failure.preemptions == 1
    # bound 0: two schedules (one thread after the other), both pass; bound 1: preempting
    # T0 before its load passes, preempting it between its load and its store fails. No
    # schedule runs twice.
    assert report.schedules == 4


def test_the_preemption_bound_limits_the_search():
    report = explore(Counter, lost_update, lost_update, invariant=counted_two,
                     preemptions=0)
    assert report.exhaustive and report.bound == 0 and report.schedules == 2


def test_dpor_runs_fewer_schedules_than_dfs_on_independent_words():
    def own_word(i):
        def run(state):
            acc = state.w.accessor()
            for v in range(3):
                acc.store(i, v)
        return run

    dfs = explore(Counter, own_word(0), own_word(1), preemptions=3)
    dpor = explore(Counter, own_word(0), own_word(1), strategy="dpor")
    assert dpor.exhaustive and dfs.exhaustive
    assert dpor.schedules < dfs.schedules


def test_a_failure_raises_with_its_report():
    with pytest.raises(CheckFailure) as info:
        explore(Counter, lost_update, lost_update, invariant=counted_two)
    failure = info.value.report.failure
    text = str(info.value)
    assert failure.schedule in text and "replay" in text
    assert "load acquire" in text and "counter[0]" in text  # the interleaving, step by step


def test_a_printed_schedule_replays_the_same_failure_every_time():
    setup, a, b, invariant = free_list_check(tagged=False)
    found = explore(setup, a, b, invariant=invariant, raises=False).failure
    for _ in range(100):
        again = replay(found.schedule, setup, a, b, invariant=invariant, raises=False).failure
        assert again is not None
        assert again.message.splitlines()[0] == found.message.splitlines()[0]
        assert again.schedule == found.schedule
        assert [str(s) for s in again.steps] == [str(s) for s in found.steps]


def test_a_schedule_that_does_not_fit_is_refused():
    with pytest.raises(ReplayError, match="cannot run"):
        replay("sc:5", Counter, lost_update, lost_update, invariant=counted_two)
    with pytest.raises(ReplayError, match="ends after"):
        replay("sc:0", Counter, lost_update, lost_update, invariant=counted_two)
    with pytest.raises(ReplayError, match="read choice"):
        replay("weak:r1", Counter, lost_update, lost_update)
    with pytest.raises(ValueError, match="must start with"):
        parse_schedule("0,1")
    with pytest.raises(ValueError, match="bad token"):
        parse_schedule("sc:0,x")


def test_schedule_strings_round_trip():
    weak, decisions = parse_schedule("weak:0*3,1,r2,0")
    assert weak and decisions == [("thread", 0)] * 3 + [("thread", 1), ("read", 2),
                                                       ("thread", 0)]
    as_frames = [(k, list(range(4)), v, [0] * 4, 0) for k, v in decisions]
    assert format_schedule(as_frames, weak) == "weak:0*3,1,r2,0"


def test_the_replay_option_replaces_exploration(monkeypatch):
    failing = explore(Counter, lost_update, lost_update, invariant=counted_two,
                      raises=False).failure.schedule
    monkeypatch.setenv("SEER_CHECK_REPLAY", failing)
    report = explore(Counter, lost_update, lost_update, invariant=counted_two, raises=False)
    assert report.strategy == "replay" and report.schedules == 1
    assert report.failure.schedule == failing


def test_a_worker_exception_names_its_thread():
    def boom(state):
        state.w.accessor().load(0)
        raise KeyError("no such thing")

    failure = explore(Counter, atomic_add, boom, raises=False).failure
    assert failure.kind == "exception" and failure.thread == 1
    assert "KeyError" in failure.message and "T1" in failure.message


def test_a_deadlock_is_a_failure_not_a_hang():
    class State:
        def __init__(self):
            self.barrier = Barrier(3)  # three parties, two workers

    failure = explore(State, lambda s: s.barrier.wait(), lambda s: s.barrier.wait(),
                      raises=False).failure
    assert failure.kind == "deadlock" and "barrier" in failure.message


def test_a_spin_without_yield_hits_the_step_limit():
    def spin(state):
        acc = state.w.accessor()
        while acc.load(1) == 0:
            pass

    failure = explore(Counter, spin, max_steps=200, raises=False).failure
    assert failure.kind == "step limit"


def test_yield_now_lets_a_spin_wait_finish():
    def setter(state):
        state.w.accessor().store(1, 1)

    def waiter(state):
        acc = state.w.accessor()
        while acc.load(1) == 0:
            yield_now()

    report = explore(Counter, waiter, setter)
    assert report.exhaustive and report.failure is None


class Published:
    def __init__(self, order: int = RELEASE) -> None:
        self.w = AtomicWords(1, name="flag")
        self.buf = bytearray(8)
        self.order = order


def _publish(state: Published) -> None:
    data = data_view("payload", state.buf, 0, 1)
    data[0] = 42
    state.w.accessor().store(0, 1, state.order)


def _consume(load_order):
    def run(state: Published) -> None:
        acc = state.w.accessor()
        if acc.load(0, load_order) == 1:
            assert data_view("payload", state.buf, 0, 1)[0] == 42
    return run


def test_release_acquire_publication_has_no_race():
    from seer.queues.atomic import ACQUIRE

    report = explore(Published, _publish, _consume(ACQUIRE))
    assert report.failure is None and report.exhaustive


@pytest.mark.parametrize("publish,load", [(RELAXED, "acquire"), (RELEASE, "relaxed")])
def test_a_missing_release_or_acquire_is_a_data_race(publish, load):
    from seer.queues.atomic import ACQUIRE

    order = ACQUIRE if load == "acquire" else RELAXED
    failure = explore(lambda: Published(publish), _publish, _consume(order),
                      raises=False).failure
    assert failure is not None and failure.kind == "data race"
    assert "payload[0]" in failure.message


def test_a_shared_lock_orders_what_it_guards():
    class Guarded:
        def __init__(self, locked: bool):
            self.lock = shared_lock() if locked else None
            self.buf = bytearray(8)

    def bump(state):
        data = data_view("total", state.buf, 0, 1)
        if state.lock is None:
            data[0] += 1
            return
        with state.lock:
            data[0] += 1

    ok = explore(lambda: Guarded(True), bump, bump, invariant=lambda s:
                 data_view("total", s.buf, 0, 1)[0] == 2)
    assert ok.failure is None and ok.exhaustive
    raced = explore(lambda: Guarded(False), bump, bump, raises=False).failure
    assert raced.kind == "data race"


def test_the_model_path_checks_memory_orders():
    def bad(state):
        state.w.accessor().load(0, RELEASE)

    failure = explore(Counter, bad, raises=False).failure
    assert "not valid for an atomic load" in failure.message


def test_a_nondeterministic_check_is_reported():
    import itertools

    runs = itertools.count()

    class Drifting(Counter):
        """State kept outside setup: the first execution differs from the rest."""

        def __init__(self):
            super().__init__()
            self.loads = 3 if next(runs) == 0 else 1

    def worker(state):
        acc = state.w.accessor()
        for _ in range(state.loads):
            acc.load(0)

    with pytest.raises(RuntimeError, match="not deterministic"):
        explore(Drifting, worker, lambda s: s.w.accessor().load(0))


def test_setup_errors_are_named():
    def broken():
        raise OSError("disk")

    with pytest.raises(RuntimeError, match="setup"):
        explore(broken, atomic_add)


def test_explore_refuses_bad_arguments():
    with pytest.raises(ValueError, match="at least one worker"):
        explore(Counter)
    with pytest.raises(ValueError, match="unknown strategy"):
        explore(Counter, atomic_add, strategy="bfs")


def test_a_model_session_covers_only_its_own_threads():
    import threading

    from seer.queues import selected_path

    paths = []

    def worker(state):
        t = threading.Thread(target=lambda: paths.append(selected_path()))
        t.start()
        t.join()
        paths.append(selected_path())
        state.w.accessor().load(0)

    explore(Counter, worker, preemptions=0)
    assert paths[0] in ("fast", "public") and paths[1] == "model"


def test_the_whole_runtime_runs_on_the_free_running_model_path(tmp_path):
    import os
    import subprocess
    import sys

    code = (
        "import seer.check, seer\n"
        "from seer.queues import selected_path\n"
        "from seer.testing import RandomModel, assert_equivalent\n"
        "assert selected_path() == 'model'\n"
        "model = RandomModel(n_entities=12, seed=3)\n"
        "assert_equivalent(lambda m: seer.make_runtime(m, 'seer', threads=2), model,"
        " seeds=[0, 1], steps=3)\n"
        "print('OK')\n")
    env = {**os.environ, "SEER_ATOMICS": "model"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300, cwd=tmp_path)
    assert run.returncode == 0 and "OK" in run.stdout, run.stdout + run.stderr


class _RandomWords:
    def __init__(self):
        self.w = AtomicWords(2, name="w")
        self.seen = {}


def _random_program(ops, i):
    def run(state):
        acc = state.w.accessor()
        for j, (op, loc, value) in enumerate(ops):
            if op == "load":
                state.seen[(i, j)] = acc.load(loc)
            elif op == "store":
                acc.store(loc, value)
            elif op == "add":
                state.seen[(i, j)] = acc.fetch_add(loc, value)
            else:
                state.seen[(i, j)] = acc.compare_exchange(loc, 0, value)
    return run


def _random_ops(rng):
    """A random small program: 2-3 threads of 1-3 loads, stores, fetch_adds and
    compare-exchanges on two words, as (op, word, value) per thread."""
    return [[(rng.choice(["load", "store", "add", "cas"]), rng.randrange(2),
              rng.randrange(1, 4)) for _ in range(rng.choice([1, 2, 3]))]
            for _ in range(rng.choice([2, 3]))]


def _bounded_outcomes(workers, strategy, weak, bound):
    found = set()
    report = explore(_RandomWords, *workers, strategy=strategy, weak=weak, preemptions=bound,
                     schedules=100_000, invariant=lambda s: found.add(
                         (tuple(sorted(s.seen.items())), tuple(s.w.array.tolist()))))
    assert report.complete and report.bound == bound
    return found, report.schedules


def test_dpor_reaches_every_outcome_dfs_reaches():
    """DPOR prunes only reorderings of independent operations: on random small programs
    (loads, stores, fetch_adds, compare-exchanges on two words, 2-3 threads) it finds the
    same final states and loaded values as unbounded DFS, in both memory modes."""
    import random

    rng = random.Random(7)
    for _ in range(8):
        progs = _random_ops(rng)
        workers = [_random_program(ops, i) for i, ops in enumerate(progs)]
        for weak in (False, True):
            # a bound of 20 preemptions covers every schedule of these programs
            assert (_bounded_outcomes(workers, "dpor", weak, 20)[0]
                    == _bounded_outcomes(workers, "dfs", weak, 20)[0]), progs


def test_bounded_dpor_reaches_what_dfs_reaches_at_the_same_bound():
    """DPOR with a preemption bound (BPOR: Coons, Musuvathi, McKinley, OOPSLA 2013) runs
    only schedules within the bound, so never more than DFS at that bound, and reaches
    every final state and loaded value DFS does there, in both memory modes. The first
    program is the one that caught plain sleep sets: T1 first cannot let T0 (explored
    first, at no cost) sleep through its start, since T0's start then T1's adds needs a
    preemption bound 0 does not allow."""
    import random

    rng = random.Random(11)
    programs = [[[("add", 1, 1), ("store", 0, 2)], [("add", 1, 2), ("add", 1, 2)]],
                [[("load", 1, 1), ("load", 0, 3)], [("cas", 0, 2)], [("store", 1, 2)]]]
    for _ in range(6):
        programs.append(_random_ops(rng))
    # Sleep sets lost an outcome of this one at bound 2 (so bounded DPOR runs without them)
    lost = [[("load", 1, 1), ("store", 0, 3)], [("store", 1, 2), ("store", 1, 1), ("load", 1, 1)],
            [("cas", 1, 3), ("load", 1, 3), ("load", 0, 1)]]
    for progs, bounds, modes in [*((p, (0, 1), (False, True)) for p in programs),
                                 (lost, (2,), (False,))]:
        workers = [_random_program(ops, i) for i, ops in enumerate(progs)]
        for weak in modes:
            for bound in bounds:
                dpor, runs = _bounded_outcomes(workers, "dpor", weak, bound)
                dfs, dfs_runs = _bounded_outcomes(workers, "dfs", weak, bound)
                assert dpor == dfs, (progs, weak, bound)
                assert runs <= dfs_runs, (progs, weak, bound)


@pytest.mark.parametrize("weak", [False, True])
def test_bounded_dpor_orders_barrier_arrivals(weak):
    """Arrivals at a barrier commute, but the last to arrive passes first at no cost: at
    bound 0 only T0 arriving last lets its compare-exchange run before the others' locked
    blocks, so bounded DPOR must order arrivals (a dependence the bound adds)."""
    class State:
        def __init__(self):
            self.w = AtomicWords(2, name="w")
            self.lock = shared_lock()
            self.barrier = Barrier(3)
            self.seen = {}

    def cas_after_barrier(state):
        acc = state.w.accessor()
        state.barrier.wait()
        state.seen[0] = acc.compare_exchange(1, 0, 1)

    def locked(i, last):
        def run(state):
            acc = state.w.accessor()
            state.barrier.wait()
            with state.lock:
                state.seen[i] = acc.load(1)
                last(acc)
        return run

    workers = (cas_after_barrier, locked(1, lambda acc: acc.store(0, 1)),
               locked(2, lambda acc: acc.compare_exchange(0, 0, 3)))

    def reached(strategy):
        found = set()
        explore(State, *workers, strategy=strategy, weak=weak, preemptions=0,
                invariant=lambda s: found.add((tuple(sorted(s.seen.items())),
                                               tuple(s.w.array.tolist()))))
        return found

    assert reached("dpor") == reached("dfs")


@pytest.mark.parametrize("weak", [False, True])
def test_bounded_dpor_runs_fewer_schedules_than_dfs_on_the_examples(weak):
    """The free list that unbounded DPOR needs more schedules for than DFS at 2
    preemptions (316 against 125: unbounded against bounded) runs in fewer at the same
    bound; so do the SPSC ring and Chase-Lev (docs/checking.md's table has the figures)."""
    from seer.check.examples import chase_lev_check, spsc_check

    for made in (free_list_check(tagged=True), spsc_check(publish=RELEASE),
                 *([] if weak else [chase_lev_check()])):  # weak Chase-Lev: 4 s of DFS
        setup, *workers, invariant = made
        runs = {s: explore(setup, *workers, invariant=invariant, strategy=s, weak=weak,
                           preemptions=2, schedules=100_000) for s in ("dfs", "dpor")}
        assert all(r.verdict == "PASSED" for r in runs.values())
        assert runs["dpor"].schedules < runs["dfs"].schedules
    setup, a, b, invariant = free_list_check(tagged=True)
    unbounded = explore(setup, a, b, invariant=invariant, strategy="dpor", weak=weak,
                        schedules=100_000)
    assert unbounded.bound is None and unbounded.verdict == "PASSED"


def test_a_bounded_dpor_report_says_what_it_covered():
    report = explore(Counter, atomic_add, atomic_add, invariant=lambda s: s.w.array[0] == 2,
                     strategy="dpor", preemptions=1)
    assert report.bound == 1 and report.exhaustive
    assert "with at most 1 preemption reaches" in str(report)
    unbounded = explore(Counter, atomic_add, atomic_add,
                        invariant=lambda s: s.w.array[0] == 2, strategy="dpor")
    assert unbounded.bound is None
    assert "up to reordering of independent operations" in str(unbounded)


# -- a write through words.array inside a worker is an error, not ignored ----------------------
class _Words:
    def __init__(self) -> None:
        self.words = AtomicWords(2, name="counter")
        self.words.array[1] = 3  # the set-up may initialise through the array
        self.words.accessor()    # (and make accessors)


def _adds(state: _Words) -> None:
    state.words.accessor().fetch_add(0, 1)


def _array_write_then_op(state: _Words) -> None:
    acc = state.words.accessor()
    acc.store(0, 1)
    state.words.array[0] = 5  # bypasses the model
    acc.load(1)


def _array_write_at_end(state: _Words) -> None:
    acc = state.words.accessor()
    acc.load(0)
    state.words.array[1] = 7  # no scheduling point after it: found at the thread's end


@pytest.mark.parametrize("weak", [False, True])
@pytest.mark.parametrize("worker, word, value", [(_array_write_then_op, "counter[0]", 5),
                                                 (_array_write_at_end, "hits", 7)])
def test_a_write_through_words_array_in_a_worker_is_an_error(weak, worker, word, value):
    setup = _Words
    if word == "hits":
        def setup():
            state = _Words()
            name_words(state.words, "count", "hits")
            return state
    report = explore(setup, _adds, worker, invariant=lambda s: True, raises=False, weak=weak)
    failure = report.failure
    assert failure is not None and failure.kind == "unmodelled write"
    assert failure.thread == 1
    assert f"T1 wrote atomic word {word} through AtomicWords.array" in str(failure)
    assert f"holds {value}" in str(failure) and "accessor" in str(failure)


@pytest.mark.parametrize("weak", [False, True])
def test_array_writes_by_the_model_setup_and_invariant_are_not_errors(weak):
    def invariant(state: _Words) -> bool:
        ok = int(state.words.array[0]) == 2 and int(state.words.array[1]) == 3
        state.words.array[0] = 0  # the invariant runs alone: allowed
        return ok

    report = explore(_Words, _adds, _adds, invariant=invariant, raises=False, weak=weak)
    assert report.verdict == "PASSED", str(report)


def test_the_figures_script_measures_a_row(capsys):
    """``python -m seer.check.figures`` (docs/checking.md's table): DFS, DPOR at the same
    bound and DPOR unbounded, with the bounded DPOR never above DFS."""
    from seer.check.figures import main, measure

    row = measure("pel", weak=False, print_=lambda line: None)
    assert row["dpor-bounded"].schedules <= row["dfs"].schedules
    assert row["dpor"].bound is None and row["dpor-bounded"].bound == 2
    assert main(["spsc", "--sc-only"]) == 0
    out = capsys.readouterr().out
    assert "spsc" in out and "dpor-bounded:" in out and "PASSED" in out
    with pytest.raises(SystemExit):
        main(["no-such-row"])
