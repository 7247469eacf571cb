"""Train STPA and evaluate it against baselines, split by configuration group.

The target is the normalised best thread count ``y = T* / t_max``. Methods compared (each
trained on the training groups only, evaluated on held-out groups):

* ``stpa``: encoder (self-supervised on the training traces) + xgboost on embedding and
  static features;
* ``xgboost-static``: xgboost on the static features alone;
* ``xgboost-raw``: xgboost on the flattened raw traces and the static features;
* ``lstm``: an LSTM over the traces (torch), its last state and the static features into a
  linear head;
* ``timesurl``: the encoder with a linear (ridge) head on the embedding only;
* ``cores``: the rule "threads = usable cores";
* ``oracle``: the label itself (regret 1 by definition).

Reported per method: MAE and MSE in normalised units and in threads, and *regret*:
throughput at the chosen count / throughput at the best count of the configuration's
scan, mean and worst over test configurations. Splits are grouped K-fold over
configuration groups (a group's preflights never straddle train and test).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from seer.stpa.predictor import Predictor, Regressor, static_inputs, traces
from seer.stpa.preflight import STATIC_FEATURES

__all__ = ["METHODS", "PAPER_TABLE_1", "evaluate", "fit_stpa", "group_folds"]

#: The SEER paper's Table 1 (test MAE), printed beside our figures.
PAPER_TABLE_1 = {"stpa": 0.3394, "xgboost-static": 1.28, "timesurl": 2.24, "lstm": 9.35}

METHODS = ("stpa", "xgboost-static", "xgboost-raw", "lstm", "timesurl", "cores", "oracle")


def _xgb(seed: int) -> Regressor:
    return Regressor(seed)


def fit_stpa(data: dict[str, np.ndarray], rows: np.ndarray, *, seed: int = 0,
             epochs: int = 40) -> Predictor:
    """Encoder + xgboost trained on ``rows`` of the data set."""
    from seer.stpa.encoder import TimesURLEncoder, channel_mask

    mask = data["mask"]
    t_max = int(data["t_max"])
    x = traces(data["features"][rows], mask)
    encoder = TimesURLEncoder(x.shape[-1], seed=seed).fit(x, epochs=epochs, seed=seed,
                                                           mask=channel_mask(mask))
    weights = encoder.export()
    predictor = Predictor(weights, _xgb(seed), t_max, mask.copy())
    inputs = predictor.inputs(data["features"][rows], mask, data["static"][rows])
    predictor.regressor.fit(inputs, data["labels"][rows] / t_max)
    return predictor


def _lstm(x_train: np.ndarray, s_train: np.ndarray, y_train: np.ndarray, seed: int
          ) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    import torch

    # The encoder's own Adam: torch.optim would import triton, which re-enables the GIL.
    from seer.stpa.adam import Adam

    torch.manual_seed(seed)
    x_train = np.sign(x_train) * np.log1p(np.abs(x_train))  # counts span orders of magnitude
    mu, sd = x_train.mean(axis=(0, 1)), _spread(x_train.std(axis=(0, 1)))
    smu, ssd = s_train.mean(axis=0), _spread(s_train.std(axis=0))

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = torch.nn.LSTM(x_train.shape[-1], 16, batch_first=True)
            self.head = torch.nn.Linear(16 + s_train.shape[-1], 1)

        def forward(self, x: Any, s: Any) -> Any:
            _, (h, _) = self.lstm(x)
            return self.head(torch.cat([h[-1], s], dim=1)).squeeze(1)

    net = Net()
    opt = Adam(list(net.parameters()), lr=0.01)
    xt = torch.tensor((x_train - mu) / sd, dtype=torch.float32)
    st = torch.tensor((s_train - smu) / ssd, dtype=torch.float32)
    yt = torch.tensor(y_train, dtype=torch.float32)
    for _ in range(300):
        opt.zero_grad()
        loss = torch.mean((net(xt, st) - yt) ** 2)
        loss.backward()
        opt.step()

    def predict(x: np.ndarray, s: np.ndarray) -> np.ndarray:
        x = np.sign(x) * np.log1p(np.abs(x))
        with torch.no_grad():
            return net(torch.tensor((x - mu) / sd, dtype=torch.float32),
                       torch.tensor((s - smu) / ssd, dtype=torch.float32)).numpy()

    return predict


def _spread(sd: np.ndarray) -> np.ndarray:
    """Standard deviations to divide by: a feature constant in training (cores, t_max on
    one machine) is left unscaled rather than blown up by a tiny divisor."""
    return np.where(sd > 1e-6, sd, 1.0)


def _ridge(a: np.ndarray, y: np.ndarray, lam: float = 1e-2) -> Callable[[np.ndarray],
                                                                         np.ndarray]:
    mu, sd = a.mean(axis=0), _spread(a.std(axis=0))
    z = np.hstack([(a - mu) / sd, np.ones((len(a), 1))])
    w = np.linalg.solve(z.T @ z + lam * np.eye(z.shape[1]), z.T @ y)
    return lambda b: np.hstack([(b - mu) / sd, np.ones((len(b), 1))]) @ w


def _predictions(data: dict[str, np.ndarray], train: np.ndarray, test: np.ndarray,
                 seed: int, epochs: int) -> dict[str, np.ndarray]:
    """Normalised predictions of every method for the ``test`` rows."""
    from seer.stpa.encoder import channel_mask, numpy_encode

    t_max = int(data["t_max"])
    mask = data["mask"]
    y = data["labels"] / t_max
    x = traces(data["features"], mask)
    s = static_inputs(data["static"])
    out: dict[str, np.ndarray] = {}
    stpa = fit_stpa(data, train, seed=seed, epochs=epochs)
    out["stpa"] = stpa.predict_normalised(data["features"][test], mask, data["static"][test])
    static_only = _xgb(seed).fit(s[train], y[train])
    out["xgboost-static"] = static_only.predict(s[test])
    flat = np.hstack([np.sign(x).reshape(len(x), -1) * np.log1p(np.abs(x)).reshape(len(x), -1),
                      s])
    out["xgboost-raw"] = _xgb(seed).fit(flat[train], y[train]).predict(flat[test])
    out["lstm"] = _lstm(x[train], s[train], y[train], seed)(x[test], s[test])
    emb = numpy_encode(stpa.encoder, x, channel_mask(mask))
    out["timesurl"] = _ridge(emb[train], y[train])(emb[test])
    cores = data["static"][:, STATIC_FEATURES.index("cores")]
    out["cores"] = np.minimum(cores[test], t_max) / t_max
    out["oracle"] = y[test]
    return out


def group_folds(groups: np.ndarray, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Grouped K-fold: each group's rows are all in one fold's test set."""
    names = np.unique(groups)
    order = np.random.default_rng(seed).permutation(len(names))
    fold_of = {names[i]: j % k for j, i in enumerate(order)}
    fold = np.array([fold_of[g] for g in groups])
    return [(np.flatnonzero(fold != f), np.flatnonzero(fold == f)) for f in range(k)]


