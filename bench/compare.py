"""Paired before/after benchmark of two git revisions, in one run.

    .venv/bin/python -m bench.compare HEAD~1 HEAD --rounds 3 --workload pcs \\
        --entities 1600 --costs 15 --runtimes serial seer:2
    .venv/bin/python -m bench.compare main HEAD --rounds 2 --fast --costs 50

Each revision is checked out with ``git worktree add --detach`` into a temporary directory
(removed at the end, also on errors). Every round runs ``python -m bench.bench_runtimes``
with the same arguments (all arguments after the revisions that are not this script's own)
from each worktree in turn, alternating which revision goes first, so a drift of the
machine's speed lands on both alike. Each run has the worktree as working directory and as
``PYTHONPATH``, so that revision's ``seer``, ``bench`` and ``workloads`` are imported (checked
before the first round) by the parent and by pyperf's workers. Arguments reach both
revisions verbatim: use forms both understand (``seer:2`` is read by old and new ones).

Without pyperf run-shape flags, a round is ``--processes 1 --values 3 --warmups 1``, a few
minutes for the default sizes; pass ``--fast``, ``--values N`` etc. to change it. Without
``--loops``, ``--loops 4`` is added: the workloads evolve, so both revisions must time the
same steps, not a number of loops each calibrates for itself. Only committed code is
compared (a worktree holds no uncommitted changes).

The pyperf files are ``RESULTS/a-roundN.json`` and ``RESULTS/b-roundN.json`` (``--results``,
or a new temporary directory that is kept). The table gives, per benchmark (names
normalised so that ``seer:2`` and ``seer(2)`` match), the median time of A and of B over
all values, and the ratio B/A of the per-round medians: its median over rounds and its
range.

``--cpu RUNTIME [RUNTIME ...]`` compares CPU time as well as wall time, which pyperf does
not record: each round runs ``bench/steptime.py`` (this checkout's copy, with each
revision's packages) once per runtime and revision, every runtime in a fresh process,
A and B alternating; the other arguments go to ``steptime.py``:

    .venv/bin/python -m bench.compare HEAD~1 HEAD --rounds 4 --cpu serial seer:2 \
        --workload pcs --entities 1600 --cost 120 --steps 10
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from bench.harness import Runs, load, table

__all__ = ["Row", "commits_of", "compare", "format_table", "main", "summarise", "verdict",
           "worktrees"]

ROOT = Path(__file__).resolve().parent.parent
#: one round's run shape unless the arguments give their own
DEFAULT_ROUND = ["--processes", "1", "--values", "3", "--warmups", "1"]
#: pyperf flags that set a run's shape; any of them replaces DEFAULT_ROUND
SHAPE_FLAGS = {"--fast", "--rigorous", "--debug-single-value", "-p", "--processes", "-n",
               "--values", "-w", "--warmups"}
#: fixed loops per value unless given: A and B time the same steps after a reset
DEFAULT_LOOPS = ["--loops", "4"]
#: pyperf flags this script sets itself
OWN_FLAGS = {"-o", "--output", "--append"}
#: a ratio closer to 1 than this is a tie, whatever its range
NOISE = 0.03


def git(*args: str, cwd: Path = ROOT) -> str:
    """Run git; return its stdout stripped. Raises CalledProcessError with git's message."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, proc.args, proc.stdout,
                                            proc.stderr)
    return proc.stdout.strip()


def commits_of(parser: argparse.ArgumentParser, revs: list[str]) -> list[str]:
    """The full commit hash of each revision; a parser error naming them if one is not a
    commit of this repository."""
    try:
        return [git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}") for rev in revs]
    except subprocess.CalledProcessError:
        parser.error(f"{' or '.join(map(repr, revs))} is not a commit of {ROOT}")


@contextmanager
def worktrees(commits: list[str]) -> Iterator[list[Path]]:
    """A detached worktree of each commit under one temporary directory; all removed on
    exit (a failed removal is reported, not raised, so it cannot hide the real error)."""
    tmp = Path(tempfile.mkdtemp(prefix="seer-compare-"))
    paths: list[Path] = []
    print(f"[compare] worktrees in {tmp}", flush=True)
    try:
        for name, commit in zip("ab", commits, strict=True):
            path = tmp / name
            git("worktree", "add", "--detach", "--quiet", str(path), commit)
            paths.append(path)
        yield paths
    finally:
        for path in paths:
            proc = subprocess.run(["git", "worktree", "remove", "--force", str(path)],
                                  cwd=ROOT, capture_output=True, text=True)
            if proc.returncode:
                print(f"[compare] could not remove worktree {path}: {proc.stderr.strip()}",
                      file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)


def worktree_env(worktree: Path) -> dict[str, str]:
    """The environment that makes Python (and pyperf's workers, which keep PYTHONPATH)
    import the worktree's packages first."""
    return {**os.environ, "PYTHONPATH": str(worktree)}


