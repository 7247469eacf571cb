"""The queues work across processes on one multiprocessing.shared_memory block."""

import subprocess
import sys
import textwrap

from seer.events import Event
from seer.interprocess import SharedQueues, drain_numeric

CHILD = textwrap.dedent("""
    import sys
    from seer.interprocess import SharedQueues
    name, slab_index, count, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    mine = range(slab_index * 4000, slab_index * 4000 + 4000)  # disjoint per process
    q = SharedQueues(4, 8192, batch=16, name=name, handles=mine)
    slab = q.arena.slab(0)
    w = q.leqs.worker(slab, path)
    print("ready", flush=True)
    sys.stdin.readline()  # start together
    for i in range(count):
        h = slab.alloc()
        q.records.write(h, float(i), (slab_index << 32) | i, 1, 3, float(slab_index), i * 0.5)
        w.push(1, h)
    print("done", w.cas_retries, flush=True)
    slab.close()
    q.close()
""")


def test_two_processes_push_into_one_intake(path):
    count = 3000
    q = SharedQueues(4, 8192, batch=16, handles=range(8000, 8192))
    try:
        procs = [subprocess.Popen([sys.executable, "-c", CHILD, q.name, str(k), str(count),
                                   path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True) for k in (0, 1)]
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            out, _ = p.communicate(timeout=120)
            assert p.returncode == 0
            assert out.startswith("done")
        slab = q.arena.slab(0)
        w = q.leqs.worker(slab, path)
        events = sorted(drain_numeric(w, q.records, 1))
        assert len(events) == 2 * count
        assert w.take(1) == -1 and not q.leqs.heaps[1]
        seen = sorted((ev.seq >> 32, ev.seq & 0xFFFFFFFF) for ev in events)
        assert seen == sorted((k, i) for k in (0, 1) for i in range(count))
        for ev in events:
            k, i = ev.seq >> 32, ev.seq & 0xFFFFFFFF
            assert ev.tau == float(i) and ev.target == 1 and ev.kind == 3
            assert ev.payload == (float(k), i * 0.5)
        slab.close()
    finally:
        q.close()
        q.unlink()


def test_numeric_records_use_both_slots():
    q = SharedQueues(2, 4)
    try:
        slab = q.arena.slab(0)
        h = slab.alloc()
        q.records.write(h, 1.0, 2, 3, 5, 0.5, -7.25)
        assert q.records.read(h) == Event(1.0, 2, 3, 5, (0.5, -7.25))
        slab.close()
    finally:
        q.close()
        q.unlink()
