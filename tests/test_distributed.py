"""Environment replicas on a Dask cluster (seer.distributed): bit-identical results, worker
faults with replay, replicas holding several environments, caller-side errors, a close
that leaves nothing behind, and TLS clusters that refuse clients whose certificates do not
match."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

import numpy as np
import pytest

pytest.importorskip("distributed")

import psutil
from distributed import Client, Security

import seer
from seer.distributed import (
    ReplicaEnvs,
    ReplicaError,
    ReplicaLostError,
    local_cluster,
)
from seer.specs import load_model

pytestmark = pytest.mark.timeout(60)

PCS = ("workloads.pcs:PCS", {"width": 4, "height": 4, "cost_us": 5, "step_length": 100.0})
AIRCRAFT = ("workloads.aircraft:Aircraft", {"n_uavs": 20, "cost_us": 30, "density": 3.0})
# Every event also sleeps 40 ms with the CPU released: a step lasts long enough (about
# 0.3 s) to kill a worker in the middle of it, at no CPU cost.
SLOW = ("workloads.synthetic:BenchModel", {"n_entities": 8, "cost_us": 1, "wait_us": 40_000})
# The same for a replica of two environments: a vector step of both lasts about 0.25 s on
# 2 threads, and each environment alone on serial about as long.
SLOW_PAIR = ("workloads.synthetic:BenchModel", {"n_entities": 4, "cost_us": 1, "wait_us": 30_000})


@pytest.fixture(scope="module")
def client():
    """One two-worker LocalCluster for the module (starting one costs about 2 s)."""
    cluster = local_cluster(2, silence_logs=50)  # kills in the fault tests log errors
    c = Client(cluster, direct_to_workers=True)
    yield c
    c.close()
    cluster.close()


@pytest.fixture
def fresh(client):
    """The shared client, with both workers up (a test before may have killed one)."""
    client.wait_for_workers(2, timeout=30)
    return client


def actions_for(envs: ReplicaEnvs, rng: np.random.Generator, spec: str) -> np.ndarray | list:
    k, a = envs.num_envs, envs.n_agents
    if spec.endswith("PCS"):
        return rng.integers(0, 3, size=(k, a))
    if spec.endswith("Aircraft"):
        return rng.uniform(-1, 1, size=(k, a, 2)).astype(np.float32)
    return np.ones((k, a), np.int64)


class Reference:
    """The same replicas (or environments) stepped one after another in this process."""

    def __init__(self, spec, kwargs, seeds, kind="seer", threads=2):
        self.runtimes = [seer.make_runtime(load_model(spec, kwargs), kind, threads=threads)
                         for _ in seeds]
        self.first = [rt.reset(s) for rt, s in zip(self.runtimes, seeds, strict=True)]

    def step(self, actions):
        return [rt.step(None if actions is None else actions[k])
                for k, rt in enumerate(self.runtimes)]

    def close(self):
        for rt in self.runtimes:
            rt.close()


def assert_batch_equals(batch, results):
    assert batch.observations.shape[0] == len(results)
    for k, r in enumerate(results):
        assert np.array_equal(batch.observations[k], np.stack(r.observations))
        assert batch.observations[k].dtype == np.stack(r.observations).dtype
        assert np.array_equal(batch.rewards[k], r.rewards)
        assert np.array_equal(batch.terminations[k], r.terminations)
        assert np.array_equal(batch.truncations[k], r.truncations)
        assert batch.infos[k] == r.infos
        assert batch.steps[k] == r.step


@pytest.mark.parametrize("model", [PCS, AIRCRAFT], ids=["pcs", "aircraft"])
def test_bit_identical_to_in_process_replicas(fresh, model):
    spec, kwargs = model
    seeds = [11, 12]
    rng = np.random.default_rng(5)
    with ReplicaEnvs(spec, kwargs, replicas=2, threads=2, client=fresh) as envs:
        assert len(set(envs.workers)) == 2  # one replica per worker
        ref = Reference(spec, kwargs, seeds)
        assert_batch_equals(envs.reset(seeds), ref.first)
        for t in range(4):
            actions = actions_for(envs, rng, spec)
            if t % 2:
                batch = envs.step(actions)
            else:
                envs.step_async(actions)
                batch = envs.step_wait()
            assert_batch_equals(batch, ref.step(actions))
        assert envs.steps == [4, 4]
        ref.close()


def test_int_seed_gives_replica_k_seed_plus_k_and_replicas_differ(fresh):
    spec, kwargs = PCS
    with ReplicaEnvs(spec, kwargs, replicas=2, client=fresh) as envs:
        batch = envs.reset(seeds=7)
        ref = Reference(spec, kwargs, [7, 8], threads=1)
        assert_batch_equals(batch, ref.first)
        actions = np.ones((2, envs.n_agents), np.int64)
        for _ in range(3):
            batch = envs.step(actions)
            assert_batch_equals(batch, ref.step(actions))
        assert not np.array_equal(batch.observations[0], batch.observations[1])
        ref.close()


def test_more_replicas_than_workers_works_and_warns(fresh):
    spec, kwargs = PCS
    with pytest.warns(RuntimeWarning, match="one after another"), \
            ReplicaEnvs(spec, kwargs, replicas=3, client=fresh) as envs:
        assert sorted(envs.workers.count(w) for w in set(envs.workers)) == [1, 2]
        ref = Reference(spec, kwargs, [0, 1, 2], threads=1)
        assert_batch_equals(envs.reset(0), ref.first)
        actions = np.full((3, 16), 2, np.int64)
        assert_batch_equals(envs.step(actions), ref.step(actions))
        ref.close()


def test_workers_keep_the_gil_off(fresh):
    import sys

    with ReplicaEnvs(*PCS, replicas=2, client=fresh) as envs:
        assert envs.facts["gil_disabled"] == seer.gil_disabled()
        assert envs.facts["observation_shape"] == (6,) and envs.facts["action_shape"] == ()
    gil = fresh.run(lambda: sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True)
    assert set(gil.values()) == {not seer.gil_disabled()}


def test_bad_action_shape_is_refused_before_anything_is_sent(fresh, monkeypatch):
    spec, kwargs = PCS
    with ReplicaEnvs(spec, kwargs, replicas=2, client=fresh) as envs:
        envs.reset([1, 2])
        ref = Reference(spec, kwargs, [1, 2], threads=1)
        sent = []
        original = envs._call
        monkeypatch.setattr(envs, "_call", lambda *a: sent.append(a) or original(*a))
        for bad in (np.zeros((3, 16), np.int64), np.zeros((2, 15), np.int64),
                    np.zeros((2, 16, 2), np.int64), np.zeros(2), [[1, 2], [3]], "abc"):
            with pytest.raises(seer.ModelError, match=r"shape|array"):
                envs.step(bad)
        assert sent == [] and envs.steps == [0, 0]
        good = np.full((2, 16), 2, np.int64)
        assert_batch_equals(envs.step(good), ref.step(good))
        with pytest.raises(seer.ModelError, match="one seed per replica"):
            envs.reset([1, 2, 3])
        ref.close()


def test_action_rejected_by_the_model_names_replica_and_step(fresh):
    spec, kwargs = PCS
    with ReplicaEnvs(spec, kwargs, replicas=2, client=fresh) as envs:
        envs.reset([1, 2])
        ref = Reference(spec, kwargs, [1, 2], threads=1)
        actions = np.ones((2, 16), np.int64)
        assert_batch_equals(envs.step(actions), ref.step(actions))
        bad = actions.copy()
        bad[1, 3] = 99  # right shape, outside PCS's action space: only the model knows
        with pytest.raises(ReplicaError, match=r"replica 1 .* step 2.*reserve") as info:
            envs.step(bad)
        assert isinstance(info.value.__cause__, seer.ModelError)
        assert info.value.replica == 1 and info.value.step == 2
        assert "Traceback" in info.value.remote_traceback
        # Replica 0 took step 2; replica 1 refused it and is unchanged: step it alone...
        assert envs.steps == [2, 1]
        ref.runtimes[0].step(bad[0])
        # ...and the two stay exactly on their references from there on.
        batch = envs.step(actions)
        assert list(batch.steps) == [3, 2]
        assert_batch_equals(batch, ref.step(actions))
        ref.close()


def test_error_in_a_step_on_a_worker_needs_a_reset(fresh):
    # One event per step at most: PCS's first step runs more, so it fails on the worker.
    with ReplicaEnvs(*PCS, client=fresh, runtime_options={"max_events_per_step": 1}) as envs:
        envs.reset(0)
        with pytest.raises(ReplicaError, match=r"replica 0 .*step 1.*StepLimitError") as info:
            envs.step(np.ones((2, 16), np.int64))
        assert "StepLimitError" in info.value.remote_traceback
        assert envs.steps == [0, 0]
        with pytest.raises(seer.RuntimeStateError, match="needs reset"):
            envs.step(np.ones((2, 16), np.int64))
        assert list(envs.reset(0).steps) == [0, 0]


def test_factory_that_raises_on_a_worker_carries_the_remote_traceback(fresh):
    before = set(fresh.has_what())
    with pytest.raises(ReplicaError, match=r"fanout must be .*in 0\.\.16") as info:
        ReplicaEnvs("workloads.synthetic:BenchModel", {"n_entities": 4, "fanout": 99},
                    client=fresh)
    err = info.value
    assert err.replica == 0 and "building its model" in str(err)
    assert "synthetic.py" in err.remote_traceback and "Traceback" in err.remote_traceback
    assert isinstance(err.__cause__, seer.ModelError)
    assert set(fresh.has_what()) == before  # the client stays usable
    with pytest.raises(ReplicaError, match="cannot import"):
        ReplicaEnvs("workloads.no_such_module:X", client=fresh)


def test_factories_that_cannot_travel_are_refused_on_the_caller_side():
    with pytest.raises(seer.ModelError, match="not importable"):
        ReplicaEnvs(lambda: None)
    with pytest.raises(seer.ModelError, match="module:callable"):
        ReplicaEnvs("workloads.pcs.PCS")
    with pytest.raises(seer.ModelError, match="picklable"):
        ReplicaEnvs(*PCS[:1], {"width": threading.Lock()})
    with pytest.raises(seer.ModelError, match="replicas"):
        ReplicaEnvs(*PCS, replicas=0)


def test_importable_callable_is_accepted(fresh):
    from workloads.pcs import PCS as PCSModel

    with ReplicaEnvs(PCSModel, PCS[1], client=fresh) as envs:
        assert envs.spec == "workloads.pcs.model:PCS"
        assert envs.reset(0).observations.shape == (2, 16, 6)


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("when", ["between", "during"])
def test_killed_worker_is_reported_then_replayed_exactly(fresh, when):
    spec, kwargs = SLOW if when == "during" else PCS
    seeds = [3, 4]
    rng = np.random.default_rng(0)
    with ReplicaEnvs(spec, kwargs, replicas=2, threads=2, client=fresh) as envs:
        ref = Reference(spec, kwargs, seeds)
        envs.reset(seeds)
        for _ in range(3):
            actions = actions_for(envs, rng, spec)
            last = ref.step(actions)
            assert_batch_equals(envs.step(actions), last)
        victim = envs.pids()[1]
        old_worker = envs.workers[1]
        actions = actions_for(envs, rng, spec)
        if when == "between":
            _kill(victim)
            assert _settle(lambda: envs.lost == [1])  # once Dask's scheduler has seen it
            with pytest.raises(ReplicaLostError, match=r"replica 1 .*step 4") as info:
                envs.step(actions)
            assert envs.steps == [3, 3]  # refused before anything was sent
        else:
            envs.step_async(actions)
            time.sleep(0.1)  # the step is running on both workers now
            _kill(victim)
            with pytest.raises(ReplicaLostError, match=r"replica 1 .*step 4") as info:
                envs.step_wait()
        err = info.value
        assert err.replica == 1 and err.step == 4 and err.worker == old_worker
        assert err.replicas == (1,) and envs.lost == [1]
        # Nothing goes on with stale data until the replica is back.
        with pytest.raises(ReplicaLostError):
            envs.step(actions)
        batch = envs.restart_lost()
        assert envs.lost == [] and envs.workers[1] != old_worker
        assert victim not in envs.pids()
        expected = ref.step(actions)
        if when == "between":
            assert_batch_equals(batch, last)  # step 3, where both replicas stand again
            batch = envs.step(actions)
        # "during": the interrupted step's outputs, now complete, from restart_lost().
        assert_batch_equals(batch, expected)
        for _ in range(2):
            actions = actions_for(envs, rng, spec)
            assert_batch_equals(envs.step(actions), ref.step(actions))
        ref.close()


def test_step_wait_timeout_leaves_the_step_pending(fresh):
    spec, kwargs = SLOW
    with ReplicaEnvs(spec, kwargs, replicas=2, threads=2, client=fresh) as envs:
        ref = Reference(spec, kwargs, [0, 1])
        envs.reset([0, 1])
        actions = np.ones((2, 8), np.int64)
        envs.step_async(actions)
        with pytest.raises(TimeoutError, match="step_wait"):
            envs.step_wait(timeout=0.01)  # a step takes about 0.3 s
        assert envs.steps == [0, 0]
        assert_batch_equals(envs.step_wait(timeout=30), ref.step(actions))
        ref.close()


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _settle(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_close_leaves_no_processes_threads_or_cluster(fresh):
    # The shared cluster is up, so Dask's process-wide helpers (its offload thread) exist.
    threads_before = threading.active_count()
    children_before = _children()
    with ReplicaEnvs(*PCS, replicas=2, threads=2) as envs:  # its own LocalCluster
        cluster = envs._own_cluster
        assert cluster is not None
        mine = _children() - children_before
        assert len(mine) >= 2  # a nanny and a worker process per replica
        envs.reset(0)
        envs.step(np.ones((2, 16), np.int64))
    assert cluster.status.name == "closed" and envs.client.status == "closed"
    assert _settle(lambda: not (mine & _children())), mine & _children()
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"
                   for p in mine)
    assert _settle(lambda: threading.active_count() <= threads_before), \
        [t.name for t in threading.enumerate()]
    envs.close()  # idempotent
    with pytest.raises(seer.RuntimeStateError, match="closed"):
        envs.reset(0)
    # A factory that fails on the workers of an embedded cluster leaves nothing either.
    with pytest.raises(ReplicaError, match="fanout"):
        ReplicaEnvs("workloads.synthetic:BenchModel", {"n_entities": 4, "fanout": 99},
                    replicas=1)
    assert _settle(lambda: _children() == children_before)
    assert _settle(lambda: threading.active_count() <= threads_before), \
        [t.name for t in threading.enumerate()]


def test_close_keeps_a_client_passed_in_and_refuses_misuse(fresh):
    envs = ReplicaEnvs(*PCS, replicas=2, client=fresh)
    with pytest.raises(seer.RuntimeStateError, match="reset"):
        envs.step(np.ones((2, 16), np.int64))
    envs.reset(0)
    with pytest.raises(seer.RuntimeStateError, match="step_async"):
        envs.step_wait()
    envs.step_async(np.ones((2, 16), np.int64))
    with pytest.raises(seer.RuntimeStateError, match="pending"):
        envs.step_async(np.ones((2, 16), np.int64))
    envs.step_wait()
    envs.close()
    assert fresh.status == "running" and len(fresh.nthreads()) == 2
    assert _settle(lambda: not any(k.startswith("seer-replica")
                                   for keys in fresh.has_what().values() for k in keys))


# -- replicas holding several environments (envs_per_replica) -----------------------------------
def alone(spec, kwargs, seeds):
    """Each environment stepped alone on the serial runtime, with its own seed."""
    return Reference(spec, kwargs, seeds, kind="serial", threads=None)


def _gil_off_everywhere(client) -> bool:
    gil = client.run(lambda: sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True)
    return set(gil.values()) == {not seer.gil_disabled()}


@pytest.mark.parametrize(("model", "kind"), [(PCS, "seer"), (AIRCRAFT, "seer"), (PCS, "serial")],
                         ids=["pcs-seer", "aircraft-seer", "pcs-serial"])
def test_replica_of_k_envs_is_bit_identical_to_each_env_alone_on_serial(fresh, model, kind):
    spec, kwargs = model
    rng = np.random.default_rng(3)
    threads = 2 if kind == "seer" else None
    with ReplicaEnvs(spec, kwargs, replicas=2, envs_per_replica=3, kind=kind,
                     threads=threads, client=fresh) as envs:
        assert (envs.replicas, envs.envs_per_replica, envs.num_envs) == (2, 3, 6)
        assert len(set(envs.workers)) == 2 and len(envs.workers) == 2
        assert envs.facts["envs"] == 3 and envs.facts["threads"] == (threads or 1)
        assert envs.facts["gil_disabled"] == seer.gil_disabled()
        # An int seed s: environment k of replica r gets s + 3 r + k.
        ref = alone(spec, kwargs, [40 + i for i in range(6)])
        assert_batch_equals(envs.reset(40), ref.first)
        for t in range(3):
            actions = actions_for(envs, rng, spec)
            if t % 2:
                envs.step_async(actions)
                batch = envs.step_wait()
            else:
                batch = envs.step(actions)
            assert_batch_equals(batch, ref.step(actions))
        assert envs.steps == [3] * 6 and list(batch.steps) == [3] * 6
        assert len({batch.observations[i].tobytes() for i in range(6)}) == 6  # all differ
        ref.close()
        # One seed per environment, in environment order.
        seeds = [9, 2, 7, 5, 11, 1]
        ref = alone(spec, kwargs, seeds)
        assert_batch_equals(envs.reset(seeds), ref.first)
        actions = actions_for(envs, rng, spec)
        assert_batch_equals(envs.step(actions), ref.step(actions))
        ref.close()
    assert _gil_off_everywhere(fresh)  # the workers stepped VectorRuntimes with the GIL off


@pytest.mark.parametrize(("when", "kind"), [("during", "seer"), ("between", "serial")])
def test_killed_worker_of_a_replica_of_k_envs_is_replayed_exactly(fresh, when, kind):
    spec, kwargs = SLOW_PAIR if when == "during" else PCS
    seeds = [30, 31, 32, 33]
    rng = np.random.default_rng(1)
    threads = 2 if kind == "seer" else None
    with ReplicaEnvs(spec, kwargs, replicas=2, envs_per_replica=2, kind=kind,
                     threads=threads, client=fresh) as envs:
        ref = alone(spec, kwargs, seeds)
        assert_batch_equals(envs.reset(seeds), ref.first)
        for _ in range(2):
            actions = actions_for(envs, rng, spec)
            last = ref.step(actions)
            assert_batch_equals(envs.step(actions), last)
        victim, old_worker = envs.pids()[1], envs.workers[1]
        actions = actions_for(envs, rng, spec)
        if when == "between":
            _kill(victim)
            assert _settle(lambda: envs.lost == [1])
            with pytest.raises(ReplicaLostError,
                               match=r"replica 1 \(environments 2\.\.3\) .*step 3") as info:
                envs.step(actions)
            assert envs.steps == [2] * 4  # refused before anything was sent
        else:
            envs.step_async(actions)
            time.sleep(0.1)  # the step is running on both workers now
            _kill(victim)
            with pytest.raises(ReplicaLostError,
                               match=r"replica 1 \(environments 2\.\.3\) .*step 3") as info:
                envs.step_wait()
        assert info.value.replica == 1 and info.value.worker == old_worker
        batch = envs.restart_lost()
        assert envs.lost == [] and envs.workers[1] != old_worker
        expected = ref.step(actions)
        if when == "between":
            assert_batch_equals(batch, last)  # both environments of replica 1 replayed
            batch = envs.step(actions)
        assert_batch_equals(batch, expected)
        actions = actions_for(envs, rng, spec)
        assert_batch_equals(envs.step(actions), ref.step(actions))  # state bit-identical
        ref.close()


def test_bad_envs_per_replica_is_refused_before_anything_starts():
    children_before = _children()
    for bad in (0, -1, 1.5, True, "2", None):
        with pytest.raises(seer.ModelError, match=r"envs_per_replica must be an int >= 1"):
            ReplicaEnvs(*PCS, envs_per_replica=bad)
    assert _children() == children_before


def test_wrong_number_of_actions_or_seeds_names_the_environments(fresh, monkeypatch):
    spec, kwargs = PCS
    with ReplicaEnvs(spec, kwargs, replicas=2, envs_per_replica=2, client=fresh) as envs:
        with pytest.raises(seer.ModelError,
                           match=r"one seed per environment \(4: 2 replicas x 2\), got 2"):
            envs.reset([1, 2])
        envs.reset(0)
        sent = []
        original = envs._call
        monkeypatch.setattr(envs, "_call", lambda *a: sent.append(a) or original(*a))
        for bad in (np.zeros((2, 16), np.int64), np.zeros((3, 16), np.int64),
                    np.zeros((4, 15), np.int64)):
            with pytest.raises(seer.ModelError, match=r"actions must have shape \(4, 16\) "
                               r"\(environments = 2 replicas x 2 envs_per_replica, agents"):
                envs.step(bad)
        assert sent == [] and envs.steps == [0] * 4


@pytest.mark.parametrize("kind", ["seer", "serial"])
def test_action_rejected_in_a_replica_of_k_envs(fresh, kind):
    spec, kwargs = PCS
    threads = 2 if kind == "seer" else None
    with ReplicaEnvs(spec, kwargs, replicas=2, envs_per_replica=2, kind=kind,
                     threads=threads, client=fresh) as envs:
        ref = alone(spec, kwargs, [0, 1, 2, 3])
        envs.reset(0)
        good = np.ones((4, 16), np.int64)
        bad = good.copy()
        bad[3, 5] = 99  # environment 1 of replica 1: only the model knows it is out of range
        with pytest.raises(ReplicaError, match=r"replica 1 \(environments 2\.\.3\) .*step 1"):
            envs.step(bad)
        assert envs.steps == [1, 1, 0, 0]
        ref.runtimes[0].step(good[0])
        ref.runtimes[1].step(good[1])
        # Every environment's actions are checked before any steps (VectorRuntime, on
        # every kind): replica 1 refused as a whole and is unchanged; it goes on exactly.
        batch = envs.step(good)
        assert list(batch.steps) == [2, 2, 1, 1]
        assert_batch_equals(batch, ref.step(good))


# -- who may reach the replicas: TLS ------------------------------------------------------------
@dataclass
class TLS:
    """Certificates made for the tests: ``good`` is the cluster's, signed by its own CA;
    ``other`` is signed by another CA; ``mixed`` trusts the cluster's CA but presents
    ``other``'s certificate."""

    good: Security
    other: Security
    mixed: Security


