"""Train STPA and evaluate it against baselines, held out by configuration and by machine.

Rows come from :func:`seer.stpa.dataset.load_rows` (any mix of machines). The shipped
target is ``curve`` (:data:`~seer.stpa.predictor.TARGETS`: the throughput of each count of
the row's range over its best); the others are ``y = log2(T* / cores)`` and ``T* / t_max``
(:func:`~seer.stpa.predictor.target_of`), a prediction mapped onto each row's own machine
(:func:`~seer.stpa.predictor.threads_for`). Methods (each fit on the training rows only):

* ``stpa``: encoder (self-supervised on the training traces) + trees on the embedding,
  the static and machine features and the counters' ratios (:func:`fit_stpa`), choices
  capped by what the preflight saw of waiting (:func:`~seer.stpa.predictor.thread_cap`),
  as ``threads="auto"`` caps them;
* ``stpa-uncapped``: the same predictions without that cap;
* ``xgboost-static``: trees on the static and machine features alone;
* ``fixed``: the best fixed count of the row's machine in the training rows (the best
  fixed ``y`` of all training rows where the machine has none);
* ``cores``: threads = usable cores;
* ``stpa-2core-v1``: the previous shipped method: trained on the training rows of 2-core
  machines only, target ``T* / 8``, choices clipped to 1..8;
* ``oracle``: the label (regret 1 by definition).

Reported per method, overall and per machine: MAE of the chosen thread count against the
label, MAE of the target, and *regret*: throughput at the chosen count / the best
throughput of the row's scan within the row's range (``1..t_range``, where its label is
found too), mean and worst.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from seer.stpa.predictor import (
    DEFAULT_TARGET,
    Predictor,
    Regressor,
    count_inputs,
    model_inputs,
    static_inputs,
    target_of,
    threads_for,
    traces,
)
from seer.stpa.preflight import PREFLIGHT_STEPS, STATIC_FEATURES

__all__ = ["METHODS", "PAPER_TABLE_1", "checks", "evaluate", "evaluate_machines",
           "evaluate_seeds", "fit_stpa", "group_folds", "regrets"]

#: The SEER paper's Table 1 (test MAE), printed beside our figures.
PAPER_TABLE_1 = {"stpa": 0.3394, "xgboost-static": 1.28, "timesurl": 2.24, "lstm": 9.35}

METHODS = ("stpa", "stpa-uncapped", "xgboost-static", "fixed", "cores", "stpa-2core-v1",
           "oracle")
_V1_T_MAX = 8


def _cores(data: dict[str, np.ndarray]) -> np.ndarray:
    return data["static"][:, STATIC_FEATURES.index("cores")].astype(int)


def _targets(data: dict[str, np.ndarray], kind: str = "log2") -> np.ndarray:
    return target_of(data["labels"], _cores(data), kind)


def fit_stpa(data: dict[str, np.ndarray], rows: np.ndarray, *, seed: int = 0,
             epochs: int = 40, steps: int = PREFLIGHT_STEPS, target: str = DEFAULT_TARGET
             ) -> Predictor:
    """Encoder + trees trained on ``rows`` of the data, on the first ``steps`` preflight
    steps (default: as many as ``threads="auto"`` runs), for ``target``
    (:data:`~seer.stpa.predictor.TARGETS`)."""
    from seer.stpa.encoder import TimesURLEncoder, channel_mask

    mask = data["mask"]
    steps = _steps(data, steps)
    features = data["features"][rows][:, :, :steps]
    x = traces(features, mask)
    encoder = TimesURLEncoder(x.shape[-1], seed=seed).fit(x, epochs=epochs, seed=seed,
                                                           mask=channel_mask(mask))
    machines = sorted(set(data["machine"][rows].tolist())) if "machine" in data else []
    predictor = Predictor(encoder.export(), Regressor(seed), mask.copy(), steps,
                          {"rows": len(rows), "machines": machines}, target)
    inputs = predictor.inputs(features, mask, data["static"][rows])
    if target == "curve":
        inputs, y = _curve_rows(data, rows, inputs)
    else:
        y = _targets(data, target)[rows]
    predictor.regressor.fit(inputs, y)
    return predictor


def _curve_rows(data: dict[str, np.ndarray], rows: np.ndarray, inputs: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """The ``curve`` target's training set: one row per scanned count of each row's range
    (its inputs ++ :func:`~seer.stpa.predictor.count_inputs`) and the throughput there over
    the row's best."""
    rel, cores = _relative(data), _cores(data)
    x, y = [], []
    for i, r in enumerate(rows):
        counts = np.arange(1, int(data["t_range"][r]) + 1)
        x.append(np.hstack([np.repeat(inputs[i][None], len(counts), axis=0),
                            count_inputs(counts, np.full(len(counts), cores[r]))]))
        y.append(rel[r, counts - 1])
    x_all, y_all = np.vstack(x), np.concatenate(y)
    ok = np.isfinite(y_all)
    return x_all[ok], y_all[ok]


