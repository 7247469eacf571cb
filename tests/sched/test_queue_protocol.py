"""The intake protocol (seer.queues.protocol): both implementations keep it, the MS
alternative runs bit-identically to serial and is checked by seer.check, and contention
is counted."""

import heapq
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import seer
from seer.check import explore, replay
from seer.check.ms_queue import ms_check
from seer.events import make_event
from seer.queues import NIL, BufferLayout, EventArena
from seer.queues.ms import MsIntakes, MsQueues, MsWorker, handle_of
from seer.queues.protocol import (
    QUEUES,
    IntakeWorker,
    TreiberQueues,
    get_queues,
    register_queues,
)
from seer.sched import SeerMsRuntime, SeerRuntime
from seer.sched.assignment import Steal
from seer.testing import RandomModel, assert_equivalent, random_models
from tests.helpers import examples
from tests.queues.stress import run_threads
from workloads.synthetic import BenchModel

FACTORIES = ["treiber", "ms"]
PATHS = ["fast", "public"]


def build(name, n, capacity=64, slabs=3, batch=4):
    """A factory's layer as the runtime builds it (plan, allocate, build)."""
    factory = get_queues(name)
    capacity += factory.reserved_records(n)
    layout = BufferLayout()
    regions = EventArena.plan(layout, capacity)
    intake = factory.plan(layout, n, capacity)
    buffer = layout.allocate()
    arena = EventArena(capacity, buffer, regions, n_slabs=slabs, batch=batch)
    heaps = [[] for _ in range(n)]
    layer = factory.build(n, arena, buffer, intake, heaps)
    assert layer.heaps is heaps
    return layer


def ev(tau, seq, target):
    return make_event(tau, seq, target, 0, None)


def records_accounted(layer, workers):
    """Every record of the arena is free in one slab, pooled, or still held by the layer."""
    arena = layer.arena
    free = [h for w in workers for h in w.slab.free_list]
    assert len(free) == len(set(free)), "a record is free in two slabs"
    held = len(free) + arena.pooled() + layer.in_intakes(workers[0].slab)
    if isinstance(layer, MsIntakes):
        held += layer.n_entities  # the dummies
        assert not set(layer.dummies()) & set(free)
    assert held == arena.capacity


# -- the registry --------------------------------------------------------------------------
def test_registry_names_both_and_refuses_unknowns():
    assert {"treiber", "ms"} <= set(QUEUES)
    assert isinstance(get_queues("treiber"), TreiberQueues)
    assert isinstance(get_queues("ms"), MsQueues)
    mine = MsQueues()
    assert get_queues(mine) is mine
    with pytest.raises(seer.ModelError, match=r"unknown queues 'nope'; choose one of"):
        get_queues("nope")
    with pytest.raises(seer.ModelError, match="needs a QueueFactory subclass"):
        register_queues(int)

    class Clash(MsQueues):
        name = "treiber"

    with pytest.raises(seer.ModelError, match="queue name 'treiber' is taken"):
        register_queues(Clash)


def test_runtime_builds_its_intakes_through_the_factory():
    model = RandomModel(20, seed=1)
    with SeerRuntime(model, threads=2) as rt:
        assert rt.queues.name == "treiber" and rt.stats["queues"] == "treiber"
        assert type(rt._workers[0].leq).__name__ == "LeqWorker"  # no layer in between
    with SeerMsRuntime(model, threads=2) as rt:
        assert rt.stats["queues"] == "ms" and rt.stats["runtime"] == "seer-ms"
        assert isinstance(rt._workers[0].leq, MsWorker)
    # any dual-queue runtime takes queues= (a name or an instance)
    with seer.make_runtime(model, "static", threads=2, queues=MsQueues()) as rt:
        assert rt.stats["queues"] == "ms" and rt.stats["assignment"] == "round-robin"


