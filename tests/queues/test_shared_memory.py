"""The queues work across processes on one multiprocessing.shared_memory block."""

import subprocess
import sys
import textwrap

from seer.queues import LocalEventQueues

CHILD = textwrap.dedent("""
    import sys
    from seer.queues import LocalEventQueues
    name, slab_index, count, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    mine = range(slab_index * 4000, slab_index * 4000 + 4000)  # disjoint per process
    leqs, shm = LocalEventQueues.create_shared(4, 8192, batch=16, name=name, handles=mine)
    slab = leqs.arena.slab(0)
    w = leqs.worker(slab, path)
    print("ready", flush=True)
    sys.stdin.readline()  # start together
    for i in range(count):
        h = slab.alloc()
        slab.write_numeric(h, float(i), (slab_index << 32) | i, 1, 3, float(slab_index), i * 0.5)
        w.push(1, h)
    print("done", w.cas_retries, flush=True)
    slab.close()
    leqs.close()
    shm.close()
""")


def test_two_processes_push_into_one_intake(path):
    count = 3000
    leqs, shm = LocalEventQueues.create_shared(4, 8192, batch=16, handles=range(8000, 8192))
    try:
        procs = [subprocess.Popen([sys.executable, "-c", CHILD, shm.name, str(k), str(count),
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
        slab = leqs.arena.slab(0)
        w = leqs.worker(slab, path)
        w.merge(1)
        events = [w.pop(1) for _ in range(2 * count)]
        assert w.take(1) == -1 and not leqs.heaps[1]
        seen = sorted((ev.seq >> 32, ev.seq & 0xFFFFFFFF) for ev in events)
        assert seen == sorted((k, i) for k in (0, 1) for i in range(count))
        for ev in events:
            k, i = ev.seq >> 32, ev.seq & 0xFFFFFFFF
            assert ev.tau == float(i) and ev.target == 1 and ev.kind == 3
            assert ev.payload == (float(k), i * 0.5)
        assert [(e.tau, e.seq) for e in events] == sorted((e.tau, e.seq) for e in events)
        slab.close()
    finally:
        leqs.close()
        shm.close()
        shm.unlink()
