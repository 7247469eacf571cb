"""The thread-count predictor: preflight traces -> encoder embedding + static and machine
features -> gradient-boosted trees -> the throughput of each thread count on *this* machine
-> the count predicted fastest.

The shipped target (``curve``) is relative to the machine, so that one model serves every
core count: the trees read a row's inputs and a candidate count as the paper's normalised
count ``T / machine_t_max(cores)``, and predict the throughput there over the row's best;
the choice is the fastest of ``1..machine_t_max(cores)`` of the machine it runs on. The
machine enters the features as ``log2(cores)`` and the capacity the preflight measures
over the cores (``capacity / cores``: 1 on an idle machine). The ``log2`` and ``range``
targets predict the best count itself (``log2(T* / cores)``, ``T* / t_max``).

A count above the cores is allowed only as far as the preflight saw the step *wait*
(:func:`thread_cap`): a step whose tasks are on the CPU all the time cannot gain from more
threads than cores, one whose tasks sleep can. The same cap applies in training's
evaluation (:meth:`Predictor.choose`) and in ``threads="auto"`` (:func:`choose_threads`).

Inference needs numpy only: the encoder's forward pass runs from its exported weights
(:func:`seer.stpa.encoder.numpy_encode`) and the trees from xgboost's JSON model file
(:class:`seer.stpa.trees.TreeEnsemble`); xgboost (the ``stpa`` extra) trains them. The
shipped model lives in ``seer/stpa/data/`` (``encoder.npz``, ``regressor.json``,
``predictor.json``), trained by ``seer stpa train`` on the shipped data sets;
``seer stpa calibrate`` writes a calibrated one, which ``threads="auto"`` then uses
(:func:`model_dir`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from seer.errors import ModelError
from seer.model import Model
from seer.stpa.metrics import METRICS
from seer.stpa.preflight import (
    PREFLIGHT_STEPS,
    STATIC_FEATURES,
    Preflight,
    machine_t_max,
    run_preflight,
)

__all__ = [
    "DATA_DIR",
    "DEFAULT_TARGET",
    "MODEL_ENV",
    "MODEL_INPUTS",
    "TARGETS",
    "Predictor",
    "Regressor",
    "choose_threads",
    "count_inputs",
    "model_dir",
    "model_inputs",
    "predict",
    "static_inputs",
    "target_of",
    "thread_cap",
    "threads_for",
    "traces",
    "user_model_dir",
    "wait_share",
]

DATA_DIR = Path(__file__).parent / "data"
#: Environment variable naming a model directory for threads="auto" (a calibrated one).
MODEL_ENV = "SEER_STPA_MODEL"
#: Static features that span orders of magnitude enter as log1p.
_LOG_STATIC = ("entities", "events_per_step", "mean_event_us", "windows_per_step")
#: What the trees read besides the embedding (:func:`model_inputs`).
MODEL_INPUTS = ("log_entities", "log_events_per_step", "log_mean_event_us", "cross_fraction",
                "log_windows_per_step", "log2_cores", "capacity_share", "cpu_share",
                "idle_share", "log_step_s")


#: Targets: ``curve`` (the shipped one: the throughput at each count over the row's best,
#: the count given to the trees as :func:`count_inputs`; the choice is the count predicted
#: fastest), ``log2`` (``log2(T* / cores)``) or ``range`` (``T* / machine_t_max(cores)``,
#: the paper's normalised count on each machine's range).
TARGETS = ("curve", "log2", "range")
DEFAULT_TARGET = "curve"


def count_inputs(threads: np.ndarray, cores: np.ndarray) -> np.ndarray:
    """What the ``curve`` target's trees read of a candidate count besides the row's
    inputs: the paper's normalised count ``T / machine_t_max(cores)``, ``(n, 1)`` (the
    machine itself is in the row's inputs)."""
    threads = np.asarray(threads, np.float64)
    t_max = np.array([machine_t_max(int(c)) for c in np.atleast_1d(cores)], np.float64)
    return (threads / t_max)[:, None]


def target_of(threads: np.ndarray, cores: np.ndarray, kind: str = "log2") -> np.ndarray:
    """The regression target of a best thread count (:data:`TARGETS`; ``curve`` reports
    a count as ``log2``: its regression target is a throughput, not a count)."""
    if kind not in TARGETS:
        raise ModelError(f"STPA target {kind!r}: choose one of {', '.join(TARGETS)}")
    if kind == "range":
        t_max = np.array([machine_t_max(int(c)) for c in np.atleast_1d(cores)])
        return np.asarray(threads, np.float64) / t_max
    return np.log2(np.asarray(threads, np.float64) / np.asarray(cores, np.float64))