def _make_ca_and_cert(directory, name: str) -> Security:
    """A CA, and one certificate/key pair it signs (for 127.0.0.1, client and server use),
    written to ``directory``; a Security that uses them for every role."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    valid = {"not_valid_before": now - datetime.timedelta(minutes=5),
             "not_valid_after": now + datetime.timedelta(days=1)}
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} test CA")])
    ca = (x509.CertificateBuilder(subject_name=ca_name, issuer_name=ca_name,
                                  public_key=ca_key.public_key(),
                                  serial_number=x509.random_serial_number(), **valid)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(
              digital_signature=False, content_commitment=False, key_encipherment=False,
              data_encipherment=False, key_agreement=False, key_cert_sign=True,
              crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder(
                subject_name=x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]),
                issuer_name=ca_name, public_key=key.public_key(),
                serial_number=x509.random_serial_number(), **valid)
            .add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    directory.mkdir()
    ca_file, cert_file, key_file = (directory / n for n in ("ca.pem", "cert.pem", "key.pem"))
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.touch(mode=0o600)
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    roles = {f"tls_{role}_{part}": str(path) for role in ("client", "scheduler", "worker")
             for part, path in (("cert", cert_file), ("key", key_file))}
    return Security(tls_ca_file=str(ca_file), require_encryption=True, **roles)


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> TLS:
    pytest.importorskip("cryptography")
    root = tmp_path_factory.mktemp("tls")
    good = _make_ca_and_cert(root / "cluster", "cluster")
    other = _make_ca_and_cert(root / "other", "other")
    mixed = Security(tls_ca_file=good.tls_ca_file, tls_client_cert=other.tls_client_cert,
                     tls_client_key=other.tls_client_key, require_encryption=True)
    return TLS(good, other, mixed)


@pytest.fixture(scope="module")
def tls_client(certs):
    """A two-worker LocalCluster that speaks TLS only, with the cluster's certificates."""
    cluster = local_cluster(2, security=certs.good, silence_logs=50)  # refusals log errors
    c = Client(cluster, direct_to_workers=True)
    yield c
    c.close()
    cluster.close()


