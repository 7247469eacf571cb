"""``seer check``: run the lock-free structures' own checks, or the tutorial's examples.

    seer check                      # every structure's check and its planted bug
    seer check leq pel --no-planted # some of them, only the real code
    seer check --example aba        # the tutorial's planted ABA (exit 1: it is found)
    seer check --example aba --replay 'sc:0*3,1*10,0*4'

Exit status: 0 when every real check passed and every planted bug was found; 1 otherwise;
2 for bad input (an unknown check, strategy or example, a malformed schedule, an output
file whose directory is missing), on one line.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from seer.specs import output_file

__all__ = ["add_subcommand", "main"]

EXAMPLES = ("aba", "aba-fixed", "relaxed", "relaxed-fixed")


def _strategy(text: str) -> str:
    from seer.check.explorer import STRATEGIES

    if text not in STRATEGIES:
        raise argparse.ArgumentTypeError(f"unknown strategy {text!r}; use one of "
                                         f"{', '.join(STRATEGIES)}")
    return text


def _schedule(text: str) -> str:
    from seer.check.explorer import parse_schedule

    if not text:  # the default: no replay
        return text
    try:
        parse_schedule(text)
    except ValueError as exc:  # parse_schedule's own refusal of the text, nothing else
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _example(name: str) -> tuple[tuple, dict[str, Any]]:
    from seer.check.examples import free_list_check, spsc_check
    from seer.queues.atomic import RELAXED, RELEASE

    if name.startswith("aba"):
        return free_list_check(tagged=name.endswith("fixed")), {}
    return spsc_check(publish=RELEASE if name.endswith("fixed") else RELAXED), {"weak": True}


def _usage_error(args: argparse.Namespace, message: str) -> int:
    print(f"{args.check_prog}: error: {message}", file=sys.stderr)
    return 2


def _run(args: argparse.Namespace) -> int:
    from seer.check.explorer import ReplayError, explore, replay
    from seer.check.queues import CHECKS, run_all

    if not args.example:
        used = [option for option, value in (("--strategy", args.strategy),
                                             ("--replay", args.replay),
                                             ("--trace", args.trace), ("--dot", args.dot))
                if value]
        if used:
            return _usage_error(args, f"{', '.join(used)} "
                                      f"{'needs' if len(used) == 1 else 'need'} --example")
    elif args.names:
        return _usage_error(args, f"--example {args.example} runs alone; it takes no check "
                                  f"names (got {', '.join(args.names)})")
    if args.example:
        (setup, *workers, invariant), options = _example(args.example)
        if args.replay:
            try:
                report = replay(args.replay, setup, *workers, invariant=invariant,
                                raises=False)
            except ReplayError as exc:  # a well-formed schedule of another execution
                return _usage_error(args, f"--replay {args.replay!r}: {exc}")
        else:
            report = explore(setup, *workers, invariant=invariant,
                             strategy=args.strategy or "dfs", raises=False, **options)
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
        return _usage_error(args, f"unknown check {', '.join(unknown)}; choose from "
                                  f"{', '.join(CHECKS)}")
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
    p.add_argument("--strategy", type=_strategy, default=None,
                   help="dfs (default), dpor, random or pct (--example)")
    p.add_argument("--replay", type=_schedule, default="",
                   help="replay this schedule (--example)")
    p.add_argument("--trace", type=output_file, default="",
                   help="save a failing interleaving for Perfetto (--example)")
    p.add_argument("--dot", type=output_file, default="",
                   help="save its happens-before graph (Graphviz; --example)")
    p.set_defaults(func=_run, check_prog=p.prog)
    return p


def add_subcommand(sub: Any) -> None:
    """Register ``seer check`` on the ``seer`` command line's subparsers."""
    _parser(sub.add_parser("check", help="model-check the lock-free structures (seer.check)",
                           description=__doc__.split("\n\n")[0]))


def main(argv: list[str] | None = None) -> int:
    args = _parser(argparse.ArgumentParser(prog="python -m seer.check")).parse_args(argv)
    return args.func(args)
