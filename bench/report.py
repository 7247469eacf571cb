"""One benchmark run of everything, with tables and plots, written to bench/RESULTS.md.

    .venv/bin/python -m bench.report            # fast mode: about 15 minutes on 2 cores
    .venv/bin/python -m bench.report --full     # more pyperf processes/values, all T
    .venv/bin/python -m bench.report --smoke    # smallest sizes, into a temp dir (tests)

Runs (pyperf unless noted; every result file records interpreter, GIL state, cores and
package versions):

1. cost sweep: BenchModel, 1600 entities, cost 0/10/50/200 µs, all runtimes;
2. Aircraft 800 UAVs ~200 µs and PCS 1600 cells ~15 µs: all runtimes;
3. thread scan on Aircraft (T = 1, 2, 3, 4, 6, 8 and up to twice the cores): seer, static;
4. entity sweep on Aircraft (200-1400 UAVs): serial and seer(2);
5. scheduler overhead per event: EmptyModel, serial, seer(1), seer(2);
6. load balance (plain timing): per-thread CPU time of seer, static, global;
7. queue microbenchmarks.

Then it draws bench/figures/*.png and writes bench/RESULTS.md (the reading in
bench/READING.md is included as written).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import seer
from seer.cli import interpreter_facts

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
FIGURES = HERE / "figures"
ALL = ["serial", "seer:1", "seer:2", "static:2", "global:2", "executor:2"]


def pyperf_run(out: Path, module: str, args: list[str], mode: list[str]) -> None:
    out.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", module, *mode, "--quiet", "-o", str(out), *args]
    print(f"[report] {' '.join(cmd[2:])}", flush=True)
    subprocess.run(cmd, check=True, cwd=HERE.parent)


def means(path: Path) -> dict[str, float]:
    """benchmark name -> mean seconds per step (or per operation)."""
    data = json.loads(path.read_text())
    out = {}
    for b in data["benchmarks"]:
        values = [v for run in b["runs"] for v in run.get("values", [])]
        if values:
            out[b["metadata"]["name"]] = sum(values) / len(values)
    return out


def label(spec: str) -> str:
    kind, _, threads = spec.partition(":")
    return "serial" if kind == "serial" else f"{kind}({threads or 1})"


def ratio_table(m: dict[str, float], prefix: str, n: int, costs: list[float],
                runtimes: list[str]) -> list[str]:
    names = [label(r) for r in runtimes]
    lines = ["| cost µs | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for c in costs:
        base = m.get(f"{prefix}-n{n}-cost{c:g}us-serial")
        row = []
        for x in names:
            v = m.get(f"{prefix}-n{n}-cost{c:g}us-{x}")
            row.append(f"{base / v:.2f}" if base and v else "-")
        lines.append(f"| {c:g} | " + " | ".join(row) + " |")
    return lines


class Sizes:
    """What a mode measures. ``smoke`` is the smallest configuration (correctness only)."""

    def __init__(self, mode: str) -> None:
        cores = seer.cpu_count()
        self.mode = mode
        self.pyperf = {"full": ["--processes", "4", "--values", "3"], "fast": ["--fast"],
                       "smoke": ["--debug-single-value"]}[mode]
        small = mode == "smoke"
        self.n_bench = 60 if small else 1600
        self.n_air = 60 if small else 800
        self.n_pcs = 64 if small else 1600
        self.air_cost = 100 if small else 200
        self.costs = [0, 5] if small else [0, 10, 50, 200]
        self.scan = {"smoke": [1, 2], "fast": [1, 2, 3, 4, 8],
                     "full": [1, 2, 3, 4, 6, 8] + [t for t in (12, 16) if t <= 2 * cores]}[mode]
        self.sweep = [40, 60] if small else [200, 400, 800, 1400]
        self.steps = 2 if small else (10 if mode == "fast" else 30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="more processes and values")
    parser.add_argument("--smoke", action="store_true", help="smallest sizes, one value each")
    parser.add_argument("--plots-only", action="store_true",
                        help="redraw figures and RESULTS.md from bench/results")
    parser.add_argument("--only", nargs="+", default=None,
                        help="re-run only these parts (cost aircraft pcs scan entities empty "
                        "queues balance), reuse the other result files")
    args = parser.parse_args()
    z = Sizes("smoke" if args.smoke else "full" if args.full else "fast")
    results = RESULTS if not args.smoke else Path(tempfile_dir())
    results.mkdir(exist_ok=True)
    FIGURES.mkdir(exist_ok=True)
    started = time.time()
    # The workloads evolve (clusters and the hotspot move), so every runtime must time the
    # same steps: a fixed number of loops (steps after reset + one warm-up step) instead of
    # pyperf's per-benchmark calibration.
    fixed = [] if args.smoke else ["--loops", "4"]
    air = ["--workload", "aircraft", "--costs", str(z.air_cost), *fixed]
    jobs = {
        "cost": ("cost_sweep", "bench.bench_runtimes",
                 ["--entities", str(z.n_bench), "--costs", *map(str, z.costs)]),
        "aircraft": ("aircraft", "bench.bench_runtimes", [*air, "--entities", str(z.n_air)]),
        "pcs": ("pcs", "bench.bench_runtimes",
                ["--workload", "pcs", "--entities", str(z.n_pcs), "--costs", "15", *fixed]),
        "scan": ("thread_scan", "bench.bench_runtimes",
                 [*air, "--entities", str(z.n_air), "--runtimes", "serial",
                  *[f"seer:{t}" for t in z.scan], *[f"static:{t}" for t in z.scan if t > 1]]),
        "entities": ("entity_sweep", "bench.bench_runtimes",
                     [*air, "--entities", *map(str, z.sweep), "--runtimes", "serial",
                      "seer:2"]),
        "empty": ("overhead", "bench.bench_runtimes",
                  ["--workload", "empty", "--entities", str(z.n_bench), "--costs", "0",
                   "--runtimes", "serial", "seer:1", "seer:2"]),
        "queues": ("queues", "bench.bench_queues", []),
    }
    files = {}
    for key, (name, module, extra) in jobs.items():
        out = results / f"{name}.json"
        if not args.plots_only and (args.only is None or key in args.only):
            pyperf_run(out, module, extra, z.pyperf)
        files[key] = out
    balance = results / "load_balance.json"
    if not args.plots_only and (args.only is None or "balance" in args.only):
        print("[report] load balance", flush=True)
        subprocess.run([sys.executable, "-m", "bench.load_balance", "--workload", "aircraft",
                        "--entities", str(z.n_air), "--cost", str(z.air_cost), "--threads",
                        "2", "--steps", str(z.steps), "-o", str(balance)], check=True,
                       cwd=HERE.parent)
    m = {k: means(v) for k, v in files.items()}
    lb = json.loads(balance.read_text())
    figures_dir = FIGURES if not args.smoke else results
    figures = draw(m, lb, z, figures_dir)
    text = write_results(m, lb, z, figures, time.time() - started)
    target = HERE / "RESULTS.md" if not args.smoke else results / "RESULTS.md"
    target.write_text(text)
    print(f"[report] wrote {target}")


def tempfile_dir() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="seer-bench-smoke-")


def draw(m: dict, lb: dict, z: Sizes, where: Path) -> list[str]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    made = []

    def save(fig: Figure, name: str) -> None:
        FigureCanvasAgg(fig)
        fig.tight_layout()
        fig.savefig(where / name)
        made.append(name)

    air = f"aircraft-n{z.n_air}-cost{z.air_cost:g}us"
    fig = Figure(figsize=(5, 3.5))  # speed-up vs threads (the paper's Fig. 7)
    ax = fig.add_subplot()
    s = m["scan"]
    base = s[f"{air}-serial"]
    for kind in ("seer", "static"):
        ts = [t for t in z.scan if f"{air}-{kind}({t})" in s]
        ax.plot(ts, [base / s[f"{air}-{kind}({t})"] for t in ts], "o-", label=kind)
    ax.axhline(1.0, color="grey", lw=0.5)
    ax.set_xlabel("threads")
    ax.set_ylabel("speed-up over serial")
    ax.set_title(f"Aircraft, {z.n_air} UAVs, ~{z.air_cost} µs events")
    ax.legend()
    save(fig, "speedup_vs_threads.png")
    fig = Figure(figsize=(5, 3.5))  # throughput vs event cost
    ax = fig.add_subplot()
    c = m["cost"]
    for name in [label(r) for r in ALL]:
        key = f"step-n{z.n_bench}-cost{{:g}}us-"
        ax.plot(z.costs, [c[key.format(x) + "serial"] / c[key.format(x) + name]
                          for x in z.costs], "o-", label=name)
    ax.set_xscale("symlog", linthresh=10)
    ax.set_xlabel("handler cost (µs)")
    ax.set_ylabel("throughput / serial")
    ax.set_title(f"BenchModel, {z.n_bench} entities")
    ax.legend(fontsize=7)
    save(fig, "throughput_vs_cost.png")
    fig = Figure(figsize=(5, 3.5))  # latency vs entity count
    ax = fig.add_subplot()
    e = m["entities"]
    for name in ("serial", "seer(2)"):
        ax.plot(z.sweep, [1e3 * e[f"aircraft-n{n}-cost{z.air_cost:g}us-{name}"]
                          for n in z.sweep], "o-", label=name)
    ax.set_xlabel("UAVs")
    ax.set_ylabel("ms per step")
    ax.set_title("Aircraft step latency")
    ax.legend()
    save(fig, "latency_vs_entities.png")
    fig = Figure(figsize=(5, 3.5))  # per-thread CPU time
    ax = fig.add_subplot()
    rows = lb["rows"]
    width = 0.8 / max(len(r["cpu_s"]) for r in rows)
    for i, r in enumerate(rows):
        for t, cpu in enumerate(r["cpu_s"]):
            ax.bar(i + t * width, cpu, width, color=f"C{t}",
                   label=f"thread {t}" if i == 0 else None)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(rows))], [r["kind"] for r in rows])
    ax.set_ylabel("CPU seconds")
    ax.set_title(f"Per-thread CPU time, Aircraft {z.n_air} UAVs, 2 threads")
    ax.legend()
    save(fig, "cpu_per_thread.png")
    return made


def write_results(m: dict, lb: dict, z: Sizes, figures: list[str], seconds: float) -> str:
    facts = interpreter_facts()
    flag = {"fast": "", "full": " --full", "smoke": " --smoke"}[z.mode]
    out = ["# Benchmark results", "",
           f"Command: `.venv/bin/python -m bench.report{flag}` ({z.mode} mode, "
           f"{seconds / 60:.0f} minutes).", "",
           f"Machine: {facts['cores available']} cores; {facts['python']}; free-threaded: "
           f"{facts['free-threaded build']}; GIL: {facts['GIL']}; numpy {facts['numpy']}, "
           f"atomics {facts['atomics']}.", "",
           "Ratios are throughput over serial measured in the same run (>1 is faster). Raw "
           "pyperf files are in `bench/results/` (`python -m pyperf show FILE`).", ""]
    reading = HERE / "READING.md"
    if reading.exists() and z.mode != "smoke":
        out += [reading.read_text().strip(), ""]
    rt = ["serial", "seer(1)", "seer(2)", "static(2)", "global(2)", "executor(2)"]
    air = f"aircraft-n{z.n_air}-cost{z.air_cost:g}us"
    pcs = f"pcs-n{z.n_pcs}-cost15us"

    def row(d: dict, prefix: str) -> str:
        base = d[f"{prefix}-serial"]
        return " | ".join(f"{base / d[f'{prefix}-{x}']:.2f}" for x in rt)

    out += ["## Workloads (DESIGN.md section 10)", "",
            "| workload | " + " | ".join(rt) + " |", "|---" * (len(rt) + 1) + "|",
            f"| Aircraft {z.n_air} UAVs, ~{z.air_cost} µs | {row(m['aircraft'], air)} |",
            f"| PCS {z.n_pcs} cells, ~20 µs | {row(m['pcs'], pcs)} |", "",
            f"Serial step: Aircraft {1e3 * m['aircraft'][f'{air}-serial']:.0f} ms, PCS "
            f"{1e3 * m['pcs'][f'{pcs}-serial']:.0f} ms.", ""]
    out += [f"## Cost sweep (BenchModel, {z.n_bench} entities, fanout 1)", "",
            *ratio_table(m["cost"], "step", z.n_bench, z.costs, ALL), ""]
    s = m["scan"]
    base = s[f"{air}-serial"]
    out += [f"## Thread scan (Aircraft {z.n_air} UAVs, ~{z.air_cost} µs)", "",
            "| threads | seer | static |", "|---|---|---|"]
    for t in z.scan:
        cells = [f"{base / s[k]:.2f}" if (k := f"{air}-{kind}({t})") in s else "-"
                 for kind in ("seer", "static")]
        out.append(f"| {t} | " + " | ".join(cells) + " |")
    e = m["entities"]
    out += ["", f"## Step latency vs entity count (Aircraft, ~{z.air_cost} µs)", "",
            "| UAVs | serial ms | seer(2) ms | speed-up |", "|---|---|---|---|"]
    for n in z.sweep:
        se = e[f"aircraft-n{n}-cost{z.air_cost:g}us-serial"]
        pa = e[f"aircraft-n{n}-cost{z.air_cost:g}us-seer(2)"]
        out.append(f"| {n} | {1e3 * se:.0f} | {1e3 * pa:.0f} | {se / pa:.2f} |")
    em = m["empty"]
    ev = z.n_bench * 10  # events per step of EmptyModel(n, per_step=10)
    out += ["", f"## Scheduler overhead per event (EmptyModel, {z.n_bench} entities, {ev} "
            "events per step, including the per-step outputs)", "",
            "| runtime | µs per event |", "|---|---|"]
    for x in ("serial", "seer(1)", "seer(2)"):
        out.append(f"| {x} | {1e6 * em[f'empty-n{z.n_bench}-cost0us-{x}'] / ev:.2f} |")
    out += ["", f"## Load balance (per-thread CPU seconds, Aircraft {z.n_air} UAVs, "
            "2 threads)", "", "| runtime | wall s | CPU s per thread | coefficient of "
            "variation |", "|---|---|---|---|"]
    for r in lb["rows"]:
        out.append(f"| {r['kind']} | {r['wall_s']:.2f} | "
                   + ", ".join(f"{c:.2f}" for c in r["cpu_s"]) + f" | {r['cpu_cv']:.3f} |")
    out += ["", "## Queue structures and atomics paths (time per operation)", "",
            "| benchmark | mean |", "|---|---|"]
    for name, v in m["queues"].items():
        out.append(f"| {name} | {v * 1e9:.0f} ns |")
    out += ["", "## Figures", ""] + [f"![{f}](figures/{f})" for f in figures]
    return "\n".join(out) + "\n"

if __name__ == "__main__":
    main()
