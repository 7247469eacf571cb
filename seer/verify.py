"""``seer verify``: does a model keep the event contract, and does every runtime give
serial's results on it?

    seer verify mypackage.env:MyModel n=200 --steps 20 --threads 4
    seer verify pcs width=10 height=10 --runtimes seer:2 static:3

Runs the model on serial with every contract check on (debug mode: rows of other entities,
payloads, and state outside the rows, such as model attributes and module globals), then
side by side with each parallel runtime (every registered one at 2..T threads unless
``--runtimes``), and prints the first divergence with its step, field, entity and runtime,
or that everything matched. A run in which no event ran gives no verdict ("NOT VERIFIED",
naming the fix: a ``sample_actions(step)`` method). Exit status: 0 matched, 1 a contract
broken, a divergence or nothing verified, 2 bad input (the model spec, its arguments, a
runtime label). The work is :func:`seer.testing.verify`.
"""

from __future__ import annotations

from typing import Any

from seer.specs import add_model_arguments, non_negative_int, positive_int

__all__ = ["add_subcommand"]


def add_subcommand(sub: Any) -> None:
    """Register ``seer verify`` on the ``seer`` command line's subparsers."""
    p = sub.add_parser(
        "verify", help="check a model: serial with every contract check on, then each "
                       "parallel runtime beside it, bit for bit",
        description="Run the model on serial in debug mode (every contract check on, "
        "including writes outside the rows: model attributes, what they hold, module "
        "globals), then on each parallel runtime side by side with serial, and report the "
        "first divergence (step, field, entity, runtime) or that everything matched. A run in "
        "which no event ran is not verified (give the model sample_actions(step)). Exit "
        "status 0: matched; 1: a contract broken, a divergence or nothing verified; 2: bad "
        "input.")
    add_model_arguments(p)
    p.add_argument("--steps", type=positive_int, default=10, help="steps per seed (default 10)")
    p.add_argument("--threads", type=positive_int, default=3,
                   help="every registered runtime at 2..THREADS threads (default 3; "
                   "THREADS 1: each at one thread)")
    p.add_argument("--runtimes", nargs="+", default=None, metavar="LABEL",
                   help="kind:threads or kind(threads) labels instead (e.g. seer:2 static:3)")
    p.add_argument("--seeds", nargs="+", type=non_negative_int, default=[0],
                   help="episode seeds")
    p.add_argument("--max-events-per-step", type=non_negative_int, default=None,
                   metavar="N", help="stop a step after N events (default: the runtimes' "
                   "own guard, max(1000000, 10000 per entity); 0: no limit)")
    p.set_defaults(func=_cmd_verify)


def _cmd_verify(args: Any) -> int:
    from seer.specs import model_from_args
    from seer.testing import verify

    # Bad input raises the project's input errors: seer.cli.main prints them as one line.
    report = verify(model_from_args(args), args.runtimes,
                    threads=args.threads, steps=args.steps, seeds=args.seeds,
                    max_events_per_step=args.max_events_per_step)
    for line in report.lines():
        print(line)
    return 0 if report.ok else 1
