import heapq
import itertools
import random
import time

import pytest

from seer.queues import ArenaFullError, EmptyQueueError, LocalEventQueues
from tests.queues.stress import run_threads


def write_push(worker, entity, tau, seq, payload=None):
    h = worker.slab.alloc()
    worker.slab.write(h, tau, seq, entity, 1, payload)
    worker.push(entity, h)


def test_pops_come_out_in_kappa_order(path):
    leqs = LocalEventQueues.create(3, 256)
    w = leqs.worker(leqs.arena.slab(0), path)
    rng = random.Random(5)
    keys = [(float(rng.randrange(10)), s) for s in range(100)]
    for tau, seq in keys:
        write_push(w, 2, tau, seq, payload=seq)
    w.merge(2)
    popped = [w.pop(2) for _ in range(100)]
    assert [(e.tau, e.seq) for e in popped] == sorted(keys)
    assert all(e.payload == e.seq and e.target == 2 for e in popped)
    with pytest.raises(EmptyQueueError, match="pop on empty LEQ of entity 2"):
        w.pop(2)
    assert w.slab.free_count() + leqs.arena.pooled() == 256  # every record came back


def test_push_chain_publishes_several_events_with_one_cas(path):
    leqs = LocalEventQueues.create(2, 16)
    w = leqs.worker(leqs.arena.slab(0), path)
    slab, nxt = w.slab, w.slab.next
    hs = [slab.alloc() for _ in range(4)]
    for i, h in enumerate(hs):
        slab.write(h, float(i), i, 0, 0, None)
    for a, b in itertools.pairwise(hs):
        nxt[a] = b
    write_push(w, 0, 9.0, 9)
    w.push_chain(0, hs[0], hs[-1])
    assert w.cas_retries == 0  # the first guess is the top as read: no retry alone
    w.merge(0)
    assert [w.pop(0).seq for _ in range(5)] == [0, 1, 2, 3, 9]


def test_bad_entities_are_named(path):
    leqs = LocalEventQueues.create(2, 4)
    w = leqs.worker(leqs.arena.slab(0), path)
    with pytest.raises(IndexError, match=r"LEQ of entity 5 out of range\(2\)"):
        w.push(5, 0)
    with pytest.raises(IndexError, match=r"LEQ of entity -1 out of range\(2\)"):
        w.take(-1)


# 8 threads on 2 cores: in the full suite only
@pytest.mark.parametrize("threads", [2, 4, pytest.param(8, marks=pytest.mark.slow)])
def test_many_producers_one_consumer_lose_nothing_and_keep_order(path, threads):
    """threads-1 producers push to 16 entities while one consumer keeps merging and popping;
    a small arena forces handles through the overflow pool. Every event arrives exactly
    once, each drain pops in κ order, and each producer's events to an entity arrive in
    the order it pushed them."""
    entities, producers = 16, threads - 1
    per_producer = {"fast": 40_000, "public": 3_000}[path] // producers
    leqs = LocalEventQueues.create(entities, 2048, n_slabs=threads, batch=32)
    done = [False] * producers

    def producer(p):
        w = leqs.worker(leqs.arena.slab(p), path)
        rng = random.Random(p)
        for i in range(per_producer):
            entity = rng.randrange(entities)
            while True:
                try:
                    h = w.slab.alloc()
                    break
                except ArenaFullError:
                    time.sleep(0)  # the consumer frees records as it drains
            # τ grows with i, so per-producer order and κ order agree
            w.slab.write(h, float(i), (p << 32) | i, entity, 0, (p, i))
            w.push(entity, h)
        done[p] = True
        return w.cas_retries

    def consumer():
        w = leqs.worker(leqs.arena.slab(threads - 1), path)
        got = []
        while True:
            finished = all(done)
            for e in range(entities):
                heap = w.merge(e)
                batch = [heapq.heappop(heap) for _ in range(len(heap))]
                assert batch == sorted(batch), "a drain popped out of κ order"
                got.extend(batch)
            if finished:
                return got

    def role(i):
        return consumer() if i == threads - 1 else producer(i)

    results = run_threads(threads, role)
    got = results[-1]
    ids = [ev.payload for ev in got]
    assert len(ids) == len(set(ids)) == producers * per_producer
    last = {}
    for ev in got:  # in the order the consumer saw them
        p, i = ev.payload
        key = (p, ev.target)
        assert last.get(key, -1) < i, "a producer's events to one entity were reordered"
        last[key] = i
    assert sorted(ids) == [(p, i) for p in range(producers) for i in range(per_producer)]


