"""Instructions and simulated cache misses per step, counted by valgrind's cachegrind:
a measurement that does not move with the host's load.

    .venv/bin/python -m bench.cachegrind --runtimes serial seer:1 --workload pcs \\
        --entities 1600 --cost 120
    .venv/bin/python -m bench.cachegrind --revs HEAD~1 HEAD --runtimes seer:1 --top 15 \\
        --workload pcs --entities 1600 --cost 120

Wall and CPU time on a shared 2-core host move by several per cent from run to run, which
hides the effect of most single changes to the runtime (``bench.compare`` pairs and
repeats runs to see through it). Instruction counts do not move: the same code on the same
inputs executes the same instructions. Cachegrind also simulates the caches, so a change
that touches more memory shows up as more misses even when the host is too noisy to time
it. What neither shows is what a miss or an instruction costs on the real machine, nor any
effect between threads: valgrind runs one thread at a time. Use it on one-thread runs
(``serial``, ``seer:1``) and read the two-thread costs from ``bench.efficiency``.

Each runtime runs ``bench/steptime.py`` (this checkout's copy; other arguments go to it)
under cachegrind twice, with ``--steps 1`` and ``--steps 1+STEPS`` after the same warm-up,
and the difference is divided by ``STEPS``, so imports, model building and the warm-up
cancel out. The last-level cache is simulated as ``--ll-bytes`` (default 2 MiB, 16-way,
64-byte lines: this machine's per-core L2) instead of cachegrind's default (the shared
L3, where this workload's data fits and nothing misses). ``--revs A B`` runs every
runtime in a detached worktree of each revision (as ``bench.compare`` does); ``--top N``
lists the N functions whose instructions and whose last-level misses change most between
the first two runs. BLAS runs on one thread (``OPENBLAS_NUM_THREADS=1``): valgrind runs one
thread at a time, so its idle threads would only add instructions that vary from run to
run.

The difference of two processes also holds whatever their start and exit did differently
(the memory allocator's clean-up at exit, a garbage collection landing in one of them):
some hundred thousand instructions here. Count steps that are much larger than that (the
benchmark sizes are: PCS 1600 cells at ``--cost 120`` runs about 800 million instructions
per step), and read functions of the allocator and the collector in ``--top`` with that
in mind.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from bench.compare import ROOT, check_imports, commits_of, worktree_env, worktrees
from bench.harness import table

__all__ = ["Counts", "counts_per_step", "main", "parse", "top_differences"]

#: The events reported, by cachegrind name: instructions, L1 data misses (read + write),
#: last-level misses (read + write, instruction fetches included).
COLUMNS = {"instructions": ("Ir",), "L1d misses": ("D1mr", "D1mw"),
           "LL misses": ("ILmr", "DLmr", "DLmw")}


#: Valgrind runs one thread at a time, so BLAS's idle threads would only add instructions
#: that vary from run to run (their spinning): they are not started.
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


class Counts(NamedTuple):
    """A cachegrind profile: the program totals, and the totals of every function (keyed by
    ``file:function``), each a Counter by event name."""

    totals: Counter
    functions: dict[str, Counter]


def parse(text: str) -> Counts:
    """Read a ``cachegrind.out`` file's text (the format valgrind 3.x writes)."""
    events: list[str] = []
    functions: dict[str, Counter] = {}
    totals: Counter = Counter()
    file = function = "?"
    current: Counter | None = None
    for line in text.splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("fl="):
            file = line[3:].strip()
        elif line.startswith("fn="):
            function = f"{file.rsplit('/', 1)[-1]}:{line[3:].strip()}"
            current = functions.setdefault(function, Counter())
        elif line.startswith("summary:"):
            totals.update(dict(zip(events, map(int, line.split()[1:]), strict=False)))
        elif line[:1].isdigit() and current is not None:
            # "line count count ..."; trailing zero counts may be left out
            current.update(dict(zip(events, map(int, line.split()[1:]), strict=False)))
    if not events:
        raise ValueError("not a cachegrind output file: no 'events:' line")
    if not totals:  # old files without a summary line
        for c in functions.values():
            totals.update(c)
    return Counts(totals, functions)


def difference(longer: Counts, shorter: Counts, steps: int) -> Counts:
    """Counts per step of the ``steps`` steps that ``longer`` ran beyond ``shorter``."""
    def per_step(a: Counter, b: Counter) -> Counter:
        return Counter({k: (a[k] - b[k]) / steps for k in a.keys() | b.keys()})
    names = longer.functions.keys() | shorter.functions.keys()
    return Counts(per_step(longer.totals, shorter.totals),
                  {n: per_step(longer.functions.get(n, Counter()),
                               shorter.functions.get(n, Counter())) for n in names})


def column(counts: Counter, name: str) -> float:
    return sum(counts[e] for e in COLUMNS[name])


def run_profile(python_args: list[str], cwd: Path, env: dict[str, str] | None,
                ll_bytes: int, out: Path) -> Counts:
    """One cachegrind run of ``python python_args`` in ``cwd`` (importing that directory's
    packages first unless ``env`` says otherwise)."""
    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--LL={ll_bytes},16,64",
           f"--cachegrind-out-file={out}", sys.executable, *python_args]
    env = {**(env if env is not None else {**os.environ, "PYTHONPATH": str(cwd)}),
           **ONE_BLAS_THREAD}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"cachegrind run failed (exit {proc.returncode}): "
                           f"{' '.join(cmd)}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return parse(out.read_text())