def evaluate(data: dict[str, np.ndarray], *, folds: int = 4, seed: int = 0,
             epochs: int = 40, progress: Callable[[Any], Any] | None = None
             ) -> dict[str, Any]:
    """Grouped K-fold evaluation of every method (see the module docstring). Returns
    per-method metrics (train and test) and per-test-row choices."""
    t_max = int(data["t_max"])
    thr = np.median(data["throughput"], axis=2)  # (rows, t_max)
    best = thr.max(axis=1)
    splits = group_folds(data["groups"], folds, seed)
    preds = {m: np.full(len(data["labels"]), np.nan) for m in METHODS}
    train_preds: dict[str, list[float]] = {m: [] for m in METHODS}
    train_truth: list[float] = []
    iterator = progress(splits) if progress else splits
    for train, test in iterator:
        fold = _predictions(data, train, test, seed, epochs)
        for m, p in fold.items():
            preds[m][test] = p
        inner = _predictions(data, train, train, seed, epochs)  # fit on train, score train
        for m, p in inner.items():
            train_preds[m].extend(p.tolist())
        train_truth.extend((data["labels"][train] / t_max).tolist())
    y = data["labels"] / t_max
    report: dict[str, Any] = {"methods": {}, "rows": []}
    for m in METHODS:
        p = preds[m]
        chosen = np.clip(np.rint(p * t_max), 1, t_max).astype(int)
        regret = thr[np.arange(len(chosen)), chosen - 1] / best
        report["methods"][m] = {
            "mae": float(np.mean(np.abs(p - y))), "mse": float(np.mean((p - y) ** 2)),
            "mae_threads": float(np.mean(np.abs(p - y)) * t_max),
            "mse_threads": float(np.mean(((p - y) * t_max) ** 2)),
            "regret_mean": float(regret.mean()), "regret_worst": float(regret.min()),
        }
        if m == "stpa":
            report["chosen"] = chosen.tolist()
    tt = np.array(train_truth)
    for m in METHODS:
        tp = np.array(train_preds[m])
        report["methods"][m]["train_mae"] = float(np.mean(np.abs(tp - tt)))
        report["methods"][m]["train_mse"] = float(np.mean((tp - tt) ** 2))
    report["rows"] = [{"name": str(n), "group": str(g), "best": int(lbl),
                       "stpa": int(c)}
                      for n, g, lbl, c in zip(data["names"], data["groups"], data["labels"],
                                              report["chosen"], strict=True)]
    report["folds"] = folds
    report["t_max"] = t_max
    return report
