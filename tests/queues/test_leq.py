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


@pytest.mark.parametrize("threads", [2, 4, 8])
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
    assert all(isinstance(r, int) for r in results[:-1])
