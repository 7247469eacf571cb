"""``seer stpa collect | train | evaluate | predict``: STPA on the command line."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["add_parser"]

DEFAULT_DATASET = Path(__file__).parent / "data" / "dataset.npz"


def _collect(args: argparse.Namespace) -> int:
    from seer.stpa.dataset import collect, default_configurations

    configs = default_configurations(quick=args.quick)
    command = "seer stpa collect " + " ".join(shlex.quote(a) for a in sys.argv[3:])
    out = collect(configs, Path(args.out), t_max=args.t_max, command=command)
    print(f"wrote {out} and {out.with_suffix('.json')} ({len(configs)} configurations)")
    return 0


def _train(args: argparse.Namespace) -> int:
    from seer.stpa.dataset import load_dataset
    from seer.stpa.train import fit_stpa

    data = load_dataset(Path(args.dataset))
    predictor = fit_stpa(data, np.arange(len(data["labels"])), seed=args.seed,
                         epochs=args.epochs)
    predictor.save(Path(args.out))
    print(f"trained on {len(data['labels'])} preflights; model in {args.out}")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from seer.stpa.dataset import load_dataset
    from seer.stpa.train import PAPER_TABLE_1, evaluate

    data = load_dataset(Path(args.dataset))
    report = evaluate(data, folds=args.folds, seed=args.seed, epochs=args.epochs,
                      progress=lambda it: tqdm(it, desc="stpa evaluate", unit="fold"))
    print(f"{'method':<15} {'MAE':>7} {'MSE':>7} {'MAE thr':>8} {'regret mean':>12} "
          f"{'worst':>6} {'paper MAE':>10}")
    for name, m in report["methods"].items():
        paper = PAPER_TABLE_1.get(name)
        print(f"{name:<15} {m['mae']:7.3f} {m['mse']:7.3f} {m['mae_threads']:8.2f} "
              f"{m['regret_mean']:12.3f} {m['regret_worst']:6.3f} "
              f"{paper if paper is not None else '':>10}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
        print(f"report in {args.out}")
    return 0


def _predict(args: argparse.Namespace) -> int:
    from seer.specs import load_model, parse_kwargs
    from seer.stpa.predictor import choose_threads

    model = load_model(args.spec, parse_kwargs(args.kwargs))
    threads, info = choose_threads(model, args.runtime)
    shown: dict[str, Any] = {k: v for k, v in info.items() if k not in ("features", "mask")}
    print(json.dumps(shown, indent=1))
    print(f"threads: {threads}")
    return 0


def add_parser(sub: Any) -> None:
    """Add ``stpa`` and its subcommands to the ``seer`` command line."""
    p = sub.add_parser("stpa", help="thread-count prediction: collect, train, evaluate, "
                                    "predict")
    stpa = p.add_subparsers(dest="stpa_command", required=True)
    c = stpa.add_parser("collect", help="measure the training configurations (minutes)")
    c.add_argument("--out", default=str(DEFAULT_DATASET))
    c.add_argument("--t-max", type=int, default=8)
    c.add_argument("--quick", action="store_true", help="four configurations only")
    c.set_defaults(func=_collect)
    t = stpa.add_parser("train", help="train the encoder and the regressor on a data set")
    t.add_argument("--dataset", default=str(DEFAULT_DATASET))
    t.add_argument("--out", default=str(DEFAULT_DATASET.parent))
    t.add_argument("--epochs", type=int, default=40)
    t.add_argument("--seed", type=int, default=0)
    t.set_defaults(func=_train)
    e = stpa.add_parser("evaluate", help="grouped K-fold evaluation against the baselines")
    e.add_argument("--dataset", default=str(DEFAULT_DATASET))
    e.add_argument("--folds", type=int, default=4)
    e.add_argument("--epochs", type=int, default=40)
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--out", default="", help="write the report as JSON")
    e.set_defaults(func=_evaluate)
    d = stpa.add_parser("predict", help="preflight a model and print its thread count")
    d.add_argument("spec", help="a registered model name (pcs, aircraft, ...) or "
                                "module:callable")
    d.add_argument("kwargs", nargs="*", help="key=value arguments of the callable")
    d.add_argument("--runtime", default="seer")
    d.set_defaults(func=_predict)