def _steps(data: dict[str, np.ndarray], steps: int) -> int:
    """``steps`` preflight steps of the data's (a data set holds at least as many as the
    preflight runs: it is collected with longer preflights)."""
    have = int(data["features"].shape[2])
    if not 1 <= steps <= have:
        raise ValueError(f"STPA: {steps} preflight steps asked, the data set has {have}")
    return steps


def _fit_v1(data: dict[str, np.ndarray], rows: np.ndarray, seed: int, epochs: int,
            steps: int) -> Callable[[np.ndarray], np.ndarray] | None:
    """The previous method (encoder + trees on 8 static features, target ``T*/8``) on the
    2-core rows of ``rows``, reading the same ``steps`` preflight steps as STPA; None where
    there are none. Returns choices for test rows."""
    from seer.stpa.encoder import TimesURLEncoder, channel_mask, numpy_encode

    rows = rows[_cores(data)[rows] <= 2] if "machine" not in data else \
        rows[data["machine"][rows] == "2-core"]
    if not len(rows):
        return None
    mask = data["mask"]
    x = traces(data["features"][:, :, :steps], mask)
    encoder = TimesURLEncoder(x.shape[-1], seed=seed).fit(x[rows], epochs=epochs, seed=seed,
                                                           mask=channel_mask(mask))
    weights = encoder.export()
    old_static = static_inputs(data["static"])[:, :8]  # without the capacity column

    def inputs(r: np.ndarray) -> np.ndarray:
        return np.hstack([numpy_encode(weights, x[r], channel_mask(mask)), old_static[r]])

    labels = np.minimum(data["labels"], _V1_T_MAX)
    trees = Regressor(seed).fit(inputs(rows), labels[rows] / _V1_T_MAX)
    return lambda r: np.clip(np.rint(trees.predict(inputs(r)) * _V1_T_MAX), 1,
                             _V1_T_MAX).astype(int)


def _on_machine(y: np.ndarray, cores: np.ndarray, kind: str) -> np.ndarray:
    return np.array([threads_for(v, int(c), kind) for v, c in zip(y, cores, strict=True)])


def _choices(data: dict[str, np.ndarray], train: np.ndarray, test: np.ndarray, seed: int,
             epochs: int, steps: int, target: str) -> dict[str, np.ndarray]:
    """Every method's thread counts for ``test``, fit on ``train``; every method that
    reads the preflight reads its first ``steps`` steps."""
    y, cores = _targets(data, target), _cores(data)
    steps = _steps(data, steps)
    features = data["features"][:, :, :steps]
    out: dict[str, np.ndarray] = {}
    stpa = fit_stpa(data, train, seed=seed, epochs=epochs, steps=steps, target=target)
    out["stpa"] = stpa.choose(features[test], data["mask"], data["static"][test])
    out["stpa-uncapped"] = stpa.choose(features[test], data["mask"], data["static"][test],
                                       capped=False)
    s = model_inputs(data["static"], features, static_only=True)
    static_only = Regressor(seed).fit(s[train], y[train])
    out["xgboost-static"] = _on_machine(static_only.predict(s[test]), cores[test], target)
    out["fixed"] = _fixed(data, train, test)
    out["cores"] = np.minimum(cores[test], data["t_range"][test])
    v1 = _fit_v1(data, train, seed, epochs, steps)
    out["stpa-2core-v1"] = v1(test) if v1 is not None else np.full(len(test), -1)
    out["oracle"] = data["labels"][test]
    return out


def _fixed(data: dict[str, np.ndarray], train: np.ndarray, test: np.ndarray) -> np.ndarray:
    """The best fixed count per machine from the training rows (see the module
    docstring)."""
    thr = _relative(data)
    cores = _cores(data)
    out = np.zeros(len(test), int)
    machine = data["machine"]
    for i, row in enumerate(test):
        same = train[machine[train] == machine[row]]
        if len(same):
            t_range = int(data["t_range"][row])
            scores = np.nanmean(thr[same, :t_range], axis=0)
            out[i] = int(np.nanargmax(scores)) + 1
        else:  # no rows of this machine: the best fixed y of the others, on this machine
            grid = np.linspace(-3, 3, 49)
            scores = [np.nanmean([thr[r, threads_for(g, cores[r]) - 1] for r in train])
                      for g in grid]
            out[i] = threads_for(grid[int(np.nanargmax(scores))], cores[row])
    return out


