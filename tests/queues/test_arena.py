import pytest

from seer.events import Event
from seer.queues import ArenaFullError, EventArena, HandleError


@pytest.mark.parametrize("payload", [None, 1.5, -0.0, 7, -(2**63), 2**63 - 1, 2**64, "s",
                                     (1, 2), [3.0], {"k": 1}])
def test_records_round_trip(payload):
    slab = EventArena.create(8).slab(0)
    h = slab.alloc()
    slab.write(h, 2.25, 99, 3, 4, payload)
    ev = slab.read(h)
    assert ev == Event(2.25, 99, 3, 4, payload)
    assert type(ev.payload) is type(payload)
    assert type(ev.tau) is float and type(ev.seq) is int


def test_capacity_exhaustion_is_an_error_and_frees_recover():
    arena = EventArena.create(6, n_slabs=2, batch=2)
    a, b = arena.slab(0), arena.slab(1)
    got = [a.alloc() for _ in range(6)]
    assert sorted(got) == list(range(6))
    with pytest.raises(ArenaFullError, match="event arena full: no free record among 6"):
        a.alloc()
    for h in got[:4]:
        b.free(h)  # b keeps up to 2 batches (4 records) for itself
    with pytest.raises(ArenaFullError):
        a.alloc()
    b.free(got[4])  # now b holds 5 > 4: one batch goes back to the pool
    assert b.free_count() == 3
    assert sorted([a.alloc(), a.alloc()]) == sorted(got[3:5])


def test_slabs_share_out_handles_and_overflow_through_the_pool():
    arena = EventArena.create(4096, n_slabs=2, batch=64)
    a, b = arena.slab(0), arena.slab(1)
    handles = [a.alloc() for _ in range(4096)]
    assert sorted(handles) == list(range(4096)) and a.free_count() == 0
    for h in handles:
        b.free(h)
    assert b.free_count() <= 2 * 64  # the rest went back to the pool in batches
    again = [a.alloc() for _ in range(4096 - b.free_count())]
    assert len(set(again)) == len(again)
    assert not set(again) & set(b._free)


def test_bad_handles_are_named():
    arena = EventArena.create(4)
    slab = arena.slab(0)
    for h in (-1, 4, 10**6):
        with pytest.raises(HandleError, match=rf"event handle {h} out of range\(4\)"):
            slab.free(h)
        with pytest.raises(HandleError, match=rf"event handle {h} out of range\(4\)"):
            slab.read(h)
    with pytest.raises(ValueError, match=r"slab 2 out of range\(1\)"):
        arena.slab(2)
    with pytest.raises(ValueError, match="arena capacity must be >= 1, got 0"):
        EventArena.create(0)


def test_free_list_is_one_object_for_the_slabs_life_and_trim_gives_batches_back():
    """The LEQ worker holds the slab's free list across calls: release and trim must
    change it in place."""
    arena = EventArena.create(64, batch=4)
    slab = arena.slab(0)
    free = slab.free_list
    handles = [slab.alloc() for _ in range(20)]
    assert slab.free_list is free
    free.extend(handles)  # what the LEQ worker's inlined consume does
    assert len(free) > slab.high
    slab.trim()
    assert slab.free_list is free and len(free) <= slab.high
    assert len(free) + arena.pooled() == 64
    slab.release()
    assert slab.free_list is free and free == [] and arena.pooled() == 64
