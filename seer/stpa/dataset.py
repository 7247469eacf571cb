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

from seer.errors import ModelError
from seer.specs import load_model, resolve_spec
from seer.stpa.metrics import METRICS
from seer.stpa.preflight import (
    STATIC_FEATURES,
    default_actions,
    machine_t_max,
    run_preflight,
    usable_cores,
)

__all__ = ["Configuration", "collect", "default_configurations", "label_of", "load_dataset",
           "load_rows", "measure_configuration"]

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


def measure_configuration(config: Configuration, *, t_max: int | None = None,
                          repeats: int = 2, scan_repeats: int = 3,
                          steps_pre: int = 8) -> dict[str, Any]:
    """Preflights and a full scan of ``config`` in *this* process (see the module
    docstring); call it in a child process restricted to ``config.cores``. ``t_max``
    defaults to the machine's (:func:`~seer.stpa.preflight.machine_t_max` of the cores
    the process may use); ``steps_pre`` stays 8 so that shorter preflights can be
    evaluated on the same rows (their first steps)."""
    from seer.sched import make_runtime

    t_max = t_max or machine_t_max(os.cpu_count() or 1)
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
        "host_cores": os.cpu_count() or 1,
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


def collect(configs: Iterable[Configuration], out: Path, *, t_max: int | None = None,
            command: str = "", progress: bool = True, budget_s: float | None = None) -> Path:
    """Measure every configuration (each in a child process) and write ``out`` (npz, the
    layout :func:`load_rows` returns) and ``out.with_suffix('.json')`` (the manifest),
    both rewritten after every configuration so that a run cut short keeps what it
    measured. ``t_max`` defaults to the machine's. With ``budget_s``, no configuration
    starts after that many seconds (the manifest lists the ones left). Returns the npz
    path."""
    from tqdm import tqdm

    configs = list(configs)
    t_max = t_max or machine_t_max(os.cpu_count() or 1)
    machine = {"python": platform.python_version(), "platform": platform.platform(),
               "cores": usable_cores(), "processor": platform.processor(),
               "load_average_before": _load(), "capacity_before": capacity(usable_cores())}
    started = time.monotonic()
    rows: list[dict[str, Any]] = []
    for i, config in enumerate(tqdm(configs, desc="stpa collect", unit="config",
                                    disable=not progress)):
        if budget_s is not None and time.monotonic() - started > budget_s:
            break
        rows.append({"config": asdict(config), **_child(config, t_max)})
        _write(out, rows, configs[i + 1:], machine, command, t_max)
    if not rows:  # nothing to measure, or no time: the manifest says so (no data set)
        _write(out, rows, configs, machine, command, t_max)
    return out


def _write(out: Path, rows: list[dict[str, Any]], left: list[Configuration],
           machine: dict[str, Any], command: str, t_max: int) -> None:
    """The data set of ``rows`` and its manifest (``left``: configurations not measured)."""
    machine = {**machine, "load_average_after": _load(),
               "capacity_after": capacity(usable_cores())}
    out.parent.mkdir(parents=True, exist_ok=True)
    if rows:
        np.savez_compressed(out, **_arrays(rows, _machine_name(os.cpu_count() or 1), (
            machine["capacity_before"] + machine["capacity_after"]) / 2))
    manifest = {
        "command": command, "date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine,
        "metrics": list(METRICS), "static_features": list(STATIC_FEATURES),
        "t_max": t_max, "tolerance": TOLERANCE,
        "configurations": [{**row["config"], "label": row["label"],
                            "cores_seen": row["cores"],
                            "median_throughput": np.median(row["throughput"], axis=1).tolist(),
                            "preflight_seconds": row["preflight_seconds"]} for row in rows],
        "not_measured": [c.name for c in left],
    }
    out.with_suffix(".json").write_text(json.dumps(manifest, indent=1))


def _machine_name(host_cores: int) -> str:
    return f"{int(host_cores)}-core"


def _row_capacity(static: np.ndarray, session_capacity: float) -> np.ndarray:
    """Static vectors with the capacity column: rows measured before the preflight
    recorded it get the session's figure (effective cores), at most the row's cores."""
    static = np.asarray(static, np.float64)
    if static.shape[-1] == len(STATIC_FEATURES):
        return static
    if static.shape[-1] != len(STATIC_FEATURES) - 1:
        raise ModelError(f"STPA rows with {static.shape[-1]} static features; expected "
                         f"{len(STATIC_FEATURES)} ({', '.join(STATIC_FEATURES)})")
    cores = static[..., STATIC_FEATURES.index("cores")]
    return np.concatenate([static, np.minimum(cores, session_capacity)[..., None]], axis=-1)


