import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seer.queues import AtomicWords, selected_path
from tests.helpers import examples
from tests.queues.stress import run_threads

INT64 = st.integers(-(2**63), 2**63 - 1)
ops = st.lists(st.tuples(st.sampled_from(["load", "store", "exchange", "cas", "cas_hit",
                                          "fetch_add"]),
                         st.integers(0, 3), INT64, INT64), max_size=40)


def wrap(x):
    return (x + 2**63) % 2**64 - 2**63


@settings(max_examples=examples(60), deadline=None)
@given(script=ops)
def test_fast_and_public_paths_agree_with_a_reference(script):
    words = AtomicWords(4)
    fast, public = words.accessor("fast"), words.accessor("public")
    model = [0, 0, 0, 0]
    for step, (op, i, a, b) in enumerate(script):
        acc = fast if step % 2 else public
        if op == "load":
            assert acc.load(i) == model[i]
        elif op == "store":
            acc.store(i, a)
            model[i] = a
        elif op == "exchange":
            assert acc.exchange(i, a) == model[i]
            model[i] = a
        elif op in ("cas", "cas_hit"):
            expected = model[i] if op == "cas_hit" else a
            observed = acc.compare_exchange(i, expected, b)
            assert observed == model[i]
            if expected == model[i]:
                model[i] = b
        else:
            assert acc.fetch_add(i, a) == model[i]
            model[i] = wrap(model[i] + a)
        assert words.array.tolist() == model
    public.close()


# 8 threads on 2 cores: in the full suite only
@pytest.mark.parametrize("threads", [2, 4, pytest.param(8, marks=pytest.mark.slow)])
def test_concurrent_fetch_add_and_cas_loops_lose_nothing(path, threads):
    words = AtomicWords(2)
    n = 25_000 if path == "fast" else 2_500

    def work(_):
        acc = words.accessor(path)
        retries = 0
        for _ in range(n):
            acc.fetch_add(0, 1)
            current = acc.load(1)
            while (seen := acc.compare_exchange(1, current, current + 1)) != current:
                current = seen
                retries += 1
        return retries

    retries = run_threads(threads, work)
    assert words.array.tolist() == [threads * n, threads * n]
    # A failed compare-exchange saw a larger value, written by another thread since: no
    # thread can fail more often than the others increment.
    assert max(retries) <= (threads - 1) * n, retries


@pytest.mark.parametrize("threads", [2, 4])
def test_exchange_passes_every_token_exactly_once(path, threads):
    words = AtomicWords(1)
    words.array[0] = -1
    n = 20_000 if path == "fast" else 2_000

    def work(t):
        acc = words.accessor(path)
        return [acc.exchange(0, t * n + i) for i in range(n)]

    got = [v for seen in run_threads(threads, work) for v in seen] + [int(words.array[0])]
    assert sorted(got) == [-1, *range(threads * n)]


@pytest.mark.force_parallel_threads(4)
def test_accessors_are_thread_local_and_independent():
    # run by pytest-run-parallel in 4 threads at once: each builds its own words
    words = AtomicWords(3)
    acc = words.accessor()
    for i in range(2000):
        acc.fetch_add(i % 3, 2)
    assert words.array.sum() == 4000


def test_shared_memory_words_are_seen_by_another_handle():
    words, shm = AtomicWords.shared(4)
    try:
        other, shm2 = AtomicWords.shared(4, name=shm.name)
        words.accessor().fetch_add(2, 7)
        assert other.accessor().load(2) == 7
        other.release()
        shm2.close()
    finally:
        words.release()
        shm.close()
        shm.unlink()


def test_bad_use_is_named():
    with pytest.raises(ValueError, match="at least one word, got n=0"):
        AtomicWords(0)
    with pytest.raises(ValueError, match="unknown atomics path 'slow'"):
        AtomicWords(1).accessor("slow")
    with pytest.raises(IndexError, match=r"atomic word 5 out of range\(1\)"):
        AtomicWords(1).accessor("public").load(5)
    with pytest.raises(ValueError, match="not 8-byte aligned"):
        AtomicWords(1, buffer=memoryview(np.zeros(4, np.int64)).cast("B")[1:9])


def test_env_var_forces_the_public_path(monkeypatch):
    code = "from seer.queues import selected_path; print(selected_path())"
    env = dict(os.environ, SEER_ATOMICS="public")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "public"
    env["SEER_ATOMICS"] = "bogus"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "SEER_ATOMICS='bogus'" in out.stderr
    # read at each call: unset or "fast" means the fast path, which works here (the path
    # fixture insists on it)
    for value in (None, "fast", " FAST "):
        if value is None:
            monkeypatch.delenv("SEER_ATOMICS", raising=False)
        else:
            monkeypatch.setenv("SEER_ATOMICS", value)
        assert selected_path() == "fast", value
    monkeypatch.setenv("SEER_ATOMICS", "Public")
    assert selected_path() == "public"
