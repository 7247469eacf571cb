"""Check the predictor against fresh scans of configurations it never saw.

    python -m seer.stpa.holdout --out checks.json            # PCS 40x40 and Aircraft 800
    python -m seer.stpa.holdout --out checks.json --tiny     # small models (tests)

Each configuration is measured as ``seer stpa collect`` measures it (a child process: two
8-step preflights, then every thread count 1..machine_t_max, three interleaved repeats);
the predictor ``threads="auto"`` would use (:func:`seer.stpa.predictor.model_dir`) chooses
from each preflight, and the file records its choices, the scan's best count and the
regret (throughput at the choice over the best). Needs numpy only (no xgboost).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from seer.specs import resolve_spec
from seer.stpa.dataset import Configuration, _child, label_of
from seer.stpa.predictor import Predictor, model_dir
from seer.stpa.preflight import machine_t_max

__all__ = ["check", "configurations", "main"]


def configurations(tiny: bool = False) -> list[Configuration]:
    """Two configurations outside the training data: the report's PCS 40x40 and Aircraft
    800 (or small ones for a test run)."""
    pcs, air = resolve_spec("pcs"), resolve_spec("aircraft")
    if tiny:
        return [Configuration("pcs-12-c5", pcs, {"width": 12, "height": 12, "cost_us": 5},
                              group="holdout", steps=2),
                Configuration("aircraft-60-c20", air, {"n_uavs": 60, "cost_us": 20},
                              group="holdout", steps=2)]
    return [Configuration("pcs-40-c10", pcs, {"width": 40, "height": 40, "cost_us": 10},
                          group="holdout"),
            Configuration("aircraft-800-c200", air, {"n_uavs": 800, "cost_us": 200},
                          group="holdout")]


def check(configs: list[Configuration], predictor: Predictor) -> list[dict[str, Any]]:
    """Measure each configuration and score the predictor's choices on it."""
    t_max = machine_t_max(os.cpu_count() or 1)
    rows = []
    for config in configs:
        t0 = time.perf_counter()
        row = _child(config, t_max)
        features = np.array(row["features"])
        static = np.array(row["static"])
        chosen = predictor.choose(features, np.array(row["mask"], bool), static)
        median = np.median(np.array(row["throughput"]), axis=1)
        rows.append({"name": config.name, "spec": config.spec, "kwargs": config.kwargs,
                     "cores": row["cores"], "t_max": t_max,
                     "best": label_of(np.array(row["throughput"])),
                     "fastest": int(np.argmax(median)) + 1, "chosen": chosen.tolist(),
                     "regret": [float(median[c - 1] / median.max()) for c in chosen],
                     "steps_per_s": median.tolist(), "seconds": time.perf_counter() - t0,
                     "row": row})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m seer.stpa.holdout",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--tiny", action="store_true", help="small models (a test run)")
    args = parser.parse_args(argv)
    directory = model_dir()
    rows = check(configurations(args.tiny), Predictor.load(directory))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"model": str(directory), "cores": os.cpu_count(),
                                    "configurations": rows}, indent=1))
    for r in rows:
        print(f"[holdout] {r['name']}: best {r['best']} (fastest {r['fastest']}), chosen "
              f"{r['chosen']}, regret {[round(x, 3) for x in r['regret']]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
