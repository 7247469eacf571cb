"""K environments, one pool, against the same K stepped one after another: wall seconds per
vector step of ``VectorRuntime`` (seer.vector) at T threads, K ``seer(T)`` runtimes (one
pool each, stepped in turn) and K serial runtimes, in rotated rounds.

    .venv/bin/python -m bench.vector                         # equal: 8 x PCS 20x20
    .venv/bin/python -m bench.vector --dominant              # one PCS 40x40 + three 10x10
    .venv/bin/python -m bench.vector --smoke                 # seconds

Every round checks that each model's state after the vector steps equals its state after
the serial steps (bit for bit).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

import seer
from seer.vector import VectorRuntime
from workloads.pcs import PCS

__all__ = ["main", "measure"]


def _models(dominant: bool, smoke: bool) -> list[PCS]:
    if smoke:
        return [PCS(width=6, height=6, cost_us=5) for _ in range(3)]
    if dominant:
        return [PCS(width=40, height=40, cost_us=15)] + [PCS(width=10, height=10, cost_us=15)
                                                        for _ in range(3)]
    return [PCS(width=20, height=20, cost_us=15) for _ in range(8)]


def measure(models: list[PCS], threads: int, steps: int, rounds: int) -> dict[str, Any]:
    """Wall seconds per vector step (median over rounds) of each way of stepping."""
    actions = [[m.sample_actions(t) for m in models] for t in range(steps + 1)]
    times: dict[str, list[float]] = {"vector": [], "seer in turn": [], "serial in turn": []}
    identical = True
    for r in range(rounds):
        order = list(times)[r % 3:] + list(times)[:r % 3]
        states = {}
        for way in order:
            if way == "vector":
                rt: Any = VectorRuntime(models, threads=threads)
                rt.reset(0)
                rt.step(actions[0])
                start = time.perf_counter()
                for t in range(1, steps + 1):
                    rt.step(actions[t])
                times[way].append((time.perf_counter() - start) / steps)
                states[way] = [{k: e.state[k].copy() for k in e.state.names} for e in rt.envs]
                rt.close()
                continue
            kind = "seer" if way == "seer in turn" else "serial"
            rts = [seer.make_runtime(m, kind, threads=threads if kind == "seer" else None)
                   for m in models]
            for k, x in enumerate(rts):
                x.reset(k)
                x.step(actions[0][k])
            start = time.perf_counter()
            for t in range(1, steps + 1):
                for k, x in enumerate(rts):
                    x.step(actions[t][k])
            times[way].append((time.perf_counter() - start) / steps)
            states[way] = [{k: x.state[k].copy() for k in x.state.names} for x in rts]
            for x in rts:
                x.close()
        identical &= all(np.array_equal(a[f], b[f]) for a, b in
                         zip(states["vector"], states["serial in turn"], strict=True)
                         for f in a)
    medians = {way: statistics.median(v) for way, v in times.items()}
    return {"threads": threads, "steps": steps, "rounds": rounds,
            "models": [m.name for m in models], "seconds_per_step": medians,
            "speedup_over_serial": {w: medians["serial in turn"] / s
                                    for w, s in medians.items()},
            "identical": identical}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dominant", action="store_true",
                        help="one PCS 40x40 beside three 10x10 (default: 8 x 20x20)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one round")
    args = parser.parse_args(argv)
    steps, rounds = (2, 1) if args.smoke else (args.steps, args.rounds)
    result = measure(_models(args.dominant, args.smoke), args.threads, steps, rounds)
    for way, s in result["seconds_per_step"].items():
        print(f"{way:>15}: {1e3 * s:8.2f} ms per vector step, "
              f"{result['speedup_over_serial'][way]:.2f}x serial")
    print(f"states identical to serial: {result['identical']}")


if __name__ == "__main__":
    main()