def test_a_new_factory_plugs_in_without_touching_the_runtime():
    built = []

    @register_queues
    class Counting(TreiberQueues):
        name = "test-counting"

        def build(self, *args):
            layer = super().build(*args)
            built.append(layer)
            return layer

    try:
        model = RandomModel(30, seed=2)
        assert_equivalent(lambda m: SeerRuntime(m, threads=2, queues="test-counting"), model,
                          seeds=[3], steps=3)
        assert built
    finally:
        QUEUES.pop("test-counting", None)


# -- conformance: what the runtime relies on -------------------------------------------------
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", FACTORIES)
def test_workers_have_what_the_runtime_calls(name, path):
    layer = build(name, 3)
    w = layer.worker(layer.arena.slab(0), path)
    assert w.leqs is layer and w.cas_retries == 0
    # every member the protocol names (seer.queues.protocol.IntakeWorker)
    members = set(IntakeWorker.__annotations__) | {"set_epoch", "send_all", "merge"}
    assert all(hasattr(w, m) for m in members)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", FACTORIES)
def test_merges_return_what_was_sent_before_the_barrier_once(name, path):
    """Windows as the runtime runs them, on one thread: sends in window k are merged in
    a later window by the claimer, whatever the parity, however long they waited; the
    pre-check words show every entity with something to merge."""
    n = 5
    layer = build(name, n, capacity=256)
    workers = [layer.worker(layer.arena.slab(i), path) for i in range(3)]
    rng = random.Random(7)
    sent = {e: [] for e in range(n)}
    merged = {e: [] for e in range(n)}
    seq = 0
    for k in range(1, 12):
        for w in workers:
            w.set_epoch(k)
        # the claims of this window: each entity merged by one worker, or not at all
        for e in range(n):
            if rng.random() < 0.6:
                w = workers[rng.randrange(3)]
                waiting = len(sent[e]) > len(merged[e])
                if waiting:  # invariant 3: the pre-check must not skip it
                    assert (w.heads[w.previous_offset + e] != NIL
                            or w.heads[w.offset + e] != NIL)
                heap = w.merge(e)
                merged[e] += [x.seq for x in heap]
                heap.clear()
                assert sorted(merged[e]) == sorted(sent[e]), (k, e)  # all of windows < k
        # the sends of this window (after the claims, as the runtime's publish)
        for w in workers:
            out = []
            for _ in range(rng.randrange(6)):
                e = rng.randrange(n)
                out.append(ev(float(k + 1), seq, e))
                sent[e].append(seq)
                seq += 1
            assert w.send_all(out) == len(out)
        records_accounted(layer, workers)
    assert layer.in_intakes(workers[0].slab) == sum(len(sent[e]) - len(merged[e])
                                                    for e in range(n))
    layer.reset()
    assert layer.in_intakes(layer.arena.slab(0)) == 0 and not any(layer.heaps)
    fresh = [layer.worker(layer.arena.slab(i), path) for i in range(3)]
    records_accounted(layer, fresh)


@pytest.mark.parametrize("name", FACTORIES)
def test_a_full_arena_sends_a_prefix_and_leaks_nothing(name):
    layer = build(name, 2, capacity=6, slabs=1, batch=2)
    w = layer.worker(layer.arena.slab(0))
    w.set_epoch(1)
    events = [ev(1.0, i, i % 2) for i in range(10)]
    sent = w.send_all(events)
    assert 0 < sent < len(events)
    records_accounted(layer, [w])
    w.set_epoch(2)
    got = sorted(x.seq for e in range(2) for x in w.merge(e))
    assert got == list(range(sent))
    records_accounted(layer, [w])


