r"""Before and after: two git revisions (or runtimes side by side), paired, in one run.

    .venv/bin/python -m bench.compare HEAD~1 HEAD --rounds 3 --workload pcs \
        --entities 1600 --costs 15 --runtimes serial seer:2          # pyperf wall time
    .venv/bin/python -m bench.compare HEAD~1 HEAD --rounds 4 --cpu serial seer:2 \
        --workload pcs --entities 1600 --cost 120 --steps 10         # wall and CPU
    .venv/bin/python -m bench.compare --cachegrind serial seer:1 --top 20 \
        --workload pcs --entities 1600 --cost 120                    # instructions, misses
    .venv/bin/python -m bench.compare --perf serial seer:1 independent:2 seer:2 \
        --workload pcs --cost 15 --steps 40                          # CPU per function

Each revision runs in a detached ``git worktree`` (imports checked, removed at the end),
rounds alternating which goes first: ``bench.bench_runtimes`` under pyperf (B/A of the
per-round medians), or with ``--cpu``, ``--cachegrind`` and ``--perf`` each runtime alone
in a fresh process (:data:`CHILD`). The profilers also run on this checkout alone. What
each mode is for, and how to read it: docs/performance.md.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from bench.harness import ROOT, Runs, label, load, parse_runtime, table

__all__ = ["Counts", "Row", "check_imports", "column", "difference", "format_cpu_table",
           "format_table", "main", "parse", "summarise", "top_differences", "verdict",
           "worktrees"]

#: one pyperf round's shape unless the arguments give their own
DEFAULT_ROUND = ["--processes", "1", "--values", "3", "--warmups", "1"]
SHAPE_FLAGS = {"--fast", "--rigorous", "--debug-single-value", "-p", "--processes", "-n",
               "--values", "-w", "--warmups"}
OWN_FLAGS = {"-o", "--output", "--append"}
#: a ratio closer to 1 than this is a tie, whatever its range
NOISE = 0.03
#: One runtime's wall and CPU seconds per step (``independent:T``: T serial runs, one per
#: thread; its CPU per step of one run) and the monotonic clock's interval of its timed
#: steps, printed as JSON. Run with ``python -c`` in a revision's worktree, it uses only
#: what older revisions have too (``bench.bench_runtimes.make_model``). ``busy_ns`` fixes
#: BusyWork's calibration, which moves by about 10 % between processes, so both revisions
#: run the same work.
CHILD = """\
import json, sys, threading, time
import seer, seer.busywork
from bench.bench_runtimes import make_model
a = json.loads(sys.argv[1])
if a["busy_ns"] > 0:
    seer.busywork._ns_per_element = a["busy_ns"]
copies = a["threads"] if a["kind"] == "independent" else 1
kind, threads = ("serial", 1) if a["kind"] == "independent" else (a["kind"], a["threads"])
runs = []
for _ in range(copies):
    model = make_model(a["workload"], a["entities"], a["cost"], a["fanout"], a["gain"])
    actions = [model.sample_actions(t) for t in range(a["warmup"] + a["steps"])]
    rt = seer.make_runtime(model, kind, threads=threads)
    rt.reset(seed=0)
    for t in range(a["warmup"]):
        rt.step(actions[t])
    runs.append((rt, actions[a["warmup"]:]))
def run(rt, actions):
    for x in actions:
        rt.step(x)
others = [threading.Thread(target=run, args=r) for r in runs[1:]]
c0, t0 = time.process_time(), time.monotonic_ns()
for w in others:
    w.start()
run(*runs[0])
for w in others:
    w.join()
t1, cpu = time.monotonic_ns(), time.process_time() - c0
for rt, _ in runs:
    rt.close()
print(json.dumps({"wall_s": (t1 - t0) / 1e9 / a["steps"], "cpu_s": cpu / a["steps"] / copies,
                  "start_ns": t0, "end_ns": t1, "steps": a["steps"], "runs": copies}))
