"""STPA's training data: preflight traces and full thread scans of many configurations.

A *configuration* is a model (an importable factory and its arguments), a core count (the
process may be restricted to fewer cores with ``os.sched_setaffinity``) and a group name
(configurations of one group are held out together when evaluating). For each one, in a
fresh child process, :func:`measure_configuration` records

* ``repeats`` preflights at the probe thread count (``F``, mask, static features), and
* a full scan: the throughput (steps per second) of ``T = 1..t_max`` threads on the same
  steps, ``scan_repeats`` times each, interleaved so that drift on a shared machine hits
  every ``T`` alike;

and the label: the smallest ``T`` whose median throughput is within 3 % of the best
(noise-robust: an extra thread that buys less than 3 % is not worth it).

:func:`collect` runs a list of configurations with a progress bar and writes
``dataset.npz`` plus ``manifest.json`` (machine facts, the command, every configuration).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from seer.specs import load_model, resolve_spec
from seer.stpa.metrics import METRICS
from seer.stpa.preflight import STATIC_FEATURES, default_actions, run_preflight, usable_cores

__all__ = ["Configuration", "collect", "default_configurations", "label_of", "load_dataset",
           "measure_configuration"]

#: A thread count within this fraction of the best throughput is as good as the best.
TOLERANCE = 0.03


@dataclass
class Configuration:
    """One model on one core budget (see the module docstring)."""

    name: str
    spec: str  # a model spec (seer.specs): "module:callable" or a registered name
    kwargs: dict[str, Any] = field(default_factory=dict)
    group: str = ""
    cores: int | None = None  # restrict the child process to this many cores
    steps: int = 3  # timed steps per scan point


def label_of(throughput: np.ndarray, tolerance: float = TOLERANCE) -> int:
    """The smallest thread count (1-based) whose median throughput is within
    ``tolerance`` of the best median. ``throughput``: ``(t_max, repeats)``."""
    median = np.median(throughput, axis=1)
    good = np.flatnonzero(median >= (1.0 - tolerance) * median.max())
    return int(good[0]) + 1


def measure_configuration(config: Configuration, *, t_max: int = 8, repeats: int = 2,
                          scan_repeats: int = 3, steps_pre: int = 8) -> dict[str, Any]:
    """Preflights and a full scan of ``config`` in *this* process (see the module
    docstring); call it in a child process restricted to ``config.cores``."""
    from seer.sched import make_runtime

    model = load_model(config.spec, config.kwargs)
    actions = default_actions(model)
    pre = [run_preflight(model, steps=steps_pre, t_max=t_max) for _ in range(repeats)]
    runtimes = {t: make_runtime(model, "seer", threads=t) for t in range(1, t_max + 1)}
    throughput = np.zeros((t_max, scan_repeats))
    try:
        for r in range(scan_repeats):
            order = range(1, t_max + 1) if r % 2 == 0 else range(t_max, 0, -1)
            for t in order:
                rt = runtimes[t]
                rt.reset(0)
                rt.step(actions(0))  # warm-up
                t0 = time.perf_counter()
                for k in range(1, config.steps + 1):
                    rt.step(actions(k))
                throughput[t - 1, r] = config.steps / (time.perf_counter() - t0)
    finally:
        for rt in runtimes.values():
            rt.close()
    return {
        "features": np.stack([p.features for p in pre]).tolist(),
        "mask": pre[0].mask.tolist(),
        "static": [p.static_vector().tolist() for p in pre],
        "preflight_seconds": [p.seconds for p in pre],
        "throughput": throughput.tolist(),
        "label": label_of(throughput),
        "cores": usable_cores(),
    }


def _child(config: Configuration, t_max: int) -> dict[str, Any]:
    """Measure ``config`` in a fresh child process (its own core budget and threads)."""
    code = ("import json, sys; from seer.stpa.dataset import Configuration, "
            "measure_configuration; c = Configuration(**json.loads(sys.argv[1])); "
            "print(json.dumps(measure_configuration(c, t_max=int(sys.argv[2]))))")
    env = dict(os.environ)
    cmd = [sys.executable, "-c", code, json.dumps(asdict(config)), str(t_max)]
    if config.cores:
        cores = sorted(os.sched_getaffinity(0))[:config.cores]
        cmd = ["taskset", "-c", ",".join(map(str, cores)), *cmd]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"configuration {config.name!r} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def collect(configs: Iterable[Configuration], out: Path, *, t_max: int = 8,
            command: str = "") -> Path:
    """Measure every configuration (each in a child process) and write ``out`` (npz) and
    ``out.with_suffix('.json')`` (the manifest). Returns the npz path."""
    from tqdm import tqdm

    configs = list(configs)
    load_before, capacity_before = _load(), capacity()
    rows: list[dict[str, Any]] = []
    for config in tqdm(configs, desc="stpa collect", unit="config"):
        rows.append({"config": asdict(config), **_child(config, t_max)})
    features, static, labels, groups, names, throughput = [], [], [], [], [], []
    for row in rows:
        for f, s in zip(row["features"], row["static"], strict=True):
            features.append(f)
            static.append(s)
            labels.append(row["label"])
            groups.append(row["config"]["group"] or row["config"]["name"])
            names.append(row["config"]["name"])
            throughput.append(row["throughput"])
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        out, features=np.array(features, np.float32), static=np.array(static),
        mask=np.array(rows[0]["mask"], bool), labels=np.array(labels, np.int64),
        groups=np.array(groups), names=np.array(names),
        throughput=np.array(throughput), t_max=t_max)
    manifest = {
        "command": command,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cores": usable_cores(), "processor": platform.processor(),
                    "load_average_before": load_before, "load_average_after": _load(),
                    "capacity_before": capacity_before, "capacity_after": capacity()},
        "metrics": list(METRICS), "static_features": list(STATIC_FEATURES),
        "t_max": t_max, "tolerance": TOLERANCE,
        "configurations": [{**row["config"], "label": row["label"],
                            "cores_seen": row["cores"],
                            "median_throughput": np.median(row["throughput"], axis=1).tolist(),
                            "preflight_seconds": row["preflight_seconds"]} for row in rows],
    }
    out.with_suffix(".json").write_text(json.dumps(manifest, indent=1))
    return out


def _load() -> list[float]:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else []


def capacity(seconds: float = 0.3) -> float:
    """How many cores two threads of pure Python get right now: the work two threads do
    together in ``seconds`` over what one thread does alone (1.0 to 2.0 on 2 free cores).
    Labels measured on a busy host say so in the manifest."""
    import threading

    def spin(out: list[int], stop: float) -> None:
        n = 0
        while time.perf_counter() < stop:
            n += 1
        out.append(n)

    one: list[int] = []
    spin(one, time.perf_counter() + seconds)
    two: list[int] = []
    stop = time.perf_counter() + seconds
    threads = [threading.Thread(target=spin, args=(two, stop)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(two) / max(one[0], 1)


def load_dataset(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def default_configurations(quick: bool = False) -> list[Configuration]:
    """The configurations the shipped model is trained on: the best thread count must
    vary, even on 2 cores (``docs/design.md``, "STPA"). The models are the registered
    ``bench``, ``pcs`` and ``aircraft`` (:func:`seer.specs.registered_models`), stored as
    the ``"module:qualname"`` they stand for, so that a data set names its models exactly."""
    bench, pcs, air = (resolve_spec(name) for name in ("bench", "pcs", "aircraft"))
    configs: list[Configuration] = []
    for cost in (0, 2, 10, 40, 150):  # tiny handlers (best: 1) .. compute (best: cores)
        for fanout in (1, 3):
            configs.append(Configuration(f"bench-c{cost}-f{fanout}", bench,
                                         {"n_entities": 400, "cost_us": cost,
                                          "fanout": fanout}, group=f"bench-c{cost}"))
    for wait in (150, 600):  # handlers that wait: best > cores
        for cost in (0, 20):
            configs.append(Configuration(f"wait-w{wait}-c{cost}", bench,
                                         {"n_entities": 120, "cost_us": cost, "fanout": 1,
                                          "wait_us": wait}, group=f"wait-w{wait}"))
    for side in (20, 30):
        for cost in (5, 20):
            configs.append(Configuration(f"pcs-{side}-c{cost}", pcs,
                                         {"width": side, "height": side, "cost_us": cost},
                                         group=f"pcs-{side}"))
    for n in (150, 300):
        for cost in (100, 250):
            configs.append(Configuration(f"aircraft-{n}-c{cost}", air,
                                         {"n_uavs": n, "cost_us": cost},
                                         group=f"aircraft-{n}"))
    one_core = [c for c in configs if c.name in (
        "bench-c10-f1", "bench-c150-f1", "wait-w600-c0", "pcs-20-c20", "aircraft-150-c100")]
    configs += [Configuration(c.name + "-1core", c.spec, c.kwargs, group=c.group + "-1core",
                              cores=1) for c in one_core]
    if quick:
        configs = [c for c in configs if c.name in (
            "bench-c0-f1", "bench-c150-f1", "wait-w600-c0", "bench-c10-f1-1core")]
    return configs
