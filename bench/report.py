"""One benchmark run of everything, with tables and plots, written to bench/RESULTS.md.

    .venv/bin/python -m bench.report            # fast mode: 2 rounds, about 10 minutes
    .venv/bin/python -m bench.report --full     # 6 rounds, 2 values each, all T (~35 min)
    .venv/bin/python -m bench.report --smoke    # smallest sizes, into a temp dir (tests)
    .venv/bin/python -m bench.report --only stpa   # re-run one part (here STPA), redraw all
    .venv/bin/python -m bench.report --only pursuit   # the port against PettingZoo
    .venv/bin/python -m bench.report --manycore DIR   # the many-core study's files (below)

The pyperf parts, each a file in ``bench/results`` that records interpreter, GIL state,
cores and package versions (``python -m pyperf compare_to`` reads them), run in rounds:

* ``cost_sweep``: BenchModel, 1600 entities, 0/10/50/200 µs events, every runtime;
* ``pcs_hotspot``: PCS under a moving hotspot of peak 0/2/4/8, SEER against the peers;
* ``thread_scan``, ``pcs_thread_scan``: T = 1, 2, 3, 4, 6, 8 (and up to twice the cores);
* ``entity_sweep``, ``pcs_entity_sweep``: step latency against the entity count;
* ``overhead``: EmptyModel, the scheduler's cost per event.

The once-run parts, each its own module writing one JSON file: ``efficiency`` (every
runtime side by side, with the ceiling), ``memory``, ``marl_loop`` (needs torch and
PettingZoo), ``replicas`` (needs the ``distributed`` extra), ``stpa``, ``pursuit`` (needs
PettingZoo), and ``load_balance_*`` (per-thread CPU). The many-core study's files, when
present in ``bench/results/manycore``, add the 16-thread points to the figures.

A shared machine's speed drifts, so the pyperf parts run in *rounds*: round r runs one
pyperf process of every part, then round r+1 appends to the same files (``--append``), and
speed-ups are taken within each round and then the median over rounds. The host's capacity
is measured before each round (``run.json``). The workloads evolve (clusters and the
hotspot move), so every value times the same steps: a fixed number of loops after a reset
and one warm-up step.

This module runs the parts; :mod:`bench.sizes` says what each mode measures,
:mod:`bench.markdown` writes the text with the goals of ``bench/goals.toml``, and
:mod:`bench.plots` draws the figures.
"""

from __future__ import annotations

import argparse
import importlib
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
from bench.manycore import load_results as load_manycore
from bench.markdown import Results, manycore_lines, write_results
from bench.plots import draw, draw_manycore
from bench.sizes import Sizes

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
FIGURES = HERE / "figures"
BALANCE_WORKLOADS = ("aircraft", "pcs")
#: Self-contained parts, run once (not in rounds), each a module ``bench.<name>`` with
#: ``main(argv)`` (writing ``--out FILE``, one JSON), ``section(result | None) -> lines`` and
#: optionally ``draw(result, figures) -> file names``: name -> (modules needed to run it,
#: arguments by mode).
ONCE_PARTS: dict[str, tuple[tuple[str, ...], dict[str, list[str]]]] = {
    "efficiency": ((), {"smoke": ["--smoke"], "fast": ["--rounds", "3"],
                        "full": ["--steps", "8", "--rounds", "9"]}),
    "memory": ((), {"smoke": ["--smoke"], "fast": [], "full": ["--full"]}),
    "marl_loop": (("torch", "pettingzoo"), {"smoke": ["--smoke"], "fast": [],
                                            "full": ["--full"]}),
    "replicas": (("distributed",), {"smoke": ["--smoke"], "fast": [],
                                    "full": ["--uavs", "400", "--replicas", "1", "2",
                                             "--threads", "1", "2", "--steps", "40",
                                             "--overhead-steps", "500"]}),
}