def _listening(pids) -> set[str]:
    """The IP addresses that processes ``pids`` listen on."""
    out = set()
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            out |= {c.laddr.ip for c in psutil.Process(pid).net_connections("inet")
                    if c.status == psutil.CONN_LISTEN}
    return out


def _new_threads(before: set[int]) -> list[str]:
    return [t.name for t in threading.enumerate()
            if t.ident not in before and not t.name.startswith("Dask-Offload")]


def _http_status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return reply.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_replicas_over_tls_match_plain_tcp(fresh, tls_client):
    # Two clients in one process, the TLS one made last (Dask's default client): each
    # ReplicaEnvs must call its actors through its own client, or the plain one's calls
    # are refused ("encryption required by Dask configuration").
    spec, kwargs = AIRCRAFT
    seeds = [21, 22]
    rng = np.random.default_rng(9)
    assert tls_client.scheduler.address.startswith("tls://")
    assert all(w.startswith("tls://") for w in tls_client.nthreads())
    assert fresh.scheduler.address.startswith("tcp://")
    with ReplicaEnvs(spec, kwargs, replicas=2, threads=2, client=tls_client) as secure, \
            ReplicaEnvs(spec, kwargs, replicas=2, threads=2, client=fresh) as plain:
        assert all(w.startswith("tls://") for w in secure.workers)
        assert secure.facts["gil_disabled"] == seer.gil_disabled()
        ref = Reference(spec, kwargs, seeds)
        batch = secure.reset(seeds)
        assert_batch_equals(batch, ref.first)
        assert_batch_equals(plain.reset(seeds), ref.first)
        for _ in range(3):
            actions = actions_for(secure, rng, spec)
            expected = ref.step(actions)
            assert_batch_equals(secure.step(actions), expected)
            assert_batch_equals(plain.step(actions), expected)
        ref.close()