"""
#: cachegrind's events reported: instructions, L1 data misses, last-level misses
COLUMNS = {"instructions": ("Ir",), "L1d misses": ("D1mr", "D1mw"),
           "LL misses": ("ILmr", "DLmr", "DLmw")}


# -- worktrees -------------------------------------------------------------------------------
def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()


@contextmanager
def worktrees(commits: list[str]) -> Iterator[list[Path]]:
    """A detached worktree of each commit, its imports checked; all removed on exit (a
    failed removal is reported, not raised, so it cannot hide the real error)."""
    tmp = Path(tempfile.mkdtemp(prefix="seer-compare-"))
    paths: list[Path] = []
    print(f"[compare] worktrees in {tmp}", flush=True)
    try:
        for name, commit in zip("ab", commits, strict=True):
            paths.append(tmp / name)
            git("worktree", "add", "--detach", "--quiet", str(paths[-1]), commit)
        for path in paths:
            check_imports(path)
        yield paths
    finally:
        for path in paths:
            proc = subprocess.run(["git", "worktree", "remove", "--force", str(path)],
                                  cwd=ROOT, capture_output=True, text=True)
            if proc.returncode:
                print(f"[compare] could not remove worktree {path}: {proc.stderr.strip()}",
                      file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)


def check_imports(worktree: Path) -> None:
    """Raise RuntimeError unless ``seer``, ``bench`` and ``workloads`` come from
    ``worktree`` when run there as the benchmark will be."""
    code = "import bench, seer, workloads; print(bench.__file__, seer.__file__, " \
           "workloads.__file__, sep='\\n')"
    proc = _run([sys.executable, "-c", code], worktree, check=False)
    if proc.returncode:
        raise RuntimeError(f"cannot import the packages of {worktree}:\n{proc.stderr}")
    for path in proc.stdout.splitlines():
        if not Path(path).resolve().is_relative_to(worktree.resolve()):
            raise RuntimeError(f"{path} is imported instead of the copy in {worktree}")


def _run(cmd: list[str], where: Path, check: bool = True,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``cmd`` in ``where`` with its packages first on ``PYTHONPATH`` (pyperf's workers
    keep it); RuntimeError with the end of its output if it fails and ``check``."""
    env = {**os.environ, "PYTHONPATH": str(where), **(env or {})}
    proc = subprocess.run(cmd, cwd=where, env=env, capture_output=True, text=True)
    if check and proc.returncode:
        raise RuntimeError(f"{' '.join(cmd[:4])} failed in {where} (exit {proc.returncode}):"
                           f"\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return proc


def _orders(rounds: int, items: int) -> Iterator[tuple[int, int, tuple[int, int]]]:
    """(round, item, revision order): A and B alternate over rounds and items."""
    for r, k in itertools.product(range(rounds), range(items)):
        yield r, k, (0, 1) if (r + k) % 2 == 0 else (1, 0)


# -- pyperf ----------------------------------------------------------------------------------
def pyperf_rounds(trees: list[Path], rounds: int, args: list[str],
                  results: Path) -> list[list[Runs]]:
    """Per revision (a, b), the pyperf runs of each round."""
    loaded: list[list[Runs]] = [[], []]
    for r, _k, order in _orders(rounds, 1):
        for i in order:
            out = results / f"{'ab'[i]}-round{r + 1}.json"
            out.unlink(missing_ok=True)  # pyperf refuses to overwrite a file
            started = time.perf_counter()
            _run([sys.executable, "-m", "bench.bench_runtimes", *args, "-o", str(out)],
                 trees[i])
            print(f"[compare] round {r + 1} of {rounds}: {'AB'[i]} "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
            loaded[i].append(load(out))
    return loaded


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
                        *_spread(per_round)))
    return rows, [n for n in names if n not in common]


def _spread(per_round: list[float]) -> tuple[float, float, float]:
    return statistics.median(per_round), min(per_round), max(per_round)


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
    return table(["benchmark", "A median", "B median", "B/A (median)", "B/A (range)",
                  "verdict"],
                 [[r.name, _seconds(r.a), _seconds(r.b), f"{r.ratio:.3f}",
                   f"{r.low:.3f}-{r.high:.3f}", verdict(r.ratio, r.low, r.high)]
                  for r in rows])


# -- wall and CPU ----------------------------------------------------------------------------
def _child_args(model: argparse.Namespace, runtime: str, steps: int) -> list[str]:
    kind, threads = parse_runtime(runtime)
    return ["-c", CHILD, json.dumps({**vars(model), "kind": kind, "threads": threads,
                                     "steps": steps})]