def _arrays(rows: list[dict[str, Any]], machine: str, session_capacity: float
            ) -> dict[str, np.ndarray]:
    """Measured configurations (``measure_configuration``'s output plus ``config``) as
    one array per field, one row per preflight."""
    out: dict[str, list[Any]] = {k: [] for k in (
        "features", "static", "groups", "names", "throughput", "machine")}
    for row in rows:
        static = _row_capacity(row["static"], session_capacity)
        for f, st in zip(row["features"], static, strict=True):
            out["features"].append(f)
            out["static"].append(st)
            out["groups"].append(f"{machine}/{row['config']['group'] or row['config']['name']}")
            out["names"].append(row["config"]["name"])
            out["throughput"].append(row["throughput"])
            out["machine"].append(machine)
    width = max(len(t) for t in out["throughput"])
    throughput = np.full((len(out["throughput"]), width,
                          max(len(t[0]) for t in out["throughput"])), np.nan)
    for i, t in enumerate(out["throughput"]):
        throughput[i, :len(t), :len(t[0])] = t
    masks = np.array([row["mask"] for row in rows], bool)
    return _labelled({
        "features": np.array(out["features"], np.float32), "static": np.array(out["static"]),
        "mask": masks.all(axis=0), "groups": np.array(out["groups"]),
        "names": np.array(out["names"]), "throughput": throughput,
        "machine": np.array(out["machine"])})


def _labelled(data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``data`` with ``t_range`` (the machine range of each row: 1..machine_t_max of its
    cores, at most its scan) and ``labels`` (:func:`label_of` within that range)."""
    cores = data["static"][:, STATIC_FEATURES.index("cores")]
    scanned = np.sum(~np.isnan(data["throughput"][:, :, 0]), axis=1)
    t_range = np.minimum([machine_t_max(int(c)) for c in cores], scanned).astype(np.int64)
    labels = [label_of(_finite(t[:r])) for t, r in zip(data["throughput"], t_range,
                                                        strict=True)]
    return {**data, "t_range": t_range, "labels": np.array(labels, np.int64)}


def _finite(throughput: np.ndarray) -> np.ndarray:
    return throughput[:, ~np.isnan(throughput).any(axis=0)]


def _dataset_rows(path: Path) -> dict[str, np.ndarray]:
    """A ``seer stpa collect`` data set in :func:`load_rows`'s layout (files written
    before it had the machine fields get them from the manifest beside them)."""
    data = load_dataset(path)
    if "machine" in data:
        return data
    manifest_path = Path(path).with_suffix(".json")
    if not manifest_path.exists():
        raise ModelError(f"{path}: no machine fields and no manifest {manifest_path.name}")
    machine = json.loads(manifest_path.read_text())["machine"]
    cap = [machine.get(k) for k in ("capacity_before", "capacity_after")]
    cap = [c for c in cap if c]
    n = len(data["labels"])
    name = _machine_name(machine["cores"])
    return _labelled({
        "features": data["features"], "mask": data["mask"],
        "static": _row_capacity(data["static"], float(np.mean(cap)) if cap
                                else float(machine["cores"])),
        "groups": np.array([f"{name}/{g}" for g in data["groups"]]), "names": data["names"],
        "throughput": data["throughput"].astype(np.float64),
        "machine": np.full(n, name)})


def load_rows(paths: Iterable[Path]) -> dict[str, np.ndarray]:
    """STPA's training rows from data sets (``.npz``, ``seer stpa collect``), merged: per
    preflight row ``features`` ``(n, N, steps, 3)``,
    ``static`` ``(n, len(STATIC_FEATURES))``, ``throughput`` ``(n, T, repeats)`` (NaN past
    a row's scan), ``t_range``, ``labels``, ``groups`` (``"<machine>/<group>"``),
    ``names`` and ``machine`` (``"<cores>-core"``); ``mask``: metrics every source has."""
    parts = []
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise ModelError(f"STPA data {path} does not exist")
        parts.append(_dataset_rows(path))
    if not parts:
        raise ModelError("load_rows: no STPA data files given")
    steps = min(p["features"].shape[2] for p in parts)
    width = max(p["throughput"].shape[1] for p in parts)
    reps = max(p["throughput"].shape[2] for p in parts)
    merged: dict[str, np.ndarray] = {}
    for key in ("static", "groups", "names", "machine", "t_range", "labels"):
        merged[key] = np.concatenate([p[key] for p in parts])
    merged["features"] = np.concatenate([p["features"][:, :, :steps] for p in parts])
    throughput = np.full((len(merged["labels"]), width, reps), np.nan)
    i = 0
    for p in parts:
        t = p["throughput"]
        throughput[i:i + len(t), :t.shape[1], :t.shape[2]] = t
        i += len(t)
    merged["throughput"] = throughput
    merged["mask"] = np.logical_and.reduce([p["mask"] for p in parts])
    return merged


def _load() -> list[float]:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else []


def capacity(threads: int, seconds: float = 0.3) -> float:
    """Effective cores now (:func:`seer.stpa.preflight.capacity`, over ``seconds``).
    Labels measured on a busy host say so in the manifest."""
    from seer.stpa.preflight import capacity as measure

    return measure(threads, seconds)


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
