"""Where a step's CPU goes, per Python function, from Linux ``perf`` samples.

    .venv/bin/python -m bench.perf_profile --workload pcs --cost 15 --steps 30

For serial, seer(1), seer(T) and T independent serial runs on T threads of one process,
one child process each runs under ``perf record --call-graph dwarf`` with CPython's perf
trampolines (``-X perf``). Each sample taken while the timed steps ran goes to the
innermost Python function on its stack (C code it calls included), else to ``(native)
<library>``. The table gives ms of CPU per step of one environment, sorted by how much
more seer(T) spends in a function than an independent run: what running one environment
on T threads costs, function by function. One sampled run per setting (about one sample
per ms), so differences under a few tenths of a ms are noise. Needs ``perf`` and
``kernel.perf_event_paranoid`` at most 2. Reading it: docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.harness import table

__all__ = ["ProfileError", "attribute", "main", "measure", "perf_problem", "section"]

ROOT = Path(__file__).resolve().parents[1]
#: Sampling frequency (Hz): about one sample per millisecond of CPU.
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


# -- the child: one setting, timed ----------------------------------------------------------
def _child(setting: str, workload: str, entities: int, cost: float, threads: int,
           steps: int, out: str) -> None:
    import seer
    from bench.harness import make_model, on_threads

    def built(kind: str, n: int) -> tuple[seer.Runtime, list[Any]]:
        model = make_model(workload, entities, cost, 1)
        actions = [model.sample_actions(t) for t in range(steps + 2)]
        rt = seer.make_runtime(model, kind, threads=n)
        rt.reset(seed=0)
        rt.step(actions[0])
        rt.step(actions[1])
        return rt, actions[2:]

    if setting == "independent":
        runs: list[Any] = [None] * threads

        def setup(i: int) -> None:
            runs[i] = built("serial", 1)

        def body(i: int, _loops: int) -> None:
            rt, actions = runs[i]
            for a in actions:
                rt.step(a)

        try:
            wall = on_threads(threads, body, 1, setup=setup)
            # on_threads times with perf_counter, which is CLOCK_MONOTONIC here too
            end = time.monotonic_ns()
        finally:
            for r in runs:
                if r is not None:
                    r[0].close()
        start = end - round(wall * 1e9)
        n_runs = threads
    else:
        seer_n = re.fullmatch(r"seer\((\d+)\)", setting)
        if setting != "serial" and seer_n is None:
            raise ValueError(f"unknown setting {setting!r}: serial, independent or seer(N)")
        kind, n = ("seer", int(seer_n.group(1))) if seer_n else ("serial", 1)
        rt, actions = built(kind, n)
        start = time.monotonic_ns()
        for a in actions:
            rt.step(a)
        end = time.monotonic_ns()
        rt.close()
        n_runs = 1
    Path(out).write_text(json.dumps({"start_ns": start, "end_ns": end, "steps": steps,
                                     "runs": n_runs}))


# -- attribution --------------------------------------------------------------------------
def _label(symbol: str, dso: str) -> str:
    """``py::Class.method:/path/file.py`` -> ``Class.method (path relative to the repo or
    site-packages)``; a native frame -> ``(native) library``."""
    if symbol.startswith("py::"):
        name, _, path = symbol[4:].partition(":")
        p = Path(path)
        if p.is_relative_to(ROOT) and ".venv" not in p.parts:
            where = str(p.relative_to(ROOT))
        elif "site-packages" in p.parts:
            where = "/".join(p.parts[p.parts.index("site-packages") + 1:])
        else:
            where = p.name
        return f"{name} ({where})"
    return NATIVE + (Path(dso).name or "?")


def attribute(script: str, start_ns: int, end_ns: int) -> Counter[str]:
    """CPU nanoseconds per label from ``perf script -F tid,time,period,ip,sym,dso --ns``
    output with call chains: each sample in ``[start_ns, end_ns]`` goes to its innermost
    Python frame, or to its leaf's library when it has none."""
    totals: Counter[str] = Counter()
    for block in script.split("\n\n"):
        lines = block.strip("\n").splitlines()
        if not lines:
            continue
        head = _HEADER.match(lines[0])
        if head is None:
            continue
        t = round(float(head.group(1)) * 1e9)
        if not start_ns <= t <= end_ns:
            continue
        frames = [m.groups() for line in lines[1:] if (m := _FRAME.match(line))]
        python = next((f for f in frames if f[0].startswith("py::")), None)
        # an inlined frame names no library: the first frame that does is its caller's
        native = next((f for f in frames if f[1] != "inlined"), None)
        label = _label(*(python or native or ("?", "?")))
        totals[label] += int(head.group(2))
    return totals