def cpu_rounds(trees: list[Path], rounds: int, runtimes: list[str],
               model: argparse.Namespace) -> list[list[dict[str, tuple[float, float]]]]:
    """Per revision (a, b), per round, ``runtime -> (wall, cpu)`` seconds per step."""
    loaded: list[list[dict[str, tuple[float, float]]]] = [
        [{} for _ in range(rounds)] for _ in range(2)]
    for r, k, order in _orders(rounds, len(runtimes)):
        for i in order:
            proc = _run([sys.executable, *_child_args(model, runtimes[k], model.steps)],
                        trees[i])
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            loaded[i][r][label(*parse_runtime(runtimes[k]))] = (got["wall_s"], got["cpu_s"])
        if k == len(runtimes) - 1:
            print(f"[compare] round {r + 1} of {rounds} done", flush=True)
    return loaded


def format_cpu_table(a: list[dict[str, tuple[float, float]]],
                     b: list[dict[str, tuple[float, float]]]) -> list[str]:
    """Per runtime: median wall and CPU per step of A and B, and B/A per round (median
    over rounds, and range), with the wall verdict."""
    rows = []
    for name in a[0]:
        cells, verdicts = [name], []
        for j in (0, 1):  # wall, then CPU
            ratio, low, high = _spread([rb[name][j] / ra[name][j]
                                        for ra, rb in zip(a, b, strict=True)])
            cells += [_seconds(statistics.median(ra[name][j] for ra in a)),
                      _seconds(statistics.median(rb[name][j] for rb in b)),
                      f"{ratio:.3f} ({low:.3f}-{high:.3f})"]
            verdicts.append(verdict(ratio, low, high))
        rows.append([*cells, verdicts[0]])
    return table(["runtime", "A wall", "B wall", "B/A wall", "A CPU", "B CPU", "B/A CPU",
                  "verdict (wall)"], rows)


# -- cachegrind ------------------------------------------------------------------------------
class Counts(NamedTuple):
    """A cachegrind profile: program totals and per-function totals (``file:function``),
    each a Counter by event name."""

    totals: Counter
    functions: dict[str, Counter]


def parse(text: str) -> Counts:
    """Read a ``cachegrind.out`` file's text (the format valgrind 3.x writes)."""
    events: list[str] = []
    functions: dict[str, Counter] = {}
    totals: Counter = Counter()
    file = "?"
    current: Counter | None = None
    for line in text.splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("fl="):
            file = line[3:].strip()
        elif line.startswith("fn="):
            name = f"{file.rsplit('/', 1)[-1]}:{line[3:].strip()}"
            current = functions.setdefault(name, Counter())
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


