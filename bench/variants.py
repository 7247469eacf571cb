"""Candidate fixes for the scaling tax, timed against SEER as it is, at any thread count.

    .venv/bin/python -m bench.variants --threads 2 --out variants.json          # here
    dist/bundle/run.sh python -m bench.variants --threads 8 16 --out "$OUT/variants.json"

On 16 cores SEER spends about 1.8 times the CPU of 16 independent serial runs on PCS's
plain-Python events, inside its windows (``bench.tax``; ``bench/RESULTS-manycore.md``).
Independent runs share nothing; one model's threads share the model object and its
attributes, the state arrays, and the per-entity objects made at ``reset``. Each variant
below but ``parking`` removes one such sharing, and each was measured as neutral or worse
on 2 threads (``docs/performance.md``, "Tried and not adopted"), where sharing is cheap.
``parking`` is the other way round: it takes back a change that was within noise on 2
threads. This script is the many-core test of them, ready to run on a machine with many
cores:

* ``seer``: SEER as it is (the reference);
* ``block-homes``: SEER's claimer and steals with contiguous id blocks as homes, so a
  thread's rows share cache lines with its own entities' rows, not with 7 other threads';
* ``deferred-model``: the model object and its list, tuple and dict attributes with
  deferred reference counting (CPython 3.14t, ``PyUnstable_Object_EnableDeferredRefcount``):
  loading them no longer writes their reference count;
* ``parking``: SEER with its workers parking between the windows of a step, as before
  the pool learnt to spin while a step runs (``hot_spin_us=0``): with T threads, each
  window then starts with T - 1 futex wake-ups;
* ``static``: the ``static`` peer, for scale.

Every variant builds its own model and runtime once; then in every round each one, in an
order that rotates, resets, takes a warm-up step and times ``steps`` steps (wall and
process CPU). Each round's time is read against the reference's in the same round; the
median over rounds is reported with its range. Results are checked to stay bit-identical
to the reference's (a sha256 of the state after the timed steps).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import seer
from bench.bench_runtimes import make_model
from bench.manycore import capacity, state_digest
from bench.markdown import table
from bench.stats import ratios, timed_steps
from seer.cli import interpreter_facts
from seer.sched.assignment import Steal

__all__ = ["VARIANTS", "main", "measure", "section"]


class BlockSteal(Steal):
    """SEER's guided claims and steals, with contiguous id blocks as homes."""

    name = "steal-block"

    def home(self, entities: np.ndarray, threads: int, n_entities: int) -> np.ndarray:
        return entities * threads // n_entities


def _defer(model: Any) -> int:
    """Deferred reference counting for ``model`` and its container attributes (one level
    into lists and tuples); returns how many objects it was enabled on. CPython enables it
    only on objects its garbage collector tracks, made by the calling thread: tuples of
    numbers, for one, are left as they are."""
    enable = ctypes.pythonapi.PyUnstable_Object_EnableDeferredRefcount
    enable.argtypes, enable.restype = [ctypes.py_object], ctypes.c_int
    n = enable(model)
    for value in vars(model).values():
        n += enable(value)
        if isinstance(value, (list, tuple)):
            n += sum(enable(item) for item in value)
    return n


#: name -> (runtime kind, make_runtime options, model hook)
VARIANTS: dict[str, tuple[str, Callable[[], dict[str, Any]], Callable[[Any], Any] | None]] = {
    "seer": ("seer", dict, None),
    "block-homes": ("seer", lambda: {"assignment": BlockSteal()}, None),
    "deferred-model": ("seer", dict, _defer),
    "parking": ("seer", lambda: {"hot_spin_us": 0.0}, None),
    "static": ("static", dict, None),
}
WORKLOADS = {"pcs": ("pcs", 1600, 15.0, 5), "aircraft": ("aircraft", 800, 200.0, 3)}
SMOKE = {"pcs": 64, "aircraft": 40}