def threads_for(y: float, cores: int, kind: str = "log2", cap: int | None = None) -> int:
    """A prediction ``y`` as a thread count on a machine with ``cores`` usable cores:
    ``round(cores * 2**y)`` (``range``: ``round(y * t_max)``) within
    ``1..min(t_max, cap)``, ``t_max = machine_t_max(cores)`` (``cap``: :func:`thread_cap`)."""
    t_max = machine_t_max(cores) if cap is None else max(1, min(machine_t_max(cores), cap))
    if kind == "range":
        return int(np.clip(np.rint(y * machine_t_max(cores)), 1, t_max))
    return int(np.clip(np.rint(cores * 2.0 ** float(np.clip(y, -10, 10))), 1, t_max))


def wait_share(features: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The share of task time the preflight's threads spent *waiting*, per preflight
    (``features`` ``(n, N, steps, 3)``): the task time off the CPU (``1 - cpu_s / busy_s``)
    times the voluntary context switches per event, at most 1. A task that sleeps gives
    the CPU up itself (a voluntary switch per wait); a task that is preempted on a loaded
    machine is off the CPU too, but through involuntary switches, so preemption does not
    count as waiting. Without the switch counts (``mask``), the off-CPU share alone;
    without the runtime's CPU and busy time, 1 (nothing known: no cap)."""
    need = [METRICS.index(m) for m in ("busy_s", "cpu_s", "events")]
    if not np.asarray(mask)[need].all():
        return np.ones(len(features))
    total = np.asarray(features, np.float64)[..., 0].sum(axis=2)  # (n, N): over the steps
    busy, cpu, events = (total[:, METRICS.index(m)] for m in ("busy_s", "cpu_s", "events"))
    off = np.clip(1.0 - cpu / np.maximum(busy, 1e-12), 0.0, 1.0)
    vol = METRICS.index("voluntary_switches")
    if not mask[vol]:
        return off
    return off * np.minimum(1.0, total[:, vol] / np.maximum(events, 1e-12))


def thread_cap(cores: int, wait: float) -> int:
    """The most threads that can keep ``cores`` cores busy when each thread waits a
    share ``wait`` of its task time: ``floor(cores / (1 - wait))``, at least ``cores``
    (``cores`` for a step that never waits; unbounded as ``wait`` nears 1)."""
    if wait >= 1.0:
        return 1 << 20
    return max(int(cores), int(np.floor(cores / (1.0 - float(wait)) + 1e-9)))


def traces(features: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``F`` (``(N, T, 3)`` or ``(n, N, T, 3)``) as encoder input ``(n, T, N * 3)``, with
    missing metrics zeroed (the encoder log-scales and standardises them itself)."""
    from seer.stpa.encoder import flatten_preflight

    return flatten_preflight(features, mask)


def static_inputs(static: np.ndarray) -> np.ndarray:
    """Static feature vectors (``(..., len(STATIC_FEATURES))``) as regressor inputs."""
    s = np.array(static, np.float64, copy=True)
    for name in _LOG_STATIC:
        i = STATIC_FEATURES.index(name)
        s[..., i] = np.log1p(s[..., i])
    return s


def model_inputs(static: np.ndarray, features: np.ndarray,
                 static_only: bool = False) -> np.ndarray:
    """:data:`MODEL_INPUTS` of preflights: the model's static features (log-scaled where
    they span orders of magnitude), the machine (``log2 cores``, capacity over cores) and,
    unless ``static_only``, three ratios of the runtime counters read from the traces
    (``features`` ``(n, N, steps, 3)``): CPU over busy time (low for handlers that wait),
    idle over wall time per thread, and the step's wall time."""
    s = static_inputs(static)
    col = STATIC_FEATURES.index
    cores = np.maximum(np.asarray(static)[:, col("cores")], 1)
    cols = [s[:, col(k)] for k in ("entities", "events_per_step", "mean_event_us",
                                   "cross_fraction", "windows_per_step")]
    cols += [np.log2(cores), np.asarray(static)[:, col("capacity")] / cores]
    if static_only:
        return np.stack(cols, axis=1)
    mean = np.asarray(features, np.float64)[..., 0].sum(axis=2)  # (n, N): over the steps
    busy, idle, cpu = (mean[:, METRICS.index(m)] for m in ("busy_s", "idle_s", "cpu_s"))
    steps = np.asarray(features).shape[2]
    cols += [cpu / np.maximum(busy, 1e-9), idle / np.maximum(busy + idle, 1e-9),
             np.log10(np.maximum((busy + idle) / steps, 1e-7))]
    return np.stack(cols, axis=1)


class Regressor:
    """Gradient-boosted trees on xgboost's native API (``xgboost.train`` / ``Booster``):
    its scikit-learn wrapper would need scikit-learn as well."""

    PARAMS: ClassVar[dict[str, Any]] = {
        "objective": "reg:squarederror", "max_depth": 3, "eta": 0.05, "subsample": 0.9,
        "colsample_bytree": 0.9, "nthread": 1}

    def __init__(self, seed: int = 0, rounds: int = 200) -> None:
        self.seed = seed
        self.rounds = rounds
        self.booster: Any = None
        self.trees: Any = None  # a loaded model: seer.stpa.trees.TreeEnsemble

    def fit(self, x: np.ndarray, y: np.ndarray) -> Regressor:
        xgboost = _import_xgboost()
        self.booster = xgboost.train({**self.PARAMS, "seed": self.seed},
                                     xgboost.DMatrix(x, label=y), num_boost_round=self.rounds)
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        if self.trees is not None:
            return self.trees.predict(x)
        return self.booster.predict(_import_xgboost().DMatrix(x))

    def save_model(self, path: Path) -> None:
        if self.booster is None:  # a loaded model: its trees as they were read
            self.trees.save(path)
        else:
            self.booster.save_model(str(path))

    @classmethod
    def load_model(cls, path: Path) -> Regressor:
        """A saved model, evaluated in numpy (no xgboost needed)."""
        from seer.stpa.trees import TreeEnsemble

        regressor = cls()
        regressor.trees = TreeEnsemble.load(path)
        return regressor


def _import_xgboost() -> Any:
    try:
        import xgboost
    except ImportError:
        raise ModelError("threads='auto' (STPA) needs xgboost: install the 'stpa' extra, "
                         "pip install 'seer-ft[stpa]'") from None
    return xgboost


@dataclass
class Predictor:
    """A trained predictor: encoder weights, the trees, the metrics present in training
    and the preflight steps it was trained on (see the module docstring)."""

    encoder: dict[str, np.ndarray]
    regressor: Regressor
    mask: np.ndarray  # metrics present when it was trained
    steps: int = PREFLIGHT_STEPS
    trained_on: dict[str, Any] = field(default_factory=dict)
    target: str = DEFAULT_TARGET  # one of TARGETS

    def inputs(self, features: np.ndarray, mask: np.ndarray,
               static: np.ndarray) -> np.ndarray:
        """Regressor inputs for preflights: embedding ++ :func:`model_inputs`."""
        from seer.stpa.encoder import channel_mask, numpy_encode

        features = np.asarray(features)[:, :, :self.steps]
        # Metrics missing now, or missing in training, contribute nothing.
        usable = mask & self.mask
        embedding = numpy_encode(self.encoder, traces(features, usable), channel_mask(usable))
        static = np.asarray(static, np.float64).reshape(len(embedding), -1)
        return np.concatenate([embedding, model_inputs(static, features)], axis=1)

    def predict_target(self, features: np.ndarray, mask: np.ndarray,
                       static: np.ndarray) -> np.ndarray:
        """Predicted target of preflights (``curve``: ``log2(T / cores)`` of the count
        predicted fastest within ``1..t_max``)."""
        if self.target == "curve":
            cores = _cores_of(static)
            return np.log2(self._fastest(self.inputs(features, mask, static), cores,
                                         [None] * len(cores)) / cores)
        return self.regressor.predict(self.inputs(features, mask, static))

    def _fastest(self, inputs: np.ndarray, cores: np.ndarray, caps: list[int | None]
                 ) -> np.ndarray:
        """``curve``: per row, the count within ``1..min(t_max, cap)`` whose predicted
        throughput is highest (the smallest such count on a tie)."""
        out = []
        for x, c, cap in zip(inputs, cores, caps, strict=True):
            top = machine_t_max(int(c)) if cap is None else max(1, min(machine_t_max(int(c)),
                                                                       cap))
            counts = np.arange(1, top + 1)
            grid = np.hstack([np.repeat(x[None], top, axis=0),
                              count_inputs(counts, np.full(top, c))])
            out.append(int(counts[np.argmax(self.regressor.predict(grid))]))
        return np.array(out)

    def choose(self, features: np.ndarray, mask: np.ndarray, static: np.ndarray,
               capped: bool = True) -> np.ndarray:
        """Thread counts for preflights, each on its own row's machine (its cores), at
        most :func:`thread_cap` of what the preflight saw (unless not ``capped``)."""
        cores = _cores_of(static)
        wait = wait_share(np.asarray(features)[:, :, :self.steps], mask & self.mask)
        caps = [thread_cap(c, w) if capped else None for c, w in zip(cores, wait, strict=True)]
        if self.target == "curve":
            return self._fastest(self.inputs(features, mask, static), cores, caps)
        y = self.predict_target(features, mask, static)
        return np.array([threads_for(v, int(c), self.target, k)
                         for v, c, k in zip(y, cores, caps, strict=True)])

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(directory / "encoder.npz", **self.encoder)
        self.regressor.save_model(directory / "regressor.json")
        (directory / "predictor.json").write_text(json.dumps(
            {"layout": 2, "target": self.target, "steps": self.steps,
             "mask": self.mask.astype(int).tolist(), "static_features": list(STATIC_FEATURES),
             "inputs": list(MODEL_INPUTS), "trained_on": self.trained_on}, indent=1))

    @classmethod
    def load(cls, directory: Path = DATA_DIR) -> Predictor:
        from seer.stpa.encoder import load_weights

        directory = Path(directory)
        if not (directory / "regressor.json").exists():
            raise ModelError(f"no trained STPA model in {directory}; run 'seer stpa train'")
        meta = json.loads((directory / "predictor.json").read_text())
        if meta.get("layout") != 2:
            raise ModelError(f"{directory}: an STPA model of an older layout; train it again "
                             "('seer stpa train')")
        return cls(load_weights(directory / "encoder.npz"),
                   Regressor.load_model(directory / "regressor.json"),
                   np.array(meta["mask"], bool), int(meta["steps"]),
                   meta.get("trained_on", {}), meta["target"])


def _cores_of(static: np.ndarray) -> np.ndarray:
    return np.asarray(static)[:, STATIC_FEATURES.index("cores")].astype(int)


def user_model_dir() -> Path:
    """Where ``seer stpa calibrate`` saves by default: ``$XDG_DATA_HOME/seer/stpa`` (or
    ``~/.local/share/seer/stpa``)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "seer" / "stpa"


def model_dir() -> Path:
    """The model ``threads="auto"`` uses: ``$SEER_STPA_MODEL`` if set, else a calibrated
    model in :func:`user_model_dir`, else the shipped one (:data:`DATA_DIR`)."""
    named = os.environ.get(MODEL_ENV)
    if named:
        if not (Path(named) / "regressor.json").exists():
            raise ModelError(f"${MODEL_ENV}={named}: no trained STPA model there")
        return Path(named)
    user = user_model_dir()
    return user if (user / "regressor.json").exists() else DATA_DIR


_loaded: dict[Path, tuple[float, Predictor]] = {}


def _shipped() -> Predictor:
    """The predictor of :func:`model_dir`, loaded once (again when its file changes)."""
    directory = model_dir()
    stamp = (directory / "regressor.json").stat().st_mtime
    cached = _loaded.get(directory)
    if cached is None or cached[0] != stamp:
        _loaded[directory] = (stamp, Predictor.load(directory))
    return _loaded[directory][1]


def choose_threads(model: Model | None, runtime: str = "seer", *,
                   predictor: Predictor | None = None, steps: int | None = None,
                   preflight: Callable[[int], Preflight] | None = None
                   ) -> tuple[int, dict[str, Any]]:
    """Run a preflight of ``model`` and predict its thread count. Returns ``(threads,
    info)``; ``info`` holds the prediction, the probe count, the preflight time, the wait
    share and the cap it gives (:func:`thread_cap`) and the features (what
    ``runtime.stpa`` shows). ``steps`` defaults to the predictor's. ``preflight(steps)``,
    when given, runs instead of ``model``'s own (several models on one pool:
    :mod:`seer.vector`)."""
    if runtime == "serial":
        raise ModelError("runtime 'serial' runs on one thread: there is no thread count to "
                         "predict (choose a parallel runtime, such as 'seer')")
    directory = None if predictor is not None else model_dir()
    predictor = predictor or _shipped()
    steps = steps or predictor.steps
    pre: Preflight = (preflight(steps) if preflight is not None else
                      run_preflight(model, runtime=runtime, steps=steps))
    features, static = pre.features[None], pre.static_vector()[None]
    y = float(predictor.predict_target(features, pre.mask, static)[0])
    cores = int(pre.static["cores"])
    wait = float(wait_share(features, pre.mask & predictor.mask)[0])
    cap = thread_cap(cores, wait)
    threads = int(predictor.choose(features, pre.mask, static)[0])
    info = {**pre.as_dict(), "threads": threads, "predicted": y, "wait_share": wait,
            "cap": min(cap, machine_t_max(cores)), "t_max": machine_t_max(cores),
            "features": pre.features, "mask": pre.mask,
            "model": str(directory) if directory is not None else "given"}
    return threads, info


def predict(model: Model, runtime: str = "seer", **options: Any) -> int:
    """The thread count STPA predicts for ``model`` (runs a preflight; see
    :func:`choose_threads`)."""
    return choose_threads(model, runtime, **options)[0]
