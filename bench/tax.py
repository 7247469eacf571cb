"""What T threads cost, split three ways: the machine, the interpreter, the runtime.

    .venv/bin/python -m bench.tax --out tax.json                      # 2 threads, ~1 minute
    .venv/bin/python -m bench.tax --smoke --out /tmp/tax.json         # seconds
    dist/bundle/run.sh python -m bench.tax --threads 1 2 4 8 16 --out "$OUT/tax.json"

For each workload and thread count T, every round measures one model's CPU time per step
in four settings, each against a lone serial run of the same round:

* ``processes``: T serial runs in T separate processes at once. They share the cores'
  caches, the memory bus, the clock budget and the host's other tenants: what the
  *machine* charges T busy cores. Against one such process alone.
* ``threads``: T independent serial runs (each its own model and runtime, built on its
  own thread) on T threads of this process. They share nothing but the interpreter and
  the libraries, so what they cost beyond ``processes`` is what free-threaded CPython and
  numpy charge threads that run this code at once (``docs/performance.md``, "What two
  threads cost before SEER does anything"). Against one such thread alone.
* ``lockstep``: the same T independent runs, meeting at a barrier before every step, so
  that their steps run side by side phase by phase, as the parts of one step do on a
  parallel runtime (on PCS every cell's recheck, all small-matrix numpy, comes first in
  each step). What this costs beyond ``threads`` is what running the *same kind* of work
  on every thread at once costs (the threads wait at the barrier parked, so waiting
  costs no CPU here). Against one such thread alone.
* ``seer``: one model on SEER with T threads: total process CPU over serial's, serial
  run on the calling thread as a user runs it. What it costs beyond ``lockstep`` is the
  runtime's own: scheduling, windows, idle threads, memory it touches.

Each setting also gives a speed-up: ``T x`` the lone wall time over the group's (for the
independent runs: the most any T-thread runtime could gain here), and serial's wall over
SEER's. BLAS is held at one thread everywhere, as the parallel runtimes hold it while they
step. Ratios are taken within a round; the median over rounds is reported. Each setting is
read against a lone run made the same way, because where a run's objects were made can
move its time by several per cent. In one alternated run (5 rounds each, PCS 1600 serial),
a run built and stepped on a fresh thread took a median 63.2 ms per step, one on the
calling thread 67.1 ms, and one built on another thread than the one stepping it 71.0 ms
(objects of another thread are counted with atomics); rounds spread by about 5 %.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import queue
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import seer
from bench.bench_queues import on_threads
from bench.bench_runtimes import make_model
from bench.manycore import capacity
from bench.markdown import not_measured, table
from bench.stats import paired, timed_steps
from seer.cli import interpreter_facts
from seer.sched.blas import blas_cap

__all__ = ["WORKLOADS", "main", "measure", "section"]

#: key -> (title, workload, entities, cost µs, steps)
WORKLOADS: dict[str, tuple[str, str, int, float, int]] = {
    "pcs": ("PCS 1600 cells, cost_us=15 (~11 µs plain-Python events)", "pcs", 1600, 15, 6),
    "pcs20": ("PCS 1600 cells, cost_us=120 (~20 µs events)", "pcs", 1600, 120, 4),
    "aircraft": ("Aircraft 800 UAVs, ~200 µs numpy events", "aircraft", 800, 200, 3),
}
SMOKE = {"pcs": 64, "aircraft": 40}
#: Measured unless --workloads says otherwise (pcs20 is the goal size of docs/performance.md).
DEFAULT_WORKLOADS = ["pcs", "pcs20", "aircraft"]
SETTINGS = ("processes", "threads", "lockstep", "seer")


def _serial_run(workload: str, entities: int, cost: float, steps: int) -> Any:
    """A fresh serial runtime of the model and its actions, reset and warmed up."""
    model = make_model(workload, entities, cost, 1)
    actions = [model.sample_actions(t) for t in range(steps + 1)]
    rt = seer.make_runtime(model, "serial")
    rt.reset(seed=0)
    rt.step(actions[0])
    return rt, actions


#: Seconds a timing process may wait for the others at the start line.
START_TIMEOUT_S = 300.0


def _child(args: tuple[str, int, float, int], barrier: Any, results: Any) -> None:
    """One serial run in its own process: build and warm up, meet the others, time."""
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        with blas_cap(1):
            rt, actions = _serial_run(*args)
            barrier.wait(START_TIMEOUT_S)
            wall, cpu = timed_steps(rt, actions, args[3], time.thread_time)
        rt.close()
    except BaseException:
        barrier.abort()  # the others leave the start line at once instead of waiting
        raise
    results.put((wall, cpu))


def _processes(n: int, args: tuple[str, int, float, int]) -> tuple[float, float]:
    """``n`` serial runs in ``n`` processes at once: the slowest one's wall and the mean
    CPU seconds per step. Processes are spawned (no fork of a threaded parent). One that
    fails stops the measurement at once, with its exit code; none is left running."""
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_child, args=(args, barrier, results)) for _ in range(n)]
    for p in procs:
        p.start()
    got: list[tuple[float, float]] = []
    try:
        while len(got) < n:
            try:
                got.append(results.get(timeout=0.5))
            except queue.Empty:
                failed = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                if failed:
                    raise RuntimeError(f"a timing process of {args[0]} {args[1]} failed "
                                       f"(exit codes {failed})") from None
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
                p.join()
    return max(w for w, _ in got), statistics.fmean(c for _, c in got)


def _threads(n: int, args: tuple[str, int, float, int],
             lockstep: bool = False) -> tuple[float, float]:
    """``n`` independent serial runs on ``n`` threads of this process: the group's wall
    and the mean thread CPU seconds per step of one run. With ``lockstep`` the runs meet
    at a barrier before every step."""
    steps = args[3]
    runs: list[Any] = [None] * n
    cpu = [0.0] * n
    gate = threading.Barrier(n) if lockstep else None

    def setup(i: int) -> None:
        runs[i] = _serial_run(*args)

    def body(i: int, _loops: int) -> None:
        if gate is None:
            cpu[i] = timed_steps(*runs[i], steps, time.thread_time)[1]
            return
        rt, actions = runs[i]
        c0 = time.thread_time()
        try:
            for t in range(steps):
                gate.wait()
                rt.step(actions[t + 1])
        except threading.BrokenBarrierError:
            return  # another run failed: its error is the one reported
        except BaseException:
            gate.abort()  # the other runs leave the barrier instead of waiting for this one
            raise
        cpu[i] = (time.thread_time() - c0) / steps

    try:
        with blas_cap(1):
            wall = on_threads(n, body, 1, setup=setup)
    finally:
        for r in runs:
            if r is not None:
                r[0].close()
    return wall / steps, statistics.fmean(cpu)


def _seer(rt: Any, actions: list[Any], steps: int) -> tuple[float, float, float]:
    """SEER's wall and total process CPU seconds per step (all its threads), and the CPU
    seconds per step its threads spent inside the pool's tasks (windows and outputs: the
    rest is the caller's work between them and idle threads spinning)."""
    rt.reset(seed=0)
    rt.step(actions[0])
    if rt.pool is not None:
        rt.pool.reset_stats()
    wall, cpu = timed_steps(rt, actions, steps)
    # one thread runs every window inline on the caller: all of it is the work itself
    pooled = rt.pool is not None and rt.pool.threads > 1
    in_tasks = sum(s["cpu_s"] for s in rt.worker_stats()) / steps if pooled else cpu
    return wall, cpu, in_tasks