def jobs(z: Sizes) -> dict[str, tuple[str, list[str]]]:
    """part -> (pyperf module, its arguments); every part runs once per round."""
    bench = "bench.bench_runtimes"
    air = ["--workload", "aircraft", *z.loops]
    pcs = ["--workload", "pcs", *z.loops]
    return {
        "cost_sweep": (bench, ["--entities", str(z.n_bench), *z.loops, "--costs",
                               *map(str, z.costs), "--runtimes", *ALL]),
        "pcs_hotspot": (bench, [*pcs, "--entities", str(z.n_pcs), "--costs", str(z.pcs_cost),
                                "--gains", *map(str, z.gains), "--runtimes", *PEERS]),
        "pcs_entity_sweep": (bench, [*pcs, "--entities", *map(str, z.pcs_sweep), "--costs",
                                     str(z.pcs_cost), "--runtimes", "serial", "seer(2)"]),
        "thread_scan": (bench, [*air, "--entities", str(z.n_air), "--costs", str(z.air_cost),
                                "--runtimes", "serial", *[label("seer", t) for t in z.scan],
                                *[label("static", t) for t in z.scan if t > 1],
                                *[label("optimistic", t) for t in z.scan if t > 1]]),
        "pcs_thread_scan": (bench, [*pcs, "--entities", str(z.n_pcs), "--costs",
                                    str(z.pcs_cost), "--runtimes", "serial",
                                    *[label("seer", t) for t in z.scan],
                                    *[label("optimistic", t) for t in z.scan if t > 1]]),
        "entity_sweep": (bench, [*air, "--entities", *map(str, z.air_sweep), "--costs",
                                 str(z.air_cost), "--runtimes", "serial", "seer(2)"]),
        "overhead": (bench, ["--workload", "empty", *z.loops, "--entities", str(z.n_bench),
                             "--costs", "0", "--runtimes", "serial", "seer(1)", "seer(2)"]),
    }


def pyperf_run(module: str, args: list[str], out: Path, mode: list[str],
               append: bool) -> None:
    """One pyperf process of ``module``, writing (or appending to) ``out``."""
    dest = ["--append", str(out)] if append else ["-o", str(out)]
    cmd = [sys.executable, "-m", module, *mode, "--quiet", *dest, *args]
    print(f"[report] {shlex.join(cmd[2:])}", flush=True)
    subprocess.run(cmd, check=True, cwd=HERE.parent, stdout=subprocess.DEVNULL)


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
    parts = jobs(z)
    known = {*parts, "balance", "stpa", "pursuit", *ONCE_PARTS}
    wanted = set(args.only) if args.only else None
    if wanted and not wanted <= known:
        parser.error(f"unknown parts {sorted(wanted - known)}; choose from {sorted(known)}")
    if not args.plots_only:
        capacity = run_parts(z, parts, results, wanted)
        if wanted is None or wanted & set(parts):  # the round parts say which code they ran
            record_run(z, results, capacity)
    text = render(z, list(parts), results, results if separate else FIGURES)
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
                        help="re-run only these parts (names of the result files, plus "
                        "'balance', 'stpa', 'pursuit' and "
                        f"{', '.join(repr(n) for n in ONCE_PARTS) or 'none'}), reuse the other "
                        "result files")
    parser.add_argument("--manycore", type=Path, default=None, metavar="DIR",
                        help="only turn the files of a many-core study (bench.manycore, "
                        "run on a many-core machine) into bench/RESULTS-manycore.md and its "
                        "figures")
    return parser


def render(z: Sizes, names: list[str], results: Path, figures: Path) -> str:
    """Draw the figures into ``figures`` and return the text of RESULTS.md, from the
    pyperf files ``names`` and the once-run parts' files in ``results``; a part whose file
    is missing reads as not measured."""
    def once(name: str) -> dict | None:
        file = results / f"{name}.json"
        return json.loads(file.read_text()) if file.exists() else None

    parts = {name: Part(load(results / f"{name}.json")) for name in names
             if (results / f"{name}.json").exists()}
    balance = {w: once(f"load_balance_{w}") for w in BALANCE_WORKLOADS}
    manycore = results / "manycore"
    r = Results(z, parts, balance={k: v for k, v in balance.items() if v} or None,
                manycore=load_manycore(manycore) if manycore.is_dir() else None,
                **{name: once(name) for name in ("stpa", "pursuit", *ONCE_PARTS)})
    figures.mkdir(exist_ok=True)
    drawn = draw(r, figures)
    for name in ONCE_PARTS:  # the parts that draw figures of their own
        module = importlib.import_module(f"bench.{name}")
        if getattr(r, name) is not None and hasattr(module, "draw"):
            drawn += module.draw(getattr(r, name), figures)
    run_file = results / "run.json"
    run = json.loads(run_file.read_text()) if run_file.exists() else {}
    span = run_span(results / f"{name}.json" for name in parts)
    return write_results(r, drawn, run, span)