# -- two epochs (the windowed runtime's LEQs) ------------------------------------------------
def test_epochs_are_checked():
    with pytest.raises(ValueError, match="epochs must be 1 or 2, got 3"):
        LocalEventQueues.create(2, 16, epochs=3)
    leqs = LocalEventQueues.create(2, 16, epochs=2)
    w = leqs.worker(leqs.arena.slab(0))
    with pytest.raises(ValueError, match="LEQ epochs count up from 0, got -1"):
        w.set_epoch(-1)


def test_region_planned_for_fewer_epochs_is_refused():
    from seer.queues import BufferLayout, EventArena

    layout = BufferLayout()
    regions = EventArena.plan(layout, 8)
    heads = LocalEventQueues.plan(layout, 4)  # one epoch's words
    buffer = layout.allocate()
    arena = EventArena(8, buffer, regions)
    with pytest.raises(ValueError, match="region 'leq_heads' has 4 words; 2 epochs of 4"):
        LocalEventQueues(4, arena, buffer, heads, epochs=2)


class CountingTakes:
    """Counts the exchanges (``take``) of LeqWorker while installed."""

    def __init__(self, monkeypatch):
        from seer.queues import LeqWorker

        self.count = 0
        original = LeqWorker.take

        def take(worker, entity):
            self.count += 1
            return original(worker, entity)

        monkeypatch.setattr(LeqWorker, "take", take)


def test_previous_epoch_is_taken_without_an_exchange(path, monkeypatch):
    leqs = LocalEventQueues.create(3, 64, epochs=2)
    w = leqs.worker(leqs.arena.slab(0), path)
    takes = CountingTakes(monkeypatch)
    w.set_epoch(1)
    for seq in range(3):
        write_push(w, 2, 5.0, seq)
    w.set_epoch(2)
    assert [ev.seq for ev in sorted(w.merge(2))] == [0, 1, 2]
    assert takes.count == 0
    assert leqs.words.array.tolist() == [-1] * 6  # the plain take left NIL behind
    assert w.slab.free_count() + leqs.arena.pooled() == 64


def test_records_left_two_epochs_back_are_found(path, monkeypatch):
    """Entity 0 is not merged in epoch 2, so in epoch 3 its epoch-1 records sit in the
    current parity's word, beside a push of epoch 3: the merge takes both."""
    leqs = LocalEventQueues.create(2, 64, epochs=2)
    w = leqs.worker(leqs.arena.slab(0), path)
    takes = CountingTakes(monkeypatch)
    w.set_epoch(1)
    write_push(w, 0, 1.0, 1)
    w.set_epoch(2)
    w.merge(1)  # another entity; 0 is not merged
    w.set_epoch(3)
    write_push(w, 0, 9.0, 3)
    assert [ev.seq for ev in sorted(w.merge(0))] == [1, 3]
    assert takes.count == 1


def test_pushes_of_the_current_epoch_wait_when_the_entity_merged_last_epoch(path,
                                                                            monkeypatch):
    leqs = LocalEventQueues.create(2, 64, epochs=2)
    w = leqs.worker(leqs.arena.slab(0), path)
    takes = CountingTakes(monkeypatch)
    w.set_epoch(1)
    w.merge(0)
    w.set_epoch(2)
    write_push(w, 0, 7.0, 2)  # a push of this epoch: for a later window
    assert w.merge(0) == []
    assert takes.count == 0
    w.set_epoch(3)
    assert [ev.seq for ev in w.merge(0)] == [2]
    assert takes.count == 0


def test_worker_reset_forgets_merge_epochs():
    leqs = LocalEventQueues.create(2, 64, epochs=2)
    w = leqs.worker(leqs.arena.slab(0))
    w.set_epoch(1)
    w.merge(0)
    leqs.reset()
    assert leqs.merged_in.tolist() == [-2, -2]