def _relative(data: dict[str, np.ndarray]) -> np.ndarray:
    """Median throughput of each scan point over the row's best within its range
    (``1..t_range``; NaN past it): ``(rows, T)``. A scan may go further than the row's
    range (a 1-core row of a 16-core host is scanned to 16): no method can choose those
    counts, and the label is not looked for there either."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NaN past a row's scan
        thr = np.nanmedian(data["throughput"], axis=2)
    thr[np.arange(thr.shape[1])[None, :] >= data["t_range"][:, None]] = np.nan
    return thr / np.nanmax(thr, axis=1, keepdims=True)


def regrets(data: dict[str, np.ndarray], rows: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """Throughput at ``chosen`` over the best of each row's scan (NaN where a method made
    no choice)."""
    thr = _relative(data)
    return np.array([thr[r, c - 1] if 1 <= c <= thr.shape[1] else np.nan
                     for r, c in zip(rows, chosen, strict=True)])


def _metrics(data: dict[str, np.ndarray], rows: np.ndarray, chosen: np.ndarray
             ) -> dict[str, Any]:
    ok = chosen > 0
    if not ok.any():
        return {"rows": 0}
    rows, chosen = rows[ok], chosen[ok]
    regret = regrets(data, rows, chosen)
    y = _targets(data)[rows]
    p = target_of(chosen, _cores(data)[rows])
    return {"rows": len(rows),
            "mae_threads": float(np.mean(np.abs(chosen - data["labels"][rows]))),
            "mae": float(np.mean(np.abs(p - y))), "mse": float(np.mean((p - y) ** 2)),
            "mse_threads": float(np.mean((chosen - data["labels"][rows]) ** 2.0)),
            "regret_mean": float(np.nanmean(regret)), "regret_worst": float(np.nanmin(regret))}


def _report(data: dict[str, np.ndarray], rows: np.ndarray, chosen: dict[str, np.ndarray]
            ) -> dict[str, Any]:
    machines = sorted(set(data["machine"][rows].tolist()))
    report: dict[str, Any] = {"methods": {}, "machines": {}}
    for m, c in chosen.items():
        report["methods"][m] = _metrics(data, rows, c)
    for name in machines:
        on = data["machine"][rows] == name
        report["machines"][name] = {m: _metrics(data, rows[on], c[on])
                                    for m, c in chosen.items()}
    regret = regrets(data, rows, chosen["stpa"])
    report["rows"] = [{"name": str(data["names"][r]), "group": str(data["groups"][r]),
                       "machine": str(data["machine"][r]), "best": int(data["labels"][r]),
                       **{m: int(c[i]) for m, c in chosen.items() if m != "oracle"},
                       "regret": float(regret[i])} for i, r in enumerate(rows)]
    report["chosen"] = [int(c) for c in chosen["stpa"]]
    report["checks"] = checks(data, rows, chosen["stpa"])
    return report


def checks(data: dict[str, np.ndarray], rows: np.ndarray, chosen: np.ndarray
           ) -> dict[str, Any]:
    """The issue's two checks on choices: rows whose best is above 8 (how many choices are
    above 8), and compute-bound rows (not ``wait-*``) with a choice above the cores where
    the scan does not show that count faster than every count up to the cores."""
    thr = _relative(data)
    cores = _cores(data)
    above = [i for i, r in enumerate(rows) if data["labels"][r] > 8]
    over = []
    for i, r in enumerate(rows):
        compute = not str(data["names"][r]).startswith("wait")
        c = int(chosen[i])
        if compute and c > cores[r] and thr[r, c - 1] <= np.nanmax(thr[r, :cores[r]]):
            over.append(str(data["names"][r]))
    return {"best_above_8": len(above),
            "chosen_above_8_of_those": int(sum(chosen[i] > 8 for i in above)),
            "compute_bound_over_cores_without_gain": over}


def group_folds(groups: np.ndarray, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Grouped K-fold: each group's rows are all in one fold's test set."""
    names = np.unique(groups)
    order = np.random.default_rng(seed).permutation(len(names))
    fold_of = {names[i]: j % k for j, i in enumerate(order)}
    fold = np.array([fold_of[g] for g in groups])
    return [(np.flatnonzero(fold != f), np.flatnonzero(fold == f)) for f in range(k)]