def test_clients_whose_certificates_do_not_match_are_refused(certs, tls_client):
    address = tls_client.scheduler.address
    worker = sorted(tls_client.nthreads())[0]
    plain_tcp = "tcp://" + address.removeprefix("tls://")
    threads_before = {t.ident for t in threading.enumerate()}
    children_before = _children()
    cases = [  # (address, security, what the client is told)
        (address, certs.other, "TLS certificate does not match"),  # neither side trusts
        # Trusts the cluster, but its certificate is not signed by the cluster's CA: TLS 1.3
        # tells the client after its handshake, by an alert or by closing the connection.
        (address, certs.mixed, "unknown ca|Connection reset"),
        (worker, certs.mixed, "unknown ca|Connection reset"),  # direct calls: guarded too
        (plain_tcp, Security(), "Connection reset"),  # no TLS at all
    ]
    for where, security, message in cases:
        started = time.monotonic()
        # The working client lends its event loop: Dask 2026.8 leaves the IO-loop thread
        # of a Client that failed to connect running for good, which is not what is
        # tested here (no thread of the cluster's or ours is left).
        with pytest.raises(OSError, match=message):
            Client(where, security=security, timeout=5, loop=tls_client.loop)
        assert time.monotonic() - started < 5, (where, "refused only by the timeout")
    assert not _new_threads(threads_before), _new_threads(threads_before)
    assert _children() == children_before
    # The cluster is unharmed and still serves the client with the right certificates.
    assert tls_client.submit(sum, [1, 2], pure=False).result(timeout=10) == 3
    assert len(tls_client.nthreads()) == 2


