"""The ``seer`` command line: ``seer info``, ``seer list``, ``seer demo``, ``seer bench ...``,
``seer verify ...``, ``seer trace ...``, ``seer check ...``, ``seer stpa ...``,
``seer --version``. Every command that takes a model names it the same way
(:func:`seer.specs.add_model_arguments`).

Bad input (an unknown option, a negative count, an unknown model or runtime, a model
argument its constructor refuses, a missing file) is one line on stderr,
``seer <command>: error: <message>``, and exit status 2; anything else that goes wrong is
a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import platform
import re
import sys
import time
from collections.abc import Sequence
from typing import NoReturn

import seer
from seer.errors import ModelError, check_events_ran
from seer.model import sample_actions_of
from seer.platform import PACKAGES
from seer.specs import add_model_arguments, non_negative_int, output_file, positive_int

#: What a command raises for its user's input, not for a bug of its own: the model
#: specs' and constructors' ModelError (a ValueError), a module named with ``--import``
#: or a spec that is not there, and a file that cannot be read or written.
INPUT_ERRORS = (ModelError, ImportError, FileNotFoundError, IsADirectoryError,
                NotADirectoryError, PermissionError)


def interpreter_facts() -> dict[str, str]:
    """Interpreter, GIL state, cores and package versions, as printed by ``seer info``."""
    from seer.platform import gil_status

    facts = {
        "seer": seer.__version__,
        "python": f"{platform.python_implementation()} {platform.python_version()} "
                  f"({sys.executable})",
        "free-threaded build": "yes" if seer.free_threaded_build() else "no",
        # "disabled", or "ENABLED by module 'triton._C.libtriton', ..." (which import did it)
        "GIL": gil_status(),
        "cores available": str(seer.cpu_count()),
        "platform": platform.platform(),
    }
    for name, _module in PACKAGES:  # distributions: versions come from their metadata
        try:
            facts[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            facts[name] = "not installed"
    return facts


def pyperf_metadata() -> dict[str, str]:
    """:func:`interpreter_facts` as pyperf metadata keys (``seer_python``, ``seer_GIL``...),
    recorded in every benchmark result file."""
    return {f"seer_{key.replace(' ', '_')}": value for key, value in interpreter_facts().items()}


def _cmd_info(args: argparse.Namespace) -> int:
    facts = interpreter_facts()
    width = max(map(len, facts))
    for key, value in facts.items():
        print(f"{key:<{width}}  {value}")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from seer.sched import RUNTIMES
    from seer.specs import ENTRY_POINT_GROUP, registered_models

    models = registered_models()
    print(f"models (entry-point group {ENTRY_POINT_GROUP!r}; any module:callable works too):")
    width = max(map(len, models), default=0)
    for name, target in models.items():
        print(f"  {name:<{width}}  {target}")
    if not models:
        print("  none registered")
    print("runtimes (seer.make_runtime(model, NAME, threads=T); NAME:T on the command line):")
    width = max(map(len, RUNTIMES))
    for name, cls in RUNTIMES.items():
        doc = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
        doc = re.sub(r":\w+:`~?([^`]+)`|``([^`]+)``", lambda m: m[1] or m[2], doc)
        first_sentence = re.split(r"(?<=\.)\s", doc)[0]
        print(f"  {name:<{width}}  {first_sentence}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from seer.specs import model_from_args
    from seer.testing import assert_outputs_identical, assert_states_identical

    # The options of the aircraft demo, kept as shorthands: --uavs is Aircraft's n_uavs.
    extra = {key: value for key, value in (("n_uavs", args.uavs), ("cost_us", args.cost_us))
             if value is not None}
    model = model_from_args(args, spec=args.model, extra=extra)()
    with contextlib.ExitStack() as stack:
        # Both runtimes first: a thread count the runtime refuses is refused before
        # anything runs.
        labelled = [(label, stack.enter_context(seer.make_runtime(model, name, threads=n)))
                    for label, name, n in (("serial", "serial", 1),
                                           (f"seer({args.threads})", "seer", args.threads))]
        _cmd_info(args)
        actions = sample_actions_of(model)
        print(f"\ndemo: {model.name}, {args.steps} steps, serial vs SEER({args.threads} "
              "threads)")
        runs = {}
        outputs = {}
        for label, runtime in labelled:
            outs = [runtime.reset(seed=args.seed)]
            start = time.perf_counter()
            for t in tqdm(range(args.steps), desc=f"{label:>9}", unit="step"):
                outs.append(runtime.step(actions(t)))
            elapsed = time.perf_counter() - start
            runs[label] = (runtime, elapsed)
            outputs[label] = outs
        (ref, t_ref), (par, _t_par) = runs.values()
        # "bit-identical: yes" about steps in which nothing ran would be no verdict at all
        check_events_ran(ref.events_run, args.steps, f"the demo ran {args.steps} step(s)",
                         model.name, warn=False)
        identical = True
        try:
            assert_states_identical(ref, par)
            for a, b in zip(*outputs.values(), strict=True):
                assert_outputs_identical(a, b)
        except AssertionError as exc:
            identical = False
            print(f"MISMATCH: {exc}")
        print(f"\n{'runtime':<10} {'steps/s':>9} {'events/s':>10} {'speed-up':>9}")
        for label, (runtime, elapsed) in runs.items():
            print(f"{label:<10} {args.steps / elapsed:9.2f} "
                  f"{runtime.events_run / elapsed:10.0f} {t_ref / elapsed:8.2f}x")
    print(f"outputs and state bit-identical: {'yes' if identical else 'NO'}")
    if not seer.gil_disabled():
        print("note: the GIL is enabled in this interpreter, so threads cannot run Python in "
              "parallel and no speed-up is expected (use a free-threaded python3.14t).")
    return 0 if identical else 1


def _cmd_trace(args: argparse.Namespace) -> int:
    from seer.specs import model_from_args
    from seer.trace import plot_gantt

    model = model_from_args(args)()
    if args.sharing is not None:
        return _print_sharing(model, args)
    # A profile wants runs as long as they are alone: one thread unless told otherwise.
    threads = args.threads or (None if args.runtime == "serial" else
                               1 if args.parallelism is not None else 4)
    runtime = seer.make_runtime(model, args.runtime, threads=threads, trace=True)
    actions = sample_actions_of(model)
    with runtime:
        runtime.reset(args.seed)
        for t in range(args.warmup):
            runtime.step(actions(t))
        runtime.trace.clear()  # only the traced steps
        for t in range(args.warmup, args.warmup + args.steps):
            runtime.step(actions(t))
    trace = runtime.trace
    runs = trace.runs()
    events = sum(r["events"] for r in runs)
    check_events_ran(events, args.steps, f"the trace holds {args.steps} step(s)", model.name,
                     warn=False, nothing="nothing to show")
    path = trace.save(args.out)
    print(f"{path}: {len(runs)} entity runs, {events} events on "
          f"{len(trace.threads)} threads; open it in https://ui.perfetto.dev or "
          "chrome://tracing")
    if args.parallelism is not None:
        from seer.trace import parallelism_profile

        profile = parallelism_profile(trace, args.parallelism or (1, 2, 4, 8, 16),
                                      barrier_us=args.barrier_us)
        print(f"\nparallelism profile of {model.name} on {runtime.name}({runtime.threads}):")
        print(profile)
    if args.png:
        plot_gantt(trace, args.png, title=f"{model.name} on {runtime.name}"
                   f"({runtime.threads}), {args.steps} step(s)")
        print(f"{args.png}: Gantt chart of the same trace")
    return 0


def _print_sharing(model: seer.Model, args: argparse.Namespace) -> int:
    """``seer trace MODEL --sharing [COPIES]``: what seer's threads share on ``model``."""
    from seer.sched.sharing import sharing_audit

    if args.runtime != "seer":
        raise ModelError(f"--sharing audits the runtime 'seer' (SEER's workers), not "
                         f"{args.runtime!r}")
    report = sharing_audit(model, threads=args.threads or 2, steps=args.steps,
                           seed=args.seed, copies=args.sharing or None)
    print(report)
    return 0


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (and exit status 2); its
    subcommands' parsers are of this class too (argparse makes them so)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _name_commands(parser: argparse.ArgumentParser) -> None:
    """Give every (sub)command's parsed arguments its name (``command_prog``: ``"seer
    demo"``, ``"seer stpa train"``), for :func:`main`'s error line."""
    parser.set_defaults(command_prog=parser.prog)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _name_commands(child)


