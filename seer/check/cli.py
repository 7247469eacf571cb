"""``seer check``: run the lock-free structures' own checks, or the tutorial's examples.

    seer check                      # every structure's check and its planted bug
    seer check leq pel --no-planted # some of them, only the real code
    seer check --example aba        # the tutorial's planted ABA (exit 1: it is found)
    seer check --example aba --replay 'sc:0*3,1*10,0*4'
    seer check mycheck.py::counter --weak --preemptions 3   # a check of your own
    seer check mypkg.checks:deque --strategy dpor --schedules 50000

A check of your own is a function (``path.py::name`` or ``module:name``) that returns
``(setup, *workers, invariant)``, as the functions of ``seer.check.examples`` do, or a
``seer.check.queues.Check``; ``--weak``, ``--strategy``, ``--preemptions``,
``--schedules`` and ``--seed`` are passed to ``explore``.

Exit status: 0 when every real check passed and every planted bug was found; 1 otherwise
(a failure); 3 when a check did not finish its scope (INCOMPLETE: raise --schedules),
with no failure; 2 for bad input (an unknown check, strategy or example, a malformed
schedule, a check that cannot be loaded, an output file whose directory is missing), on
one line.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from seer.specs import output_file

__all__ = ["add_subcommand", "main"]

EXAMPLES = ("aba", "aba-fixed", "relaxed", "relaxed-fixed")
#: Exit status of a run whose scope did not finish (and found no failure).
INCOMPLETE = 3


def _is_target(name: str) -> bool:
    return "::" in name or ":" in name or name.endswith(".py")


def _load_target(target: str) -> Any:
    """The function ``path.py::name`` or ``module:name`` names."""
    import importlib
    import importlib.util
    import os

    if "::" in target:
        path, _, name = target.partition("::")
        if not os.path.isfile(path):
            raise ValueError(f"no file {path!r}")
        spec = importlib.util.spec_from_file_location(
            "seer_user_check_" + os.path.basename(path).removesuffix(".py"), path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    elif ":" in target:
        mod, _, name = target.partition(":")
        module = importlib.import_module(mod)
    else:
        raise ValueError(f"{target!r}: name the check as path.py::name or module:name")
    fn = getattr(module, name, None)
    if fn is None or not callable(fn):
        raise ValueError(f"{target!r}: {module.__name__} has no callable {name!r}")
    return fn


def _run_target(args: argparse.Namespace, target: str) -> int:
    from seer.check.explorer import explore

    try:
        made = _load_target(target)()
    except (ImportError, OSError, ValueError, SyntaxError, TypeError) as exc:
        return _usage_error(args, f"cannot load check {target}: {exc}")
    given = (("strategy", args.strategy), ("preemptions", args.preemptions),
             ("schedules", args.schedules), ("seed", args.seed))
    options = {k: v for k, v in given if v is not None}
    if args.weak:
        options["weak"] = True
    if hasattr(made, "run"):
        report = made.run(raises=False, **options)
    else:
        setup, *workers, invariant = made
        report = explore(setup, *workers, invariant=invariant, raises=False, **options)
    print(report)
    if report.failure is not None and args.dot:
        with open(args.dot, "w") as f:
            f.write(report.failure.to_dot())
    if report.failure is not None and args.trace:
        report.failure.to_trace().save(args.trace)
    return 1 if report.failure is not None else 0 if report.complete else INCOMPLETE


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

    targets = [n for n in args.names if _is_target(n)]
    if targets and not args.example:
        rest = [n for n in args.names if not _is_target(n)]
        if rest:
            return _usage_error(args, f"run your own checks apart from the project's "
                                      f"(got {', '.join(rest)} too)")
        codes = [_run_target(args, t) for t in targets]
        return 2 if 2 in codes else 1 if 1 in codes else max(codes)
    if not args.example:
        used = [option for option, value in (("--strategy", args.strategy),
                                             ("--replay", args.replay),
                                             ("--trace", args.trace), ("--dot", args.dot))
                if value]
        used += [o for o, v in (("--weak", args.weak), ("--preemptions", args.preemptions),
                                ("--schedules", args.schedules), ("--seed", args.seed))
                 if v not in (None, False)]
        if used:
            return _usage_error(args, f"{', '.join(used)} "
                                      f"{'needs' if len(used) == 1 else 'need'} --example or "
                                  "a check of your own (path.py::name, module:name)")
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
            if report.fit is False:  # a schedule of another check, or of other code
                misfit = "; ".join(n for n in report.notes if "fits only" in n) or "MISFIT"
                return _usage_error(args, f"--replay {args.replay!r} does not fit this check: "
                                          f"{misfit}")
        else:
            options.update({k: v for k, v in (("preemptions", args.preemptions),
                                              ("schedules", args.schedules),
                                              ("seed", args.seed)) if v is not None})
            if args.weak:
                options["weak"] = True
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
        return 1 if report.failure is not None else 0 if report.complete else INCOMPLETE
    unknown = [n for n in args.names if n not in CHECKS]
    if unknown:
        return _usage_error(args, f"unknown check {', '.join(unknown)}; choose from "
                                  f"{', '.join(CHECKS)}")
    ok, incomplete = True, False
    for name, report in run_all(args.names or None, planted=args.planted):
        planted = "/" in name
        passed = (report.failure is not None) if planted else (report.failure is None)
        ok &= passed
        incomplete |= not planted and report.failure is None and not report.complete
        what = ("found: " + report.failure.message[:90]) if report.failure else \
            ("exhaustive" if report.exhaustive else "INCOMPLETE")
        print(f"{'ok  ' if passed else 'FAIL'} {name:<18} {report.schedules:>6} schedules "
              f"{report.seconds:6.2f} s  {what}")
        if not passed and report.failure is not None:
            print(report.failure)
    return 1 if not ok else INCOMPLETE if incomplete else 0


def _parser(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("names", nargs="*",
                   help="checks to run (default: all): leq arena pel ring; or checks of your "
                        "own: path.py::name or module:name")
    p.add_argument("--no-planted", dest="planted", action="store_false",
                   help="do not also run each check's planted bug")
    p.add_argument("--example", choices=EXAMPLES,
                   help="explore one of the tutorial's examples instead")
    p.add_argument("--strategy", type=_strategy, default=None,
                   help="dfs (default), dpor, random or pct (--example, your checks)")
    p.add_argument("--weak", action="store_true",
                   help="weak-memory mode: RC11 (--example, your checks)")
    p.add_argument("--preemptions", type=int, default=None,
                   help="the preemption bound: DFS's (default 2) or DPOR's (default none; "
                        "with one, bounded partial-order reduction)")
    p.add_argument("--schedules", type=int, default=None,
                   help="the most executions to run (default 1000); a scope cut short is "
                        "INCOMPLETE, exit status 3")
    p.add_argument("--seed", type=int, default=None, help="random and PCT seed")
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