def counts_per_step(runtime: str, model: argparse.Namespace, steps: int, ll_bytes: int,
                    where: Path) -> Counts:
    """Per-step counts of ``runtime``: :data:`CHILD` under cachegrind for 1 and
    ``1 + steps`` timed steps, the difference divided by ``steps`` (imports, model building
    and warm-up cancel out). BLAS on one thread: its idle threads would only add noise."""
    runs = []
    with tempfile.TemporaryDirectory(prefix="seer-cachegrind-") as tmp:
        for n in (1, 1 + steps):
            out = Path(tmp) / f"cg.{n}.out"
            _run(["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--LL={ll_bytes},16,64",
                  f"--cachegrind-out-file={out}", sys.executable,
                  *_child_args(model, runtime, n)], where,
                 env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
            runs.append(parse(out.read_text()))
    return difference(runs[1], runs[0], steps)


def top_differences(a: Counts, b: Counts, n: int, by: str = "instructions") -> list[list[str]]:
    """The ``n`` functions whose count in column ``by`` changes most from ``a`` to ``b``
    (per step), largest first (ties by name), with their instructions and last-level misses
    in ``a`` and the change of each."""
    empty: Counter = Counter()

    def value(p: Counts, name: str, col: str) -> float:
        return column(p.functions.get(name, empty), col)

    ranked = sorted(a.functions.keys() | b.functions.keys(),
                    key=lambda f: (-abs(value(b, f, by) - value(a, f, by)), f))
    return [[f, f"{value(a, f, 'instructions'):,.0f}",
             f"{value(b, f, 'instructions') - value(a, f, 'instructions'):+,.0f}",
             f"{value(a, f, 'LL misses'):,.0f}",
             f"{value(b, f, 'LL misses') - value(a, f, 'LL misses'):+,.0f}"]
            for f in ranked[:n]]


def cachegrind_table(profiles: dict[str, Counts], top: int) -> list[str]:
    first = profiles[next(iter(profiles))].totals
    rows = [[name, *(f"{column(p.totals, c):,.0f}" for c in COLUMNS),
             *(f"{column(p.totals, c) / column(first, c):.3f}" if column(first, c) else "-"
               for c in COLUMNS)] for name, p in profiles.items()]
    out = table(["run", *COLUMNS, *(f"{c} / first" for c in COLUMNS)], rows)
    names = list(profiles)
    for by in ("instructions", "LL misses") if top and len(names) >= 2 else ():
        out += ["", f"Functions whose {by} change most, {names[0]} -> {names[1]} (per step)",
                "", *table(["file:function", "instructions", "change", "LL misses", "change"],
                           top_differences(profiles[names[0]], profiles[names[1]], top, by))]
    return out


# -- perf ------------------------------------------------------------------------------------
#: perf's sampling frequency (Hz): about one sample per millisecond of CPU
FREQUENCY = 999
_HEADER = re.compile(r"^\s*\d+\s+(\d+\.\d+):\s+(\d+)\s*$")
_FRAME = re.compile(r"^\s*[0-9a-f]+\s+(.*?)(?:\+0x[0-9a-f]+)?\s+\((.*)\)\s*$")
NATIVE = "(native) "


def perf_problem() -> str | None:
    """Why ``perf`` cannot profile here, or None."""
    if shutil.which("perf") is None:
        return "`perf` is not installed (linux-tools / linux-perf)"
    if sys.platform != "linux":
        return f"perf trampolines (-X perf) need Linux, not {sys.platform}"
    try:
        paranoid = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    except (OSError, ValueError):
        return None
    if paranoid > 2:
        return (f"kernel.perf_event_paranoid is {paranoid}; sampling one's own processes "
                "needs 2 or less (sysctl kernel.perf_event_paranoid=2)")
    return None


def _frame(symbol: str, dso: str, root: Path) -> str:
    """``py::Class.method:/path/file.py`` -> ``Class.method (path relative to root or to
    site-packages)``; a native frame -> ``(native) library``."""
    if not symbol.startswith("py::"):
        return NATIVE + (Path(dso).name or "?")
    name, _, path = symbol[4:].partition(":")
    p = Path(path)
    if p.is_relative_to(root) and ".venv" not in p.parts:
        return f"{name} ({p.relative_to(root)})"
    if "site-packages" in p.parts:
        return f"{name} ({'/'.join(p.parts[p.parts.index('site-packages') + 1:])})"
    return f"{name} ({p.name})"


def attribute(script: str, start_ns: int, end_ns: int, root: Path = ROOT) -> Counter[str]:
    """CPU nanoseconds per function from ``perf script -F tid,time,period,ip,sym,dso --ns``
    output with call chains: each sample in ``[start_ns, end_ns]`` goes to its innermost
    Python frame, or to its leaf's library when it has none."""
    totals: Counter[str] = Counter()
    for block in script.split("\n\n"):
        lines = block.strip("\n").splitlines()
        head = _HEADER.match(lines[0]) if lines else None
        if head is None or not start_ns <= round(float(head.group(1)) * 1e9) <= end_ns:
            continue
        frames = [m.groups() for line in lines[1:] if (m := _FRAME.match(line))]
        python = next((f for f in frames if f[0].startswith("py::")), None)
        # an inlined frame names no library: the first frame that does is its caller's
        native = next((f for f in frames if f[1] != "inlined"), None)
        totals[_frame(*(python or native or ("?", "?")), root)] += int(head.group(2))
    return totals


def perf_per_step(runtime: str, model: argparse.Namespace, steps: int,
                  where: Path) -> dict[str, Any]:
    """:data:`CHILD` of ``runtime`` under ``perf record --call-graph dwarf`` with CPython's
    perf trampolines: wall ms per step, and CPU ms per step of one environment, in all
    and per function (:func:`attribute`), over the timed steps only."""
    with tempfile.TemporaryDirectory(prefix="seer-perf-") as tmp:
        data = Path(tmp) / "perf.data"
        child = _run(["perf", "record", "-q", "-F", str(FREQUENCY), "-k", "CLOCK_MONOTONIC",
                      "--call-graph", "dwarf,16384", "-o", str(data), "--", sys.executable,
                      "-X", "perf", *_child_args(model, runtime, steps)], where)
        script = _run(["perf", "script", "-i", str(data), "--ns",
                       "-F", "tid,time,period,ip,sym,dso"], where).stdout
    w = json.loads(child.stdout.strip().splitlines()[-1])
    per = w["steps"] * w["runs"]
    ns = attribute(script, w["start_ns"], w["end_ns"], where)
    return {"cpu_ms": sum(ns.values()) / per / 1e6, "wall_ms": 1e3 * w["wall_s"],
            "functions": {k: v / per / 1e6 for k, v in ns.items()}}


def perf_table(profiles: dict[str, dict[str, Any]], top: int) -> list[str]:
    """ms of CPU per step by function, every run side by side (two at least): the ``top``
    functions by how much the last run spends above the one before it, then the totals."""
    names = list(profiles)
    last, before = profiles[names[-1]], profiles[names[-2]]
    funcs = {k for p in profiles.values() for k in p["functions"]}

    def excess(k: str) -> float:
        return last["functions"].get(k, 0.0) - before["functions"].get(k, 0.0)

    rows = [[k, *(f"{profiles[n]['functions'].get(k, 0.0):.2f}" for n in names),
             f"{excess(k):+.2f}"] for k in sorted(funcs, key=lambda k: (-abs(excess(k)), k))[:top]]
    rows.append(["**all (CPU per step)**", *(f"{profiles[n]['cpu_ms']:.1f}" for n in names),
                 f"{last['cpu_ms'] - before['cpu_ms']:+.1f}"])
    return table(["function", *names, f"{names[-1]} - {names[-2]}"], rows)


# -- command line ----------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.compare", description=__doc__.splitlines()[0],
        allow_abbrev=False, usage="python -m bench.compare [REV_A REV_B] [--cpu RUNTIME ... | "
        "--cachegrind RUNTIME ... | --perf RUNTIME ...] [options] [bench_runtimes args...]",
        epilog="Without --cpu, --cachegrind or --perf, every other argument goes to "
        "bench.bench_runtimes of both revisions. A RUNTIME may be independent:T, T serial "
        "runs on T threads of one process.")
    parser.add_argument("--rounds", type=int, default=3, help="paired rounds (default 3)")
    parser.add_argument("--results", type=Path, default=None,
                        help="directory for the pyperf files (default: a new temporary one)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--cpu", nargs="+", metavar="RUNTIME",
                      help="wall and CPU time of these runtimes, each in a fresh process")
    mode.add_argument("--cachegrind", nargs="+", metavar="RUNTIME",
                      help="instructions and cache misses per step under valgrind")
    mode.add_argument("--perf", nargs="+", metavar="RUNTIME",
                      help="CPU per step by Python function, from Linux perf samples")
    parser.add_argument("--ll-bytes", type=int, default=2 << 20,
                        help="--cachegrind: simulated last-level cache (default 2 MiB)")
    parser.add_argument("--top", type=int, default=None, metavar="N",
                        help="the N functions that differ most (--cachegrind: default 0, "
                        "--perf: 25)")
    parser.add_argument("--out", type=Path,
                        help="--cachegrind, --perf: also write the figures as JSON")
    return parser


