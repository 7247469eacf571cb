"""One benchmark run of everything, with tables and plots, written to bench/RESULTS.md.

    .venv/bin/python -m bench.report            # fast mode: about 25 minutes
    .venv/bin/python -m bench.report --full     # more rounds and steps
    .venv/bin/python -m bench.report --smoke    # smallest sizes, into a temp dir (tests)
    .venv/bin/python -m bench.report --only stpa   # re-run one part (here STPA), redraw all
    .venv/bin/python -m bench.report --plots-only  # redraw from bench/results
    .venv/bin/python -m bench.report --manycore DIR   # a many-core run's files

Each part (:func:`once_parts`) is a module writing one JSON file; every comparison of
runtimes is ``bench.efficiency``'s (:func:`seer.benchmark.compare`: rounds, rotation,
paired ratios, the ceiling). :mod:`bench.markdown` writes the text with the goals of
``bench/goals.toml`` and :mod:`bench.plots` draws the figures.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.markdown import Results, write_manycore, write_results
from bench.plots import draw

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
FIGURES = HERE / "figures"
BALANCE_WORKLOADS = ("aircraft", "pcs")


def once_parts(mode: str) -> dict[str, tuple[tuple[str, ...], list[str]]]:
    """The parts of a ``mode`` (smoke, fast, full) run: result file -> (modules it needs,
    ``python -m`` arguments; ``--out FILE`` is added)."""
    flag = {"smoke": ["--smoke"], "fast": [], "full": ["--full"]}[mode]
    smoke = flag if mode == "smoke" else []
    balance = ["bench.efficiency", "--balance", "--steps",
               {"smoke": "2", "fast": "10", "full": "20"}[mode], *smoke]
    return {
        "efficiency": ((), ["bench.efficiency", *{"smoke": ["--smoke"],
                                                  "fast": ["--rounds", "3"],
                                                  "full": ["--steps", "8", "--rounds", "9"]
                                                  }[mode]]),
        "load_balance_aircraft": ((), [*balance, "--only", "aircraft"]),
        "load_balance_pcs": ((), [*balance, "--only", "pcs_gain8"]),
        "parallelism": ((), ["bench.parallelism", *smoke]),
        "switches": ((), ["bench.switches", *smoke]),
        "vector": (("gymnasium",), ["bench.vector", *smoke]),
        "memory": ((), ["bench.memory", *flag]),
        "stpa": ((), ["bench.stpa", *smoke]),
        "pursuit": (("pettingzoo",), ["bench.pursuit", *smoke]),
        "mpe": (("pettingzoo",), ["bench.mpe", *smoke]),
        "marl_loop": (("torch", "pettingzoo"), ["bench.marl_loop", *flag]),
        "replicas": (("distributed",), ["bench.replicas", *(
            ["--uavs", "400", "--replicas", "1", "2", "--threads", "1", "2", "--steps", "40",
             "--overhead-steps", "500"] if mode == "full" else smoke)]),
    }


def main(argv: list[str] | None = None) -> None:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.manycore is not None:
        render_manycore(args.manycore, HERE / "RESULTS-manycore.md", FIGURES)
        print(f"[report] wrote {HERE / 'RESULTS-manycore.md'}")
        return
    results = args.out or (Path(tempfile.mkdtemp(prefix="seer-bench-smoke-")) if args.smoke
                           else RESULTS)
    results.mkdir(parents=True, exist_ok=True)
    separate = args.out is not None or args.smoke  # everything in one directory
    mode = "smoke" if args.smoke else "full" if args.full else "fast"
    started = time.time()
    known = set(once_parts(mode))
    wanted = set(args.only) if args.only else known
    if not wanted <= known:
        parser.error(f"unknown parts {sorted(wanted - known)}; choose from {sorted(known)}")
    if not args.plots_only:
        run_parts(mode, results, wanted)
    text = render(results, results if separate else FIGURES)
    print(f"[report] {time.time() - started:.0f} s", flush=True)
    target = results / "RESULTS.md" if separate else HERE / "RESULTS.md"
    target.write_text(text)
    print(f"[report] wrote {target}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="more rounds and steps")
    parser.add_argument("--smoke", action="store_true", help="smallest sizes, one round")
    parser.add_argument("--out", type=Path, default=None,
                        help="write results, figures and RESULTS.md here instead of bench/ "
                        "(default for --smoke: a new temporary directory)")
    parser.add_argument("--plots-only", action="store_true",
                        help="redraw figures and RESULTS.md from bench/results")
    parser.add_argument("--only", nargs="+", default=None, metavar="PART",
                        help="re-run only these parts (names of the result files), reuse "
                        "the other result files")
    parser.add_argument("--manycore", type=Path, default=None, metavar="DIR",
                        help="only turn the files of a many-core run (docs/manycore.md) "
                        "into bench/RESULTS-manycore.md and its figures")
    return parser


def _once(results: Path, name: str) -> dict | None:
    file = results / f"{name}.json"
    return json.loads(file.read_text()) if file.exists() else None


def _balance(results: Path) -> dict | None:
    balance = {w: _once(results, f"load_balance_{w}") for w in BALANCE_WORKLOADS}
    return {k: v for k, v in balance.items() if v} or None


def render(results: Path, figures: Path) -> str:
    """Draw the figures into ``figures`` and return the text of RESULTS.md, from the
    parts' files in ``results``; a part whose file is missing reads as not measured."""
    r = Results(balance=_balance(results), manycore=_once(results / "manycore", "efficiency"),
                **{name: _once(results, name) for name in ("efficiency", "memory", "stpa",
                                                            "pursuit", "mpe", "marl_loop",
                                                            "replicas", "parallelism",
                                                            "switches", "vector")})
    figures.mkdir(exist_ok=True)
    return write_results(r, draw(r, figures))


def render_manycore(results: Path, out_md: Path, figures: Path) -> None:
    """Write ``out_md`` (RESULTS-manycore.md) and ``figures/manycore_*.png`` from a
    many-core run's files in ``results`` (scripts/manycore-run.sh writes them)."""
    results = Path(results)
    r = Results(efficiency=_once(results, "efficiency"),
                balance=_balance(results), stpa_collect=_once(results, "stpa_collect"),
                switches=_once(results, "switches"),
                holdout=_once(results, "holdout"))
    drawn, note = [], ""
    try:
        drawn = draw(r, Path(figures), prefix="manycore_")
    except ImportError as exc:  # matplotlib absent (a bundle built without it)
        note = f"Figures not drawn here ({exc}): render where matplotlib is."
    out_md = Path(out_md)
    out_md.parent.mkdir(parents=True, exist_ok=True)
    rel = os.path.relpath(figures, out_md.parent)
    out_md.write_text(write_manycore(r, [f"{rel}/{f}" for f in drawn], note))


def _run(cmd: list[str], **kwargs: object) -> None:
    print(f"[report] {shlex.join(cmd[1:])}", flush=True)
    subprocess.run([sys.executable, *cmd], check=True, cwd=HERE.parent, **kwargs)


def run_parts(mode: str, results: Path, wanted: set[str]) -> None:
    """Run the ``wanted`` parts; a part whose modules are not installed is skipped with a
    note."""
    for name, (needs, args) in once_parts(mode).items():
        missing = [m for m in needs if importlib.util.find_spec(m) is None]
        if name in wanted and missing:
            print(f"[report] {name} skipped: {', '.join(missing)} not installed", flush=True)
        elif name in wanted:
            _run(["-m", *args, "--out", str(results / f"{name}.json")])


if __name__ == "__main__":
    main()