def counts_per_step(runtime: str, steptime_args: list[str], steps: int, ll_bytes: int,
                    cwd: Path = ROOT, env: dict[str, str] | None = None) -> Counts:
    """Per-step counts of ``runtime`` (``bench/steptime.py`` run for 1 and ``1 + steps``
    timed steps, the difference divided by ``steps``)."""
    script = str(ROOT / "bench" / "steptime.py")
    with tempfile.TemporaryDirectory(prefix="seer-cachegrind-") as tmp:
        runs = [run_profile([script, *steptime_args, "--runtime", runtime, "--steps", str(n)],
                            cwd, env, ll_bytes, Path(tmp) / f"cg.{n}.out")
                for n in (1, 1 + steps)]
    return difference(runs[1], runs[0], steps)


def top_differences(a: Counts, b: Counts, n: int, by: str = "instructions") -> list[list[str]]:
    """The ``n`` functions whose count in column ``by`` (see :data:`COLUMNS`) changes most
    from ``a`` to ``b`` (per step), largest change first, with their instructions and
    last-level misses in ``a`` and the change of each (equal changes by name)."""
    names = a.functions.keys() | b.functions.keys()
    empty: Counter = Counter()

    def value(p: Counts, name: str, col: str) -> float:
        return column(p.functions.get(name, empty), col)

    ranked = sorted(names, key=lambda f: (-abs(value(b, f, by) - value(a, f, by)), f))
    return [[f, f"{value(a, f, 'instructions'):,.0f}",
             f"{value(b, f, 'instructions') - value(a, f, 'instructions'):+,.0f}",
             f"{value(a, f, 'LL misses'):,.0f}",
             f"{value(b, f, 'LL misses') - value(a, f, 'LL misses'):+,.0f}"]
            for f in ranked[:n]]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], allow_abbrev=False,
        epilog="Every other argument goes to bench/steptime.py (--workload, --entities, "
        "--cost, --warmup, ...).")
    parser.add_argument("--runtimes", nargs="+", default=["serial", "seer:1"],
                        metavar="RUNTIME", help="runtimes as steptime.py reads them "
                        "(default: serial seer:1)")
    parser.add_argument("--steps", type=int, default=2, help="steps counted (default 2)")
    parser.add_argument("--ll-bytes", type=int, default=2 << 20,
                        help="simulated last-level cache size (default 2 MiB)")
    parser.add_argument("--revs", nargs=2, metavar=("REV_A", "REV_B"),
                        help="count each runtime in a worktree of each revision")
    parser.add_argument("--top", type=int, default=0, metavar="N",
                        help="list the N functions that differ most between the first "
                        "two runs")
    parser.add_argument("--out", type=Path, help="also write the counts as JSON")
    return parser


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = _parser()
    args, steptime_args = parser.parse_known_args(argv)
    if args.steps < 1:
        parser.error("--steps must be >= 1")
    if any(a.split("=", 1)[0] in ("--steps", "--runtime") for a in steptime_args):
        parser.error("--steps and --runtime are set by bench.cachegrind (see --runtimes)")
    if shutil.which("valgrind") is None:
        sys.exit("[cachegrind] valgrind is not installed (apt install valgrind)")
    profiles: dict[str, Counts] = {}
    try:
        if args.revs:
            commits = commits_of(parser, args.revs)
            with worktrees(commits) as trees:
                for tree in trees:
                    check_imports(tree)
                for runtime in args.runtimes:
                    for rev, tree in zip(args.revs, trees, strict=True):
                        print(f"[cachegrind] {runtime} at {rev}", flush=True)
                        profiles[f"{runtime} @ {rev}"] = counts_per_step(
                            runtime, steptime_args, args.steps, args.ll_bytes, tree,
                            worktree_env(tree))
        else:
            for runtime in args.runtimes:
                print(f"[cachegrind] {runtime}", flush=True)
                profiles[runtime] = counts_per_step(runtime, steptime_args, args.steps,
                                                    args.ll_bytes)
    except RuntimeError as e:
        sys.exit(f"[cachegrind] {e}")
    names = list(profiles)
    first = profiles[names[0]].totals
    rows = []
    result: dict[str, dict[str, float]] = {}
    for name, p in profiles.items():
        values = {col: column(p.totals, col) for col in COLUMNS}
        result[name] = values
        rows.append([name, *(f"{v:,.0f}" for v in values.values()),
                     *(f"{v / column(first, col):.3f}" if column(first, col) else "-"
                       for col, v in values.items())])
    print(f"\nPer step ({args.steps} steps counted; last level simulated as "
          f"{args.ll_bytes / 2**20:g} MiB; bench/steptime.py {' '.join(steptime_args)})\n")
    print("\n".join(table(["run", *COLUMNS, *(f"{c} / first" for c in COLUMNS)], rows)))
    if args.top and len(names) >= 2:
        for by in ("instructions", "LL misses"):
            print(f"\nFunctions whose {by} change most, {names[0]} -> {names[1]} (per step)\n")
            print("\n".join(table(["file:function", "instructions", "change", "LL misses",
                                   "change"],
                                  top_differences(profiles[names[0]], profiles[names[1]],
                                                  args.top, by))))
    if args.out:
        args.out.write_text(json.dumps({"argv": argv if argv is not None else sys.argv[1:],
                                        "steps": args.steps, "ll_bytes": args.ll_bytes,
                                        "per_step": result}, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