def _model_parser() -> argparse.ArgumentParser:
    """The model of ``--cpu``, ``--cachegrind`` and ``--perf``, and its steps."""
    model = argparse.ArgumentParser(prog="python -m bench.compare --cpu/--cachegrind/--perf",
                                    allow_abbrev=False)
    model.add_argument("--workload", default="pcs")
    model.add_argument("--entities", type=int, default=1600)
    model.add_argument("--cost", type=float, default=15.0)
    model.add_argument("--fanout", type=int, default=1)
    model.add_argument("--gain", type=float, default=2.0)
    model.add_argument("--steps", type=int, default=None,
                       help="timed steps (default: --cpu 10, --cachegrind 2, --perf 30)")
    model.add_argument("--warmup", type=int, default=2)
    model.add_argument("--busy-ns", type=float, default=4.0,
                       help="fix BusyWork's ns per element (0: calibrate)")
    return model


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]] | None:
    parser = _parser()
    argv = sys.argv[1:] if argv is None else argv
    revs = list(itertools.takewhile(lambda a: not a.startswith("-"), argv))
    args, extra = parser.parse_known_args(argv[len(revs):])
    profiler = "cachegrind" if args.cachegrind else "perf" if args.perf else None
    if len(revs) != 2 and (revs or not profiler):
        parser.error("give two revisions, REV_A REV_B (only --cachegrind and --perf run "
                     "without)")
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    try:
        commits = [git("rev-parse", "--verify", "--quiet", f"{r}^{{commit}}") for r in revs]
    except subprocess.CalledProcessError:
        parser.error(f"{' or '.join(map(repr, revs))} is not a commit of {ROOT}")
    if args.perf and len(args.perf) * max(1, len(revs)) < 2:
        parser.error("--perf compares two runs: give two runtimes, or two revisions")
    if args.perf and (problem := perf_problem()):
        parser.error(f"--perf cannot profile here: {problem}")
    if args.cpu or profiler:
        model = _model_parser().parse_args(extra)
        args.steps = vars(model).pop("steps")
        if args.steps is not None and args.steps < 1:
            parser.error("--steps must be >= 1")
    try:
        if profiler:
            return _profiles(profiler, args, model, revs, commits)
        head = f"A = {revs[0]} ({commits[0][:10]}), B = {revs[1]} ({commits[1][:10]})"
        if args.cpu:
            model.steps = args.steps or 10
            with worktrees(commits) as trees:
                a, b = cpu_rounds(trees, args.rounds, args.cpu, model)
            print(f"\n{head}; {args.rounds} rounds, {model.steps} steps of {model.workload} "
                  f"n={model.entities} cost {model.cost:g}, each runtime in a fresh "
                  "process; per step\n")
            print("\n".join(format_cpu_table(a, b)))
            return None
        flags = {a.split("=", 1)[0] for a in extra}
        if flags & OWN_FLAGS:
            parser.error(f"{sorted(flags & OWN_FLAGS)} are set by bench.compare (see "
                         "--results)")
        extra = [*([] if flags & {"-l", "--loops"} else ["--loops", "4"]),
                 *([] if flags & SHAPE_FLAGS else DEFAULT_ROUND), *extra]
        results = args.results or Path(tempfile.mkdtemp(prefix="seer-compare-results-"))
        results.mkdir(parents=True, exist_ok=True)
        with worktrees(commits) as trees:
            rows, unpaired = summarise(*pyperf_rounds(trees, args.rounds, extra, results))
    except RuntimeError as e:
        sys.exit(f"[compare] {e}")
    print(f"\n{head}; {args.rounds} rounds of bench_runtimes {' '.join(extra)}; pyperf "
          f"files in {results}\n")
    print("\n".join(format_table(rows)))
    if unpaired:
        print(f"\nnot in every run of both revisions (left out): {', '.join(unpaired)}")
    return None


