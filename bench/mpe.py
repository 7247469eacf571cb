"""The MPE spread port (``workloads.mpe``) against the same step as whole-array numpy on one
thread (``workloads/mpe/whole_array.py``), side by side: what an event-driven step costs
where the step could be one numpy expression (docs/porting.md, "Which kind of step do you
have?").

    .venv/bin/python -m bench.mpe            # writes bench/results/mpe.json
    .venv/bin/python -m bench.mpe --smoke    # tiny sizes, seconds

The port on serial and on seer(2) and the whole-array reference take turns every step
(medians), from one layout and one action sequence, and must end in the same bytes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

import seer
from bench.harness import finish, interleaved, record
from workloads.mpe import Spread
from workloads.mpe.whole_array import WholeArraySpread

RESULTS = Path(__file__).parent / "results" / "mpe.json"


def speed(n_agents: int, steps: int) -> dict[str, Any]:
    model = Spread(n_agents, max_cycles=10**9)
    with seer.SerialRuntime(model) as serial, seer.make_runtime(model, "seer", threads=2) as par:
        serial.reset(0)
        par.reset(0)
        reference = WholeArraySpread(n_agents, max_cycles=10**9)
        reference.reset(serial.state.pos[:n_agents], serial.state.pos[n_agents:])
        actions = [model.sample_actions(t) for t in range(steps + 1)]
        arrays = [np.array(a) for a in actions]
        times = interleaved({"port serial": lambda t: serial.step(actions[t]),
                             "port seer(2)": lambda t: par.step(actions[t]),
                             "whole-array": lambda t: reference.step(arrays[t])}, steps)
        identical = (reference.pos.tobytes() == serial.state.pos[:n_agents].tobytes()
                     == par.state.pos[:n_agents].tobytes())
    return {"n_agents": n_agents, "steps": steps, "s_per_step": times, "identical": identical}


def summary(result: dict[str, Any]) -> list[str]:
    """One line per size (also the report's, :func:`bench.markdown.also_measured`)."""
    return [f"{row['n_agents']} agents: " + ", ".join(
        f"{name} {1e3 * s:.2f} ms" for name, s in row["s_per_step"].items())
        + f"; identical: {'yes' if row['identical'] else 'NO'}" for row in result["sizes"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (seconds)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    sizes = [(12, 3)] if args.smoke else [(100, 60), (400, 30)]
    result = {**record("bench.mpe", argv), "sizes": [speed(n, s) for n, s in sizes]}
    finish(Path(args.out), result, summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
