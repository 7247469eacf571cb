"""STPA in the benchmark report: held-out regret, the preflight's cost, fresh scans.

    .venv/bin/python -m bench.stpa              # 4 folds, 5 seeds: a few minutes
    .venv/bin/python -m bench.stpa --smoke --out /tmp/stpa.json   # tiny (tests)

Into ``bench/results/stpa.json``: ``seer stpa evaluate --seeds 5`` on the shipped data sets
(every method on the preflight steps ``threads="auto"`` runs); the preflight's cost as a
share of a 200-step episode, in a fresh process as a user's ``threads="auto"``; and
``python -m seer.stpa.holdout`` (the shipped predictor against fresh scans).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import seer
from bench.harness import capacity_now, finish, make_model, record, timed_steps
from bench.sizes import Sizes

__all__ = ["EPISODE_STEPS", "PREFLIGHT_GOAL", "REGRET_GOAL", "main", "measure_preflight",
           "subset"]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: The shipped data sets: the 2-core scans and the 16-core rows.
DATASETS = (ROOT / "seer" / "stpa" / "data" / "dataset.npz",
            ROOT / "seer" / "stpa" / "data" / "dataset-16core.npz")
#: the preflight's goal: at most this fraction of a 200-step episode
PREFLIGHT_GOAL = 0.05
EPISODE_STEPS = 200
#: STPA's goal: mean regret (throughput at its choice / best) at least this
REGRET_GOAL = 0.95


def subset(data: dict[str, np.ndarray], groups: int) -> dict[str, np.ndarray]:
    """The rows of ``groups`` configuration groups, evenly spaced in data-set order (a
    smoke run's data set)."""
    names = list(dict.fromkeys(data["groups"].tolist()))
    if groups >= len(names):
        return data
    keep = set(names[::max(1, len(names) // groups)][:groups])
    rows = np.array([g in keep for g in data["groups"]])
    n = len(data["labels"])
    return {k: v[rows] if v.ndim and len(v) == n and k != "mask" else v
            for k, v in data.items()}


def evaluation(data: dict[str, np.ndarray], folds: int, epochs: int | None, seeds: int
               ) -> dict[str, Any]:
    """:func:`seer.stpa.train.evaluate` on seed 0 (each held-out row with its regret, and
    each machine's methods), each machine held out in turn
    (:func:`seer.stpa.train.evaluate_machines`, where the data has two machines), then the
    same over ``seeds`` seeds (:func:`seer.stpa.train.evaluate_seeds`: the goal's figure),
    every method reading the preflight steps ``threads="auto"`` runs; its seconds and the
    scans' widest thread count (the figure's axis)."""
    from tqdm import tqdm

    from seer.stpa.train import evaluate, evaluate_machines, evaluate_seeds

    t0 = time.perf_counter()
    extra = {"epochs": epochs} if epochs else {}
    report = evaluate(data, folds=folds, seed=0, **extra,
                      progress=lambda it: tqdm(it, desc="stpa evaluate", unit="fold",
                                               total=folds))
    machines = evaluate_machines(data, seed=0, **extra) \
        if len(report.get("machines", {})) > 1 else {}
    report["held_out_machines"] = {pair: {"methods": rep["methods"]}
                                   for pair, rep in machines.items()}
    report["over_seeds"] = evaluate_seeds(
        data, list(range(seeds)), folds=folds, **extra, machines=bool(machines),
        first=(report, machines),
        progress=lambda it: tqdm(it, desc="stpa seeds", unit="seed", total=seeds))
    report["seconds"] = time.perf_counter() - t0
    report.setdefault("t_max", int(np.max(data["t_range"])))  # the widest scan
    return report


def holdout(smoke: bool) -> dict[str, Any]:
    """The shipped predictor against fresh scans of two configurations it was never
    trained on, on this machine (``python -m seer.stpa.holdout`` in a fresh process:
    nothing of the evaluation runs beside the scans)."""
    with tempfile.TemporaryDirectory(prefix="seer-stpa-") as tmp:
        out = Path(tmp) / "holdout.json"
        subprocess.run([sys.executable, "-m", "seer.stpa.holdout", "--out", str(out),
                        *(["--tiny"] if smoke else [])], check=True, cwd=ROOT)
        checked = json.loads(out.read_text())
    keep = ("name", "spec", "kwargs", "cores", "t_max", "best", "fastest", "chosen",
            "regret", "steps_per_s", "seconds")
    return {"cores": checked["cores"],
            "configurations": [{k: c[k] for k in keep} for c in checked["configurations"]]}


def models(z: Sizes) -> list[tuple[str, str, Callable[[], seer.Model]]]:
    """(title, spec, factory) of the models whose preflight is timed, at the report's
    sizes (``bench.bench_runtimes.make_model``, as in the runtime benchmarks)."""
    side = round(z.n_pcs ** 0.5)
    bench_cost = 5 if z.mode == "smoke" else 10
    return [
        (f"PCS {side}x{side}, {z.pcs_cost:g} µs",
         f"workloads.pcs:PCS width={side} height={side} cost_us={z.pcs_cost:g}",
         lambda: make_model("pcs", z.n_pcs, z.pcs_cost, 1)),
        (f"Aircraft {z.n_air} UAVs, {z.air_cost:g} µs",
         f"workloads.aircraft:Aircraft n_uavs={z.n_air} cost_us={z.air_cost:g}",
         lambda: make_model("aircraft", z.n_air, z.air_cost, 1)),
        (f"BenchModel {z.n_bench} entities, {bench_cost} µs",
         f"workloads.synthetic:BenchModel n_entities={z.n_bench} cost_us={bench_cost}",
         lambda: make_model("bench", z.n_bench, bench_cost, 1)),
    ]


def measure_preflight(title: str, spec: str, factory: Callable[[], seer.Model], *,
                      repeats: int, steps: int) -> dict[str, Any]:
    """``repeats`` calls of ``choose_threads`` (wall time each), then ``steps`` timed steps
    of ``seer`` at the most frequent choice, after a reset and one warm-up step."""
    from seer.stpa.predictor import choose_threads

    model = factory()
    calls, choices, preflights = [], [], []
    probe = 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        threads, info = choose_threads(model)
        calls.append(time.perf_counter() - t0)
        choices.append(threads)
        preflights.append(info["seconds"])
        probe = info["probe"]
    threads = Counter(choices).most_common(1)[0][0]
    sample = getattr(model, "sample_actions", lambda step: None)
    actions = [sample(k) for k in range(steps + 1)]
    rt = seer.make_runtime(model, "seer", threads=threads)
    try:
        rt.reset(0)
        rt.step(actions[0])  # warm-up: pool started, caches filled
        step = timed_steps(rt, actions[1:], steps)[0]
    finally:
        rt.close()
    cost = statistics.median(calls)
    return {
        "model": title, "spec": spec, "entities": model.n_entities, "probe": probe,
        "choices": choices, "threads": threads, "choose_threads_s": calls,
        "preflight_s": preflights, "cost_s": cost, "steps": steps,
        "mean_step_s": step, "episode_s": EPISODE_STEPS * step,
        "fraction": cost / (EPISODE_STEPS * step),
    }


def preflight_costs(z: Sizes, repeats: int, steps: int) -> dict[str, Any]:
    """The preflight cost of every model of :func:`models` (see the module docstring)."""
    from tqdm import tqdm

    from seer.stpa.predictor import _shipped

    t0 = time.perf_counter()
    _shipped()  # load the shipped predictor once (encoder weights, xgboost)
    load_s = time.perf_counter() - t0
    rows = [measure_preflight(title, spec, factory, repeats=repeats, steps=steps)
            for title, spec, factory in tqdm(models(z), desc="stpa preflight cost",
                                             unit="model")]
    return {"predictor_load_s": load_s, "repeats": repeats, "steps": steps,
            "episode_steps": EPISODE_STEPS, "goal": PREFLIGHT_GOAL, "models": rows}


def _preflight_child(args: argparse.Namespace, repeats: int, steps: int) -> dict[str, Any]:
    """:func:`preflight_costs` in a fresh process, as a user's ``threads="auto"`` would
    run: the evaluation's imports (torch) and threads are not in it, and the preflight
    reads process-wide metrics (RSS) that they would change."""
    with tempfile.TemporaryDirectory(prefix="seer-stpa-") as tmp:
        out = Path(tmp) / "preflight.json"
        cmd = [sys.executable, "-m", "bench.stpa", "--preflight-json", str(out),
               "--steps", str(steps), "--repeats", str(repeats),
               *(["--smoke"] if args.smoke else [])]
        subprocess.run(cmd, check=True, cwd=ROOT)
        return json.loads(out.read_text())


def _manifest(dataset: Path) -> dict[str, Any]:
    """How the data set was collected (its ``dataset.json``), without the configurations."""
    path = dataset.with_suffix(".json")
    if not path.exists():
        return {}
    manifest = json.loads(path.read_text())
    return {k: manifest[k] for k in ("command", "date", "machine", "t_max", "tolerance")
            if k in manifest}


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.preflight_json:  # the child of _preflight_child
        z = Sizes("smoke" if args.smoke else "full")
        args.preflight_json.write_text(json.dumps(preflight_costs(z, args.repeats,
                                                                  args.steps)))
        return
    from bench.markdown import Results, also_measured
    from seer.stpa.dataset import load_rows
    from seer.stpa.preflight import PREFLIGHT_STEPS
    from seer.stpa.train import PAPER_TABLE_1

    z = Sizes("smoke" if args.smoke else "full")  # its model sizes only
    folds = args.folds or (2 if args.smoke else 4)
    seeds = args.seeds or (1 if args.smoke else 5)
    epochs = args.epochs or (2 if args.smoke else None)  # None: evaluate's default
    steps = args.steps or (2 if args.smoke else 10)
    repeats = args.repeats or (1 if args.smoke else 3)
    groups = args.groups or (4 if args.smoke else 0)
    started = time.time()
    full = load_rows(args.dataset)
    data = subset(full, groups) if groups else full
    capacity = {"before evaluation": capacity_now()}
    report = evaluation(data, folds, epochs, seeds)
    capacity["before preflights"] = capacity_now()
    costs = _preflight_child(args, repeats, steps)
    checked = holdout(args.smoke)
    capacity["after preflights"] = capacity_now()
    paths = [p.resolve() for p in args.dataset]
    result = record(
        "bench.stpa", argv, mode="smoke" if args.smoke else "default",
        minutes=(time.time() - started) / 60, capacity=capacity,
        dataset={"paths": [str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)
                           for p in paths], "rows": len(data["labels"]),
                 "rows_in_files": len(full["labels"]),
                 "configurations": len(set(data["names"].tolist())),
                 "groups": len(set(data["groups"].tolist())),
                 "collected": [_manifest(p) for p in paths]},
        settings={"folds": folds, "epochs": epochs, "seeds": seeds,
                  "preflight_steps": PREFLIGHT_STEPS},
        paper_table_1=PAPER_TABLE_1, regret_goal=REGRET_GOAL, evaluation=report,
        preflight=costs, holdout=checked)
    finish(args.out, result, [*also_measured(Results(stpa=result)),
                              *(f"preflight {r['model']}: {100 * r['fraction']:.1f} % of a "
                                f"{EPISODE_STEPS}-step episode" for r in costs["models"])])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="smallest configuration: 2 folds, 2 epochs, 4 groups of the "
                        "data set, tiny models, 2 steps")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "stpa.json")
    parser.add_argument("--dataset", type=Path, nargs="+", default=list(DATASETS))
    parser.add_argument("--folds", type=int, default=0, help="default 4 (smoke: 2)")
    parser.add_argument("--epochs", type=int, default=0,
                        help="encoder epochs (default: seer.stpa.train.evaluate's; smoke: 2)")
    parser.add_argument("--seeds", type=int, default=0,
                        help="seeds of the evaluation, the goal read on their mean "
                        "(default 5; smoke: 1)")
    parser.add_argument("--groups", type=int, default=0,
                        help="evaluate on this many configuration groups only "
                        "(default all; smoke: 4)")
    parser.add_argument("--steps", type=int, default=0,
                        help="timed steps per model at the chosen count (default 10)")
    parser.add_argument("--repeats", type=int, default=0,
                        help="preflights per model, median taken (default 3)")
    parser.add_argument("--preflight-json", type=Path, default=None, help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    main()