def _profiles(profiler: str, args: argparse.Namespace, model: argparse.Namespace,
              revs: list[str], commits: list[str]) -> dict[str, dict[str, Any]]:
    """Every runtime of ``--cachegrind`` or ``--perf`` under that profiler, in each
    revision (or this checkout): print the table, write ``--out``, return the figures."""
    runtimes = args.cachegrind or args.perf
    steps = args.steps or {"cachegrind": 2, "perf": 30}[profiler]
    if profiler == "cachegrind" and shutil.which("valgrind") is None:
        sys.exit("[compare] valgrind is not installed (apt install valgrind)")
    profiles: dict[str, Any] = {}
    with worktrees(commits) if revs else contextlib.nullcontext([ROOT]) as trees:
        for runtime in runtimes:
            for rev, tree in zip(revs or [""], trees, strict=True):
                name = f"{runtime} @ {rev}" if rev else runtime
                print(f"[compare] {profiler} {name}", flush=True)
                profiles[name] = counts_per_step(runtime, model, steps, args.ll_bytes, tree) \
                    if profiler == "cachegrind" else perf_per_step(runtime, model, steps, tree)
    what = f"{model.workload} n={model.entities} cost {model.cost:g}, {steps} steps"
    if profiler == "perf":
        print(f"\nms of CPU per step of one environment by innermost Python function, {what}"
              "\n")
        print("\n".join(perf_table(profiles, 25 if args.top is None else args.top)))
        result = profiles
    else:
        print(f"\nPer step ({what} counted; last level simulated as "
              f"{args.ll_bytes / 2**20:g} MiB)\n")
        print("\n".join(cachegrind_table(profiles, args.top or 0)))
        result = {name: {c: column(p.totals, c) for c in COLUMNS}
                  for name, p in profiles.items()}
    if args.out:
        args.out.write_text(json.dumps({"steps": steps, "ll_bytes": args.ll_bytes,
                                        "per_step": result}, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