@pytest.mark.parametrize("threads", [2, 4])
def test_windows_of_epochs_lose_nothing_and_deliver_everything_in_time(path, threads):
    """The windowed runtime's discipline: in epoch k every thread pushes events to random
    entities (each for a later epoch) and merges a random share of the entities (each
    entity by one thread), with a barrier between epochs. Whenever an entity is merged in
    epoch k, its heap must hold every event pushed to it in epochs < k: nothing late,
    nothing lost, nothing twice; entities skipped for several epochs included."""
    import threading

    entities, epochs = 24, {"fast": 300, "public": 40}[path]
    leqs = LocalEventQueues.create(entities, 4096, n_slabs=threads, batch=16, epochs=2)
    barrier = threading.Barrier(threads)
    plans = []  # plans[k][e]: the thread that merges e in epoch k (or -1: nobody)
    rng = random.Random(threads)
    for _ in range(epochs + 2):
        plans.append([rng.choice([*range(threads), -1, -1]) for _ in range(entities)])
    sent = [[] for _ in range(threads)]  # (epoch, entity, id) per pushing thread
    seen = [[] for _ in range(threads)]  # (epoch, entity, [ids in the heap]) per merger

    def role(i):
        w = leqs.worker(leqs.arena.slab(i), path)
        r = random.Random(1000 + i)
        for k in range(1, epochs + 2):
            w.set_epoch(k)
            barrier.wait()
            order = list(range(entities))
            r.shuffle(order)
            for e in order:
                if plans[k][e] == i:
                    heap = w.merge(e)
                    seen[i].append((k, e, sorted(ev.payload for ev in heap)))
                    heap.clear()  # "ran" them
                if k <= epochs and r.random() < 0.5:
                    target = r.randrange(entities)
                    ident = (i, k, len(sent[i]))
                    h = w.slab.alloc()
                    w.slab.write(h, float(k), len(sent[i]), target, 0, ident)
                    w.push(target, h)
                    sent[i].append((k, target, ident))
            barrier.wait()
        w.set_epoch(epochs + 2)  # a last sweep: everything left is collected
        for e in range(i, entities, threads):
            heap = w.merge(e)
            seen[i].append((epochs + 2, e, sorted(ev.payload for ev in heap)))
            heap.clear()

    run_threads(threads, role)
    got = {}  # id -> epoch it was merged in
    for per_thread in seen:
        for k, _e, ids in per_thread:
            for ident in ids:
                assert ident not in got, f"event {ident} delivered twice"
                got[ident] = k
    all_sent = [s for per_thread in sent for s in per_thread]
    assert len(got) == len(all_sent), "events lost"
    merges = {}  # entity -> epochs it was merged in
    for per_thread in seen:
        for k, e, _ids in per_thread:
            merges.setdefault(e, []).append(k)
    for k, e, ident in all_sent:
        # delivered by the first merge of e in an epoch after the push (or, at the latest,
        # by that one: a push racing with a merge of its own epoch may be taken early)
        due = min(m for m in merges[e] if m > k)
        assert got[ident] <= due, f"event {ident} pushed in epoch {k} missed e's merge in {due}"
        assert got[ident] >= k


def test_send_stores_and_pushes_and_refuses_cleanly_when_the_arena_is_full(path):
    from seer.events import Event

    leqs = LocalEventQueues.create(2, 4, batch=2)
    w = leqs.worker(leqs.arena.slab(0), path)
    events = [Event(float(k), k, 1, 0, f"p{k}") for k in range(4)]
    for ev in events:
        w.send(1, ev)
    with pytest.raises(ArenaFullError):
        w.send(1, Event(9.0, 9, 1, 0, None))
    with pytest.raises(IndexError, match=r"LEQ of entity 2 out of range\(2\)"):
        w.send(2, events[0])
    assert sorted(w.merge(1)) == events  # the refused ones left no record behind
    assert w.slab.free_count() + leqs.arena.pooled() == 4
    w.send(0, events[0])  # records freed by the merge are used again
    assert w.merge(0) == [events[0]]


def test_send_all_sends_in_order_and_stops_where_the_arena_runs_out(path):
    from seer.events import Event

    leqs = LocalEventQueues.create(3, 4, batch=2)
    w = leqs.worker(leqs.arena.slab(0), path)
    events = [Event(float(k), k, k % 3, 0, k) for k in range(6)]
    assert w.send_all(events) == 4  # four records: the last two are not pushed
    got = sorted(ev for e in range(3) for ev in w.merge(e))
    assert got == events[:4]
    assert w.send_all([]) == 0
    for e in range(3):
        w.merge(e).clear()
    assert w.send_all(events[4:]) == 2  # the merge freed the records
    with pytest.raises(IndexError, match=r"LEQ of entity 3 out of range\(3\)"):
        w.send_all([Event(1.0, 9, 3, 0, None)])
