"""Memory per runtime: peak memory over a fixed episode, each runtime in a fresh process.

    .venv/bin/python -m bench.memory --out bench/results/memory.json   # benchmark sizes
    .venv/bin/python -m bench.memory --smoke --out /tmp/memory.json    # tiny, seconds

Per workload and runtime, two fresh processes run ``reset(0)`` and ``steps`` steps: one
reads the RSS high-water mark (``VmHWM``, reset after the imports and the model where the
kernel allows, else ``ru_maxrss``), the other the peak of Python's traced allocations from
just before the runtime is built (tracing slows the run).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import shlex
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench.harness import finish, record

__all__ = ["RUNTIMES", "main", "measure_child"]

HERE = Path(__file__).resolve().parent
RUNTIMES = ["serial", "seer(2)", "static(2)", "global(2)", "executor(2)", "optimistic(2)"]
WORKLOADS = ("aircraft", "pcs")
MIB = 1 << 20


# -- one measurement (child process) ----------------------------------------------------------
def _status_bytes(field: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (VmRSS, VmHWM) in bytes, or None."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return 1024 * int(line.split()[1])
    return None


def _reset_hwm() -> bool:
    """Reset the RSS high-water mark to the current RSS (Linux >= 4.0); False if refused."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def measure_child(workload: str, entities: int, cost: float, runtime: str, steps: int,
                  traced: bool) -> dict[str, Any]:
    """Run one episode of ``runtime`` on the workload in *this* process and return what
    it measured (call it in a fresh process: the peaks are process-wide)."""
    import seer
    from bench.harness import make_model, parse_runtime

    kind, threads = parse_runtime(runtime)
    model = make_model(workload, entities, cost, 1)
    base_rss = _status_bytes("VmRSS") or 0
    hwm_reset = _reset_hwm()
    if traced:
        tracemalloc.start()
    t0 = time.perf_counter()
    rt = seer.make_runtime(model, kind, threads=threads)
    try:
        rt.reset(0)
        for t in range(steps):
            rt.step(model.sample_actions(t))
        stats = rt.stats
    finally:
        rt.close()
    seconds = time.perf_counter() - t0
    row: dict[str, Any] = {"workload": workload, "entities": entities, "cost_us": cost,
                           "runtime": runtime, "steps": steps, "seconds": seconds,
                           "events": stats["events_run"]}
    if traced:
        row["tracemalloc_peak"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    else:
        hwm = _status_bytes("VmHWM")
        row.update(rss_peak=hwm or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                   rss_base=base_rss, rss_source="VmHWM" if hwm else "ru_maxrss",
                   hwm_reset=hwm_reset)
    for key in ("events_processed", "rolled_back", "rollback_rate", "state_saving_bytes",
                "checkpoints"):
        if key in stats:
            row[key] = stats[key]
    return row


def _run_child(workload: str, entities: int, cost: float, runtime: str, steps: int,
               traced: bool) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.memory", "--child", workload, str(entities),
           str(cost), runtime, str(steps), "traced" if traced else "rss"]
    proc = subprocess.run(cmd, cwd=HERE.parent, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd[1:])} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- the part (parent process) -----------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="write the JSON result here")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, 2 steps (seconds)")
    parser.add_argument("--full", action="store_true", help="a longer episode (20 steps)")
    parser.add_argument("--steps", type=int, default=None, help="steps in the episode")
    parser.add_argument("--runtimes", nargs="+", default=RUNTIMES)
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--child", nargs=6, default=None, help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.child is not None:
        workload, n, cost, runtime, steps, mode = args.child
        print(json.dumps(measure_child(workload, int(n), float(cost), runtime, int(steps),
                                       mode == "traced")))
        return 0
    from bench.markdown import Results, memory_section
    from bench.sizes import Sizes

    mode = "smoke" if args.smoke else "full" if args.full else "fast"
    z = Sizes(mode)
    steps = args.steps or {"smoke": 2, "fast": 10, "full": 20}[mode]
    sizes = {"aircraft": (z.n_air, z.air_cost), "pcs": (z.n_pcs, z.pcs_cost)}
    started = time.time()
    rows = []
    for w in args.workloads:
        n, cost = sizes[w]
        for runtime in args.runtimes:
            print(f"[memory] {w} n={n} {runtime}", flush=True)
            row = _run_child(w, n, cost, runtime, steps, traced=False)
            row["tracemalloc_peak"] = _run_child(w, n, cost, runtime, steps,
                                                 traced=True)["tracemalloc_peak"]
            rows.append(row)
    result = record("bench.memory", argv, mode=mode, steps=steps, rows=rows,
                    minutes=(time.time() - started) / 60)
    finish(args.out, result, memory_section(Results(memory=result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