def build_parser() -> argparse.ArgumentParser:
    summary = " ".join(seer.__doc__.split("\n\n")[0].split())  # the first paragraph, whole
    parser = _Parser(prog="seer", description=summary,
                     epilog="A model is named 'module:callable' (found from the current "
                     "directory) or by a registered name: seer list shows them and the "
                     "runtimes. Each command has --help.")
    parser.add_argument("--version", action="version", version=f"seer {seer.__version__}")
    sub = parser.add_subparsers(dest="command")
    p_info = sub.add_parser("info", help="interpreter, GIL state, cores and package versions")
    p_info.set_defaults(func=_cmd_info)
    p_list = sub.add_parser("list", help="the registered model names and runtimes")
    p_list.set_defaults(func=_cmd_list)
    p_demo = sub.add_parser("demo", help="a model (the Aircraft swarm unless --model): serial "
                                          "vs SEER, checked identical")
    p_demo.add_argument("--model", default="aircraft",
                        help="a registered model name (aircraft, pcs, ...; seer list) or "
                             "module:callable (found from the current directory)")
    add_model_arguments(p_demo, spec=False)
    p_demo.add_argument("--uavs", type=positive_int, default=None,
                        help="the aircraft's number of UAVs (n_uavs; its default: 800)")
    p_demo.add_argument("--steps", type=positive_int, default=60)
    p_demo.add_argument("--cost-us", type=float, default=None,
                        help="mean event cost in microseconds (cost_us; the aircraft's "
                             "collision search by default: 200)")
    p_demo.add_argument("--threads", type=positive_int, default=2)
    p_demo.add_argument("--seed", type=non_negative_int, default=0)
    p_demo.set_defaults(func=_cmd_demo)
    p_trace = sub.add_parser("trace", help="record an execution trace (Perfetto / Chrome "
                                           "Trace Event JSON)")
    add_model_arguments(p_trace)
    p_trace.add_argument("--runtime", default="seer")
    p_trace.add_argument("--threads", type=positive_int, default=None,
                         help="threads of the runtime (default: 4; serial runs on one)")
    p_trace.add_argument("--steps", type=positive_int, default=3)
    p_trace.add_argument("--warmup", type=non_negative_int, default=1,
                         help="untraced steps first")
    p_trace.add_argument("--seed", type=non_negative_int, default=0)
    p_trace.add_argument("-o", "--out", type=output_file, default="trace.json")
    p_trace.add_argument("--png", type=output_file, default="",
                         help="also draw a Gantt chart to this file")
    p_trace.add_argument("--parallelism", type=positive_int, nargs="*", default=None,
                         metavar="T", help="also print the speed-up the window protocol "
                         "allows at T threads with no scheduling cost, and the chain of runs "
                         "that bounds it (default T: 1 2 4 8 16; traces 1 thread unless "
                         "--threads)")
    p_trace.add_argument("--sharing", nargs="?", const="", default=None, metavar="COPIES",
                         help="instead of a trace: list the objects seer's threads share "
                         "(reach without owning them) on the model, with the per-worker "
                         "copies COPIES (default: the runtime's; 'all', 'none', or names "
                         "from contexts,handlers,snapshot,model)")
    p_trace.add_argument("--barrier-us", type=float, default=20.0,
                         help="a window's barrier cost in the profile (default 20)")
    p_trace.set_defaults(func=_cmd_trace)
    from seer.benchmark import add_subcommand as add_bench
    from seer.check.cli import add_subcommand as add_check
    from seer.stpa.cli import add_parser as add_stpa
    from seer.verify import add_subcommand as add_verify

    add_bench(sub)
    add_check(sub)
    add_stpa(sub)
    add_verify(sub)
    _name_commands(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit status.
    Bad input is one line on stderr and status 2 (see the module docstring)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        return _cmd_info(args)
    try:
        return args.func(args)
    except INPUT_ERRORS as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"{args.command_prog}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