def render_manycore(results: Path, out_md: Path, figures: Path) -> None:
    """Write ``out_md`` (RESULTS-manycore.md) and its figures into ``figures`` from the
    session files of a many-core study in ``results``; where nothing was measured, say so."""
    data = load_manycore(Path(results))
    drawn, note = [], ""
    if any(data["points"].values()):
        try:
            drawn = draw_manycore(data, Path(figures))
        except ImportError as exc:  # matplotlib absent (a bundle built without it)
            note = f"Figures not drawn here ({exc}): render where matplotlib is."
    out_md = Path(out_md)
    out_md.parent.mkdir(parents=True, exist_ok=True)
    rel = os.path.relpath(figures, out_md.parent)
    out_md.write_text("\n".join(manycore_lines(data, [f"{rel}/{f}" for f in drawn], note))
                      + "\n")


def record_run(z: Sizes, results: Path, capacity: list[float] | None = None) -> None:
    """The commit being measured, the mode and the host's capacity before each round."""
    (results / "run.json").write_text(json.dumps({"commit": code_commit(), "mode": z.mode,
                                                  "capacity": capacity or []}) + "\n")


def run_parts(z: Sizes, parts: dict[str, tuple[str, list[str]]], results: Path,
              wanted: set[str] | None) -> list[float]:
    """Run the ``wanted`` parts (all when None) in rounds, then queues, load balance and the
    once-run parts; return the host's capacity measured before each round."""
    chosen = {k: v for k, v in parts.items() if wanted is None or k in wanted}
    for name in chosen:
        (results / f"{name}.json").unlink(missing_ok=True)
    capacity = []
    for r in range(z.rounds if chosen else 0):
        capacity.append(capacity_now())
        print(f"[report] round {r + 1} of {z.rounds} (capacity {capacity[-1]:.2f})",
              flush=True)
        for name, (module, extra) in chosen.items():
            out = results / f"{name}.json"
            pyperf_run(module, extra, out, z.per_round, append=out.exists())
    if wanted is None or "balance" in wanted:
        run_load_balance(z, results)
    if wanted is None or "stpa" in wanted:
        run_stpa(z, results)
    if wanted is None or "pursuit" in wanted:
        run_pursuit(z, results)
    for name in ONCE_PARTS:
        if wanted is None or name in wanted:
            run_once(name, z, results)
    return capacity


def run_stpa(z: Sizes, results: Path) -> None:
    """STPA's evaluation and preflight cost (:mod:`bench.stpa`), its progress shown."""
    cmd = [sys.executable, "-m", "bench.stpa", *z.stpa, "--out", str(results / "stpa.json")]
    print(f"[report] {shlex.join(cmd[2:])}", flush=True)
    subprocess.run(cmd, check=True, cwd=HERE.parent)


def run_pursuit(z: Sizes, results: Path) -> None:
    """The pursuit port against PettingZoo (:mod:`bench.pursuit`), its progress shown;
    skipped, with a note, where PettingZoo (the ``marl`` extra) is not installed."""
    if importlib.util.find_spec("pettingzoo") is None:
        print("[report] pursuit skipped: PettingZoo is not installed (pip install "
              "'.[marl]')", flush=True)
        return
    cmd = [sys.executable, "-m", "bench.pursuit", *z.pursuit, "--out",
           str(results / "pursuit.json")]
    print(f"[report] {shlex.join(cmd[2:])}", flush=True)
    subprocess.run(cmd, check=True, cwd=HERE.parent)


def run_once(name: str, z: Sizes, results: Path) -> None:
    """One of :data:`ONCE_PARTS`, its progress shown; skipped, with a note, where the
    module it needs is not installed."""
    needs, args = ONCE_PARTS[name]
    missing = [m for m in needs if importlib.util.find_spec(m) is None]
    if missing:
        print(f"[report] {name} skipped: {', '.join(missing)} not installed", flush=True)
        return
    cmd = [sys.executable, "-m", f"bench.{name}", *args[z.mode], "--out",
           str(results / f"{name}.json")]
    print(f"[report] {shlex.join(cmd[2:])}", flush=True)
    subprocess.run(cmd, check=True, cwd=HERE.parent)


def run_load_balance(z: Sizes, results: Path) -> None:
    """Per-thread CPU time on 2 threads: Aircraft, and PCS under a hotspot of peak 8."""
    for workload, n, cost, gain in (("aircraft", z.n_air, z.air_cost, 2),
                                    ("pcs", z.n_pcs, z.pcs_cost, 8)):
        print(f"[report] load balance, {workload}", flush=True)
        subprocess.run([sys.executable, "-m", "bench.load_balance", "--workload",
                        workload, "--entities", str(n), "--cost", str(cost), "--gain",
                        str(gain), "--threads", "2", "--steps", str(z.balance_steps),
                        "-o", str(results / f"load_balance_{workload}.json")],
                       check=True, cwd=HERE.parent, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
