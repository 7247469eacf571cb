"""``seer stpa collect | train | evaluate | calibrate | predict``: STPA on the
command line. A usage error (a bad count, a missing file, a model spec that does not load)
exits 2 with one line on stderr."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from seer.errors import ModelError
from seer.specs import add_model_arguments, non_negative_int, positive_int
from seer.stpa.predictor import DEFAULT_TARGET, TARGETS
from seer.stpa.preflight import PREFLIGHT_STEPS

__all__ = ["DEFAULT_DATASETS", "add_parser", "calibrate", "reference_configurations"]

DATA = Path(__file__).parent / "data"
DEFAULT_DATASET = DATA / "dataset.npz"
#: The shipped training rows: the 2-core data set and the 16-core study's rows.
DEFAULT_DATASETS = (DATA / "dataset.npz", DATA / "dataset-16core.npz")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}")
    return value


def _existing(paths: list[str]) -> list[Path]:
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise ModelError(f"no such STPA data file: {', '.join(missing)}")
    return [Path(p) for p in paths]


def _collect(args: argparse.Namespace) -> int:
    from seer.stpa.dataset import collect, default_configurations, load_dataset

    configs = default_configurations(quick=args.quick)
    if any(Path(p).resolve() == Path(args.out).resolve() for p in args.missing_from or ()):
        raise ModelError(f"--out {args.out} is one of --missing-from: it would be replaced by "
                         "the new rows alone")
    if args.missing_from:
        have = {str(n) for p in _existing(args.missing_from) for n in load_dataset(p)["names"]}
        configs = [c for c in configs if c.name not in have]
    command = "seer stpa collect " + " ".join(shlex.quote(a) for a in sys.argv[3:])
    out = collect(configs, Path(args.out), t_max=args.t_max, command=command,
                  budget_s=args.budget)
    left = json.loads(out.with_suffix(".json").read_text())["not_measured"]
    wrote = f"{out} and " if len(left) < len(configs) else ""
    print(f"wrote {wrote}{out.with_suffix('.json')} ({len(configs) - len(left)} of "
          f"{len(configs)} configurations" + (f"; not measured: {', '.join(left)}" if left
                                              else "") + ")")
    return 0


def _train(args: argparse.Namespace) -> int:
    from seer.stpa.dataset import load_rows
    from seer.stpa.train import fit_stpa

    data = load_rows(_existing(args.dataset))
    predictor = fit_stpa(data, np.arange(len(data["labels"])), seed=args.seed,
                         epochs=args.epochs, steps=args.steps, target=args.target)
    predictor.save(Path(args.out))
    machines = ", ".join(sorted(set(data["machine"].tolist())))
    print(f"trained on {len(data['labels'])} preflights ({machines}); model in {args.out}")
    return 0


def _table(title: str, methods: dict[str, dict[str, Any]]) -> None:
    print(f"{title}\n{'method':<15} {'rows':>5} {'MAE thr':>8} {'MAE log2':>9} "
          f"{'regret mean':>12} {'worst':>6}")
    for name, m in methods.items():
        if not m.get("rows"):
            print(f"{name:<15} {0:>5}  (no training rows of a 2-core machine)")
            continue
        print(f"{name:<15} {m['rows']:>5} {m['mae_threads']:8.2f} {m['mae']:9.3f} "
              f"{m['regret_mean']:12.3f} {m['regret_worst']:6.3f}")


def _evaluate(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from seer.stpa.dataset import load_rows
    from seer.stpa.train import evaluate, evaluate_machines

    paths = _existing(args.dataset)
    data = load_rows(paths)
    started = time.perf_counter()
    held = evaluate(data, folds=args.folds, seed=args.seed, epochs=args.epochs,
                    steps=args.steps, target=args.target,
                    progress=lambda it: tqdm(it, desc="stpa evaluate", unit="fold"))
    for machine, methods in held["machines"].items():
        _table(f"held-out configurations, {machine} ({args.folds}-fold by group):", methods)
    print(f"checks: {held['checks']}")
    machines = evaluate_machines(data, seed=args.seed, epochs=args.epochs, steps=args.steps,
                                 target=args.target) if not args.no_machines else {}
    for pair, rep in machines.items():
        _table(f"held-out machine, trained {pair}:", rep["methods"])
        print(f"checks: {rep['checks']}")
    over = _over_seeds(data, args, held, machines) if args.seeds > 1 else {}
    report = {"command": "seer stpa evaluate " + " ".join(shlex.quote(a)
                                                         for a in sys.argv[3:]),
              "datasets": [str(p) for p in paths], "rows": len(data["labels"]),
              "held_out_configurations": held, "held_out_machines": machines,
              **({"over_seeds": over} if over else {}),
              "seconds": time.perf_counter() - started}
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=1))
        print(f"report in {args.out}")
    return 0


def _over_seeds(data: dict[str, np.ndarray], args: argparse.Namespace,
                held: dict[str, Any], machines: dict[str, Any]) -> dict[str, Any]:
    """:func:`seer.stpa.train.evaluate_seeds` over ``args.seeds`` seeds from
    ``args.seed`` (the first is the run already printed), each mean printed."""
    from seer.stpa.train import evaluate_seeds

    over = evaluate_seeds(data, list(range(args.seed, args.seed + args.seeds)),
                          folds=args.folds, epochs=args.epochs, steps=args.steps,
                          target=args.target, machines=not args.no_machines,
                          first=(held, machines))
    seeds = over["seeds"]
    for name, methods in over.items():
        if name != "seeds":
            print(f"over seeds {seeds[0]}..{seeds[-1]}, {name}: " + ", ".join(
                f"{k} {v['mean']:.3f}" for k, v in methods.items() if np.isfinite(v["mean"])))
    return over


def reference_configurations() -> list[Any]:
    """What ``seer stpa calibrate`` measures, most informative first (one of each family,
    then the rest): the shipped configurations, smallest sizes, fewer steps."""
    from seer.stpa.dataset import default_configurations

    families: dict[str, list[Any]] = {}
    for c in default_configurations():
        if c.cores is None:
            families.setdefault(c.name.split("-")[0], []).append(c)
    order = ["bench-c40-f1", "wait-w150-c0", "pcs-20-c5", "aircraft-150-c100",
             "bench-c0-f1", "bench-c150-f1", "pcs-30-c20", "wait-w600-c20"]
    every = [c for f in families.values() for c in f]
    first = [c for name in order for c in every if c.name == name]
    return first + [c for c in every if c not in first]


def calibrate(out: Path, *, minutes: float, datasets: list[Path] | None = None,
              configs: list[Any] | None = None, epochs: int = 40, seed: int = 0,
              progress: bool = True, say: Callable[[str], None] = print) -> Path:
    """Measure reference configurations on this machine for ``minutes`` (each in a child
    process, as ``seer stpa collect`` does; one that would run past the budget is not
    started), keep them in ``out/calibration.npz`` (with rows of earlier calibrations
    there), train the predictor on the shipped rows plus them and save it in ``out``.
    Returns ``out``."""
    from tqdm import tqdm

    from seer.stpa.dataset import _arrays, _child, _machine_name, capacity, load_rows
    from seer.stpa.preflight import machine_t_max, usable_cores
    from seer.stpa.train import fit_stpa

    configs = reference_configurations() if configs is None else configs
    budget, started = 60.0 * minutes, time.perf_counter()
    t_max = machine_t_max(os.cpu_count() or 1)
    cap = capacity(usable_cores())
    rows, took = [], 0.0
    bar = tqdm(configs, desc="stpa calibrate", unit="config", disable=not progress)
    for config in bar:
        left = budget - (time.perf_counter() - started)
        if left < max(took, 1.0):  # the next one would probably not fit
            break
        t0 = time.perf_counter()
        try:
            rows.append({"config": asdict(config), **_child(config, t_max)})
        except Exception as exc:
            say(f"stpa calibrate: {config.name} failed ({str(exc).splitlines()[0]})")
        took = time.perf_counter() - t0
        bar.set_postfix(left=f"{max(0.0, left - took):.0f}s")
    bar.close()
    if not rows:
        raise ModelError(f"stpa calibrate: no configuration fitted in {minutes:g} minutes; "
                         "give it more time (--minutes)")
    out.mkdir(parents=True, exist_ok=True)
    path, fresh = out / "calibration.npz", out / "calibration-new.npz"
    np.savez_compressed(fresh, **_arrays(rows, _machine_name(os.cpu_count() or 1),
                                          (cap + capacity(usable_cores())) / 2))
    kept = load_rows([path, fresh] if path.exists() else [fresh])  # earlier ones kept
    np.savez_compressed(path, **kept)
    fresh.unlink()
    data = load_rows([*(datasets if datasets is not None else DEFAULT_DATASETS), path])
    predictor = fit_stpa(data, np.arange(len(data["labels"])), seed=seed, epochs=epochs)
    predictor.trained_on["calibration"] = {"configurations": [r["config"]["name"] for r in rows],
                                           "seconds": time.perf_counter() - started}
    predictor.save(out)
    say(f"calibrated on {len(rows)} configurations of this machine "
        f"({time.perf_counter() - started:.0f} s); model in {out}")
    return out


def _calibrate(args: argparse.Namespace) -> int:
    from seer.stpa.predictor import user_model_dir

    out = Path(args.out) if args.out else user_model_dir()
    calibrate(out, minutes=args.minutes, datasets=_existing(args.dataset), epochs=args.epochs,
              seed=args.seed)
    print("threads='auto' uses it" + (f" when $SEER_STPA_MODEL={out}" if args.out else
                                      " (the per-user model) unless $SEER_STPA_MODEL is set"))
    return 0


def _predict(args: argparse.Namespace) -> int:
    from seer.specs import model_from_args
    from seer.stpa.predictor import choose_threads

    model = model_from_args(args)()
    threads, info = choose_threads(model, args.runtime)
    shown: dict[str, Any] = {k: v for k, v in info.items() if k not in ("features", "mask")}
    print(json.dumps(shown, indent=1))
    print(f"threads: {threads}")
    return 0


def _one_line(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``func`` with usage errors as one line on stderr and exit status 2."""
    def run(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except (ModelError, ImportError, OSError, ValueError, KeyError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            print(f"seer stpa {args.stpa_command}: error: {first}", file=sys.stderr)
            return 2
    return run


def add_parser(sub: Any) -> None:
    """Add ``stpa`` and its subcommands to the ``seer`` command line."""
    p = sub.add_parser("stpa", help="thread-count prediction: collect, train, evaluate, "
                                    "calibrate, predict")
    stpa = p.add_subparsers(dest="stpa_command", required=True)
    c = stpa.add_parser("collect", help="measure the training configurations (minutes)")
    c.add_argument("--out", default=str(DEFAULT_DATASET))
    c.add_argument("--t-max", type=positive_int, default=None,
                   help="largest thread count scanned (default: max(8, cores))")
    c.add_argument("--quick", action="store_true", help="four configurations only")
    c.add_argument("--missing-from", nargs="+", default=None, metavar="DATASET",
                   help="only the configurations these data sets do not hold")
    c.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                   help="start no configuration after this many seconds")
    c.set_defaults(func=_one_line(_collect))
    datasets = {"nargs": "+", "default": [str(p) for p in DEFAULT_DATASETS],
                "help": "data sets (.npz); default: the shipped 2-core and 16-core rows"}
    t = stpa.add_parser("train", help="train the encoder and the regressor on data sets")
    t.add_argument("--dataset", **datasets)
    t.add_argument("--out", default=str(DATA))
    t.add_argument("--epochs", type=positive_int, default=40)
    t.add_argument("--seed", type=non_negative_int, default=0)
    t.add_argument("--steps", type=positive_int, default=PREFLIGHT_STEPS,
                   help="preflight steps to train on (default %(default)s: as many as "
                   "threads='auto' runs)")
    t.add_argument("--target", choices=TARGETS, default=DEFAULT_TARGET)
    t.set_defaults(func=_one_line(_train))
    e = stpa.add_parser("evaluate", help="held-out configurations and machines against "
                                         "the baselines")
    e.add_argument("--dataset", **datasets)
    e.add_argument("--folds", type=positive_int, default=4)
    e.add_argument("--epochs", type=positive_int, default=40)
    e.add_argument("--seed", type=non_negative_int, default=0)
    e.add_argument("--steps", type=positive_int, default=PREFLIGHT_STEPS,
                   help="preflight steps every method reads (default %(default)s)")
    e.add_argument("--target", choices=TARGETS, default=DEFAULT_TARGET)
    e.add_argument("--seeds", type=positive_int, default=1,
                   help="also report each method's mean regret over this many seeds "
                        "(--seed, --seed + 1, ...)")
    e.add_argument("--no-machines", action="store_true",
                   help="skip the held-out-machine evaluation")
    e.add_argument("--out", default="", help="write the report as JSON")
    e.set_defaults(func=_one_line(_evaluate))
    k = stpa.add_parser("calibrate", help="measure reference configurations on this machine "
                                          "and retrain with them")
    k.add_argument("--minutes", type=_positive_float, required=True,
                   help="time to spend measuring (training afterwards: ~10-30 s more)")
    k.add_argument("--out", default="", help="model directory (default: the per-user "
                                             "one, which threads='auto' then uses)")
    k.add_argument("--dataset", **datasets)
    k.add_argument("--epochs", type=positive_int, default=40)
    k.add_argument("--seed", type=non_negative_int, default=0)
    k.set_defaults(func=_one_line(_calibrate))
    d = stpa.add_parser("predict", help="preflight a model and print its thread count")
    add_model_arguments(d)
    d.add_argument("--runtime", default="seer")
    d.set_defaults(func=_one_line(_predict))
