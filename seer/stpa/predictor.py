"""The thread-count predictor: preflight traces -> encoder embedding + static features ->
xgboost -> normalised thread count ``T* / t_max`` -> threads.

Inference needs numpy and xgboost only: the encoder's forward pass runs in numpy from its
exported weights (:func:`seer.stpa.encoder.numpy_encode`). The shipped model lives in
``seer/stpa/data/`` (``encoder.npz``, ``regressor.json``, ``predictor.json``), trained by
``seer stpa train`` on the shipped data set.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from seer.errors import ModelError
from seer.model import Model
from seer.stpa.preflight import STATIC_FEATURES, Preflight, run_preflight

__all__ = ["DATA_DIR", "Predictor", "Regressor", "choose_threads", "predict", "static_inputs",
           "traces"]

DATA_DIR = Path(__file__).parent / "data"
#: Static features that span orders of magnitude enter as log1p.
_LOG_STATIC = ("entities", "events_per_step", "mean_event_us", "windows_per_step")


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

    def fit(self, x: np.ndarray, y: np.ndarray) -> Regressor:
        xgboost = _import_xgboost()
        self.booster = xgboost.train({**self.PARAMS, "seed": self.seed},
                                     xgboost.DMatrix(x, label=y), num_boost_round=self.rounds)
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.booster.predict(_import_xgboost().DMatrix(x))

    def save_model(self, path: Path) -> None:
        self.booster.save_model(str(path))

    @classmethod
    def load_model(cls, path: Path) -> Regressor:
        regressor = cls()
        regressor.booster = _import_xgboost().Booster(model_file=str(path))
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
    """A trained predictor: encoder weights, the xgboost regressor and its inputs' layout."""

    encoder: dict[str, np.ndarray]
    regressor: Regressor
    t_max: int
    mask: np.ndarray  # metrics present when it was trained

    def inputs(self, features: np.ndarray, mask: np.ndarray,
               static: np.ndarray) -> np.ndarray:
        """Regressor inputs for preflights: embedding ++ static features."""
        from seer.stpa.encoder import channel_mask, numpy_encode

        # Metrics missing now, or missing in training, contribute nothing.
        usable = mask & self.mask
        embedding = numpy_encode(self.encoder, traces(features, usable), channel_mask(usable))
        return np.concatenate([embedding, static_inputs(static).reshape(len(embedding), -1)],
                              axis=1)

    def predict_normalised(self, features: np.ndarray, mask: np.ndarray,
                           static: np.ndarray) -> np.ndarray:
        return self.regressor.predict(self.inputs(features, mask, static))

    def threads_for(self, normalised: float, t_max: int | None = None) -> int:
        t_max = t_max or self.t_max
        return int(np.clip(np.rint(normalised * t_max), 1, t_max))

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(directory / "encoder.npz", **self.encoder)
        self.regressor.save_model(directory / "regressor.json")
        (directory / "predictor.json").write_text(json.dumps(
            {"t_max": self.t_max, "mask": self.mask.astype(int).tolist(),
             "static_features": list(STATIC_FEATURES)}, indent=1))

    @classmethod
    def load(cls, directory: Path = DATA_DIR) -> Predictor:
        from seer.stpa.encoder import load_weights

        if not (directory / "regressor.json").exists():
            raise ModelError(f"no trained STPA model in {directory}; run 'seer stpa train'")
        meta = json.loads((directory / "predictor.json").read_text())
        return cls(load_weights(directory / "encoder.npz"),
                   Regressor.load_model(directory / "regressor.json"), int(meta["t_max"]),
                   np.array(meta["mask"], bool))


_loaded: list[Predictor] = []


def _shipped() -> Predictor:
    if not _loaded:
        _loaded.append(Predictor.load())
    return _loaded[0]


def choose_threads(model: Model, runtime: str = "seer", *, predictor: Predictor | None = None,
                   steps: int = 8) -> tuple[int, dict[str, Any]]:
    """Run a preflight of ``model`` and predict its thread count. Returns ``(threads,
    info)``; ``info`` holds the prediction, the probe count, the preflight time and the
    features (what ``runtime.stpa`` shows)."""
    predictor = predictor or _shipped()
    pre: Preflight = run_preflight(model, runtime=runtime, steps=steps, t_max=predictor.t_max)
    normalised = float(predictor.predict_normalised(pre.features[None], pre.mask,
                                                    pre.static_vector()[None])[0])
    threads = predictor.threads_for(normalised)
    info = {**pre.as_dict(), "threads": threads, "normalised": normalised,
            "t_max": predictor.t_max, "features": pre.features,
            "mask": pre.mask}
    return threads, info


def predict(model: Model, runtime: str = "seer", **options: Any) -> int:
    """The thread count STPA predicts for ``model`` (runs a preflight; see
    :func:`choose_threads`)."""
    return choose_threads(model, runtime, **options)[0]