def measure(key: str, threads: list[int], rounds: int, smoke: bool = False) -> dict[str, Any]:
    """Per thread count: the rounds' wall and CPU seconds per step of each setting, and of
    the lone runs they are read against."""
    _title, workload, entities, cost, steps = WORKLOADS[key]
    if smoke:
        entities, steps = SMOKE[workload], 2
    args = (workload, entities, cost, steps)
    model = make_model(workload, entities, cost, 1)
    actions = [model.sample_actions(t) for t in range(steps + 1)]
    out: dict[str, Any] = {"workload": workload, "entities": entities, "cost_us": cost,
                           "steps": steps, "by_threads": {}}
    for t in threads:
        rows: dict[str, list[tuple[float, ...]]] = {
            k: [] for k in ("lone_process", "lone_thread", "serial", *SETTINGS)}
        rt = seer.make_runtime(model, "seer", threads=t)
        try:
            for _ in range(rounds):
                rows["lone_process"].append(_processes(1, args))
                rows["processes"].append(_processes(t, args))
                rows["lone_thread"].append(_threads(1, args))
                rows["threads"].append(_threads(t, args))
                rows["lockstep"].append(_threads(t, args, lockstep=True))
                with blas_cap(1):  # serial as a user runs it: on the calling thread
                    lone, lone_actions = _serial_run(*args)
                    try:
                        rows["serial"].append(timed_steps(lone, lone_actions, steps,
                                                               time.thread_time))
                    finally:
                        lone.close()
                rows["seer"].append(_seer(rt, actions, steps))
        finally:
            rt.close()
        out["by_threads"][str(t)] = {k: {"wall_s": [r[0] for r in v],
                                         "cpu_s": [r[1] for r in v]}
                                     for k, v in rows.items()}
        out["by_threads"][str(t)]["seer"]["task_cpu_s"] = [r[2] for r in rows["seer"]]
    return out