def test_ms_queue_is_fifo_per_entity_and_cleans_its_records():
    q = MsIntakes.create(2, 32, n_slabs=2, batch=4)
    a, b = q.worker(q.arena.slab(0)), q.worker(q.arena.slab(1))
    a.send_all([ev(1.0, i, 0) for i in range(5)])
    # MS is FIFO: the chain from the dummy lists the records in send order
    words, n = q.words.array.tolist(), q.n_entities
    h, order = handle_of(words[0]), []
    while (h := handle_of(words[2 * n + h])) != NIL:
        order.append(q.arena._side[0][h].seq)
    assert order == [0, 1, 2, 3, 4]
    heap = b.merge(0)
    assert [heapq.heappop(heap).seq for _ in range(5)] == [0, 1, 2, 3, 4]
    assert all(slot is None for slot in q.arena._side[0])  # no payload kept alive
    with pytest.raises(IndexError, match=r"intake of entity 7 out of range\(2\)"):
        a.send_all([ev(1.0, 9, 7)])


@pytest.mark.parametrize("name", FACTORIES)
def test_concurrent_sends_and_merges_lose_nothing(name):
    """Free-running threads on the fast path: two producers send while a claimer merges
    (the same entities, as in a window), then a last merge after they stop."""
    n, per = 4, 1500
    layer = build(name, n, capacity=4096)
    workers = [None] * 3
    got = []
    done = [False, False]

    def run(i):
        w = workers[i] = layer.worker(layer.arena.slab(i))
        w.set_epoch(1)
        if i < 2:
            for k in range(0, per, 10):
                w.send_all([ev(1.0, i * per + k + j, (k + j) % n) for j in range(10)])
            done[i] = True
        else:
            while not all(done):
                for e in range(n):
                    heap = w.merge(e)
                    got.extend(x.seq for x in heap)
                    heap.clear()
        return w.cas_retries

    run_threads(3, run)
    w = workers[2]
    w.set_epoch(2)
    for e in range(n):
        got.extend(x.seq for x in w.merge(e))
    assert sorted(got) == list(range(2 * per))


# -- equivalence with serial ---------------------------------------------------------------
@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(model=random_models(), threads=st.sampled_from([2, 3]),
       seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 4))
def test_ms_runtime_matches_serial_on_random_models(model, threads, seed, steps):
    assert_equivalent(lambda m: seer.make_runtime(m, "seer-ms", threads=threads), model,
                      seeds=[seed], steps=steps, min_events=0)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("corner", [
    dict(lookahead=0.0, p_zero_delay=0.8, fanout=3, ttl=4),
    dict(p_fan_in=0.9, fanout=3),
    dict(lookahead=2.5, fanout=2),
])
def test_ms_runtime_matches_serial_on_corners(threads, corner):
    model = RandomModel(60, seed=threads, **corner)
    assert_equivalent(lambda m: seer.make_runtime(m, "seer-ms", threads=threads), model,
                      seeds=[1, 2], steps=4)


def test_ms_runtime_matches_serial_on_the_bench_model_and_public_path():
    assert_equivalent(lambda m: seer.make_runtime(m, "seer-ms", threads=2),
                      BenchModel(300, fanout=2), seeds=[0], steps=3)
    assert_equivalent(lambda m: SeerMsRuntime(m, threads=2, atomics_path="public"),
                      RandomModel(50, seed=3, lookahead=0.0), seeds=[0], steps=3)


def test_ms_runtime_pending_counts_what_waits_in_its_queues():
    model = RandomModel(40, seed=5, lookahead=1.0, fanout=3)
    ref = seer.make_runtime(model, "serial")
    with seer.make_runtime(model, "seer-ms", threads=2) as rt:
        for r in (ref, rt):
            r.reset(4)
            r.step(None)
        assert rt.pending == ref.pending


# -- seer.check -----------------------------------------------------------------------------
def test_ms_check_passes_every_schedule_with_one_preemption():
    report = ms_check().run(preemptions=1)
    assert report.failure is None and report.exhaustive and report.schedules > 100


