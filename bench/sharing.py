"""The report part of :mod:`bench.bench_sharing`: what a handler's everyday operations cost
on one thread, and how much more beside a second thread, on private or shared objects.

    .venv/bin/python -m bench.sharing --out sharing.json          # about 2 minutes
    .venv/bin/python -m bench.sharing --smoke --out /tmp/s.json   # seconds

Runs the pyperf suite in a child process (``--fast``; ``--smoke``: one value each, a few
operations) and keeps, per operation, the median time per operation per thread of each
mode, with the machine's parallel capacity before and after.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pyperf

from bench.bench_capacity import capacity_now
from bench.bench_sharing import MODES, OPS
from bench.markdown import not_measured, table

__all__ = ["main", "section"]

SMOKE_OPS = ["attr_read", "rng_draw", "row_write"]
ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--smoke", action="store_true", help="one value, three operations")
    parser.add_argument("--full", action="store_true",
                        help="6 processes of 3 values each (default: pyperf --fast)")
    args = parser.parse_args(argv)
    ops = SMOKE_OPS if args.smoke else list(OPS)
    mode = (["--debug-single-value"] if args.smoke else
            ["--processes", "6", "--values", "3"] if args.full else ["--fast"])
    before = capacity_now()
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "sharing.json"
        cmd = [sys.executable, "-m", "bench.bench_sharing", *mode, "--quiet", "-o", str(raw),
               "--ops", *ops]
        print(f"[sharing] {shlex.join(cmd[2:])}", flush=True)
        subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        suite = pyperf.BenchmarkSuite.load(str(raw))
    figures: dict[str, dict[str, float]] = {}
    for name in ops:
        figures[name] = {m: suite.get_benchmark(f"{name}-{m}").median() for m in MODES}
    result = {"command": shlex.join(["python", "-m", "bench.sharing",
                                     *(argv if argv is not None else sys.argv[1:])]),
              "pyperf": mode, "capacity_before": before, "capacity_after": capacity_now(),
              "seconds_per_op": figures}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("\n".join(section(result)))


def section(result: dict[str, Any] | None) -> list[str]:
    """The RESULTS.md section: one row per operation."""
    title = "## What a handler's operations cost on one thread and beside another"
    if result is None:
        return not_measured(title, "sharing")
    rows = []
    for name, f in result["seconds_per_op"].items():
        one = f["1T"]
        advice = OPS[name].advice if name in OPS else ""
        rows.append([f"`{OPS[name].stmt}`" if name in OPS else name, f"{one * 1e9:.1f}",
                     f"{f['2T-private'] / one:.2f}", f"{f['2T-shared'] / one:.2f}", advice])
    return [title, "",
            f"Command: `{result['command']}` (pyperf `{' '.join(result['pyperf'])}`, "
            f"`bench/bench_sharing.py`). Parallel capacity: "
            f"{result['capacity_before']:.2f} effective cores before, "
            f"{result['capacity_after']:.2f} after.", "",
            "Time per operation per thread: alone (1T), then while a second thread runs the "
            "same loop on its own object (2T-private) or on the same object (2T-shared), as "
            "multiples of the 1T figure. 1.00 is perfect scaling. Private objects above 1.00 "
            "mean the cost is in state the interpreter or numpy shares behind the scenes; "
            "shared above private is the price of the object itself being shared. "
            "`docs/performance.md` turns this into advice.", "",
            *table(["operation", "1T ns/op", "2T-private", "2T-shared",
                    "for handler authors"], rows), ""]


if __name__ == "__main__":
    main()
