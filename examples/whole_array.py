"""When SEER does not help: a step that is one whole-array numpy expression.

    .venv/bin/python -m examples.whole_array --entities 1600 --steps 20

``BenchModel(n, cost_us=0, fanout=0)`` gives every entity one event per step that sets
``x[e] = 0.5 x[e] + 0.25 (x[e+1] + x[e-1])`` from the step-start snapshot, a ring
smoothing. Written as events it costs a few µs per entity on any runtime; written as the
numpy expression it is, the whole step is a handful of vector operations. This script
steps both, checks that they give the very same bits, and prints their times: when a step
can be written like this, write it like this, and keep SEER for steps whose per-entity
work branches, varies from entity to entity, or sends events to others.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import seer
from workloads.synthetic import BenchModel


def vector_step(x: np.ndarray) -> np.ndarray:
    """The whole step as numpy: the same operations in the same order as ``on_tick``."""
    return 0.5 * x + 0.25 * (np.roll(x, -1) + np.roll(x, 1))


def run(entities: int, steps: int, runtimes: tuple[str, ...] = ("serial", "seer:2")
        ) -> dict[str, float]:
    """Seconds per step of each runtime and of the numpy step; raises AssertionError if
    any of them ends in a different state."""
    model = BenchModel(entities, cost_us=0.0, fanout=0)
    actions = model.sample_actions(0)
    times, finals = {}, {}
    for label in runtimes:
        kind, _, threads = label.partition(":")
        with seer.make_runtime(model, kind, threads=int(threads or 1)) as rt:
            rt.reset(0)
            x0 = np.array(rt.state.x)
            t0 = time.perf_counter()
            for _ in range(steps):
                rt.step(actions)
            times[label] = (time.perf_counter() - t0) / steps
            finals[label] = np.array(rt.state.x)
    x = x0
    t0 = time.perf_counter()
    for _ in range(steps):
        x = vector_step(x)
    times["numpy"] = (time.perf_counter() - t0) / steps
    for label, final in finals.items():
        assert np.array_equal(final, x), f"{label} and the numpy step differ"
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=1600)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args(argv)
    times = run(args.entities, args.steps)
    print(f"{args.entities} entities, {args.steps} steps; identical results")
    for label, seconds in times.items():
        print(f"{label:>8}: {1e3 * seconds:8.3f} ms per step "
              f"({times['serial'] / seconds:7.1f}x serial)")


if __name__ == "__main__":
    main()
