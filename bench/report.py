"""One benchmark run of everything, with tables and plots, written to bench/RESULTS.md.

    .venv/bin/python -m bench.report            # fast mode: 2 rounds, about 10 minutes
    .venv/bin/python -m bench.report --full     # 6 rounds, 2 values each, all T (~35 min)
    .venv/bin/python -m bench.report --smoke    # smallest sizes, into a temp dir (tests)

Every part is a pyperf benchmark file in ``bench/results`` that records interpreter, GIL
state, cores and package versions, and that ``python -m pyperf compare_to`` can read:

* ``cost_sweep``: BenchModel, 1600 entities, 0/10/50/200 µs events, every runtime;
* ``aircraft``, ``pcs``: Aircraft 800 UAVs ~200 µs and PCS 1600 cells ~20 µs, every runtime;
* ``pcs_hotspot``: PCS under a moving hotspot of peak 0/2/4/8, SEER against the peers;
* ``pcs_complexity``, ``pcs_entity_sweep``, ``entity_sweep``: PCS and Aircraft sizes;
* ``thread_scan``, ``pcs_thread_scan``: T = 1, 2, 3, 4, 6, 8 (and up to twice the cores);
* ``overhead``: EmptyModel, scheduler cost per event;
* ``capacity``: how many cores the machine delivered while the others ran;
* ``queues``: queue structures and atomics paths (pyperf-calibrated, once);
* ``load_balance*.json``: per-thread CPU time and events (plain timing).

A shared machine's speed drifts, so the parts run in *rounds*: round r runs one pyperf
process of every part, then round r+1 appends to the same files (``--append``). Every
runtime is therefore timed across the whole run, and speed-ups are taken within each
round (against serial timed minutes earlier) and then the median over rounds. The
workloads evolve (clusters and the hotspot move), so every value times the same steps: a
fixed number of loops after a reset and one warm-up step.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import seer
from seer.cli import interpreter_facts

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
FIGURES = HERE / "figures"
ALL = ["serial", "seer:1", "seer:2", "static:2", "static-block:2", "global:2", "executor:2"]
PEERS = ["serial", "seer:2", "static:2", "static-block:2", "global:2"]
BALANCE_KINDS = ["seer(2)", "static(2)", "static-block(2)", "global(2)"]


def label(spec: str) -> str:
    kind, _, threads = spec.partition(":")
    return "serial" if kind == "serial" else f"{kind}({threads or 1})"


class Sizes:
    """What a mode measures. ``smoke`` is the smallest configuration (correctness only)."""

    def __init__(self, mode: str) -> None:
        cores = seer.cpu_count()
        small = mode == "smoke"
        self.mode = mode
        self.rounds = {"smoke": 1, "fast": 2, "full": 6}[mode]
        self.per_round = {"smoke": ["--debug-single-value"],
                          "fast": ["--processes", "1", "--values", "1", "--warmups", "1"],
                          "full": ["--processes", "1", "--values", "2", "--warmups", "1"]}[mode]
        self.loops = [] if small else ["--loops", "4"]
        self.queues = {"smoke": ["--debug-single-value"], "fast": ["--fast"],
                       "full": ["--processes", "4", "--values", "3"]}[mode]
        self.n_bench = 60 if small else 1600
        self.n_air = 60 if small else 800
        self.n_pcs = 64 if small else 1600
        self.air_cost = 100 if small else 200
        self.pcs_cost = 5 if small else 15
        self.costs = [0, 5] if small else [0, 10, 50, 200]
        self.pcs_costs = [5, 10] if small else [5, 15, 40]
        self.gains = [0, 8] if small else [0, 2, 4, 8]
        self.scan = {"smoke": [1, 2], "fast": [1, 2, 3, 4, 8],
                     "full": [1, 2, 3, 4, 6, 8] + [t for t in (12, 16) if t <= 2 * cores]}[mode]
        self.air_sweep = [40, 60] if small else [200, 400, 800, 1400]
        self.pcs_sweep = [36, 64] if small else [400, 900, 1600, 2500]
        self.balance_steps = 2 if small else (10 if mode == "fast" else 20)

    @property
    def air(self) -> str:
        return f"aircraft-n{self.n_air}-cost{self.air_cost:g}us"

    @property
    def pcs(self) -> str:
        return f"pcs-n{self.n_pcs}-cost{self.pcs_cost:g}us-gain2"


def jobs(z: Sizes) -> dict[str, tuple[str, list[str]]]:
    """part -> (pyperf module, its arguments); every part runs once per round."""
    bench = "bench.bench_runtimes"
    air = ["--workload", "aircraft", *z.loops]
    pcs = ["--workload", "pcs", *z.loops]
    return {
        "cost_sweep": (bench, ["--entities", str(z.n_bench), *z.loops, "--costs",
                               *map(str, z.costs), "--runtimes", *ALL]),
        "aircraft": (bench, [*air, "--entities", str(z.n_air), "--costs", str(z.air_cost),
                             "--runtimes", *ALL]),
        "pcs": (bench, [*pcs, "--entities", str(z.n_pcs), "--costs", str(z.pcs_cost),
                        "--runtimes", *ALL]),
        "pcs_hotspot": (bench, [*pcs, "--entities", str(z.n_pcs), "--costs", str(z.pcs_cost),
                                "--gains", *map(str, z.gains), "--runtimes", *PEERS]),
        "pcs_complexity": (bench, [*pcs, "--entities", str(z.n_pcs), "--costs",
                                   *map(str, z.pcs_costs), "--runtimes", "serial", "seer:2",
                                   "static:2", "global:2"]),
        "pcs_entity_sweep": (bench, [*pcs, "--entities", *map(str, z.pcs_sweep), "--costs",
                                     str(z.pcs_cost), "--runtimes", "serial", "seer:2"]),
        "thread_scan": (bench, [*air, "--entities", str(z.n_air), "--costs", str(z.air_cost),
                                "--runtimes", "serial", *[f"seer:{t}" for t in z.scan],
                                *[f"static:{t}" for t in z.scan if t > 1]]),
        "pcs_thread_scan": (bench, [*pcs, "--entities", str(z.n_pcs), "--costs",
                                    str(z.pcs_cost), "--runtimes", "serial",
                                    *[f"seer:{t}" for t in z.scan]]),
        "entity_sweep": (bench, [*air, "--entities", *map(str, z.air_sweep), "--costs",
                                 str(z.air_cost), "--runtimes", "serial", "seer:2"]),
        "overhead": (bench, ["--workload", "empty", *z.loops, "--entities", str(z.n_bench),
                             "--costs", "0", "--runtimes", "serial", "seer:1", "seer:2"]),
        "capacity": ("bench.bench_capacity", []),
    }


def pyperf_run(module: str, args: list[str], out: Path, mode: list[str],
               append: bool) -> None:
    dest = ["--append", str(out)] if append else ["-o", str(out)]
    cmd = [sys.executable, "-m", module, *mode, "--quiet", *dest, *args]
    print(f"[report] {' '.join(cmd[2:])}", flush=True)
    subprocess.run(cmd, check=True, cwd=HERE.parent, stdout=subprocess.DEVNULL)


def load(path: Path) -> dict[str, list[list[float]]]:
    """benchmark name -> the values of each run (one run per pyperf worker process)."""
    data = json.loads(path.read_text())
    return {b["metadata"]["name"]: [r["values"] for r in b["runs"] if r.get("values")]
            for b in data["benchmarks"]}


class Part(dict):
    """One result file: benchmark name -> median seconds over all values (``part[name]``),
    plus speed-ups paired by round.

    ``speedup(a, b)`` is time(a) / time(b) computed within each round (the two were timed
    minutes apart at most) and then the median over rounds, so a drift of the machine's
    speed between rounds cancels out; ``spread(a, b)`` is the lowest and highest round."""

    def __init__(self, runs: dict[str, list[list[float]]]) -> None:
        super().__init__({name: statistics.median(v for run in rs for v in run)
                          for name, rs in runs.items() if any(rs)})
        self.runs = runs

    def _per_round(self, a: str, b: str) -> list[float]:
        ra, rb = self.runs.get(a, []), self.runs.get(b, [])
        if not ra or len(ra) != len(rb):  # not paired: fall back to the medians
            return [self[a] / self[b]] if a in self and b in self else []
        return [statistics.fmean(x) / statistics.fmean(y) for x, y in zip(ra, rb, strict=True)]

    def speedup(self, a: str, b: str) -> float:
        return statistics.median(self._per_round(a, b))

    def spread(self, a: str, b: str) -> tuple[float, float]:
        rounds = self._per_round(a, b)
        return min(rounds), max(rounds)


def main() -> None:
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
                        "'queues' and 'balance'), reuse the other result files")
    args = parser.parse_args()
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
    wanted = set(args.only) if args.only else None
    if wanted and not wanted <= {*parts, "queues", "balance"}:
        parser.error(f"unknown parts {sorted(wanted - {*parts, 'queues', 'balance'})}; "
                     f"choose from {sorted({*parts, 'queues', 'balance'})}")
    if not args.plots_only:
        if wanted is None:
            record_run(z, results)
        run_parts(z, parts, results, wanted)
    data = {name: load(results / f"{name}.json") for name in [*parts, "queues"]}
    balance = {w: json.loads((results / f"load_balance_{w}.json").read_text())
               for w in ("aircraft", "pcs")}
    where = results if separate else FIGURES
    where.mkdir(exist_ok=True)
    parts_data = {k: Part(v) for k, v in data.items()}
    figures = draw(parts_data, balance, z, where)
    run = json.loads((results / "run.json").read_text()) if (results / "run.json").exists() \
        else {}
    text = write_results(parts_data, balance, z, figures, run, run_span(data, results))
    print(f"[report] {time.time() - started:.0f} s", flush=True)
    target = results / "RESULTS.md" if separate else HERE / "RESULTS.md"
    target.write_text(text)
    print(f"[report] wrote {target}")


def record_run(z: Sizes, results: Path) -> None:
    """The commit being measured (``-dirty`` if the code differs from it) and the mode."""
    def git(*args: str) -> str:
        proc = subprocess.run(["git", *args], cwd=HERE.parent, capture_output=True, text=True)
        return proc.stdout.strip() if proc.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    if git("status", "--porcelain", "--", "seer", "workloads", "bench/*.py"):
        commit += "-dirty"
    (results / "run.json").write_text(json.dumps({"commit": commit, "mode": z.mode}) + "\n")


def run_span(data: dict[str, dict[str, list[list[float]]]], results: Path) -> str:
    """First and last pyperf run date over all parts, and the minutes between them."""
    dates = []
    for name in data:
        for b in json.loads((results / f"{name}.json").read_text())["benchmarks"]:
            dates += [r["metadata"]["date"] for r in b["runs"] if "date" in r.get("metadata", {})]
    if not dates:
        return "no dates recorded"
    first, last = (datetime.datetime.fromisoformat(d) for d in (min(dates), max(dates)))
    minutes = (last - first).total_seconds() / 60
    return f"{first:%Y-%m-%d %H:%M} to {last:%H:%M} UTC, {minutes:.0f} minutes"


def run_parts(z: Sizes, parts: dict[str, tuple[str, list[str]]], results: Path,
              wanted: set[str] | None) -> None:
    chosen = {k: v for k, v in parts.items() if wanted is None or k in wanted}
    for name in chosen:
        (results / f"{name}.json").unlink(missing_ok=True)
    for r in range(z.rounds):
        print(f"[report] round {r + 1} of {z.rounds}", flush=True)
        for name, (module, extra) in chosen.items():
            out = results / f"{name}.json"
            pyperf_run(module, extra, out, z.per_round, append=out.exists())
    if wanted is None or "queues" in wanted:
        out = results / "queues.json"
        out.unlink(missing_ok=True)
        pyperf_run("bench.bench_queues", [], out, z.queues, append=False)
    if wanted is None or "balance" in wanted:
        for workload, n, cost, gain in (("aircraft", z.n_air, z.air_cost, 2),
                                        ("pcs", z.n_pcs, z.pcs_cost, 8)):
            print(f"[report] load balance, {workload}", flush=True)
            subprocess.run([sys.executable, "-m", "bench.load_balance", "--workload",
                            workload, "--entities", str(n), "--cost", str(cost), "--gain",
                            str(gain), "--threads", "2", "--steps", str(z.balance_steps),
                            "-o", str(results / f"load_balance_{workload}.json")],
                           check=True, cwd=HERE.parent, stdout=subprocess.DEVNULL)


# -- figures -------------------------------------------------------------------------------
def draw(m: dict[str, Part], balance: dict, z: Sizes, where: Path) -> list[str]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    made = []

    def save(fig: Figure, name: str) -> None:
        FigureCanvasAgg(fig)
        fig.tight_layout()
        fig.savefig(where / name)
        made.append(name)

    fig = Figure(figsize=(5.5, 3.8))  # speed-up vs threads (the paper's Fig. 7)
    ax = fig.add_subplot()
    for part, prefix, kinds, title in (("thread_scan", z.air, ("seer", "static"), "Aircraft"),
                                       ("pcs_thread_scan", z.pcs, ("seer",), "PCS")):
        s = m[part]
        for kind in kinds:
            ts = [t for t in z.scan if f"{prefix}-{kind}({t})" in s]
            ax.plot(ts, [s.speedup(f"{prefix}-serial", f"{prefix}-{kind}({t})") for t in ts],
                    "o-", label=f"{title}, {kind}")
    ax.axhline(1.0, color="grey", lw=0.5)
    ax.set_xlabel("threads")
    ax.set_ylabel("speed-up over serial")
    ax.set_title(f"Thread scan ({seer.cpu_count()} cores)")
    ax.legend(fontsize=8)
    save(fig, "speedup_vs_threads.png")

    fig = Figure(figsize=(5.5, 3.8))  # throughput vs event cost
    ax = fig.add_subplot()
    c = m["cost_sweep"]
    for name in [label(r) for r in ALL[1:]]:
        key = f"step-n{z.n_bench}-cost{{:g}}us-"
        ax.plot(z.costs, [c.speedup(key.format(x) + "serial", key.format(x) + name)
                          for x in z.costs], "o-", label=name)
    ax.axhline(1.0, color="grey", lw=0.5)
    ax.set_xscale("symlog", linthresh=10)
    ax.set_xlabel("handler cost (µs)")
    ax.set_ylabel("throughput / serial")
    ax.set_title(f"BenchModel, {z.n_bench} entities")
    ax.legend(fontsize=7)
    save(fig, "throughput_vs_cost.png")

    fig = Figure(figsize=(8, 3.5))  # latency vs entity count
    for i, (part, sweep, fmt, title) in enumerate((
            ("entity_sweep", z.air_sweep, f"aircraft-n{{}}-cost{z.air_cost:g}us", "Aircraft"),
            ("pcs_entity_sweep", z.pcs_sweep, f"pcs-n{{}}-cost{z.pcs_cost:g}us-gain2", "PCS"))):
        ax = fig.add_subplot(1, 2, i + 1)
        e = m[part]
        for name in ("serial", "seer(2)"):
            ax.plot(sweep, [1e3 * e[f"{fmt.format(n)}-{name}"] for n in sweep], "o-",
                    label=name)
        ax.set_xlabel("entities")
        ax.set_ylabel("ms per step")
        ax.set_title(f"{title} step latency")
        ax.legend()
    save(fig, "latency_vs_entities.png")

    fig = Figure(figsize=(5.5, 3.8))  # SEER against the peers as the hotspot grows
    ax = fig.add_subplot()
    h = m["pcs_hotspot"]
    fmt = f"pcs-n{z.n_pcs}-cost{z.pcs_cost:g}us-gain{{:g}}-"
    for name in [label(r) for r in PEERS[1:]]:
        ax.plot(z.gains, [h.speedup(fmt.format(g) + "serial", fmt.format(g) + name)
                          for g in z.gains], "o-", label=name)
    ax.set_xlabel("hotspot peak (call-rate gain)")
    ax.set_ylabel("speed-up over serial")
    ax.set_title(f"PCS {z.n_pcs} cells under a moving hotspot")
    ax.legend(fontsize=8)
    save(fig, "hotspot.png")

    fig = Figure(figsize=(8, 3.5))  # per-thread CPU time
    for i, (workload, lb) in enumerate(balance.items()):
        ax = fig.add_subplot(1, 2, i + 1)
        rows = lb["rows"]
        width = 0.8 / max(len(r["cpu_s"]) for r in rows)
        for j, r in enumerate(rows):
            for t, cpu in enumerate(r["cpu_s"]):
                ax.bar(j + t * width, cpu, width, color=f"C{t}",
                       label=f"thread {t}" if j == 0 else None)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(rows))],
                      [r["kind"] for r in rows], fontsize=7)
        ax.set_ylabel("CPU seconds")
        ax.set_title(f"{workload}: per-thread CPU time", fontsize=9)
        ax.legend(fontsize=7)
    save(fig, "cpu_per_thread.png")
    return made


# -- RESULTS.md ----------------------------------------------------------------------------
def capacity(runs: dict[str, list[list[float]]]) -> tuple[float, list[float]]:
    """Effective cores (2 threads): over the whole run, and per round."""
    one, two = runs["capacity-1thread"], runs["capacity-2threads"]
    whole = 2 * statistics.median(v for r in one for v in r) / statistics.median(
        v for r in two for v in r)
    per_round = [2 * statistics.fmean(a) / statistics.fmean(b)
                 for a, b in zip(one, two, strict=False)]
    return whole, per_round


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(r) + " |" for r in rows)]


def ratios(m: Part, config: str, names: list[str], spread: bool = False) -> list[str]:
    """Speed-up over serial of each runtime in ``names`` (with the range over rounds)."""
    base, cells = f"{config}-serial", []
    for x in names:
        k = f"{config}-{x}"
        if base not in m or k not in m:
            cells.append("-")
        elif spread and k != base:
            lo, hi = m.spread(base, k)
            cells.append(f"{m.speedup(base, k):.2f} ({lo:.2f}-{hi:.2f})")
        else:
            cells.append(f"{m.speedup(base, k):.2f}")
    return cells


def goals(m: dict[str, Part], z: Sizes) -> list[list[str]]:
    """DESIGN.md section 10, measured in this run (speed-ups paired by round)."""
    air, pcs = m["aircraft"], m["pcs"]
    air_seer = air.speedup(f"{z.air}-serial", f"{z.air}-seer(2)")
    pcs_seer = pcs.speedup(f"{z.pcs}-serial", f"{z.pcs}-seer(2)")
    h = m["pcs_hotspot"]
    fmt = f"pcs-n{z.n_pcs}-cost{z.pcs_cost:g}us-gain{{:g}}-"
    peer_names = ("static(2)", "static-block(2)", "global(2)")
    wins, cells = [], []
    for g in z.gains:
        seer_key = fmt.format(g) + "seer(2)"
        # time(peer) / time(seer) per round: > 1 where SEER is faster
        lead = {p: h.speedup(fmt.format(g) + p, seer_key) for p in peer_names}
        if g > 0:  # peak 0 (no hotspot) is the control, not part of the goal
            wins.append(all(v > 1 for v in lead.values()))
        cells.append(f"peak {g:g}{' (no hotspot, control)' if g == 0 else ''}: "
                     + ", ".join(f"{p} {v:.2f}" for p, v in lead.items()))
    air_lead = {p: air.speedup(f"{z.air}-{p}", f"{z.air}-seer(2)") for p in peer_names}
    air_win = all(v > 1 for v in air_lead.values())
    c = m["cost_sweep"]
    at50 = f"step-n{z.n_bench}-cost50us-"
    one = c.speedup(at50 + "serial", at50 + "seer(1)") if at50 + "serial" in c else None
    o = m["overhead"]
    events = z.n_bench * 10
    per_event = 1e6 * o[f"empty-n{z.n_bench}-cost0us-seer(1)"] / events
    serial_event = 1e6 * o[f"empty-n{z.n_bench}-cost0us-serial"] / events

    def yes(ok: bool) -> str:
        return "yes" if ok else "**no**"

    return [
        [f"Aircraft {z.n_air} UAVs ~{z.air_cost} µs: seer(2) / serial", ">= 1.7x",
         f"{air_seer:.2f}x", yes(air_seer >= 1.7)],
        [f"PCS {z.n_pcs} cells ~20 µs: seer(2) / serial", ">= 1.25x", f"{pcs_seer:.2f}x",
         yes(pcs_seer >= 1.25)],
        ["SEER vs `static`, `static-block`, `global` under a moving hotspot (PCS): time of "
         "the peer / time of seer(2)", "> 1 for all", "; ".join(cells),
         f"{sum(wins)} of {len(wins)} hotspot peaks"],
        ["the same on Aircraft (moving clusters)", "> 1 for all",
         ", ".join(f"{p} {v:.2f}" for p, v in air_lead.items()), yes(air_win)],
        ["seer(1) / serial at 50 µs events", ">= 0.90x (overhead <= 10 %)",
         "not measured in this mode" if one is None else f"{one:.2f}x",
         "-" if one is None else yes(one >= 0.9)],
        ["time per event, empty handler, seer(1) (upper bound of the scheduler overhead)",
         "<= 3 µs", f"{per_event:.2f} µs (serial {serial_event:.2f} µs)",
         yes(per_event <= 3)],
        ["STPA choice vs best thread count of a full scan", ">= 95 %", "not built yet", "-"],
        ["parallel runs bit-identical to serial", "always",
         "checked by the test suite (tests/sched) and by `seer demo`", "-"],
    ]


def write_results(m: dict[str, Part], balance: dict, z: Sizes, figures: list[str],
                  run: dict, span: str) -> str:
    facts = interpreter_facts()
    flag = {"fast": "", "full": " --full", "smoke": " --smoke"}[z.mode]
    cores, per_round = capacity(m["capacity"].runs)
    out = ["# Benchmark results", "",
           f"Command: `.venv/bin/python -m bench.report{flag}` ({z.mode} mode, rounds: "
           f"{z.rounds}; measured {span}; code at commit {run.get('commit', 'unknown')}).",
           "",
           f"Machine: {facts['cores available']} cores; {facts['python']}; free-threaded: "
           f"{facts['free-threaded build']}; GIL: {facts['GIL']}; numpy {facts['numpy']}, "
           f"atomics {facts['atomics']}.", "",
           f"Parallel capacity while this ran (`capacity`: 2 x time on 1 thread / time on 2 "
           f"threads of a pure-Python loop): {cores:.2f} effective cores over the run, "
           f"per round {', '.join(f'{c:.2f}' for c in per_round)}. A ratio above that "
           "is not possible; below 2.0 the host was taking CPU time from this machine.", "",
           "Ratios are throughput over serial (>1 is faster): in each round, mean step time "
           "of serial / mean step time of the runtime, then the median over the rounds; "
           "'(a-b)' is the lowest and highest round. Absolute times are medians of all "
           "values. Raw pyperf files are in "
           "`bench/results/` (`python -m pyperf show FILE`, `python -m pyperf compare_to "
           "A B`).", "",
           "## DESIGN.md section 10: measured next to the goals", "",
           *table(["figure", "goal", "measured in this run", "met"], goals(m, z)), ""]
    reading = HERE / "READING.md"
    if reading.exists() and z.mode != "smoke":
        out += [reading.read_text().strip(), ""]
    names = [label(r) for r in ALL]
    out += ["## Workloads (throughput / serial)", "",
            *table(["workload", *names], [
                [f"Aircraft {z.n_air} UAVs, ~{z.air_cost} µs",
                 *ratios(m["aircraft"], z.air, names, spread=True)],
                [f"PCS {z.n_pcs} cells, cost {z.pcs_cost} µs, hotspot 2",
                 *ratios(m["pcs"], z.pcs, names, spread=True)]]), "",
            f"Serial step: Aircraft {1e3 * m['aircraft'][f'{z.air}-serial']:.0f} ms, PCS "
            f"{1e3 * m['pcs'][f'{z.pcs}-serial']:.0f} ms.", ""]
    peers = [label(r) for r in PEERS]
    fmt = f"pcs-n{z.n_pcs}-cost{z.pcs_cost:g}us-gain{{:g}}"
    out += [f"## PCS under a moving hotspot ({z.n_pcs} cells, throughput / serial)", "",
            *table(["hotspot peak", *peers],
                   [[f"{g:g}", *ratios(m["pcs_hotspot"], fmt.format(g), peers, spread=True)]
                    for g in z.gains]), ""]
    out += [f"## Cost sweep (BenchModel, {z.n_bench} entities, fanout 1)", "",
            *table(["cost µs", *names[1:]],
                   [[f"{c:g}", *ratios(m["cost_sweep"], f"step-n{z.n_bench}-cost{c:g}us",
                                       names[1:])] for c in z.costs]), ""]
    cx = ["seer(2)", "static(2)", "global(2)"]
    out += [f"## PCS complexity sweep ({z.n_pcs} cells, throughput / serial)", "",
            *table(["cost_us", "serial ms", *cx],
                   [[f"{c:g}", f"{1e3 * m['pcs_complexity'][f'{k}-serial']:.0f}",
                     *ratios(m["pcs_complexity"], k, cx)]
                    for c in z.pcs_costs
                    if (k := f"pcs-n{z.n_pcs}-cost{c:g}us-gain2")]), ""]
    s, p = m["thread_scan"], m["pcs_thread_scan"]
    out += [f"## Thread scans (Aircraft {z.n_air} UAVs, PCS {z.n_pcs} cells; "
            "throughput / serial)", "",
            *table(["threads", "Aircraft seer", "Aircraft static", "PCS seer"],
                   [[str(t), *ratios(s, z.air, [f"seer({t})", f"static({t})"]),
                     *ratios(p, z.pcs, [f"seer({t})"])] for t in z.scan]), ""]
    rows = []
    for title, part, sweep, fmt in (
            ("Aircraft", "entity_sweep", z.air_sweep, f"aircraft-n{{}}-cost{z.air_cost:g}us"),
            ("PCS", "pcs_entity_sweep", z.pcs_sweep, f"pcs-n{{}}-cost{z.pcs_cost:g}us-gain2")):
        e = m[part]
        for n in sweep:
            se, pa = e[f"{fmt.format(n)}-serial"], e[f"{fmt.format(n)}-seer(2)"]
            rows.append([title, str(n), f"{1e3 * se:.0f}", f"{1e3 * pa:.0f}", f"{se / pa:.2f}"])
    out += ["## Step latency vs entity count", "",
            *table(["workload", "entities", "serial ms", "seer(2) ms", "speed-up"], rows), ""]
    o = m["overhead"]
    ev = z.n_bench * 10  # events per step of EmptyModel(n, per_step=10)
    out += [f"## Time per event with an empty handler (EmptyModel, {z.n_bench} entities, "
            f"{ev} events per step, per-step outputs included)", "",
            *table(["runtime", "µs per event"],
                   [[x, f"{1e6 * o[f'empty-n{z.n_bench}-cost0us-{x}'] / ev:.2f}"]
                    for x in ("serial", "seer(1)", "seer(2)")]), ""]
    for workload, lb in balance.items():
        a = lb["args"]
        gain = f", hotspot peak {a['gain']:g}" if workload == "pcs" else ""
        out += [f"## Load balance: {workload}, {a['entities']} entities{gain}, 2 threads, "
                f"{a['steps']} steps", "",
                *table(["runtime", "wall s", "CPU s per thread", "events per thread",
                        "chunks stolen per thread", "CPU coefficient of variation"],
                       [[r["kind"], f"{r['wall_s']:.2f}",
                         ", ".join(f"{c:.2f}" for c in r["cpu_s"]),
                         ", ".join(str(e) for e in r["events"]),
                         ", ".join(str(e) for e in r.get("steals", [])) or "-",
                         f"{r['cpu_cv']:.3f}"]
                        for r in lb["rows"]]), ""]
    out += ["## Queue structures and atomics paths (time per operation)", "",
            *table(["benchmark", "median"],
                   [[name, f"{v * 1e9:.0f} ns"] for name, v in m["queues"].items()]), ""]
    out += ["## Figures", "", *[f"![{f}](figures/{f})" for f in figures]]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
