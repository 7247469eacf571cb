"""The pursuit port against PettingZoo's own implementation: speed and, without replaying
PettingZoo's random draws, statistical agreement of episode statistics.

    .venv/bin/python -m bench.pursuit            # writes bench/results/pursuit.json
    .venv/bin/python -m bench.pursuit --smoke    # tiny sizes, seconds

* **Speed** (simple timers, medians of steps after a warm-up step): PettingZoo's
  ``pursuit_v5.parallel_env`` and the port on ``SerialRuntime`` at 128x128, 300 pursuers,
  1000 evaders (PettingZoo's catch check is O(evaders x pursuers), so only a few steps of
  it). The port's parallel runtimes at 256x256 / 1000 / 4000 are measured by
  ``bench.bench_runtimes --workload pursuit`` (pyperf), side by side with serial.
* **Agreement without replay**: ``episodes`` episodes of each with random pursuer actions
  (the same generator for both, seeded per episode) and each implementation's own random
  evader moves and spawn cells. Per episode: catches, length, mean reward per pursuer per
  step. The two samples are compared with Welch's t-test; agreement means no significant
  difference at the 1 % level (p > 0.01) for every statistic.
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
from bench.sizes import Sizes
from workloads.pursuit import Pursuit

RESULTS = Path(__file__).parent / "results" / "pursuit.json"
AGREEMENT_CONFIG = {"x_size": 16, "y_size": 16, "n_pursuers": 16, "n_evaders": 30,
                    "surround": False, "n_catch": 1, "max_cycles": 100}


def _pettingzoo() -> Any:
    from workloads.pursuit.original import import_pettingzoo_pursuit

    return import_pettingzoo_pursuit()[0]


def _episode_pz(pursuit_v5: Any, config: dict, seed: int) -> dict[str, float]:
    env = pursuit_v5.parallel_env(**config)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    base = env.unwrapped.env
    start = len(base.evader_layer.allies)
    total, steps = 0.0, 0
    while env.agents:
        actions = {a: int(rng.integers(5)) for a in env.agents}
        _, rewards, *_ = env.step(actions)
        total += float(np.mean(list(rewards.values())))
        steps += 1
    return {"catches": start - len(base.evader_layer.allies), "length": steps,
            "reward": total / steps}


def _episode_port(config: dict, seed: int) -> dict[str, float]:
    model = Pursuit(**config)
    rt = seer.SerialRuntime(model)
    rt.reset(seed)
    rng = np.random.default_rng(seed)
    n = model.n_pursuers
    total, steps = 0.0, 0
    while True:
        out = rt.step([int(a) for a in rng.integers(5, size=n)])
        total += float(out.rewards.mean())
        steps += 1
        if out.terminations.any() or out.truncations.any():
            break
    return {"catches": int(rt.state.gone[n:].sum()), "length": steps,
            "reward": total / steps}


def welch(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Welch's t statistic and two-sided p-value (scipy's t distribution)."""
    from scipy import stats

    result = stats.ttest_ind(a, b, equal_var=False)
    return float(result.statistic), float(result.pvalue)


def agreement(episodes: int, config: dict) -> dict[str, Any]:
    from tqdm import tqdm

    pursuit_v5 = _pettingzoo()
    pz = [_episode_pz(pursuit_v5, config, s) for s in tqdm(range(episodes), desc="pettingzoo")]
    port = [_episode_port(config, s) for s in tqdm(range(episodes), desc="port")]
    out: dict[str, Any] = {"config": config, "episodes": episodes, "statistics": {}}
    for key in ("catches", "length", "reward"):
        a = np.array([e[key] for e in pz], float)
        b = np.array([e[key] for e in port], float)
        t, p = welch(a, b) if a.std() + b.std() > 0 else (0.0, 1.0)
        out["statistics"][key] = {"pettingzoo_mean": a.mean(), "pettingzoo_sd": a.std(ddof=1),
                                  "port_mean": b.mean(), "port_sd": b.std(ddof=1),
                                  "t": t, "p": p, "agree": p > 0.01}
    return out


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
    parser.add_argument("--episodes", type=int, default=150)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if args.smoke:
        size = {"x_size": 32, "y_size": 32, "n_pursuers": 20, "n_evaders": 60}
        result = {"speed": speed(size, 2, 3),
                  "agreement": agreement(4, {**AGREEMENT_CONFIG, "max_cycles": 20})}
    else:
        size = {"x_size": 128, "y_size": 128, "n_pursuers": 300, "n_evaders": 1000}
        result = {"speed": speed(size, 3, 20),
                  "agreement": agreement(args.episodes, AGREEMENT_CONFIG)}
    result.update(record("bench.pursuit", argv))
    welch_lines = [f"{key}: PettingZoo {st['pettingzoo_mean']:.4f} +- {st['pettingzoo_sd']:.4f}, "
                   f"port {st['port_mean']:.4f} +- {st['port_sd']:.4f}, Welch p = {st['p']:.3f}"
                   for key, st in result["agreement"]["statistics"].items()]
    finish(Path(args.out), result, [*also_measured(Results(Sizes("fast"), {}, pursuit=result)),
                                    *welch_lines])
    return 0


if __name__ == "__main__":
    sys.exit(main())
