"""Memory per runtime: peak memory over a fixed episode, each runtime in a fresh process.

    .venv/bin/python -m bench.memory --out bench/results/memory.json   # benchmark sizes
    .venv/bin/python -m bench.memory --full --out bench/results/memory.json
    .venv/bin/python -m bench.memory --smoke --out /tmp/memory.json    # tiny, seconds

For each workload (Aircraft and PCS at the benchmark sizes of :mod:`bench.sizes`) and each
runtime (``serial``, ``seer(2)``, ``static(2)``, ``global(2)``, ``executor(2)``,
``optimistic(2)``), two fresh processes run the same episode (``reset(0)`` and ``steps``
steps with ``model.sample_actions``):

* **RSS**: the process's resident-set high-water mark (``VmHWM`` of
  ``/proc/self/status``; ``ru_maxrss`` where that file is missing). The mark is reset
  (``/proc/self/clear_refs`` = 5) after the imports and the model are built, where the
  kernel allows it, so the peak is the episode's; the row also gives the peak *over* the
  RSS measured just before the runtime was built (the runtime's own cost).
* **tracemalloc**: the peak of Python's traced allocations (numpy's buffers included)
  from just before the runtime is built to the end of the episode, in a second process
  (tracing slows the run and takes memory of its own, so it does not share a process with
  the RSS measurement).

The paper reports SEER at about 1/47 of ROOT-Sim's memory and 0.44 GB above ROSS-T's; the
section puts the same ratios (``optimistic`` / ``seer``, ``seer`` - ``static``) beside them.
The report runs this module once (not in rounds): ``main(argv)`` writes one JSON file and
:func:`section` turns it into the RESULTS.md section.
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

from bench.harness import host_facts

__all__ = ["PAPER", "RUNTIMES", "main", "measure_child"]

HERE = Path(__file__).resolve().parent
RUNTIMES = ["serial", "seer(2)", "static(2)", "global(2)", "executor(2)", "optimistic(2)"]
WORKLOADS = ("aircraft", "pcs")
#: The paper's memory figures (its machines, its C runtimes).
PAPER = {"seer_over_rootsim": 1 / 47, "seer_minus_rosst_gb": 0.44}
MIB = 1 << 20


# -- one measurement (child process) ----------------------------------------------------------
def _status_kib(field: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (VmRSS, VmHWM), or None."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def _reset_hwm() -> bool:
    """Reset the RSS high-water mark to the current RSS (Linux >= 4.0); False if refused."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _rss_bytes() -> int:
    kib = _status_kib("VmRSS")
    return (kib or 0) * 1024


def _hwm_bytes() -> tuple[int, str]:
    kib = _status_kib("VmHWM")
    if kib is not None:
        return kib * 1024, "VmHWM"
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "ru_maxrss"


def measure_child(workload: str, entities: int, cost: float, runtime: str, steps: int,
                  traced: bool) -> dict[str, Any]:
    """Run one episode of ``runtime`` on the workload in *this* process and return what
    it measured (call it in a fresh process: the peaks are process-wide)."""
    import seer
    from bench.harness import make_model, parse_runtime

    kind, threads = parse_runtime(runtime)
    model = make_model(workload, entities, cost, 1)
    base_rss = _rss_bytes()
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
        hwm, source = _hwm_bytes()
        row.update(rss_peak=hwm, rss_base=base_rss, rss_source=source, hwm_reset=hwm_reset)
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
    from bench.sizes import Sizes

    argv = sys.argv[1:] if argv is None else argv
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
    result = {"command": shlex.join([".venv/bin/python", "-m", "bench.memory", *argv]),
              "mode": mode, "steps": steps,
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
              "minutes": (time.time() - started) / 60, "host": host_facts(),
              "paper": PAPER, "rows": rows}
    text = json.dumps(result, indent=1)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    from bench.markdown import Results, memory_section

    print("\n".join(memory_section(Results(z, {}, memory=result))))
    return 0


# -- RESULTS.md ---------------------------------------------------------------------------------
if __name__ == "__main__":
    raise SystemExit(main())
