"""One benchmark run of everything, with tables and plots, written to bench/RESULTS.md.

    .venv/bin/python -m bench.report            # fast mode: 2 rounds, about 10 minutes
    .venv/bin/python -m bench.report --full     # 6 rounds, 2 values each, all T (~35 min)
    .venv/bin/python -m bench.report --smoke    # smallest sizes, into a temp dir (tests)
    .venv/bin/python -m bench.report --only stpa   # re-run one part (here STPA), redraw all
    .venv/bin/python -m bench.report --manycore DIR   # a many-core run's files

The pyperf parts (:func:`jobs`: ``bench.bench_runtimes`` on the cost sweep, the PCS
hotspot, the thread scans and EmptyModel's overhead) run in *rounds*:
round r runs one pyperf process of every part and appends to its file, so speed-ups are
taken within a round and then the median over rounds; the host's capacity is measured
before each round (``run.json``). The other parts (:func:`once_parts`) run once, each a
module writing one JSON file. :mod:`bench.sizes` says what each mode measures,
:mod:`bench.markdown` writes the text with the goals of ``bench/goals.toml`` and
:mod:`bench.plots` draws the figures.
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

from bench.harness import ALL, PEERS, Part, capacity_now, code_commit, label, load, run_span
from bench.markdown import Results, write_manycore, write_results
from bench.plots import draw
from bench.sizes import Sizes

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
FIGURES = HERE / "figures"
BALANCE_WORKLOADS = ("aircraft", "pcs")


def jobs(z: Sizes) -> dict[str, list[str]]:
    """part -> its ``bench.bench_runtimes`` arguments; every part runs once per round."""
    air = ["--workload", "aircraft", *z.loops]
    pcs = ["--workload", "pcs", *z.loops]
    return {
        "cost_sweep": ["--entities", str(z.n_bench), *z.loops, "--costs", *map(str, z.costs),
                       "--runtimes", *ALL],
        "pcs_hotspot": [*pcs, "--entities", str(z.n_pcs), "--costs", str(z.pcs_cost),
                        "--gains", *map(str, z.gains), "--runtimes", *PEERS],
        "thread_scan": [*air, "--entities", str(z.n_air), "--costs", str(z.air_cost),
                        "--runtimes", "serial", *[label("seer", t) for t in z.scan],
                        *[label("static", t) for t in z.scan if t > 1],
                        *[label("optimistic", t) for t in z.scan if t > 1]],
        "pcs_thread_scan": [*pcs, "--entities", str(z.n_pcs), "--costs", str(z.pcs_cost),
                            "--runtimes", "serial", *[label("seer", t) for t in z.scan],
                            *[label("optimistic", t) for t in z.scan if t > 1]],
        "overhead": ["--workload", "empty", *z.loops, "--entities", str(z.n_bench),
                     "--costs", "0", "--runtimes", "serial", "seer(1)", "seer(2)"],
    }


def once_parts(z: Sizes) -> dict[str, tuple[tuple[str, ...], list[str]]]:
    """The parts run once: result file -> (modules it needs, ``python -m`` arguments;
    ``--out FILE`` is added)."""
    mode = {"smoke": ["--smoke"], "fast": [], "full": ["--full"]}[z.mode]
    smoke = mode if z.mode == "smoke" else []
    balance = ["bench.efficiency", "--balance", "--steps", str(z.balance_steps), *smoke]
    return {
        "efficiency": ((), ["bench.efficiency", *{"smoke": ["--smoke"],
                                                  "fast": ["--rounds", "3"],
                                                  "full": ["--steps", "8", "--rounds", "9"]
                                                  }[z.mode]]),
        "load_balance_aircraft": ((), [*balance, "--only", "aircraft"]),
        "load_balance_pcs": ((), [*balance, "--only", "pcs_gain8"]),
        "memory": ((), ["bench.memory", *mode]),
        "stpa": ((), ["bench.stpa", *smoke]),
        "pursuit": (("pettingzoo",), ["bench.pursuit", *smoke]),
        "mpe": (("pettingzoo",), ["bench.mpe", *smoke]),
        "marl_loop": (("torch", "pettingzoo"), ["bench.marl_loop", *mode]),
        "replicas": (("distributed",), ["bench.replicas", *(
            ["--uavs", "400", "--replicas", "1", "2", "--threads", "1", "2", "--steps", "40",
             "--overhead-steps", "500"] if z.mode == "full" else smoke)]),
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
    if args.plots_only and (results / "run.json").exists():  # redraw what was measured
        mode = json.loads((results / "run.json").read_text())["mode"]
    z = Sizes(mode)
    started = time.time()
    known = {*jobs(z), *once_parts(z)}
    wanted = set(args.only) if args.only else known
    if not wanted <= known:
        parser.error(f"unknown parts {sorted(wanted - known)}; choose from {sorted(known)}")
    if not args.plots_only:
        run_parts(z, results, wanted)
    text = render(z, list(jobs(z)), results, results if separate else FIGURES)
    print(f"[report] {time.time() - started:.0f} s", flush=True)
    target = results / "RESULTS.md" if separate else HERE / "RESULTS.md"
    target.write_text(text)
    print(f"[report] wrote {target}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="more rounds and values")
    parser.add_argument("--smoke", action="store_true", help="smallest sizes, one value each")
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


def render(z: Sizes, names: list[str], results: Path, figures: Path) -> str:
    """Draw the figures into ``figures`` and return the text of RESULTS.md, from the
    pyperf files ``names`` and the once-run parts' files in ``results``; a part whose file
    is missing reads as not measured."""
    parts = {name: Part(load(results / f"{name}.json")) for name in names
             if (results / f"{name}.json").exists()}
    r = Results(z, parts, balance=_balance(results),
                manycore=_once(results / "manycore", "efficiency"),
                **{name: _once(results, name) for name in ("efficiency", "memory", "stpa",
                                                            "pursuit", "mpe", "marl_loop",
                                                            "replicas")})
    figures.mkdir(exist_ok=True)
    drawn = draw(r, figures)
    run_file = results / "run.json"
    run = json.loads(run_file.read_text()) if run_file.exists() else {}
    span = run_span(results / f"{name}.json" for name in parts)
    return write_results(r, drawn, run, span)


def render_manycore(results: Path, out_md: Path, figures: Path) -> None:
    """Write ``out_md`` (RESULTS-manycore.md) and its figures (``manycore_*.png``) into
    ``figures`` from a many-core run's files in ``results``: ``efficiency.json``,
    ``load_balance_*.json`` (bench.efficiency), ``stpa_collect.json`` (seer stpa collect)
    and ``holdout.json`` (seer.stpa.holdout)."""
    results = Path(results)
    r = Results(Sizes("fast"), {}, efficiency=_once(results, "efficiency"),
                balance=_balance(results), stpa_collect=_once(results, "stpa_collect"),
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


def run_parts(z: Sizes, results: Path, wanted: set[str]) -> None:
    """Run the ``wanted`` pyperf parts in rounds (recording the commit, the mode and the
    capacity before each round in ``run.json``), then the wanted once-run parts; a part
    whose modules are not installed is skipped with a note."""
    chosen = {k: v for k, v in jobs(z).items() if k in wanted}
    for name in chosen:
        (results / f"{name}.json").unlink(missing_ok=True)
    capacity = []
    for r in range(z.rounds if chosen else 0):
        capacity.append(capacity_now())
        print(f"[report] round {r + 1} of {z.rounds} (capacity {capacity[-1]:.2f})",
              flush=True)
        for name, extra in chosen.items():
            out = results / f"{name}.json"
            dest = ["--append", str(out)] if out.exists() else ["-o", str(out)]
            _run(["-m", "bench.bench_runtimes", *z.per_round, "--quiet", *dest, *extra],
                 stdout=subprocess.DEVNULL)
    if chosen:
        (results / "run.json").write_text(json.dumps(
            {"commit": code_commit(), "mode": z.mode, "capacity": capacity}) + "\n")
    for name, (needs, args) in once_parts(z).items():
        missing = [m for m in needs if importlib.util.find_spec(m) is None]
        if name in wanted and missing:
            print(f"[report] {name} skipped: {', '.join(missing)} not installed", flush=True)
        elif name in wanted:
            _run(["-m", *args, "--out", str(results / f"{name}.json")])


if __name__ == "__main__":
    main()