def check_imports(worktree: Path) -> None:
    """Raise RuntimeError unless ``seer``, ``bench`` and ``workloads`` come from
    ``worktree`` when run there as the benchmark will be."""
    code = "import bench, seer, workloads; print(bench.__file__, seer.__file__, " \
           "workloads.__file__, sep='\\n')"
    proc = subprocess.run([sys.executable, "-c", code], cwd=worktree, env=worktree_env(worktree),
                          capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"cannot import the packages of {worktree}:\n{proc.stderr}")
    for path in proc.stdout.splitlines():
        if not Path(path).resolve().is_relative_to(worktree.resolve()):
            raise RuntimeError(f"{path} is imported instead of the copy in {worktree}")


def run_bench(worktree: Path, args: list[str], out: Path) -> None:
    """One pyperf run of ``bench.bench_runtimes`` from ``worktree`` into ``out``."""
    out.unlink(missing_ok=True)  # pyperf refuses to overwrite a file
    cmd = [sys.executable, "-m", "bench.bench_runtimes", *args, "-o", str(out)]
    proc = subprocess.run(cmd, cwd=worktree, env=worktree_env(worktree), capture_output=True,
                          text=True)
    if proc.returncode:
        raise RuntimeError(f"bench_runtimes failed in {worktree} (exit {proc.returncode}):\n"
                           f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}")


def compare(commits: list[str], rounds: int, args: list[str], results: Path) -> list[list[Runs]]:
    """Run every round; return, per revision (a, b), the runs loaded from each round."""
    loaded: list[list[Runs]] = [[], []]
    with worktrees(commits) as trees:
        for tree in trees:
            check_imports(tree)
        for r in range(rounds):
            order = (0, 1) if r % 2 == 0 else (1, 0)  # alternate which revision goes first
            for i in order:
                out = results / f"{'ab'[i]}-round{r + 1}.json"
                started = time.perf_counter()
                run_bench(trees[i], args, out)
                print(f"[compare] round {r + 1} of {rounds}: {'AB'[i]} "
                      f"({time.perf_counter() - started:.0f} s)", flush=True)
                loaded[i].append(load(out))
    return loaded


