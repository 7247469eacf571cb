"""The ``seer`` command line: ``seer info``, ``seer demo``, ``seer --version``."""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import sys
import time
from collections.abc import Sequence

import seer

#: Distributions reported by ``seer info``: the core dependencies, then the extras.
REPORTED_PACKAGES = (
    "numpy", "atomics", "cffi",
    "torch", "xgboost",
    "pettingzoo", "gymnasium",
    "pyperf", "matplotlib", "tqdm",
    "pytest", "pytest-benchmark", "hypothesis",
)


def interpreter_facts() -> dict[str, str]:
    """Interpreter, GIL state, cores and package versions, as printed by ``seer info``."""
    facts = {
        "seer": seer.__version__,
        "python": f"{platform.python_implementation()} {platform.python_version()} "
                  f"({sys.executable})",
        "free-threaded build": "yes" if seer.free_threaded_build() else "no",
        "GIL": "disabled" if seer.gil_disabled() else "ENABLED (threads give no speed-up)",
        "cores available": str(seer.cpu_count()),
        "platform": platform.platform(),
    }
    for name in REPORTED_PACKAGES:
        try:
            facts[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            facts[name] = "not installed"
    return facts


def _cmd_info(args: argparse.Namespace) -> int:
    facts = interpreter_facts()
    width = max(map(len, facts))
    for key, value in facts.items():
        print(f"{key:<{width}}  {value}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from seer.testing import RandomModel

    _cmd_info(args)
    model = RandomModel(args.entities, seed=1, cost_us=args.cost_us)
    runtime = seer.SerialRuntime(model)
    runtime.reset(seed=0)
    start = time.perf_counter()
    for _ in range(args.steps):
        runtime.step(model.sample_actions(runtime.step_index))
    elapsed = time.perf_counter() - start
    stats = runtime.stats
    print(f"\nserial runtime, {args.entities} entities, {args.steps} steps of a random model "
          f"(handler cost {args.cost_us} µs):")
    print(f"  {args.steps / elapsed:10.1f} steps/s   {stats['events_run'] / elapsed:12.0f} "
          f"events/s   ({stats['events_run']} events, {stats['cross_entity']} cross-entity)")
    runtime.close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seer", description=seer.__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"seer {seer.__version__}")
    sub = parser.add_subparsers(dest="command")
    p_info = sub.add_parser("info", help="interpreter, GIL state, cores and package versions")
    p_info.set_defaults(func=_cmd_info)
    p_demo = sub.add_parser("demo", help="step a model and report throughput")
    p_demo.add_argument("--entities", type=int, default=400)
    p_demo.add_argument("--steps", type=int, default=50)
    p_demo.add_argument("--cost-us", type=float, default=0.0,
                        help="busy work per handler, in microseconds")
    p_demo.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        return _cmd_info(args)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
