"""Parallel efficiency: the speed-up of every runtime over serial and the CPU time it spent
for it, measured side by side, with the scaling goals for plain-Python handlers.

    .venv/bin/python -m bench.efficiency --out efficiency.json          # about 3 minutes
    .venv/bin/python -m bench.efficiency --smoke --out /tmp/eff.json    # seconds

A speed-up says how much sooner a step ends; the CPU ratio (total process CPU time of the
runtime over that of serial, all threads counted) says what the threads paid for it. With
two threads and perfect scaling the speed-up is 2 and the CPU ratio 1; a CPU ratio above 1
is work the second thread added: the scheduler's own, idle spinning, and the
interpreter's and numpy's costs of running on two cores at once (``docs/performance.md``).

Plain timing, not pyperf: every runtime of a workload is built once and the runtimes take
turns, ``rounds`` times, each timing ``steps`` steps after a reset and a warm-up step
(wall: ``time.perf_counter``; CPU: ``time.process_time``). Ratios are taken within a
round (against serial timed seconds before) and the median over rounds is reported, with
the machine's parallel capacity (:func:`bench.bench_capacity.capacity_now`) before and
after, because a shared host may take one core away at any time.

Each round also runs the workload's *ceiling*: two independent serial runs (each its own
model and runtime) stepping at once on two threads of this process, with BLAS capped at
one thread as the parallel runtimes cap it. They share nothing
but the interpreter and the libraries, so the CPU each one costs over a lone serial run
is what free-threaded CPython and numpy charge any two threads running this model's
handlers, and twice the lone run's time over the pair's is the most a 2-thread runtime
could gain on it here (``docs/performance.md``).
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import seer
from bench.bench_capacity import capacity_now
from bench.bench_queues import on_threads
from bench.bench_runtimes import make_model
from bench.labels import parse_runtime
from bench.markdown import not_measured, table
from bench.stats import paired, ratios, timed_steps
from seer.cli import interpreter_facts
from seer.sched.blas import blas_cap

__all__ = ["GOALS", "WORKLOADS", "main", "measure", "section"]

RUNTIMES = ["serial", "seer(1)", "seer(2)", "static(2)", "static-block(2)", "global(2)",
            "executor(2)", "optimistic(2)"]
PEERS = ["serial", "seer(2)", "static(2)", "static-block(2)", "global(2)", "optimistic(2)"]
#: key -> (title, workload, entities, cost µs, hotspot peak, runtimes)
WORKLOADS: dict[str, tuple[str, str, int, float, float, list[str]]] = {
    "pcs": ("PCS 1600 cells, cost_us=15 (the benchmark size: ~11 µs events)", "pcs", 1600, 15,
            2.0, RUNTIMES),
    "pcs20": ("PCS 1600 cells, cost_us=120 (~20 µs events)", "pcs", 1600, 120, 2.0,
              ["serial", "seer(1)", "seer(2)", "static(2)"]),
    "aircraft": ("Aircraft 800 UAVs, ~200 µs events", "aircraft", 800, 200, 2.0, RUNTIMES),
    "bench10": ("BenchModel 1600 entities, 10 µs events", "bench", 1600, 10, 2.0, RUNTIMES),
    "bench5": ("BenchModel 1600 entities, 5 µs events", "bench", 1600, 5, 2.0,
               ["serial", "seer(2)"]),
    "pcs_gain0": ("PCS 1600 cells, no hotspot", "pcs", 1600, 15, 0.0, PEERS),
    "pcs_gain8": ("PCS 1600 cells, hotspot of peak 8", "pcs", 1600, 15, 8.0, PEERS),
}
#: the smoke mode's sizes (correctness of the pipeline only)
SMOKE_ENTITIES = {"pcs": 64, "aircraft": 40, "bench": 60}
#: (text, workload key, measure, runtime(s), goal): measure "speedup" (runtime over
#: serial), "cpu" (CPU ratio, at most the goal), or "lead" (time of each peer over the
#: runtime's, at least the goal)
GOALS: list[tuple[str, str, str, Any, float]] = [
    ("PCS 1600, ~20 µs events (cost_us=120): seer(2) / serial", "pcs20", "speedup",
     "seer(2)", 1.6),
    ("PCS 1600, ~20 µs events: total CPU of seer(2) / serial CPU", "pcs20", "cpu",
     "seer(2)", 1.10),
    ("PCS 1600, benchmark size (~11 µs events): seer(2) / serial", "pcs", "speedup",
     "seer(2)", 1.6),
    ("PCS 1600, benchmark size: total CPU of seer(2) / serial CPU", "pcs", "cpu", "seer(2)",
     1.10),
    ("BenchModel 10 µs: seer(2) / serial", "bench10", "speedup", "seer(2)", 1.5),
    ("BenchModel 5 µs: seer(2) breaks even with serial", "bench5", "speedup", "seer(2)",
     1.0),
    ("PCS, no hotspot: seer(2) at least level with static(2)", "pcs_gain0", "lead",
     ["static(2)"], 1.0),
    ("PCS, hotspot peak 8: seer(2) ahead of every peer", "pcs_gain8", "lead",
     ["static(2)", "static-block(2)", "global(2)", "optimistic(2)"], 1.0),
]


def measure(key: str, steps: int, rounds: int, smoke: bool = False) -> dict[str, Any]:
    """Wall and CPU seconds per step of each runtime of ``WORKLOADS[key]``, per round."""
    _title, workload, entities, cost, gain, names = WORKLOADS[key]
    if smoke:
        entities = SMOKE_ENTITIES[workload]
    model = make_model(workload, entities, cost, 1, gain)
    actions = [model.sample_actions(t) for t in range(steps + 1)]
    runtimes = {}
    pair = [seer.make_runtime(make_model(workload, entities, cost, 1, gain), "serial")
            for _ in range(2)]
    ceiling: dict[str, list[float]] = {"wall": [], "cpu": []}
    try:
        for name in names:
            kind, threads = parse_runtime(name)
            runtimes[name] = seer.make_runtime(model, kind, threads=threads)
        rows: dict[str, dict[str, list[float]]] = {n: {"wall": [], "cpu": [], "rolled": []}
                                                   for n in names}
        for _ in range(rounds):
            for name, rt in runtimes.items():
                rt.reset(seed=0)
                rt.step(actions[0])
                wall, cpu = timed_steps(rt, actions, steps)
                rows[name]["wall"].append(wall)
                rows[name]["cpu"].append(cpu)
                # optimistic runtimes: events rolled back / events processed, since reset
                rows[name]["rolled"].append(rt.stats.get("rollback_rate", float("nan")))
            wall, cpu = _independent_pair(pair, actions, steps)
            ceiling["wall"].append(wall)
            ceiling["cpu"].append(cpu)
    finally:
        for rt in [*runtimes.values(), *pair]:
            rt.close()
    base = rows["serial"]
    out = {}
    for name, r in rows.items():
        out[name] = {
            "wall_s": r["wall"], "cpu_s": r["cpu"],
            "speedup": paired(base["wall"], r["wall"]),
            "cpu_ratio": paired(r["cpu"], base["cpu"]),
            "rollback_rate": statistics.fmean(r["rolled"]),
            "threads": parse_runtime(name)[1]}
    return {"entities": entities, "cost_us": cost, "gain": gain, "workload": workload,
            "runtimes": out,
            "ceiling": {"wall_s": ceiling["wall"], "cpu_s": ceiling["cpu"],
                        "cpu_ratio": paired(ceiling["cpu"], base["cpu"]),
                        "speedup": paired([2 * w for w in base["wall"]], ceiling["wall"])}}


def _independent_pair(pair: list[Any], actions: list[Any], steps: int) -> tuple[float, float]:
    """Step two independent serial runtimes at once, one per thread, ``steps`` steps after
    a reset and a warm-up step each: the pair's wall seconds per step, and the mean thread
    CPU seconds per step of one run."""
    cpu = [0.0, 0.0]

    def warm_up(i: int) -> None:
        pair[i].reset(seed=0)
        pair[i].step(actions[0])

    def timed(i: int, n: int) -> None:
        cpu[i] = timed_steps(pair[i], actions, n, time.thread_time)[1]

    # BLAS held at one thread, as the parallel runtimes hold it while they step
    with blas_cap(1):
        wall = on_threads(2, timed, steps, setup=warm_up)
    return wall / steps, sum(cpu) / 2


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one round")
    parser.add_argument("--steps", type=int, default=4, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    args = parser.parse_args(argv)
    from tqdm import tqdm

    steps, rounds = (1, 1) if args.smoke else (args.steps, args.rounds)
    result: dict[str, Any] = {
        "command": shlex.join(["python", "-m", "bench.efficiency",
                               *(argv if argv is not None else sys.argv[1:])]),
        "facts": interpreter_facts(), "steps": steps, "rounds": rounds, "smoke": args.smoke,
        "capacity_before": capacity_now(), "workloads": {}}
    for key in tqdm(args.only, desc="efficiency", unit="workload"):
        result["workloads"][key] = measure(key, steps, rounds, args.smoke)
    result["capacity_after"] = capacity_now()
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for line in section(result):
        print(line)


# -- the report --------------------------------------------------------------------------------
def goal_rows(result: dict[str, Any]) -> list[list[str]]:
    """One row per goal of :data:`GOALS`: text, goal, measured (the median over rounds and,
    with more than one round, the lowest and highest round), met, and the ceiling of two
    threads on that workload (two independent serial runs; see :func:`measure`). Met is
    read from the median; the range shows how far the rounds spread around it."""
    rows = []
    for text, key, what, who, goal in GOALS:
        w = result["workloads"].get(key)
        if w is None:
            rows.append([text, f"{goal:g}", "not measured", "-", "-"])
            continue
        r = w["runtimes"]
        base = r["serial"]
        ceiling = w.get("ceiling")
        bound = "-"
        if what == "speedup":
            value, ok, shown = r[who]["speedup"], r[who]["speedup"] >= goal, ">="
            rounds = ratios(base["wall_s"], r[who]["wall_s"])
            if ceiling:
                bound = f"{ceiling['speedup']:.2f}"
        elif what == "cpu":
            value, ok, shown = r[who]["cpu_ratio"], r[who]["cpu_ratio"] <= goal, "<="
            rounds = ratios(r[who]["cpu_s"], base["cpu_s"])
            if ceiling:
                bound = f"{ceiling['cpu_ratio']:.2f}"
        else:
            # lead over each peer: time(peer) / time(seer(2)), per round, median; the
            # goal is read against the peer it is smallest for
            per_peer = {p: ratios(r[p]["wall_s"], r["seer(2)"]["wall_s"]) for p in who}
            leads = {p: statistics.median(v) for p, v in per_peer.items()}
            closest = min(leads, key=leads.get)
            value, rounds = leads[closest], per_peer[closest]
            ok, shown = value >= goal, ">="
        spread = f" ({min(rounds):.2f}-{max(rounds):.2f})" if len(rounds) > 1 else ""
        rows.append([text, f"{shown} {goal:g}", f"{value:.2f}{spread}",
                     "yes" if ok else "**no**", bound])
    return rows


def section(result: dict[str, Any] | None) -> list[str]:
    """The RESULTS.md section: goals, then a table per workload."""
    title = "## Parallel efficiency: speed-up and the CPU time it costs"
    if result is None:
        return not_measured(title, "efficiency")
    out = [title, "",
           f"Command: `{result['command']}` ({result['rounds']} rounds of "
           f"{result['steps']} steps per runtime, runtimes taking turns). Parallel "
           f"capacity: {result['capacity_before']:.2f} effective cores before, "
           f"{result['capacity_after']:.2f} after; a speed-up above it is not possible, "
           "and the goals below are read with it.", "",
           "*CPU ratio* is the runtime's total process CPU time (every thread) over "
           "serial's for the same steps: 1.00 means the second thread's time all became "
           "progress. *Efficiency* is speed-up / threads. *Rolled back*: the optimistic "
           "runtime's events undone by rollbacks, over events processed.", "",
           "*Two threads at best*: two independent serial runs of the workload stepping at "
           "once on two threads of one process (their own models, nothing shared but the "
           "interpreter and numpy). For a speed-up goal it is their throughput over one "
           "run's, the most any 2-thread runtime could reach on this host and interpreter; "
           "for a CPU goal, the CPU each run cost over a lone run's, the part of the "
           "scaling tax no runtime can remove.", "",
           *table(["goal (2 cores, paired in this run)", "target",
                   "measured (lowest-highest round)", "met", "two threads at best"],
                  goal_rows(result)), ""]
    for key, w in result["workloads"].items():
        out += [f"**{WORKLOADS[key][0] if key in WORKLOADS else key}**"
                f" ({w['entities']} entities in this run)", ""]
        rows = []
        impossible = False
        for name, r in w["runtimes"].items():
            ms = 1e3 * statistics.median(r["wall_s"])
            rolled = r.get("rollback_rate", float("nan"))
            impossible |= _over(r["speedup"], r["threads"])
            rows.append([name, f"{ms:.1f}", _speedup(r["speedup"], r["threads"]),
                         f"{r['cpu_ratio']:.2f}", f"{r['speedup'] / r['threads']:.2f}",
                         "-" if rolled != rolled else f"{100 * rolled:.2f} %"])
        ceiling = w.get("ceiling")
        if ceiling:
            impossible |= _over(ceiling["speedup"], 2)
            rows.append(["two independent serial runs, one per thread",
                         f"{1e3 * statistics.median(ceiling['wall_s']) / 2:.1f}",
                         _speedup(ceiling["speedup"], 2), f"{ceiling['cpu_ratio']:.2f}",
                         f"{ceiling['speedup'] / 2:.2f}", "-"])
        out += [*table(["runtime", "ms / step", "speed-up", "CPU ratio", "efficiency",
                         "rolled back"], rows), ""]
        if impossible:
            out += ["(!) More than the thread count: the serial rounds this is read "
                    "against lost time to the host's other work, so this row overstates.",
                    ""]
    return out


def _over(speedup: float, threads: int) -> bool:
    """A speed-up above the thread count: impossible unless the serial rounds it is read
    against were slowed by the host."""
    return speedup > threads


def _speedup(speedup: float, threads: int) -> str:
    """A speed-up, flagged where it is :func:`_over` the thread count."""
    return f"{speedup:.2f}" + (" (!)" if _over(speedup, threads) else "")


def draw(result: dict[str, Any], figures: Path) -> list[str]:
    """Speed-up against CPU ratio of every 2-thread runtime, one marker per workload."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    markers = "osD^vP"
    for i, (key, w) in enumerate(result["workloads"].items()):
        for name, r in w["runtimes"].items():
            if r["threads"] < 2:
                continue
            ax.scatter(r["cpu_ratio"], r["speedup"], marker=markers[i % len(markers)],
                       label=f"{key} {name}", s=28)
    ax.axhline(1.0, color="grey", lw=0.5)
    ax.axvline(1.0, color="grey", lw=0.5)
    ax.set_xlabel("CPU ratio (total CPU / serial CPU)")
    ax.set_ylabel("speed-up over serial")
    ax.set_title("What two threads bought and what they cost")
    ax.legend(fontsize=5.5, ncol=2)
    fig.tight_layout()
    name = "efficiency.png"
    fig.savefig(figures / name)
    return [name]


if __name__ == "__main__":
    main()