def run_steptime(worktree: Path, args: list[str]) -> dict:
    """One ``bench/steptime.py`` run (this checkout's file) with ``worktree``'s packages."""
    cmd = [sys.executable, str(ROOT / "bench" / "steptime.py"), *args]
    proc = subprocess.run(cmd, cwd=worktree, env=worktree_env(worktree), capture_output=True,
                          text=True)
    if proc.returncode:
        raise RuntimeError(f"steptime failed in {worktree} (exit {proc.returncode}):\n"
                           f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compare_cpu(commits: list[str], rounds: int, runtimes: list[str],
                args: list[str]) -> list[list[dict[str, tuple[float, float]]]]:
    """Every round of the ``--cpu`` mode; per revision (a, b), per round, ``runtime ->
    (wall, cpu)`` seconds per step."""
    loaded: list[list[dict[str, tuple[float, float]]]] = [[], []]
    with worktrees(commits) as trees:
        for tree in trees:
            check_imports(tree)
        for r in range(rounds):
            got: list[dict[str, tuple[float, float]]] = [{}, {}]
            for k, runtime in enumerate(runtimes):
                # alternate which revision goes first, over runtimes and rounds
                for i in (0, 1) if (r + k) % 2 == 0 else (1, 0):
                    res = run_steptime(trees[i], [*args, "--runtime", runtime])
                    got[i][res["runtime"]] = (res["wall_s"], res["cpu_s"])
            for i in (0, 1):
                loaded[i].append(got[i])
            print(f"[compare] round {r + 1} of {rounds} done", flush=True)
    return loaded


def format_cpu_table(a: list[dict[str, tuple[float, float]]],
                     b: list[dict[str, tuple[float, float]]]) -> list[str]:
    """Per runtime: median wall and CPU per step of A and B, and B/A per round (median
    over rounds, and range), with the wall verdict."""
    rows = []
    for name in a[0]:
        cells = [name]
        for j in (0, 1):  # wall, then CPU
            ratios = [rb[name][j] / ra[name][j] for ra, rb in zip(a, b, strict=True)]
            ratio = statistics.median(ratios)
            cells += [_seconds(statistics.median(ra[name][j] for ra in a)),
                      _seconds(statistics.median(rb[name][j] for rb in b)),
                      f"{ratio:.3f} ({min(ratios):.3f}-{max(ratios):.3f})"]
            if j == 0:
                wall_verdict = verdict(ratio, min(ratios), max(ratios))
        rows.append([*cells, wall_verdict])
    return table(["runtime", "A wall", "B wall", "B/A wall", "A CPU", "B CPU", "B/A CPU",
                  "verdict (wall)"], rows)


class Row(NamedTuple):
    """One benchmark: median seconds of A and B over all values, and the ratio B/A of the
    per-round medians (median over rounds, lowest and highest round)."""

    name: str
    a: float
    b: float
    ratio: float
    low: float
    high: float


def _values(runs: list[list[float]]) -> list[float]:
    return [v for run in runs for v in run]


def summarise(a: list[Runs], b: list[Runs]) -> tuple[list[Row], list[str]]:
    """Rows for the benchmarks present in every round of both revisions (in A's order),
    and the names of those that are not."""
    every = [*a, *b]
    names = list(dict.fromkeys(n for runs in every for n in runs))
    common = [n for n in names if all(_values(runs.get(n, [])) for runs in every)]
    rows = []
    for n in common:
        per_round = [statistics.median(_values(rb[n])) / statistics.median(_values(ra[n]))
                     for ra, rb in zip(a, b, strict=True)]
        rows.append(Row(n, statistics.median(v for ra in a for v in _values(ra[n])),
                        statistics.median(v for rb in b for v in _values(rb[n])),
                        statistics.median(per_round), min(per_round), max(per_round)))
    return rows, [n for n in names if n not in common]


def verdict(ratio: float, low: float, high: float) -> str:
    """``same within noise`` when the range of B/A straddles 1 or the median is within
    :data:`NOISE` of 1; else which revision is faster, by how much."""
    if low <= 1.0 <= high or abs(ratio - 1.0) < NOISE:
        return "same within noise"
    if ratio < 1.0:
        return f"B faster ({(1.0 - ratio) * 100:.0f} %)"
    return f"B slower ({(ratio - 1.0) * 100:.0f} %)"


def _seconds(t: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def format_table(rows: list[Row]) -> list[str]:
    """The markdown table of :func:`summarise`'s rows."""
    return table(["benchmark", "A median", "B median", "B/A (median)", "B/A (range)",
                  "verdict"],
                 [[r.name, _seconds(r.a), _seconds(r.b), f"{r.ratio:.3f}",
                   f"{r.low:.3f}-{r.high:.3f}", verdict(r.ratio, r.low, r.high)]
                  for r in rows])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], allow_abbrev=False,
        usage="python -m bench.compare REV_A REV_B [--rounds N] [--results DIR] "
        "[bench_runtimes args...]",
        epilog="Every other argument goes to bench.bench_runtimes of both revisions.")
    parser.add_argument("rev_a", metavar="REV_A", help="the 'before' revision")
    parser.add_argument("rev_b", metavar="REV_B", help="the 'after' revision")
    parser.add_argument("--rounds", type=int, default=3, help="paired rounds (default 3)")
    parser.add_argument("--results", type=Path, default=None,
                        help="directory for the pyperf files (default: a new temporary one)")
    parser.add_argument("--cpu", nargs="+", metavar="RUNTIME", default=None,
                        help="compare wall and CPU time of these runtimes with "
                        "bench/steptime.py instead of pyperf (other arguments go to it)")
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = _parser()
    args, bench_args = parser.parse_known_args(argv)
    flags = {a.split("=", 1)[0] for a in bench_args}
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    if args.cpu:
        _main_cpu(parser, args, bench_args)
        return
    if flags & OWN_FLAGS:
        parser.error(f"{sorted(flags & OWN_FLAGS)} are set by bench.compare (see --results)")
    if not flags & SHAPE_FLAGS:
        bench_args = [*DEFAULT_ROUND, *bench_args]
    if not flags & {"-l", "--loops"}:
        bench_args = [*DEFAULT_LOOPS, *bench_args]
    commits = commits_of(parser, [args.rev_a, args.rev_b])
    results = args.results or Path(tempfile.mkdtemp(prefix="seer-compare-results-"))
    results.mkdir(parents=True, exist_ok=True)
    try:
        a, b = compare(commits, args.rounds, bench_args, results)
    except RuntimeError as e:
        sys.exit(f"[compare] {e}")
    rows, unpaired = summarise(a, b)
    print(f"\nA = {args.rev_a} ({commits[0][:10]}), B = {args.rev_b} ({commits[1][:10]}); "
          f"{args.rounds} rounds of bench_runtimes {' '.join(bench_args)}; pyperf files in "
          f"{results}\n")
    print("\n".join(format_table(rows)))
    if unpaired:
        print(f"\nnot in every run of both revisions (left out): {', '.join(unpaired)}")


def _main_cpu(parser: argparse.ArgumentParser, args: argparse.Namespace,
              steptime_args: list[str]) -> None:
    commits = commits_of(parser, [args.rev_a, args.rev_b])
    try:
        a, b = compare_cpu(commits, args.rounds, args.cpu, steptime_args)
    except RuntimeError as e:
        sys.exit(f"[compare] {e}")
    print(f"\nA = {args.rev_a} ({commits[0][:10]}), B = {args.rev_b} ({commits[1][:10]}); "
          f"{args.rounds} rounds of bench/steptime.py {' '.join(steptime_args)}, each "
          "runtime in a fresh process; per step\n")
    print("\n".join(format_cpu_table(a, b)))


if __name__ == "__main__":
    main()