def measure(workload: str, threads: int, rounds: int, variants: list[str],
            smoke: bool = False) -> dict[str, Any]:
    """Each variant's wall and CPU seconds per step, per round, and its final-state digest."""
    kind_, entities, cost, steps = WORKLOADS[workload]
    if smoke:
        entities, steps = SMOKE[workload], 2
    built: dict[str, tuple[Any, list[Any]]] = {}
    rows: dict[str, dict[str, Any]] = {}
    try:
        for name in variants:
            kind, options, model_hook = VARIANTS[name]
            model = make_model(kind_, entities, cost, 1)
            if model_hook is not None:
                model_hook(model)
            actions = [model.sample_actions(t) for t in range(steps + 1)]
            built[name] = (seer.make_runtime(model, kind, threads=threads, **options()),
                           actions)
            rows[name] = {"wall_s": [], "cpu_s": [], "digest": None}
        for r in range(rounds):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for name in order:
                rt, actions = built[name]
                rt.reset(seed=0)
                rt.step(actions[0])
                wall, cpu = timed_steps(rt, actions, steps)
                rows[name]["wall_s"].append(wall)
                rows[name]["cpu_s"].append(cpu)
                rows[name]["digest"] = state_digest(rt)
    finally:
        for rt, _ in built.values():
            rt.close()
    return {"workload": workload, "entities": entities, "cost_us": cost, "steps": steps,
            "threads": threads, "variants": rows}


def section(data: dict[str, Any]) -> list[str]:
    """Tables: each variant's time and CPU over the reference's, per workload and T."""
    cap = [data.get(k) for k in ("capacity_before", "capacity_after")]
    out = ["## Candidate fixes for the scaling tax, against SEER as it is", "",
           f"`python -m bench.variants` ({data['rounds']} rounds) on "
           f"{data['host']['cores']} cores; effective cores of {data['capacity_threads']} "
           "threads before / after: " + " / ".join(f"{c:.2f}" for c in cap) + ". Ratios "
           "below 1 mean the variant is faster / cheaper than `seer`.", ""]
    for result in data["results"]:
        v = result["variants"]
        ref = v["seer"]
        rows = []
        for name, r in v.items():
            wall, cpu = ratios(r["wall_s"], ref["wall_s"]), ratios(r["cpu_s"], ref["cpu_s"])
            rows.append([name, f"{1e3 * statistics.median(r['wall_s']):.1f}",
                         f"{statistics.median(wall):.3f} ({min(wall):.2f}-{max(wall):.2f})",
                         f"{statistics.median(cpu):.3f}",
                         "yes" if r["digest"] == ref["digest"] else "**no**"])
        out += [f"### {result['workload']} {result['entities']}, cost_us="
                f"{result['cost_us']:g}, {result['threads']} threads", "",
                *table(["variant", "ms / step", "time / seer's (range)", "CPU / seer's",
                        "same results"], rows), ""]
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.variants",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="result JSON file")
    parser.add_argument("--threads", type=int, nargs="+", default=[2])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=["pcs"])
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS),
                        default=list(VARIANTS))
    parser.add_argument("--smoke", action="store_true", help="tiny models, 2 rounds")
    args = parser.parse_args(argv)
    if any(t < 1 for t in args.threads) or args.rounds < 1:
        parser.error("--threads must be >= 1 and --rounds >= 1")
    variants = ["seer", *(v for v in args.variants if v != "seer")]  # the reference first
    rounds = 2 if args.smoke else args.rounds
    cap_threads = max(2, max(args.threads))
    data: dict[str, Any] = {"rounds": rounds, "host": {"cores": seer.cpu_count(),
                                                       "interpreter": interpreter_facts()},
                            "capacity_threads": cap_threads,
                            "capacity_before": capacity(cap_threads)["effective_cores"],
                            "results": []}
    for workload in args.workloads:
        for t in args.threads:
            print(f"[variants] {workload}, {t} threads: {', '.join(variants)}",
                  file=sys.stderr, flush=True)
            data["results"].append(measure(workload, t, rounds, variants, smoke=args.smoke))
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(data, indent=1))  # a run cut off keeps these
    data["capacity_after"] = capacity(cap_threads)["effective_cores"]
    args.out.write_text(json.dumps(data, indent=1))
    print("\n".join(section(data)))
    return data


if __name__ == "__main__":
    main()
