"""Calibrate a workload: complexity knob -> measured mean event time, and events per step
(all / cross-entity) at several entity counts, on the serial runtime.

    .venv/bin/python -m workloads.calibrate aircraft
    .venv/bin/python -m workloads.calibrate pcs --steps 10
"""

from __future__ import annotations

import argparse
import math
import time

from tqdm import tqdm

import seer
from workloads.aircraft import Aircraft
from workloads.pcs import PCS


def make(workload: str, entities: int, cost_us: float) -> seer.Model:
    if workload == "aircraft":
        return Aircraft(entities, cost_us=cost_us)
    side = round(math.sqrt(entities))
    return PCS(side, side, cost_us=cost_us)


def measure(model: seer.Model, steps: int, warmup: int = 2) -> dict[str, float]:
    rt = seer.SerialRuntime(model)
    rt.reset(0)
    for t in range(warmup):
        rt.step(model.sample_actions(t))
    before = rt.stats
    t0 = time.perf_counter()
    for t in range(warmup, warmup + steps):
        rt.step(model.sample_actions(t))
    elapsed = time.perf_counter() - t0
    after = rt.stats
    events = after["events_run"] - before["events_run"]
    cross = after["cross_entity"] - before["cross_entity"]
    rt.close()
    return {"mean_event_us": elapsed / max(events, 1) * 1e6, "events_per_step": events / steps,
            "cross_per_step": cross / steps, "step_ms": elapsed / steps * 1e3}


#: measure key -> (column header, decimals printed)
COLUMNS = {"mean_event_us": ("mean event µs", 1), "events_per_step": ("events/step", 0),
           "cross_per_step": ("cross-entity/step", 0)}


def print_table(knob: str, keys: list[str], rows: list[tuple[float, dict[str, float]]]) -> None:
    """Print a markdown table: one row per ``(knob value, measures)``, with the knob first
    and then the measures ``keys`` in that order."""
    print("| " + " | ".join([knob, *(COLUMNS[k][0] for k in keys)]) + " |")
    print("| " + " | ".join(["---"] * (1 + len(keys))) + " |")
    for value, m in rows:
        cells = [f"{value}", *(f"{m[k]:.{COLUMNS[k][1]}f}" for k in keys)]
        print("| " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=["aircraft", "pcs"])
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    if args.workload == "aircraft":
        costs, default_n, counts, default_cost = [70, 100, 200, 400], 800, \
            [200, 400, 800, 1400], 200
    else:
        costs, default_n, counts, default_cost = [5, 10, 15, 20, 40], 1600, \
            [400, 900, 1600, 2500, 4900], 15
    jobs = [("cost", c, default_n) for c in costs] + [("n", default_cost, n) for n in counts]
    rows = []
    for kind, cost, n in tqdm(jobs, desc=f"calibrating {args.workload}"):
        rows.append((kind, cost, n, measure(make(args.workload, n, cost), args.steps)))
    print(f"\n{args.workload}: knob -> mean event time (serial, {default_n} entities, "
          f"{args.steps} steps)")
    print_table("cost_us", ["mean_event_us", "events_per_step", "cross_per_step"],
                [(cost, m) for kind, cost, _n, m in rows if kind == "cost"])
    print(f"\n{args.workload}: entity count -> events per step (cost_us={default_cost})")
    print_table("entities", ["events_per_step", "cross_per_step", "mean_event_us"],
                [(n, m) for kind, _cost, n, m in rows if kind == "n"])


if __name__ == "__main__":
    main()
