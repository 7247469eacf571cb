"""Environment replicas on a Dask cluster, each stepping with its own SEER runtime
(``docs/distributed.md``; needs the ``distributed`` extra).

    from seer.distributed import ReplicaEnvs
    with ReplicaEnvs("workloads.pcs:PCS", {"width": 8, "height": 8}, replicas=4,
                     threads=2) as envs:
        batch = envs.reset(seeds=0)                  # replica i gets seed 0 + i
        batch = envs.step(actions)                   # actions: (K, agents, *action_shape)
        batch.observations.shape                     # (K, agents, *observation_shape)

Each replica is a long-lived Dask actor (:class:`Replica`) that builds its model from an
importable factory (``"module:callable"`` plus keyword arguments, so nothing unpicklable
travels) and owns one runtime (:func:`seer.make_runtime`) with its own threads. All
replicas step concurrently; results are bit-identical to stepping the same replicas one
after another in one process, wherever they run.

A replica may hold several environments (``envs_per_replica=E``): then it steps them
with one :class:`seer.vector.VectorRuntime` (one pool of threads for the events of all
E), and actions and outputs have ``num_envs = replicas * E`` rows, environment ``i``
being environment ``i % E`` of replica ``i // E``; an int seed ``s`` gives environment
``i`` seed ``s + i``. Results are bit-identical to the ``num_envs`` environments stepped
alone with those seeds.

Faults: a replica whose worker process dies raises :class:`ReplicaLostError` (naming the
replica, its worker and the step) on the next call that touches it, and nothing steps
further with stale data; :meth:`ReplicaEnvs.restart_lost` rebuilds it on a live worker and
replays its seeds and recorded actions, so its state is exactly what it was. An error
raised on a worker (a factory that fails, a handler that fails, an action the model
rejects) arrives as :class:`ReplicaError` with the remote traceback's text.

Who may reach the replicas: anyone who can connect to the cluster's scheduler or workers
can run any code there as the user running them (a Dask client submits pickled functions;
a replica imports whatever ``module:callable`` it is given and unpickles its actions). The
embedded cluster listens on 127.0.0.1 only, which other users of the same machine can
still reach; ``security=True`` (or a :class:`distributed.Security`) makes it TLS-only
with mutual certificate checks (``docs/distributed.md``, "Who can reach the replicas").
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import pickle
import time
import traceback
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask
import numpy as np
from distributed import Client, LocalCluster, Security

from seer.errors import ModelError, RuntimeStateError, SeerError
from seer.sched import RUNTIMES, make_runtime
from seer.specs import load_model

__all__ = [
    "HTTP_CONFIG",
    "WORKER_CONFIG",
    "Batch",
    "Replica",
    "ReplicaEnvs",
    "ReplicaError",
    "ReplicaLostError",
    "check_security",
    "local_cluster",
]

#: Dask settings for the processes that host replicas. Dask's statistical profiler samples
#: every thread's stack every 10 ms with ``sys._current_frames()``, which on free-threaded
#: CPython stops the world: every SEER thread of the worker would pause 100 times a
#: second. The embedded cluster applies these; on a cluster of your own start the workers
#: with ``DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False`` in their environment.
WORKER_CONFIG: dict[str, Any] = {"distributed.worker.profile.enabled": False}

#: The embedded cluster's HTTP endpoints serve health checks only. Dask's default status
#: pages (workers, task names, exceptions with tracebacks, logs, call stacks, metrics) are
#: plain HTTP that TLS does not cover, readable by every user of the machine.
HTTP_CONFIG: dict[str, Any] = {"distributed.scheduler.http.routes": ["distributed.http.health"],
                               "distributed.worker.http.routes": ["distributed.http.health"]}


class ReplicaError(SeerError):
    """A replica failed on its worker, or cannot be used.

    Attributes: ``replica`` (index), ``step`` (the step being taken, counted from the
    replica's reset as :attr:`seer.StepResult.step` counts it; 0 for reset and build),
    ``worker`` (address), ``remote_traceback`` (the worker's traceback text, or "").
    The original exception, when it could be sent back, is the ``__cause__``."""

    def __init__(self, message: str, *, replica: int, step: int, worker: str = "",
                 remote_traceback: str = "") -> None:
        super().__init__(message)
        self.replica = replica
        self.step = step
        self.worker = worker
        self.remote_traceback = remote_traceback

    def __reduce__(self) -> tuple:  # keyword-only fields: pickle them explicitly
        return (_rebuild_error, (type(self), self.args[0], self.replica, self.step,
                                 self.worker, self.remote_traceback))


class ReplicaLostError(ReplicaError):
    """A replica's worker process died (or could not be reached). ``replicas`` lists
    every replica lost so far; :meth:`ReplicaEnvs.restart_lost` brings them back."""

    replicas: tuple[int, ...] = ()


def _rebuild_error(cls: type, message: str, replica: int, step: int, worker: str,
                   remote_traceback: str) -> ReplicaError:
    return cls(message, replica=replica, step=step, worker=worker,
               remote_traceback=remote_traceback)


@dataclass(slots=True)
class Batch:
    """Outputs of every environment, stacked along a leading environment axis ``K``
    (:attr:`ReplicaEnvs.num_envs`: one per replica, or ``replicas * envs_per_replica``).

    ``observations`` is ``(K, agents, *observation_shape)``; ``rewards``,
    ``terminations`` and ``truncations`` are ``(K, agents)``; ``infos[k][a]`` is agent
    ``a``'s info dict in environment ``k``; ``steps[k]`` is environment ``k``'s step
    index (0 after reset)."""

    observations: np.ndarray
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: list[list[dict]]
    steps: np.ndarray


# -- the actor ---------------------------------------------------------------------------------
# What a replica sends back for one environment: (step, observations, rewards,
# terminations, truncations, infos); a replica answers with a list of them, one per
# environment it holds, or with an error record.
_Packed = tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, list]


def _pack(result: Any) -> _Packed:
    return (int(result.step), np.stack(result.observations), result.rewards,
            result.terminations, result.truncations, list(result.infos))


def _error_record(exc: BaseException, unchanged: bool) -> tuple:
    try:  # a round trip: some exceptions pickle but cannot be rebuilt (keyword-only args)
        pickle.loads(pickle.dumps(exc))
        sendable: BaseException | None = exc
    except Exception:
        sendable = None
    return ("error", f"{type(exc).__module__}.{type(exc).__qualname__}", str(exc),
            "".join(traceback.format_exception(exc)), sendable, unchanged)


def _answer(work: Callable[[], Any], refusal_changes_nothing: bool = False) -> bytes:
    """``work()``'s outcome, ``("ok", value)`` or an error record, pickled here.

    Errors travel as data, not raised through Dask, so that the traceback's text always
    arrives, even for an exception that cannot be pickled. And the replica pickles its
    answer itself, so that the client unpickles it in :meth:`ReplicaEnvs._unwrap`: an
    actor answer that Dask fails to rebuild on the client never completes (distributed
    2026.8 logs "Failed to deserialize" and leaves the call pending for ever).
    ``refusal_changes_nothing``: a :class:`ModelError` means the runtime refused the
    input and is as it was (``Runtime.step``'s contract, and ``VectorRuntime.step``'s:
    every environment's actions are checked before any steps)."""
    try:
        record: tuple = ("ok", work())
    except BaseException as exc:
        record = _error_record(exc, refusal_changes_nothing and isinstance(exc, ModelError))
    try:
        return pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # outputs that do not pickle: the step was taken all the same
        return pickle.dumps(_error_record(exc, unchanged=False),
                            protocol=pickle.HIGHEST_PROTOCOL)


class _One:
    """A replica's single environment: one runtime (``make_runtime``)."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.runtimes = [runtime]

    def reset(self, seeds: Sequence[Any]) -> list[Any]:
        return [self.runtime.reset(seeds[0])]

    def step(self, actions: Any) -> list[Any]:
        return [self.runtime.step(None if actions is None else actions[0])]

    def close(self) -> None:
        self.runtime.close()


class _Vector:
    """A replica's K environments on one :class:`seer.vector.VectorRuntime` of the
    replica's kind: for ``seer``, one pool of threads for all K (whole steps of equal
    environments, the events of a dominant one); every environment's actions are checked
    before any steps."""

    def __init__(self, vector: Any) -> None:
        self.vector = vector
        self.runtimes = list(vector.envs)
        self.threads = vector.threads

    def reset(self, seeds: Sequence[Any]) -> list[Any]:
        return self.vector.reset(list(seeds))

    def step(self, actions: Any) -> list[Any]:
        return self.vector.step(None if actions is None else list(actions))

    def close(self) -> None:
        self.vector.close()


class Replica:
    """One replica, hosted as a Dask actor: ``envs`` models built on the worker from
    ``spec`` and ``kwargs`` (:func:`seer.specs.load_model`) and the runtime(s) that step
    them: with one environment, ``make_runtime(model, kind, threads=threads, **options)``;
    with more, one :class:`seer.vector.VectorRuntime` of ``kind`` (for ``"seer"`` one pool
    of ``threads`` threads for all of them).

    Every method but :meth:`pid` and :meth:`close` returns an :func:`_answer` (pickled
    bytes) and never raises: the client turns error records into :class:`ReplicaError`.
    ``reset`` takes one seed per environment, ``step`` one action row per environment
    (or None), ``replay`` both; each answers with one :data:`_Packed` per environment.
    Dask runs an actor's methods one at a time on the worker's actor thread, which is the
    runtimes' caller thread (they are built there too, by :meth:`open`, not in the
    constructor, which runs on a task thread)."""

    def __init__(self, spec: str, kwargs: Mapping[str, Any], kind: str, threads: int | str,
                 options: Mapping[str, Any], envs: int = 1) -> None:
        self._args = (spec, dict(kwargs), kind, threads, dict(options), envs)
        self.runtime: _One | _Vector | None = None

    def open(self) -> bytes:
        """Build the models and runtime(s); the facts: agent count, action and observation
        shapes (from the model's gymnasium spaces, when it has them), environments, thread
        count, process id and whether the GIL is disabled there."""
        return _answer(self._open)

    def _open(self) -> dict[str, Any]:
        spec, kwargs, kind, threads, options, envs = self._args
        models = [load_model(spec, kwargs) for _ in range(envs)]
        if envs == 1:
            self.runtime = _One(make_runtime(models[0], kind, threads=threads, **options))
        else:
            from seer.vector import VectorRuntime

            if threads is None:  # the kind's own default: 1 for serial, 2 for the others
                threads = 2 if RUNTIMES[kind].parallel else 1
            self.runtime = _Vector(VectorRuntime(models, kind=kind, threads=threads,
                                                 **options))
        facts = []
        for model, rt in zip(models, self.runtime.runtimes, strict=True):
            agents = list(rt.spec.agents)
            facts.append((len(agents), _space_shape(model, "action_space", agents),
                          _space_shape(model, "observation_space", agents)))
        for j, f in enumerate(facts[1:], 1):
            if f != facts[0]:
                raise ModelError(
                    f"environment {j} of a replica has (agents, action shape, observation "
                    f"shape) {f}, unlike environment 0's {facts[0]}: the factory must build "
                    "models of one shape")
        agents, action_shape, observation_shape = facts[0]
        return {"agents": agents, "action_shape": action_shape,
                "observation_shape": observation_shape, "envs": envs,
                "threads": getattr(self.runtime, "threads", self.runtime.runtimes[0].threads),
                "pid": os.getpid(),
                "gil_disabled": _gil_disabled()}

    def reset(self, seeds: Sequence[Any]) -> bytes:
        return _answer(lambda: [_pack(r) for r in self.runtime.reset(seeds)])

    def step(self, actions: Any) -> bytes:
        return _answer(lambda: [_pack(r) for r in self.runtime.step(actions)],
                       refusal_changes_nothing=True)

    def replay(self, seeds: Sequence[Any], actions: Sequence[Any]) -> bytes:
        """Reset with ``seeds`` and take one step per item of ``actions``; the outputs of
        the last call (the runtimes are deterministic, so the state is the original's)."""
        def run() -> list[_Packed]:
            results = self.runtime.reset(seeds)
            for a in actions:
                results = self.runtime.step(a)
            return [_pack(r) for r in results]

        return _answer(run)

    def pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        if self.runtime is not None:
            self.runtime.close()
            self.runtime = None


def _space_shape(model: Any, method: str, agents: list[int]) -> tuple[int, ...] | None:
    space = getattr(model, method, None)
    if not callable(space) or not agents:
        return None
    shape = getattr(space(agents[0]), "shape", None)
    return tuple(shape) if shape is not None else None


def _gil_disabled() -> bool:
    from seer.platform import gil_disabled

    return gil_disabled()


def local_cluster(workers: int, *, config: Mapping[str, Any] | None = None,
                  security: Security | bool | None = None, **options: Any) -> LocalCluster:
    """The embedded cluster of :class:`ReplicaEnvs`: ``workers`` worker processes on this
    machine, one Dask task thread each, listening on 127.0.0.1 only, with
    :data:`WORKER_CONFIG` and :data:`HTTP_CONFIG` (updated by ``config``) applied and no
    dashboard. Its HTTP endpoints (health checks only, plain HTTP) take free ports rather
    than 8787, so that several clusters (other users', tests') never collide.

    ``security``: None or False, plain TCP; True, TLS with a fresh self-signed certificate
    held in memory by this process and the workers it starts
    (:meth:`distributed.Security.temporary`, needs ``cryptography``); a
    :class:`distributed.Security` with ``require_encryption=True`` and certificates for
    the client, scheduler and workers, TLS with those (checked by
    :func:`check_security`). A client of the cluster (``Client(cluster)``) takes its
    security from it. ``options`` go to :class:`distributed.LocalCluster`."""
    settings: dict[str, Any] = {
        "n_workers": workers, "threads_per_worker": 1, "processes": True,
        "host": "127.0.0.1", "dashboard_address": "127.0.0.1:0",
        "scheduler_kwargs": {"dashboard": False}, "silence_logs": logging.ERROR}
    settings.update(options)
    security = check_security(security)
    if security is not None:
        settings["security"] = security  # LocalCluster then listens on tls:// only
    # The nannies pass the config to their workers (also to those they restart).
    with dask.config.set({**WORKER_CONFIG, **HTTP_CONFIG, **(config or {})}):
        return LocalCluster(**settings)


#: The certificates every member of an embedded TLS cluster needs (a key may be appended
#: to its certificate file, so the ``tls_*_key`` fields are optional).
_TLS_NEEDED = ("tls_ca_file", "tls_client_cert", "tls_scheduler_cert", "tls_worker_cert")
_TLS_FILES = (*_TLS_NEEDED, "tls_client_key", "tls_scheduler_key", "tls_worker_key")


def check_security(security: Security | bool | None) -> Security | bool | None:
    """``security`` as :func:`local_cluster` takes it (None for False), or
    :class:`~seer.ModelError` naming what is wrong: not a :class:`distributed.Security`,
    True or None; encryption not required; a certificate missing; a file that does not
    exist. Certificates and keys may be file paths or PEM text."""
    if security is None or security is False:
        return None
    if security is True:
        return True
    if not isinstance(security, Security):
        raise ModelError("security must be a distributed.Security, True (TLS with a fresh "
                         "self-signed certificate) or None (plain TCP on 127.0.0.1), got "
                         f"{type(security).__name__}")
    if security.require_encryption is not True:
        raise ModelError("security must require encryption: "
                         "distributed.Security(..., require_encryption=True), got "
                         f"require_encryption={security.require_encryption!r}")
    missing = [name for name in _TLS_NEEDED if not getattr(security, name)]
    if missing:
        raise ModelError(f"security has no {', '.join(missing)}: the embedded cluster's "
                         "client, scheduler and workers each need a certificate signed by "
                         "the CA in tls_ca_file")
    for name in _TLS_FILES:
        value = getattr(security, name)
        if value and "-----BEGIN" not in value and not os.path.isfile(value):
            raise ModelError(f"security.{name} names no file: {value!r}")
    return security


# -- the client side ---------------------------------------------------------------------------
_NEW, _READY, _FAILED, _LOST = "new", "ready", "failed", "lost"
#: Seconds restart_lost() waits for a fresh worker before putting a replica on a busy one.
_REPLACEMENT_WAIT = 5.0


class ReplicaEnvs:
    """``replicas`` copies of one environment on a Dask cluster, stepped together.

    ``model_factory`` is ``"module:callable"`` (or an importable module-level callable)
    and ``model_kwargs`` its keyword arguments; each replica calls it on its worker and
    steps the model with ``make_runtime(model, kind, threads=threads, **runtime_options)``.

    ``envs_per_replica=E`` (default 1): each replica calls the factory E times and holds
    E environments, ``num_envs = replicas * E`` in all, environment ``i`` being
    environment ``i % E`` of replica ``i // E``. A replica steps its E environments with
    one :class:`seer.vector.VectorRuntime` of ``kind`` (for ``"seer"``, ``threads``
    threads shared by all E; ``runtime_options`` going to each environment's runtime).
    Actions and outputs then have ``num_envs`` rows; a replica's environments step, fail
    and are lost and replayed together.

    With ``client=None`` an embedded :class:`distributed.LocalCluster` is started: one
    worker process per replica, each with one Dask task thread (an actor's calls run on
    the worker's own actor thread, which is the runtime's caller thread, so a replica
    uses ``threads`` cores and Dask adds only idle service threads), Dask's profiler off
    (:data:`WORKER_CONFIG`) and direct client-to-worker calls. ``close()`` stops it.
    With a ``client`` of your own, replicas are spread over its workers (fewest replicas
    first) and ``close()`` leaves the client and cluster running.

    ``security`` applies to the embedded cluster only (see :func:`local_cluster`):
    ``True`` or a :class:`distributed.Security` makes it TLS-only, so that other users of
    this machine cannot connect to it and run code as you. A ``client`` of your own
    carries its own security (``Client(address, security=...)``); passing ``security``
    with it is refused.

    Contract: calls are made from one thread; a call refused on the caller's side (bad
    shapes, a lost or failed replica, a step still pending) sends nothing and changes
    nothing; every replica that answered a call is recorded as having taken it."""

    def __init__(self, model_factory: str | Callable[..., Any],
                 model_kwargs: Mapping[str, Any] | None = None, *, replicas: int = 2,
                 kind: str = "seer", threads: int | str = 1, client: Client | None = None,
                 runtime_options: Mapping[str, Any] | None = None,
                 security: Security | bool | None = None, envs_per_replica: int = 1) -> None:
        if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
            raise ModelError(f"replicas must be an int >= 1, got {replicas!r}")
        if isinstance(envs_per_replica, bool) or not isinstance(envs_per_replica, int) or \
                envs_per_replica < 1:
            raise ModelError(f"envs_per_replica must be an int >= 1, got {envs_per_replica!r}")
        security = check_security(security)
        if client is not None and security is not None:
            raise ModelError("security configures the embedded cluster only; with client= "
                             "give the client its own: Client(address, security=...)")
        self.spec = _factory_spec(model_factory)
        self.model_kwargs = dict(model_kwargs or {})
        self.kind = kind
        self.threads = threads
        self.runtime_options = dict(runtime_options or {})
        _check_picklable(self.model_kwargs, "model_kwargs")
        _check_picklable(self.runtime_options, "runtime_options")
        self._k = replicas
        self._e = envs_per_replica
        self._own_cluster: LocalCluster | None = None
        self._own_client = client is None
        self._closed = False
        self._futures: list[Any] = [None] * replicas   # the actors' Dask futures
        self._actors: list[Any] = [None] * replicas
        self._workers: list[str] = [""] * replicas
        self._status = [_NEW] * replicas
        # When each lost replica was lost: (step, "during step 4"), for the error message.
        self._lost_at: list[tuple[int, str]] = [(0, "")] * replicas
        # Per replica: its environments' seeds at the last reset (None before one), the
        # action rows of every step since (one (E, agents, ...) block or None each), and
        # its environments' latest outputs.
        self._seeds: list[list[Any] | None] = [None] * replicas
        self._history: list[list[Any]] = [[] for _ in range(replicas)]
        self._last: list[list[_Packed] | None] = [None] * replicas
        self._pending: tuple[str, list[Any]] | None = None
        self.facts: dict[str, Any] = {}
        try:
            if client is None:
                self._own_cluster = local_cluster(replicas, security=security)
                # Actor calls go straight to the worker instead of through the scheduler.
                client = Client(self._own_cluster, direct_to_workers=True)
            self.client: Client = client
            self._start(range(replicas), self._placement(replicas))
        except BaseException:
            self.close()
            raise

    # -- facts -----------------------------------------------------------------------------
    @property
    def replicas(self) -> int:
        """Replicas (Dask actors, one per worker process when there are enough)."""
        return self._k

    @property
    def envs_per_replica(self) -> int:
        """Environments each replica holds."""
        return self._e

    @property
    def num_envs(self) -> int:
        """Environments in all: ``replicas * envs_per_replica``, the leading axis of
        actions and of every :class:`Batch` array. Environment ``i`` is environment
        ``i % envs_per_replica`` of replica ``i // envs_per_replica``."""
        return self._k * self._e

    @property
    def n_agents(self) -> int:
        return int(self.facts["agents"])

    @property
    def action_shape(self) -> tuple[int, ...] | None:
        """One agent's action shape (from the model's ``action_space``), or None."""
        return self.facts["action_shape"]

    @property
    def observation_shape(self) -> tuple[int, ...] | None:
        return self.facts["observation_shape"]

    @property
    def workers(self) -> list[str]:
        """The address of the worker that hosts each replica (one per replica, not per
        environment)."""
        return list(self._workers)

    @property
    def steps(self) -> list[int]:
        """Steps each environment has completed since its reset (``num_envs`` of them;
        the environments of one replica step together)."""
        pending = 1 if self._pending and self._pending[0] == "step" else 0
        return [len(h) - pending for h in self._history for _ in range(self._e)]

    @property
    def lost(self) -> list[int]:
        """Replicas whose worker is known to have died (by a failed call, or by Dask's
        scheduler having seen the worker go); :meth:`restart_lost` brings them back."""
        self._refresh()
        return [k for k in range(self._k) if self._status[k] == _LOST]

    def _refresh(self) -> None:
        """Mark lost the replicas whose actor Dask reports gone with its worker."""
        for k in range(self._k):
            future = self._futures[k]
            if self._status[k] != _LOST and future is not None and future.status not in (
                    "finished", "pending"):
                self._status[k] = _LOST
                step = len(self._history[k]) + 1  # seen between calls: before the next step
                self._lost_at[k] = (step, f"before step {step}")

    # -- episodes ---------------------------------------------------------------------------
    def reset(self, seeds: int | Sequence[int | None] | None = None) -> Batch:
        """Reset every environment: ``seeds`` is one seed per environment (``num_envs``),
        or an int ``s`` (environment ``i`` gets ``s + i``, so environment ``j`` of replica
        ``r`` gets ``s + r * envs_per_replica + j``), or None (fresh entropy, recorded so
        that a replay is still exact). Returns the initial outputs."""
        self._check_usable(for_reset=True)
        seeds = self._seed_list(seeds)
        futures = []
        for k in range(self._k):
            self._seeds[k] = seeds[k * self._e:(k + 1) * self._e]
            self._history[k] = []
            futures.append(self._call(k, "reset", self._seeds[k]))
        self._pending = ("reset", futures)
        return self._collect()

    def step(self, actions: Any = None) -> Batch:
        """Step every environment with its row of ``actions`` (``(num_envs, agents,
        *action_shape)``, or None for no actions) and return the stacked outputs."""
        self.step_async(actions)
        return self.step_wait()

    def step_async(self, actions: Any = None) -> None:
        """Send a step to every replica (each with its environments' rows of ``actions``)
        and return at once; :meth:`step_wait` collects it. Shapes are checked here, before
        anything is sent."""
        self._check_usable(for_reset=False)
        rows = self._action_rows(actions)
        futures = []
        for k in range(self._k):
            self._history[k].append(rows[k])
            futures.append(self._call(k, "step", rows[k]))
        self._pending = ("step", futures)

    def step_wait(self, timeout: float | None = None) -> Batch:
        """The outputs of the step sent by :meth:`step_async`. Raises
        :class:`ReplicaLostError` if a replica's worker died during it (the other
        replicas' outputs are kept, and :meth:`restart_lost` returns the whole batch) or
        :class:`ReplicaError` if a replica failed (the others have stepped). A replica's
        environments step together: it fails or refuses as a whole."""
        if self._pending is None or self._pending[0] != "step":
            raise RuntimeStateError("step_wait() without step_async()")
        return self._collect(timeout)

    def restart_lost(self) -> Batch | None:
        """Rebuild every lost replica on a live worker (one that died is replaced by Dask's
        nanny on a LocalCluster) and replay its environments' seeds and recorded actions,
        including the step it was lost in. Returns the outputs of every environment at its
        latest step (what the interrupted call would have returned), or None before the
        first reset."""
        self._check_open()
        if self._pending is not None:
            raise RuntimeStateError(f"a {self._pending[0]} is still pending: call "
                                    "step_wait() first")
        lost = self.lost
        if lost:
            for k in lost:
                self._release(k)
            self._start(lost, self._placement(len(lost), avoid=lost))
            replaying = [k for k in lost if self._seeds[k] is not None]  # others: never reset
            calls = [self._call(k, "replay", self._seeds[k], self._history[k])
                     for k in replaying]
            for k, call in zip(replaying, calls, strict=True):
                step = len(self._history[k])
                reply = self._result(k, call, step, f"while replaying {step} steps")
                self._last[k] = self._unwrap(k, reply, step, f"replaying {step} steps")
                self._status[k] = _READY
        return self._batch() if all(x is not None for x in self._last) else None

    def pids(self) -> list[int]:
        """The process id of each replica's worker (for tests and monitoring)."""
        return [self._result(k, self._call(k, "pid"), self.steps[k], "while asked its pid")
                for k in range(self._k)]

    # -- closing -------------------------------------------------------------------------------
    def close(self) -> None:
        """Close every runtime, drop the actors, and stop the embedded cluster (if any).
        Idempotent; a client passed in stays open."""
        if self._closed:
            return
        self._closed = True
        closing = []
        for k in range(self._k):
            if self._actors[k] is not None and self._status[k] != _LOST:
                # A worker that is gone has nothing left to close.
                with contextlib.suppress(Exception):
                    closing.append(self._actors[k].close())
        for fut in closing:
            with contextlib.suppress(Exception):  # best effort: released below anyway
                fut.result(timeout=10)
        for k in range(self._k):
            self._release(k)
        client = getattr(self, "client", None)
        if self._own_client and client is not None:
            client.close()
        if self._own_cluster is not None:
            self._own_cluster.close()
            self._own_cluster = None

    def __enter__(self) -> ReplicaEnvs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------------
    def _placement(self, count: int, avoid: Sequence[int] = ()) -> list[str]:
        """``count`` worker addresses, each time the live worker with the fewest replicas
        of ours (ties by address), leaving out the workers of ``avoid`` (lost replicas').

        Dask runs all actor calls of one worker on a single thread, so replicas that
        share a worker step one after another: that is warned about. When replacing lost
        replicas, a few seconds are given for a fresh worker to appear (a LocalCluster's
        nanny restarts a killed worker in about a second) before doubling up."""
        dead = {self._workers[k] for k in avoid}
        deadline = time.monotonic() + 60
        patience = time.monotonic() + (_REPLACEMENT_WAIT if avoid else 0.0)
        while True:
            live = [w for w in self.client.nthreads() if w not in dead]
            load = {w: 0 for w in live}
            for k in range(self._k):
                if self._status[k] != _LOST and self._workers[k] in load:
                    load[self._workers[k]] += 1
            free = sum(1 for n in load.values() if n == 0)
            if live and (free >= count or time.monotonic() > patience):
                break
            if time.monotonic() > deadline:
                raise ReplicaError("no live Dask worker to host a replica after 60 s",
                                   replica=-1, step=0)
            time.sleep(0.1)
        chosen = []
        for _ in range(count):
            w = min(sorted(load), key=load.__getitem__)
            load[w] += 1
            chosen.append(w)
        shared = sorted(w for w, n in load.items() if n > 1)
        if shared:
            warnings.warn(
                f"{len(shared)} Dask worker(s) host more than one replica ({shared[0]} ...): "
                "Dask runs one worker's actor calls on a single thread, so those replicas "
                f"step one after another; start at least {self._k} worker processes "
                "(dask worker --nworkers N --nthreads 1)", RuntimeWarning, stacklevel=3)
        return chosen

    def _start(self, ks: Sequence[int], workers: Sequence[str]) -> None:
        """Start replicas ``ks`` as actors on ``workers`` and build their models, all
        concurrently."""
        for k, worker in zip(ks, workers, strict=True):
            self._workers[k] = worker
            self._futures[k] = self.client.submit(
                Replica, self.spec, self.model_kwargs, self.kind, self.threads,
                self.runtime_options, self._e, actor=True, workers=[worker],
                allow_other_workers=False, pure=False,
                key=f"seer-replica-{k}-{os.urandom(4).hex()}")
        for k in ks:
            # Dask binds an actor handle to the process's *current* client (the latest one
            # made, unless told otherwise), and calls it through that client's connections:
            # with two clients (say one TLS, one not) the calls would go the wrong way.
            with self.client.as_current():
                actor = self._result(k, self._futures[k], 0, "while starting")
            if getattr(actor, "_client", self.client) is not self.client:
                raise ReplicaError(f"replica {k}'s Dask actor was bound to another client "
                                   "than this ReplicaEnvs'", replica=k, step=0,
                                   worker=self._workers[k])
            self._actors[k] = actor
        opening = [self._call(k, "open") for k in ks]
        for k, call in zip(ks, opening, strict=True):
            facts = dict(self._unwrap(k, self._result(k, call, 0, "while building its model"),
                                      0, "building its model"))
            if not self.facts:
                self.facts = facts
            elif (facts["agents"], facts["action_shape"]) != (self.facts["agents"],
                                                               self.facts["action_shape"]):
                raise ReplicaError(f"replica {k} built a model with {facts['agents']} agents "
                                   f"and action shape {facts['action_shape']}, unlike the "
                                   "other replicas'", replica=k, step=0,
                                   worker=self._workers[k])
            self._status[k] = _NEW if self._seeds[k] is None else _READY

    def _release(self, k: int) -> None:
        """Drop replica ``k``'s actor: the worker deletes it once no future names it. The
        actor handle holds a future of its own (and sits in reference cycles that only the
        garbage collector would break), so both are released here, explicitly."""
        futures = (self._futures[k], getattr(self._actors[k], "_future", None))
        self._futures[k] = None
        self._actors[k] = None
        for future in futures:
            if future is not None:
                with contextlib.suppress(Exception):  # the client may already be closing
                    future.release()

    def _call(self, k: int, method: str, *args: Any) -> Any:
        """Send ``method(*args)`` to replica ``k``; the ActorFuture, or the exception that
        sending raised (a lost actor is refused at once by Dask)."""
        try:
            return getattr(self._actors[k], method)(*args)
        except Exception as exc:
            return exc

    def _result(self, k: int, future: Any, step: int, doing: str) -> Any:
        """Wait for one Dask future; a dead worker becomes :class:`ReplicaLostError`
        (``doing`` says when, e.g. "during step 4")."""
        try:
            if isinstance(future, BaseException):
                raise future
            return future.result()
        except (OSError, RuntimeError, KeyError) as exc:  # TimeoutError too: comms gave up
            if isinstance(exc, SeerError):
                raise
            self._status[k] = _LOST
            self._lost_at[k] = (step, doing)
            raise self._lost_error(k, exc) from exc

    def _lost_error(self, k: int, exc: BaseException | None) -> ReplicaLostError:
        step, doing = self._lost_at[k]
        cause = f" ({type(exc).__name__}: {exc})" if exc is not None else ""
        err = ReplicaLostError(
            f"replica {k}{self._holding(k)} was lost {doing} (steps count from its reset): "
            f"its worker {self._workers[k]} died or cannot be reached{cause}; nothing steps "
            "on with stale data: call restart_lost() to rebuild it and replay its episode",
            replica=k, step=step, worker=self._workers[k])
        err.replicas = tuple(k for k in range(self._k) if self._status[k] == _LOST)
        return err

    def _unwrap(self, k: int, answer: bytes, step: int, doing: str) -> Any:
        """The value of a replica's :func:`_answer`, or its error record raised as
        :class:`ReplicaError`."""
        try:
            reply = pickle.loads(answer)
        except Exception as exc:  # e.g. an info holding a class this process cannot import
            self._status[k] = _FAILED
            raise ReplicaError(
                f"replica {k}'s answer at {doing} cannot be rebuilt in this process "
                f"({type(exc).__name__}: {exc}): its outputs must unpickle here; it needs "
                "reset()", replica=k, step=step, worker=self._workers[k]) from exc
        if reply[0] == "ok":
            return reply[1]
        _, name, message, text, exc, unchanged = reply
        if not unchanged:
            self._status[k] = _FAILED
        err = ReplicaError(
            f"replica {k}{self._holding(k)} failed on worker {self._workers[k]} at {doing}: "
            f"{name}: {message}\n\nremote traceback:\n{text}", replica=k, step=step,
            worker=self._workers[k], remote_traceback=text)
        if exc is not None:
            raise err from exc
        raise err

    def _collect(self, timeout: float | None = None) -> Batch:
        """Wait for every replica's answer to the pending call, record it, then raise the
        first problem (lost replicas first) or return the batch."""
        assert self._pending is not None
        what, futures = self._pending
        if timeout is not None:
            # Wait for every answer first, so that a timeout leaves nothing half-recorded
            # and step_wait() can simply be called again.
            deadline = time.monotonic() + timeout
            for future in futures:
                if isinstance(future, BaseException):
                    continue
                try:
                    future.result(timeout=max(0.0, deadline - time.monotonic()))
                except TimeoutError:
                    raise TimeoutError(f"not every replica answered within {timeout} s; "
                                       "call step_wait() again") from None
                except Exception:  # a lost worker: reported below, replica by replica
                    pass
        lost: list[tuple[int, BaseException]] = []
        failed: list[BaseException] = []
        for k, future in enumerate(futures):
            step = len(self._history[k])
            doing = "during its reset" if what == "reset" else f"during step {step}"
            try:
                reply = self._result(k, future, step, doing)
            except ReplicaLostError as exc:
                lost.append((k, exc))
                continue
            try:
                self._last[k] = self._unwrap(k, reply, step,
                                             "reset" if what == "reset" else f"step {step}")
                self._status[k] = _READY
            except ReplicaError as exc:
                if what == "step" and self._status[k] != _LOST:
                    self._history[k].pop()  # the step was not taken
                failed.append(exc)
        self._pending = None
        if lost:
            k, first = lost[0]
            err = self._lost_error(k, first.__cause__)
            if len(lost) > 1:
                err.args = (err.args[0] + f" (also lost: replicas {[j for j, _ in lost[1:]]})",)
            raise err from first.__cause__
        if failed:
            if len(failed) > 1:
                others = ", ".join(str(e.replica) for e in failed[1:])  # type: ignore[attr-defined]
                failed[0].args = (failed[0].args[0] + f"\n(replicas {others} failed too)",)
            raise failed[0]
        return self._batch()

    def _holding(self, k: int) -> str:
        """Which environments replica ``k`` holds, for messages ("" with one each)."""
        if self._e == 1:
            return ""
        return f" (environments {k * self._e}..{(k + 1) * self._e - 1})"

    def _batch(self) -> Batch:
        assert all(p is not None for p in self._last)
        packed = [p for block in self._last for p in block]  # type: ignore[union-attr]
        return Batch(
            observations=np.stack([p[1] for p in packed]),  # type: ignore[index]
            rewards=np.stack([p[2] for p in packed]),  # type: ignore[index]
            terminations=np.stack([p[3] for p in packed]),  # type: ignore[index]
            truncations=np.stack([p[4] for p in packed]),  # type: ignore[index]
            infos=[p[5] for p in packed],  # type: ignore[index]
            steps=np.array([p[0] for p in packed], np.int64))  # type: ignore[index]

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeStateError("ReplicaEnvs is closed")

    def _check_usable(self, for_reset: bool) -> None:
        self._check_open()
        if self._pending is not None:
            raise RuntimeStateError(f"a {self._pending[0]} is still pending: call "
                                    "step_wait() first")
        self._refresh()
        for k in range(self._k):
            status = self._status[k]
            if status == _LOST:
                raise self._lost_error(k, None)
            if not for_reset and status == _NEW:
                raise RuntimeStateError(f"replica {k} needs reset() before step()")
            if not for_reset and status == _FAILED:
                raise RuntimeStateError(f"replica {k} failed in an earlier call and needs "
                                        "reset()")

    def _seed_list(self, seeds: Any) -> list[Any]:
        n = self.num_envs
        each = "replica" if self._e == 1 else "environment"
        if seeds is None:
            return [int(np.random.SeedSequence().entropy) for _ in range(n)]
        if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
            return [int(seeds) + i for i in range(n)]
        if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence | np.ndarray):
            raise ModelError(f"seeds must be an int, None or one seed per {each}, got "
                             f"{type(seeds).__name__}")
        if len(seeds) != n:
            count = str(n) if self._e == 1 else f"{n}: {self._k} replicas x {self._e}"
            raise ModelError(f"seeds must have one seed per {each} ({count}), got "
                             f"{len(seeds)}")
        out = []
        for s in seeds:
            if s is None:
                s = int(np.random.SeedSequence().entropy)
            elif isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0:
                raise ModelError(f"each seed must be a non-negative int or None, got {s!r}")
            out.append(int(s))
        return out

    def _action_rows(self, actions: Any) -> list[Any]:
        """One block of action rows per replica (``(envs_per_replica, agents, *action)``),
        after checking the shape ``(num_envs, agents, *action)``."""
        if actions is None:
            return [None] * self._k
        try:
            array = np.asarray(actions)
        except ValueError as exc:
            raise ModelError(f"actions must be an array of shape {self._want_shape()}: "
                             f"{exc}") from None
        want = self._want_shape()
        got = array.shape
        if len(got) < 2 or got[:2] != (self.num_envs, self.n_agents) or (
                self.action_shape is not None and got[2:] != self.action_shape):
            lead = ("replicas" if self._e == 1 else
                    f"environments = {self._k} replicas x {self._e} envs_per_replica")
            raise ModelError(f"actions must have shape {want} ({lead}, agents, "
                             f"*action_shape), got {got}; nothing was sent")
        if array.dtype == object:
            raise ModelError("actions must be a numeric array, got dtype object")
        e = self._e
        return [array[k * e:(k + 1) * e] for k in range(self._k)]

    def _want_shape(self) -> str:
        tail = "..." if self.action_shape is None else ", ".join(map(str, self.action_shape))
        inner = ", ".join(x for x in (str(self.num_envs), str(self.n_agents), tail) if x)
        return f"({inner})"


def _factory_spec(factory: str | Callable[..., Any]) -> str:
    """``"module:qualname"`` for ``factory``; a callable must be importable by that name,
    so that workers import it instead of unpickling code."""
    if isinstance(factory, str):
        module, sep, name = factory.partition(":")
        if not sep or not module or not name:
            raise ModelError(f"model factory {factory!r} must be 'module:callable', e.g. "
                             "'workloads.pcs:PCS'")
        return factory
    if not callable(factory):
        raise ModelError(f"model factory must be 'module:callable' or a callable, got "
                         f"{type(factory).__name__}")
    module = getattr(factory, "__module__", None)
    qualname = getattr(factory, "__qualname__", "")
    spec = f"{module}:{qualname}"
    target: Any = None
    if module and module != "__main__" and "<" not in qualname:
        try:
            target = importlib.import_module(module)
            for part in qualname.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError):
            target = None
    if target is not factory:
        raise ModelError(f"model factory {factory!r} is not importable as {spec!r}: pass a "
                         "module-level callable of an importable module (not a lambda, a "
                         "local function or one defined in __main__), or its "
                         "'module:callable' name")
    return spec


def _check_picklable(value: Any, what: str) -> None:
    try:
        pickle.dumps(value)
    except Exception as exc:
        raise ModelError(f"{what} must be picklable to reach the workers: {exc}") from None


