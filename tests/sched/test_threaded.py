"""What the parallel runtimes share through the runtime base: generators seeded on the
threads that draw from them."""

import threading

import numpy as np
import pytest

import seer
from seer.testing import RandomModel, assert_equivalent


def _homes(rt, n):
    """The thread each entity starts the episode on: its home, or its optimistic binding."""
    if rt.name == "optimistic":
        return np.array(rt._shared.owner)
    return rt.assignment.home(np.arange(n), rt.threads, n)


@pytest.mark.parametrize("kind", ["seer", "static-block", "optimistic"])
def test_each_generator_is_made_on_its_entitys_thread(kind, monkeypatch):
    """Generators of neighbouring entities must not be made one after another by one thread
    (their states would share cache lines): each is made by the thread that runs its
    entity, from the same seed as serial's, at every reset."""
    made = {}  # entity -> thread that made its generator
    original = np.random.default_rng

    def default_rng(seed=None):
        if isinstance(seed, np.random.SeedSequence) and len(seed.spawn_key) == 1:
            made[seed.spawn_key[0]] = threading.get_ident()
        return original(seed)

    monkeypatch.setattr(np.random, "default_rng", default_rng)
    with seer.make_runtime(RandomModel(60, seed=4), kind, threads=3) as rt:
        for seed in (1, 2):
            made.clear()
            rt.reset(seed)
            assert sorted(made) == list(range(60))
            home = _homes(rt, 60)
            threads_of_home = [{made[e] for e in range(60) if home[e] == i} for i in range(3)]
            assert all(len(t) == 1 for t in threads_of_home)  # one thread per home
            assert len(set.union(*threads_of_home)) == 3  # and a different one for each
            assert threads_of_home[0] == {threading.get_ident()}  # home 0 is the caller
    monkeypatch.undo()
    assert_equivalent(lambda m: seer.make_runtime(m, kind, threads=3), RandomModel(60, seed=4),
                      seeds=[1, 2], steps=3)


def test_one_thread_seeds_on_the_caller(monkeypatch):
    made = set()
    original = np.random.default_rng

    def default_rng(seed=None):
        made.add(threading.get_ident())
        return original(seed)

    monkeypatch.setattr(np.random, "default_rng", default_rng)
    with seer.make_runtime(RandomModel(20, seed=4), "seer", threads=1) as rt:
        rt.reset(0)
    assert made == {threading.get_ident()}