REFUSED = """
import sys, time, threading
from distributed import Client, Security
security = Security(tls_ca_file=sys.argv[2], tls_client_cert=sys.argv[3],
                    tls_client_key=sys.argv[4], require_encryption=True)
started = time.monotonic()
try:
    Client(sys.argv[1], security=security, timeout=5)
except OSError as exc:
    print(type(exc).__name__, round(time.monotonic() - started, 2), str(exc).splitlines()[0])
else:
    print("connected")
"""


def test_an_ordinary_client_with_other_certificates_is_refused_and_exits(certs, tls_client):
    # The way a user would connect, in a child process: refused at once, and it exits.
    other = certs.other
    out = subprocess.run([sys.executable, "-c", REFUSED, tls_client.scheduler.address,
                          other.tls_ca_file, other.tls_client_cert, other.tls_client_key],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    name, seconds, message = out.stdout.strip().split(" ", 2)
    assert name == "FatalCommClosedError" and "TLS certificate does not match" in message
    assert float(seconds) < 5


@pytest.mark.parametrize("how", ["certificates", "temporary"])
def test_an_embedded_cluster_over_tls(fresh, certs, how):
    security = certs.good if how == "certificates" else True
    children_before = _children()
    threads_before = {t.ident for t in threading.enumerate()}
    with ReplicaEnvs(*PCS, replicas=2, security=security) as envs:
        assert envs.client.scheduler.address.startswith("tls://")
        assert all(w.startswith("tls://") for w in envs.workers)
        mine = _children() - children_before
        assert len(mine) >= 2 and _listening([os.getpid(), *mine]) == {"127.0.0.1"}
        # The plain-HTTP endpoints, which TLS does not cover, answer health checks only.
        ports = [envs._own_cluster.scheduler.http_server.port,
                 *envs.client.run(lambda dask_worker: dask_worker.http_server.port).values()]
        for port in ports:
            assert _http_status(port, "/health") == 200
            for page in ("/info/main/workers.html", "/info/main/logs.html", "/metrics"):
                assert _http_status(port, page) == 404, (port, page)
        ref = Reference(*PCS, [5, 6], threads=1)
        assert_batch_equals(envs.reset(5), ref.first)
        actions = np.full((2, 16), 2, np.int64)
        assert_batch_equals(envs.step(actions), ref.step(actions))
        ref.close()
    assert _settle(lambda: _children() == children_before)
    # Dask's process-wide offload pool may start its thread now; it is shared and stays.
    assert _settle(lambda: not _new_threads(threads_before)), _new_threads(threads_before)


def test_security_is_checked_before_anything_starts(fresh, certs, tmp_path):
    children_before = _children()
    good = certs.good
    bad = [
        ("certificates", "security must be a distributed.Security, True .* got str"),
        (Security(require_encryption=False), "security must require encryption"),
        (Security(tls_ca_file=good.tls_ca_file, require_encryption=True),
         "security has no tls_client_cert, tls_scheduler_cert, tls_worker_cert"),
        (Security(tls_ca_file=str(tmp_path / "nope.pem"), tls_client_cert=good.tls_client_cert,
                  tls_scheduler_cert=good.tls_client_cert, tls_worker_cert=good.tls_client_cert,
                  require_encryption=True), "security.tls_ca_file names no file"),
    ]
    for security, message in bad:
        with pytest.raises(seer.ModelError, match=message):
            ReplicaEnvs(*PCS, security=security)
        with pytest.raises(seer.ModelError, match=message):
            local_cluster(1, security=security)
    with pytest.raises(seer.ModelError, match="security configures the embedded cluster only"):
        ReplicaEnvs(*PCS, client=fresh, security=True)
    assert _children() == children_before