def _with_machine(data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Rows of an old single-machine data set get the machine fields."""
    if "machine" in data:
        return data
    from seer.stpa.dataset import _labelled  # one labelling rule for every layout

    n = len(data["labels"])
    static = data["static"]
    if static.shape[1] == len(STATIC_FEATURES) - 1:
        static = np.hstack([static, static[:, [STATIC_FEATURES.index("cores")]]])
    return _labelled({**data, "static": static, "machine": np.full(n, "2-core"),
                      "throughput": data["throughput"].astype(np.float64)})


def evaluate(data: dict[str, np.ndarray], *, folds: int = 4, seed: int = 0,
             epochs: int = 40, steps: int = PREFLIGHT_STEPS, target: str = DEFAULT_TARGET,
             progress: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """Grouped K-fold over configuration groups (each machine's configurations are
    groups of their own): every method's metrics on the held-out rows, overall and per
    machine, each held-out row's choices and :func:`checks`."""
    data = _with_machine(data)
    splits = group_folds(data["groups"], folds, seed)
    chosen = {m: np.zeros(len(data["labels"]), int) for m in METHODS}
    for train, test in progress(splits) if progress else splits:
        for m, c in _choices(data, train, test, seed, epochs, steps, target).items():
            chosen[m][test] = c
    report = _report(data, np.arange(len(data["labels"])), chosen)
    report.update(folds=folds, seed=seed, epochs=epochs, target=target,
                  steps=steps)
    return report


def evaluate_machines(data: dict[str, np.ndarray], *, seed: int = 0, epochs: int = 40,
                      steps: int = PREFLIGHT_STEPS, target: str = DEFAULT_TARGET
                      ) -> dict[str, Any]:
    """Held-out machines: for each ordered pair of machines, fit on one's rows and report
    on the other's (``"2-core -> 16-core"``)."""
    data = _with_machine(data)
    machines = sorted(set(data["machine"].tolist()), key=lambda m: int(m.split("-")[0]))
    out: dict[str, Any] = {}
    for source in machines:
        for dest in machines:
            if source == dest:
                continue
            train = np.flatnonzero(data["machine"] == source)
            test = np.flatnonzero(data["machine"] == dest)
            chosen = _choices(data, train, test, seed, epochs, steps, target)
            out[f"{source} -> {dest}"] = _report(data, test, chosen)
    return out


def evaluate_seeds(data: dict[str, np.ndarray], seeds: list[int], *, folds: int = 4,
                   epochs: int = 40, steps: int = PREFLIGHT_STEPS,
                   target: str = DEFAULT_TARGET, machines: bool = True,
                   first: tuple[dict[str, Any], dict[str, Any]] | None = None,
                   progress: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """Every method over ``seeds`` (each seeds the folds, the encoder and the trees), per
    machine's held-out configurations and, with ``machines``, per held-out machine:
    ``{"seeds": [...], name: {method: {"regret_mean": [one per seed], "mean", "low",
    "high", "worst", "mae_threads"}}}`` (the mean regret's mean and range over the seeds,
    the worst row of any seed, the mean MAE in threads). One seed's folds hold out a few
    configuration groups of a few dozen rows, so one seed's mean regret moves by about
    0.01-0.03 from the next; the mean over seeds is the figure to compare methods by.
    ``first``: the (held-out configurations, held-out machines) reports of ``seeds[0]``
    when already computed."""
    def parts(held: dict[str, Any], pairs: dict[str, Any]) -> dict[str, dict[str, dict]]:
        return {**held["machines"], **{pair: rep["methods"] for pair, rep in pairs.items()}}

    runs = []
    for i, seed in enumerate(progress(seeds) if progress else seeds):
        if i == 0 and first is not None:
            runs.append(parts(*first))
            continue
        held = evaluate(data, folds=folds, seed=seed, epochs=epochs, steps=steps,
                        target=target)
        pairs = evaluate_machines(data, seed=seed, epochs=epochs, steps=steps,
                                  target=target) if machines else {}
        runs.append(parts(held, pairs))
    nan = float("nan")
    over: dict[str, Any] = {"seeds": list(seeds)}
    for name in runs[0]:
        over[name] = {}
        for method in runs[0][name]:
            got = [r[name][method] for r in runs if r[name][method].get("rows")]
            means = [m["regret_mean"] for m in got]
            over[name][method] = {
                "regret_mean": [r[name][method].get("regret_mean", nan) for r in runs],
                "mean": float(np.mean(means)) if means else nan,
                "low": min(means, default=nan), "high": max(means, default=nan),
                "worst": min((m["regret_worst"] for m in got), default=nan),
                "mae_threads": float(np.mean([m["mae_threads"] for m in got])) if got else nan}
    return over
