"""Environment replicas on a Dask LocalCluster (:mod:`seer.distributed`) against stepping in
one process: throughput, the cost of the Dask round trip, and bit-identity.

    .venv/bin/python -m bench.replicas            # writes bench/results/replicas.json
    .venv/bin/python -m bench.replicas --smoke    # tiny sizes, seconds

Per K replicas x T threads, taking turns step by step: one runtime, K runtimes in turn,
and K on Dask, the Dask outputs checked against the in-process ones; the round trip on a
tiny model. docs/distributed.md.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import finish, interleaved, record

RESULTS = Path(__file__).parent / "results" / "replicas.json"
TINY = ("workloads.synthetic:BenchModel", {"n_entities": 4, "cost_us": 0.0})


def _actions(spec: str, k: int, agents: int, steps: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    if spec.endswith("Aircraft"):
        return [rng.uniform(-1, 1, (k, agents, 2)).astype(np.float32) for _ in range(steps)]
    if spec.endswith("PCS"):
        return [rng.integers(0, 3, (k, agents)) for _ in range(steps)]
    return [np.ones((k, agents), np.int64) for _ in range(steps)]


class _InProcess:
    """K runtimes in this process, stepped one after another (replica k reset with seed
    k, like the Dask replicas); ``last`` holds the latest outputs."""

    def __init__(self, spec: str, kwargs: dict, k: int, threads: int,
                 actions: list[np.ndarray]) -> None:
        import seer
        from seer.specs import load_model

        self.runtimes = [seer.make_runtime(load_model(spec, kwargs), "seer", threads=threads)
                         for _ in range(k)]
        self.actions = actions
        self.last = [rt.reset(i) for i, rt in enumerate(self.runtimes)]

    def __call__(self, t: int) -> None:
        self.last = [rt.step(self.actions[t][i]) for i, rt in enumerate(self.runtimes)]

    def close(self) -> None:
        for rt in self.runtimes:
            rt.close()


class _OnDask:
    """A :class:`ReplicaEnvs` as a stepper; ``last`` holds the latest batch."""

    def __init__(self, envs: Any, actions: list[np.ndarray]) -> None:
        self.envs = envs
        self.actions = actions
        self.last = envs.reset(list(range(envs.replicas)))

    def __call__(self, t: int) -> None:
        self.last = self.envs.step(self.actions[t])


def _identical(batch: Any, results: list) -> bool:
    return all(
        np.array_equal(batch.observations[i], np.stack(r.observations))
        and np.array_equal(batch.rewards[i], r.rewards)
        and np.array_equal(batch.terminations[i], r.terminations)
        and np.array_equal(batch.truncations[i], r.truncations)
        and batch.infos[i] == r.infos and int(batch.steps[i]) == r.step
        for i, r in enumerate(results))


def throughput(spec: str, kwargs: dict, k: int, threads: int, steps: int,
               bar: Any) -> dict[str, Any]:
    """One K x T configuration: one runtime, K in-process in turn, K on Dask (taking
    turns step by step), and whether the Dask outputs equal the in-process ones."""
    from seer.distributed import ReplicaEnvs

    with ReplicaEnvs(spec, kwargs, replicas=k, threads=threads) as envs:
        actions = _actions(spec, k, envs.n_agents, steps + 1)
        dask = _OnDask(envs, actions)
        one = _InProcess(spec, kwargs, 1, threads, [a[:1] for a in actions])
        sequential = _InProcess(spec, kwargs, k, threads, actions)
        try:
            s = interleaved({"one": one, "sequential": sequential, "dask": dask}, steps, bar)
            identical = _identical(dask.last, sequential.last)
        finally:
            one.close()
            sequential.close()
    return {"replicas": k, "threads": threads, "one_runtime_s": s["one"],
            "sequential_s": s["sequential"], "dask_s": s["dask"],
            "one_runtime_steps_per_s": 1 / s["one"],
            "sequential_replica_steps_per_s": k / s["sequential"],
            "dask_replica_steps_per_s": k / s["dask"], "identical": identical}


def overhead(k: int, steps: int, bar: Any) -> dict[str, Any]:
    """Dask's cost per batch: a tiny model's batch time on Dask (calls direct to the
    workers, and relayed by the scheduler) minus the same K replicas in-process."""
    from distributed import Client

    from seer.distributed import ReplicaEnvs, local_cluster

    spec, kwargs = TINY
    cluster = local_cluster(k)
    try:
        with Client(cluster, direct_to_workers=True) as direct, \
                Client(cluster, direct_to_workers=False) as relayed, \
                ReplicaEnvs(spec, kwargs, replicas=k, threads=1, client=direct) as a, \
                ReplicaEnvs(spec, kwargs, replicas=k, threads=1, client=relayed) as b:
            actions = _actions(spec, k, a.n_agents, steps + 1)
            local = _InProcess(spec, kwargs, k, 1, actions)
            try:
                s = interleaved({"in_process": local, "direct": _OnDask(a, actions),
                                  "via_scheduler": _OnDask(b, actions)}, steps, bar)
            finally:
                local.close()
    finally:
        cluster.close()
    return {"replicas": k, "model": f"{spec} {kwargs}", "in_process_s": s["in_process"],
            "dask_direct_s": s["direct"], "dask_via_scheduler_s": s["via_scheduler"],
            "overhead_direct_s": s["direct"] - s["in_process"],
            "overhead_via_scheduler_s": s["via_scheduler"] - s["in_process"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (seconds)")
    parser.add_argument("--uavs", type=int, default=200, help="Aircraft UAVs per replica")
    parser.add_argument("--cost", type=float, default=100.0, help="Aircraft cost_us")
    parser.add_argument("--replicas", type=int, nargs="+", default=[2])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per measurement")
    parser.add_argument("--overhead-steps", type=int, default=200)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if args.smoke:
        args.uavs, args.cost, args.replicas, args.threads = 20, 30.0, [2], [1]
        args.steps, args.overhead_steps = 4, 20
    from tqdm import tqdm

    # Dask logs every scheduler, nanny and worker start and stop at INFO: keep the
    # progress bar readable (LocalCluster restores this level when it closes).
    logging.getLogger("distributed").setLevel(logging.ERROR)

    spec = "workloads.aircraft:Aircraft"
    kwargs = {"n_uavs": args.uavs, "cost_us": args.cost}
    configs = [(k, t) for k in args.replicas for t in args.threads]
    total = len(configs) * args.steps + args.overhead_steps
    result: dict[str, Any] = {"model": {"spec": spec, "kwargs": kwargs},
                              "steps": args.steps, "throughput": [], "overhead": None}
    with tqdm(total=total, desc="bench.replicas", unit="step", file=sys.stderr) as bar:
        for k, t in configs:
            bar.set_postfix_str(f"{k} replicas x {t} threads")
            result["throughput"].append(throughput(spec, kwargs, k, t, args.steps, bar))
        bar.set_postfix_str("round-trip overhead")
        result["overhead"] = overhead(max(args.replicas), args.overhead_steps, bar)
    result.update(record("bench.replicas", argv))
    finish(Path(args.out), result, summary(result))
    return 0


def summary(result: dict) -> list[str]:
    """The report's line of this study, and the round trip's cost."""
    from bench.markdown import Results, also_measured

    o = result["overhead"]
    return [*also_measured(Results(replicas=result)),
            f"round trip: {1e3 * o['overhead_direct_s']:.2f} ms per batch direct to the "
            f"workers, {1e3 * o['overhead_via_scheduler_s']:.2f} ms via the scheduler"]


if __name__ == "__main__":
    sys.exit(main())