@pytest.mark.parametrize("bug, message", [
    ("plain-link", "exception in T2"),  # the claimer walks into the lost link
    ("no-recheck", "an event in the wrong queue"),  # the stale tail's ABA
    ("relaxed-link", "data race on ev_side"),  # a link that publishes nothing
])
def test_ms_check_finds_each_planted_bug_and_replays_it(bug, message):
    check = ms_check(bug=bug)
    report = check.run(raises=False)
    failure = report.failure
    assert failure is not None and failure.preemptions == 1, report
    assert message in failure.message
    again = replay(failure.schedule, check.setup, *check.workers, invariant=check.invariant,
                   raises=False)
    # the first line: under pytest, an assert's own explanation names objects by address
    assert again.failure is not None
    assert again.failure.message.splitlines()[0] == failure.message.splitlines()[0]


def test_ms_cas_retries_count_contention():
    """Some interleaving of two producers makes one of them go round again, and the
    counter says so; a lone producer never retries."""
    seen = []

    def setup():
        q = MsIntakes.create(1, 8, n_slabs=2, batch=2)
        return q, [q.worker(q.arena.slab(i)) for i in range(2)]

    def producer(i):
        def run(state):
            state[1][i].send(0, ev(1.0, i, 0))
        return run

    def invariant(state):
        seen.append(sum(w.cas_retries for w in state[1]))

    explore(setup, producer(0), producer(1), invariant=invariant, preemptions=1)
    assert min(seen) == 0 and max(seen) > 0


# -- contention in worker_stats and traces ---------------------------------------------------
def test_worker_stats_count_claims_steals_and_retries():
    model = RandomModel(200, seed=6, fanout=3, p_fan_in=0.5)
    for name in ("seer", "seer-ms"):
        with seer.make_runtime(model, name, threads=3) as rt:
            rt.reset(0)
            for _ in range(4):
                rt.step(None)
            stats = rt.worker_stats()
            for s in stats:
                assert {"claims", "steals", "claim_misses", "cas_retries"} <= set(s)
                assert s["claims"] >= s["steals"] >= 0 and s["cas_retries"] >= 0
            assert sum(s["claims"] for s in stats) > 0
            # the claimers' counters were moved into the stats
            assert all(w.claimer.claims == 0 == w.claimer.steals for w in rt._workers)


class _MissCountingSteal(Steal):
    """The steal assignment with claimers that count misses (each claim that returned
    nothing, here: a stand-in for the PEL's own count)."""

    name = "test-misses"

    def claimer(self, pel, index, threads, path):
        inner = super().claimer(pel, index, threads, path)

        class Counting:
            claims = steals = misses = 0

            def reset(self, segments):
                inner.reset(segments)

            def claim(self):
                got = inner.claim()
                self.claims, self.steals = inner.claims, inner.steals
                if got is None:
                    self.misses += 1
                return got

        return Counting()


def test_claim_misses_reach_worker_stats_and_traces():
    model = RandomModel(120, seed=8, fanout=2)
    with SeerRuntime(model, threads=2, assignment=_MissCountingSteal(), trace=True) as rt:
        rt.reset(1)
        rt.step(None)
        rt.step(None)
        misses = sum(s["claim_misses"] for s in rt.worker_stats())
        assert misses > 0
        records = [r for track in rt.trace.threads for r in track]
        counters = {r[1] for r in records if r[0] == "C"}
        assert {"cas retries", "claim misses"} <= counters
        claims = [r for r in records if r[0] == "i" and r[1] in ("claim", "steal")]
        assert claims and all("misses" in r[3] for r in claims)


def test_traces_show_intake_retries_per_window():
    model = RandomModel(80, seed=9, fanout=3)
    with seer.make_runtime(model, "seer-ms", threads=2, trace=True) as rt:
        rt.reset(2)
        rt.step(None)
        retries = [r for track in rt.trace.threads for r in track
                   if r[0] == "C" and r[1] == "cas retries"]
        assert retries and all(r[3] >= 0 for r in retries)
