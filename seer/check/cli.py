"""``seer check``: run the lock-free structures' own checks, or the tutorial's examples.

    seer check                      # every structure's check and its planted bug
    seer check leq pel --no-planted # some of them, only the real code
    seer check --example aba        # the tutorial's planted ABA (exit 1: it is found)
    seer check --example aba --replay 'sc:0*3,1*10,0*4'

Exit status: 0 when every real check passed and every planted bug was found; 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_subcommand", "main"]

EXAMPLES = ("aba", "aba-fixed", "relaxed", "relaxed-fixed")


def _example(name: str) -> tuple[tuple, dict[str, Any]]:
    from seer.check.examples import free_list_check, spsc_check
    from seer.queues.atomic import RELAXED, RELEASE

    if name.startswith("aba"):
        return free_list_check(tagged=name.endswith("fixed")), {}
    return spsc_check(publish=RELEASE if name.endswith("fixed") else RELAXED), {"weak": True}


def _run(args: argparse.Namespace) -> int:
    from seer.check.explorer import explore, replay
    from seer.check.queues import CHECKS, run_all

    if args.example:
        (setup, *workers, invariant), options = _example(args.example)
        if args.replay:
            report = replay(args.replay, setup, *workers, invariant=invariant, raises=False)
        else:
            report = explore(setup, *workers, invariant=invariant, strategy=args.strategy,
                             raises=False, **options)
        print(report)
        if report.failure is not None and args.trace:
            report.failure.to_trace().save(args.trace)
            print(f"trace: {args.trace} (open it in https://ui.perfetto.dev)")
        if report.failure is not None and args.dot:
            with open(args.dot, "w") as f:
                f.write(report.failure.to_dot())
            print(f"happens-before graph: {args.dot} (dot -Tsvg)")
        return 1 if report.failure is not None else 0
    unknown = [n for n in args.names if n not in CHECKS]
    if unknown:
        print(f"seer check: unknown check {', '.join(unknown)}; choose from "
              f"{', '.join(CHECKS)}", file=sys.stderr)
        return 2
    ok = True
    for name, report in run_all(args.names or None, planted=args.planted):
        planted = "/" in name
        passed = (report.failure is not None) if planted else (report.failure is None)
        ok &= passed
        what = ("found: " + report.failure.message[:90]) if report.failure else \
            ("exhaustive" if report.exhaustive else "not exhaustive")
        print(f"{'ok  ' if passed else 'FAIL'} {name:<18} {report.schedules:>6} schedules "
              f"{report.seconds:6.2f} s  {what}")
        if not passed and report.failure is not None:
            print(report.failure)
    return 0 if ok else 1


def _parser(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("names", nargs="*", help="checks to run (default: all): leq arena pel ring")
    p.add_argument("--no-planted", dest="planted", action="store_false",
                   help="do not also run each check's planted bug")
    p.add_argument("--example", choices=EXAMPLES,
                   help="explore one of the tutorial's examples instead")
    p.add_argument("--strategy", default="dfs", help="dfs, dpor, random or pct (--example)")
    p.add_argument("--replay", default="", help="replay this schedule (--example)")
    p.add_argument("--trace", default="", help="save a failing interleaving for Perfetto")
    p.add_argument("--dot", default="", help="save its happens-before graph (Graphviz)")
    p.set_defaults(func=_run)
    return p


def add_subcommand(sub: Any) -> None:
    """Register ``seer check`` on the ``seer`` command line's subparsers."""
    _parser(sub.add_parser("check", help="model-check the lock-free structures (seer.check)",
                           description=__doc__.split("\n\n")[0]))


def main(argv: list[str] | None = None) -> int:
    args = _parser(argparse.ArgumentParser(prog="python -m seer.check")).parse_args(argv)
    return args.func(args)