# -- the parent ---------------------------------------------------------------------------
class ProfileError(RuntimeError):
    """perf, or the profiled child, failed; the message ends with what it printed."""


def _checked(command: list[str], what: str, **kwargs: Any) -> str:
    """Run ``command``; its stdout, or :class:`ProfileError` naming ``what`` failed with
    the end of its stderr (the child's traceback, or perf's complaint)."""
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        raise ProfileError(f"{what} failed (exit {done.returncode}): {command[0]} "
                           f"{command[1]} said:\n{tail}")
    return done.stdout


def _profile(setting: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    data, window = tmp / f"{setting}.data", tmp / f"{setting}.json"
    child = [sys.executable, "-X", "perf", "-m", "bench.perf_profile", "--child", setting,
             "--workload", args.workload, "--entities", str(args.entities),
             "--cost", str(args.cost), "--threads", str(args.threads),
             "--steps", str(args.steps), "--out", str(window)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    _checked(["perf", "record", "-q", "-F", str(FREQUENCY), "-k", "CLOCK_MONOTONIC",
              "--call-graph", "dwarf,16384", "-o", str(data), "--", *child],
             f"profiling {setting}", cwd=ROOT, env=env)
    script = _checked(["perf", "script", "-i", str(data), "--ns",
                       "-F", "tid,time,period,ip,sym,dso"], f"reading {setting}'s samples")
    data.unlink()
    w = json.loads(window.read_text())
    per = w["steps"] * w["runs"]
    ns = attribute(script, w["start_ns"], w["end_ns"])
    return {"cpu_ms": sum(ns.values()) / per / 1e6, "wall_ms": (w["end_ns"] - w["start_ns"])
            / w["steps"] / 1e6, "functions": {k: v / per / 1e6 for k, v in ns.items()}}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Profile every setting; ms per step of one environment, per label."""
    from tqdm import tqdm

    t = args.threads
    names = {"serial": "serial", "seer(1)": "seer(1)", f"seer({t})": f"seer({t})",
             "independent": f"{t} independent runs"}
    settings: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="seer-perf-") as tmp:
        for setting in tqdm(list(names), desc="perf_profile", unit="setting"):
            settings[names[setting]] = _profile(setting, args, Path(tmp))
    return {"workload": args.workload, "entities": args.entities, "cost_us": args.cost,
            "threads": t, "steps": args.steps, "settings": settings}


def section(result: dict[str, Any], top: int = 25) -> list[str]:
    """The table: the ``top`` functions by |seer(T) - independent run|, and the totals."""
    t = result["threads"]
    cols = ["serial", "seer(1)", f"seer({t})", f"{t} independent runs"]
    s = result["settings"]
    funcs = {k for c in cols for k in s[c]["functions"]}

    def ms(col: str, k: str) -> float:
        return s[col]["functions"].get(k, 0.0)

    def excess(k: str) -> float:
        return ms(cols[2], k) - ms(cols[3], k)

    rows = [[k, *(f"{ms(c, k):.2f}" for c in cols), f"{excess(k):+.2f}"]
            for k in sorted(funcs, key=lambda k: -abs(excess(k)))[:top]]
    rows.append(["**all (CPU per step)**", *(f"{s[c]['cpu_ms']:.1f}" for c in cols),
                 f"{s[cols[2]]['cpu_ms'] - s[cols[3]]['cpu_ms']:+.1f}"])
    return [f"{result['workload']} {result['entities']}, cost_us={result['cost_us']:g}, "
            f"{result['steps']} steps: ms of CPU per step of one environment, by innermost "
            "Python function (perf samples)", "",
            *table(["function", *cols, f"seer({t}) - independent"], rows)]


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    parser = argparse.ArgumentParser(prog="python -m bench.perf_profile",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="pcs", choices=["pcs", "aircraft", "bench"])
    parser.add_argument("--entities", type=int, default=1600)
    parser.add_argument("--cost", type=float, default=15.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--top", type=int, default=25, help="functions listed")
    parser.add_argument("--out", help="also write the result as JSON here")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # serial, independent, seer(N)
    args = parser.parse_args(argv)
    if args.threads < 2 or args.steps < 1 or args.entities < 1 or args.top < 1:
        parser.error("--threads must be >= 2; --steps, --entities and --top >= 1")
    if args.child:
        _child(args.child, args.workload, args.entities, args.cost, args.threads,
               args.steps, args.out)
        return None
    problem = perf_problem()
    if problem is not None:
        parser.error(f"cannot profile: {problem}")
    result = measure(args)
    print("\n".join(section(result, args.top)))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