def summary(result: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per thread count: each setting's CPU ratio and speed-up (medians over rounds)."""
    out = {}
    for t, r in result["by_threads"].items():
        n = int(t)
        lp, lt, serial = r["lone_process"], r["lone_thread"], r["serial"]
        out[t] = {
            "processes_cpu": paired(r["processes"]["cpu_s"], lp["cpu_s"]),
            "processes_speedup": paired([n * w for w in lp["wall_s"]],
                                               r["processes"]["wall_s"]),
            "threads_cpu": paired(r["threads"]["cpu_s"], lt["cpu_s"]),
            "threads_speedup": paired([n * w for w in lt["wall_s"]],
                                             r["threads"]["wall_s"]),
            # result files made before the lockstep setting existed have none
            "lockstep_cpu": paired(r["lockstep"]["cpu_s"], lt["cpu_s"])
            if "lockstep" in r else math.nan,
            "lockstep_speedup": paired([n * w for w in lt["wall_s"]],
                                       r["lockstep"]["wall_s"]) if "lockstep" in r
            else math.nan,
            "seer_cpu": paired(r["seer"]["cpu_s"], serial["cpu_s"]),
            "seer_speedup": paired(serial["wall_s"], r["seer"]["wall_s"]),
            "seer_task_cpu": paired(r["seer"]["task_cpu_s"], serial["cpu_s"]),
        }
    return out


TITLE = "## What T threads cost: the machine, the interpreter, the runtime"


def section(data: dict[str, Any] | None) -> list[str]:
    """The markdown tables of a result file (``None``: how to make one)."""
    if data is None:
        return not_measured(TITLE, "tax")
    host = data.get("host", {})
    cap = [data.get(k) for k in ("capacity_before", "capacity_after")]
    out = [TITLE, "",
           f"`python -m bench.tax --threads {' '.join(map(str, data['threads']))} --rounds "
           f"{data['rounds']}` on {host.get('cores', '?')} cores; effective cores of "
           f"{data.get('capacity_threads', 2)} threads before / after: "
           + " / ".join("-" if c is None else f"{c:.2f}" for c in cap) + ".", "",
           "CPU: one model's CPU time per step over a lone serial run's (for SEER: all its "
           "threads; *in tasks*: the part its threads spent inside windows and outputs, "
           "the rest being the caller's work between windows and idle threads spinning). "
           "*Lockstep*: the T independent runs meeting at a barrier before every step, so "
           "that the same kind of work runs on every thread at once, as in one parallel "
           "step. "
           "Speed-up: T x the lone run's wall over the group's (independent runs) or "
           "serial's wall over SEER's. At T = 1 the processes and threads columns read a "
           "setting against itself: how far they are from 1.00 is this run's noise.", ""]
    for key, result in data["workloads"].items():
        s = summary(result)
        rows = []
        for t, v in s.items():
            lockstep = v["lockstep_cpu"]
            rows.append([t, f"{v['processes_cpu']:.2f}", f"{v['threads_cpu']:.2f}",
                         _two(lockstep), f"{v['seer_cpu']:.2f}", f"{v['seer_task_cpu']:.2f}",
                         f"{v['seer_cpu'] / v['threads_cpu']:.2f}",
                         _two(v["seer_cpu"] / lockstep),
                         f"{v['processes_speedup']:.2f}x", f"{v['threads_speedup']:.2f}x",
                         f"{v['seer_speedup']:.2f}x"])
        out += [f"### {WORKLOADS[key][0]}", "",
                *table(["T", "CPU: T processes", "CPU: T threads", "CPU: T in lockstep",
                        "CPU: seer(T)", "of which in tasks", "seer(T) / T threads",
                        "seer(T) / lockstep", "speed-up: processes", "speed-up: threads",
                        "speed-up: seer(T)"], rows), ""]
    return out


def _two(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.2f}"


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.tax",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="result JSON file")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS),
                        default=DEFAULT_WORKLOADS)
    parser.add_argument("--smoke", action="store_true", help="tiny models, 1 round")
    args = parser.parse_args(argv)
    if any(t < 1 for t in args.threads) or args.rounds < 1:
        parser.error("--threads must be >= 1 and --rounds >= 1")
    rounds = 1 if args.smoke else args.rounds
    cap_threads = max(2, max(args.threads))
    data: dict[str, Any] = {"rounds": rounds, "threads": args.threads,
                            "host": {"cores": seer.cpu_count(),
                                     "interpreter": interpreter_facts()},
                            "capacity_threads": cap_threads,
                            "capacity_before": capacity(cap_threads)["effective_cores"],
                            "workloads": {}}
    for key in args.workloads:
        print(f"[tax] {key}: T = {args.threads}, {rounds} rounds", file=sys.stderr,
              flush=True)
        data["workloads"][key] = measure(key, args.threads, rounds, smoke=args.smoke)
        _write(args.out, data)  # a run cut off keeps the workloads it finished
    data["capacity_after"] = capacity(cap_threads)["effective_cores"]
    _write(args.out, data)
    print("\n".join(section(data)))
    return data


if __name__ == "__main__":
    main()
