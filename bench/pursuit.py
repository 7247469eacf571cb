"""The pursuit port against PettingZoo's own implementation: step time on serial.

    .venv/bin/python -m bench.pursuit            # writes bench/results/pursuit.json
    .venv/bin/python -m bench.pursuit --smoke    # tiny sizes, seconds

Medians of steps after a warm-up step, PettingZoo's ``pursuit_v5.parallel_env`` and the
port on ``SerialRuntime``, at 128x128, 300 pursuers, 1000 evaders (PettingZoo's catch
check is O(evaders x pursuers), so only a few steps of it). That the two agree, bit for
bit with PettingZoo's random draws replayed, is ``tests/workloads/test_pursuit.py``; the
port's parallel runtimes are ``bench.bench_runtimes --workload pursuit``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

import seer
from bench.harness import finish, interleaved, record
from bench.markdown import Results, also_measured
from workloads.pursuit import Pursuit

RESULTS = Path(__file__).parent / "results" / "pursuit.json"


def _pettingzoo() -> Any:
    from workloads.pursuit.original import import_pettingzoo_pursuit

    return import_pettingzoo_pursuit()[0]


def speed(size: dict, pz_steps: int, port_steps: int) -> dict[str, Any]:
    pursuit_v5 = _pettingzoo()
    env = pursuit_v5.parallel_env(**size, max_cycles=10**6)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    pz_time = interleaved({"pz": lambda t: env.step({a: int(rng.integers(5))
                                                     for a in env.agents})}, pz_steps)["pz"]
    model = Pursuit(**size, max_cycles=10**6)
    rt = seer.SerialRuntime(model)
    rt.reset(0)
    before = rt.events_run
    port_time = interleaved({"port": lambda t: rt.step(model.sample_actions(t))},
                            port_steps)["port"]
    return {"size": size, "pettingzoo_s_per_step": pz_time, "port_serial_s_per_step": port_time,
            "port_events_per_step": (rt.events_run - before) / (port_steps + 1),
            "speedup_port_over_pettingzoo": pz_time / port_time,
            "pettingzoo_steps": pz_steps, "port_steps": port_steps}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (seconds)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    size = {"x_size": 32, "y_size": 32, "n_pursuers": 20, "n_evaders": 60} if args.smoke \
        else {"x_size": 128, "y_size": 128, "n_pursuers": 300, "n_evaders": 1000}
    result = {"speed": speed(size, 2, 3) if args.smoke else speed(size, 3, 20),
              **record("bench.pursuit", argv)}
    finish(Path(args.out), result, also_measured(Results(pursuit=result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
