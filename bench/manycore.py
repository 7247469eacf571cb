"""The many-core study: thread scans, the hotspot sweep, per-thread load balance and STPA's
data collection, in one budgeted and re-runnable command (docs/manycore.md).

    dist/bundle/run.sh python -m bench.manycore --out "$OUT/manycore"   # the 16-core machine
    .venv/bin/python -m bench.manycore --smoke --out /tmp/manycore       # tiny sizes, 2 threads
    .venv/bin/python -m bench.report --manycore DIR      # DIR -> bench/RESULTS-manycore.md

In order of priority, so that a run cut off by ``--budget`` keeps the headline figures:
thread scans of Aircraft 800 and PCS 1600, per-thread load balance at 16 threads, the PCS
hotspot sweep at 16 threads, scans of PCS 3600 and Aircraft 3200, then STPA's data
collection while time is left. A scan or sweep point is one :func:`seer.benchmark.compare`
of every pooled runtime at one thread count (one round; serial in it, the state of each
checked against serial's; the ceiling at the focus thread count of a scan). Each
invocation writes ``DIR/session-<time>.json`` (host, capacity, and everything measured,
rewritten after every point); a point measured by an earlier session there is not
measured again, so the same command run again finishes a run that was cut off.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import seer
from bench.efficiency import balance as balance_of
from bench.harness import ROOT, capacity_now, compare, host_facts, label, make_model, write_json

__all__ = ["Config", "Unit", "load_results", "main", "plan", "run_study", "runtime_kinds"]

SCAN_THREADS = (1, 2, 4, 8, 12, 16, 24, 32)
FOCUS_THREADS = 16  # the hotspot sweep's, the load balance's and the ceiling's
DEFAULT_BUDGET_S = 420.0
HANG_GRACE_S = 60.0  # a point still running this long after the budget is taken to hang
GROUPS = ("scan", "balance", "hotspot", "stpa")
PEERS = ("seer", "static", "static-block", "global")
OPTIONAL = ("optimistic",)  # joins when registered


@dataclass(frozen=True)
class Config:
    """``workload`` (``aircraft``/``pcs``) of ``entities`` with ``cost_us`` events; ``gain``
    is PCS's hotspot peak."""

    workload: str
    entities: int
    cost_us: float
    gain: float = 2.0

    @property
    def name(self) -> str:
        base = f"{self.workload}-n{self.entities}-c{self.cost_us:g}"
        return f"{base}-g{self.gain:g}" if self.workload == "pcs" else base


@dataclass(frozen=True)
class Unit:
    """What one step of the study measures: a comparison of ``kinds`` at ``threads``
    (scan, hotspot), or one runtime's per-thread CPU (balance: ``kinds`` is that one)."""

    group: str
    config: Config
    threads: int
    steps: int
    kinds: tuple[str, ...]

    @property
    def key(self) -> str:
        what = label(self.kinds[0], self.threads) if self.group == "balance" else \
            f"T={self.threads}"
        return f"{self.group} {self.config.name} {what}"


@dataclass(frozen=True)
class Plan:
    mode: str
    cores: int
    threads: tuple[int, ...]
    focus: int
    kinds: tuple[str, ...]
    units: tuple[Unit, ...]


def runtime_kinds() -> tuple[str, ...]:
    """:data:`PEERS`, and those of :data:`OPTIONAL` that ``seer.sched.RUNTIMES`` has."""
    from seer.sched import RUNTIMES

    return PEERS + tuple(k for k in OPTIONAL if k in RUNTIMES)


def plan(mode: str = "full", *, cores: int | None = None, max_threads: int | None = None,
         groups: Iterable[str] = GROUPS, kinds: tuple[str, ...] | None = None) -> Plan:
    """The units of a ``full`` or ``smoke`` run in priority order; thread counts up to twice
    the cores (the fall after the peak shows; beyond it only costs time)."""
    cores = cores or seer.cpu_count()
    kinds = runtime_kinds() if kinds is None else kinds
    cap = 2 * cores if max_threads is None else min(max_threads, 2 * cores)
    threads = tuple(t for t in SCAN_THREADS if t <= cap) or (1,)
    focus = min(FOCUS_THREADS, threads[-1])
    if mode == "smoke":  # seconds in all: the machinery, not figures
        air, pcs, big = Config("aircraft", 60, 20), Config("pcs", 64, 2), \
            [Config("pcs", 100, 4), Config("aircraft", 120, 40)]
        steps, balance_steps, gains = dict.fromkeys([air, pcs, *big], 2), 2, (0.0, 8.0)
    else:  # about 1 to 2 s of serial stepping per comparison on 2 cores
        air, pcs, big = Config("aircraft", 800, 200), Config("pcs", 1600, 10), \
            [Config("pcs", 3600, 20), Config("aircraft", 3200, 400)]
        steps, balance_steps = {air: 5, pcs: 8, big[0]: 5, big[1]: 3}, 10
        gains = (0.0, 2.0, 4.0, 8.0)
    hot_steps = 2 if mode == "smoke" else 8
    wanted = set(groups)

    def scan(c: Config) -> list[Unit]:
        return [Unit("scan", c, t, steps[c], kinds) for t in threads] if "scan" in wanted else []

    units = [*scan(air), *scan(pcs)]
    if "balance" in wanted:
        units += [Unit("balance", c, focus, balance_steps, (k,)) for c in
                  (air, Config("pcs", pcs.entities, pcs.cost_us, 8.0)) for k in kinds]
    if "hotspot" in wanted:
        units += [Unit("hotspot", Config("pcs", pcs.entities, pcs.cost_us, g), focus,
                       hot_steps, kinds) for g in gains]
    for c in big:
        units += scan(c)
    return Plan(mode, cores, threads, focus, kinds, tuple(units))


# -- measuring -------------------------------------------------------------------------------
def measure(unit: Unit, focus: int) -> dict[str, Any]:
    """One unit's record: the comparison's JSON, or the load-balance row."""
    c = unit.config
    head = {"group": unit.group, "config": asdict(c), "config_name": c.name,
            "threads": unit.threads}
    if unit.group == "balance":
        return {**head, **balance_of(c.workload, c.entities, c.cost_us, unit.kinds[0],
                                     unit.threads, unit.steps, c.gain)}
    started = time.perf_counter()
    result = compare(lambda: make_model(c.workload, c.entities, c.cost_us, 1, c.gain),
                     [label(k, unit.threads) for k in unit.kinds], steps=unit.steps,
                     rounds=1, ceiling=unit.group == "scan" and unit.threads == focus,
                     name=c.name)
    return {**head, **result.to_json(), "elapsed_s": time.perf_counter() - started}


def stpa_configurations(smoke: bool) -> list[Any]:
    """STPA's training configurations, families taken in turn (a run cut off after a few
    has a spread of best thread counts), or one tiny one for smoke runs."""
    from seer.stpa.dataset import Configuration, default_configurations

    if smoke:
        return [Configuration("smoke-bench-c0", "workloads.synthetic:BenchModel",
                              {"n_entities": 40, "cost_us": 0, "fanout": 1},
                              group="smoke", steps=2)]
    families: dict[str, list[Any]] = {}
    for c in default_configurations():
        families.setdefault("1core" if c.cores == 1 else c.name.split("-")[0], []).append(c)
    longest = max(map(len, families.values()), default=0)
    return [f[i] for i in range(longest) for f in families.values() if i < len(f)]


def collect_stpa(config: Any, t_max: int, timeout: float) -> dict[str, Any]:
    """One configuration as ``seer stpa collect`` measures it (a fresh child process,
    ``taskset`` to its core budget), with a timeout."""
    code = ("import json, sys; from seer.stpa.dataset import Configuration, "
            "measure_configuration; c = Configuration(**json.loads(sys.argv[1])); "
            "print(json.dumps(measure_configuration(c, t_max=int(sys.argv[2]))))")
    cmd = [sys.executable, "-c", code, json.dumps(asdict(config)), str(t_max)]
    if config.cores:
        if shutil.which("taskset") is None:
            raise RuntimeError(f"needs taskset to run on {config.cores} core(s)")
        cmd = ["taskset", "-c", ",".join(map(str, sorted(os.sched_getaffinity(0))
                                                 [:config.cores])), *cmd]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"configuration {config.name!r} failed:\n{done.stderr[-3000:]}")
    row = json.loads(done.stdout.strip().splitlines()[-1])
    return {"config": asdict(config), **row, "t_max": t_max,
            "seconds": time.perf_counter() - t0}


def _watchdog(limit: float, running: list[str | None], abort: Callable[[str], None]
              ) -> threading.Event:
    """Ends the process (exit 3, after ``abort(key)``) when a unit is still running at
    ``limit``: a runtime that hangs must not cost the machine's whole time. Set the
    returned event to stop watching."""
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.2):
            key = running[0]
            if key is not None and time.perf_counter() > limit:
                try:
                    abort(key)
                finally:
                    for stream in (sys.stdout, sys.stderr):
                        with contextlib.suppress(OSError, ValueError):
                            stream.flush()
                    os._exit(3)

    threading.Thread(target=watch, name="manycore-watchdog", daemon=True).start()
    return stop


def _progress(total: int) -> Any:
    """tqdm on stderr; where that is a log, an update at most every 10 s."""
    from tqdm import tqdm

    return tqdm(total=total, desc="manycore", unit="point", file=sys.stderr,
                mininterval=0.1 if sys.stderr.isatty() else 10.0, dynamic_ncols=True)


def run_study(out: Path, *, mode: str = "full", budget_s: float = DEFAULT_BUDGET_S,
              max_threads: int | None = None, groups: Iterable[str] = GROUPS,
              kinds: tuple[str, ...] | None = None, grace_s: float = HANG_GRACE_S,
              retry_failed: bool = False, on_abort: Callable[[], None] | None = None,
              log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Measure what :func:`plan` lists and no session in ``out`` holds yet, most wanted
    first, until ``budget_s`` seconds have passed; return (and write) this session."""
    started = time.perf_counter()
    deadline, groups = started + budget_s, tuple(groups)
    p = plan(mode, max_threads=max_threads, groups=groups, kinds=kinds)
    stpa = stpa_configurations(mode == "smoke") if "stpa" in groups else []
    earlier = _sessions(out)
    done = {r["key"] for s in earlier for r in [*s.get("units", []), *s.get("stpa", [])]
            if "key" in r} | {f["key"] for s in earlier for f in s.get("failures", [])
                              if "key" in f and not retry_failed}
    out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.UTC)
    path = out / f"session-{stamp:%Y%m%dT%H%M%SZ}.json"
    session: dict[str, Any] = {
        "session": path.stem, "started": stamp.isoformat(timespec="seconds"), "mode": mode,
        "budget_s": budget_s, "groups": list(groups), "threads": list(p.threads),
        "focus_threads": p.focus, "runtimes": ["serial", *p.kinds], "host": host_facts(),
        "capacity_before": {"effective_cores": capacity_now(max(2, p.cores), 3)},
        "measured": 0, "existing": 0, "over_budget": 0, "failed": 0, "errors": [],
        "units": [], "stpa": [], "failures": []}
    say = log or (lambda msg: print(f"[manycore] {msg}", file=sys.stderr, flush=True))
    say(f"{p.cores} cores, T = {list(p.threads)}, runtimes serial {' '.join(p.kinds)}; "
        f"{len(p.units)} points and {len(stpa)} STPA configurations planned, budget "
        f"{budget_s:.0f} s; effective cores now "
        f"{session['capacity_before']['effective_cores']:.2f}")

    def save(outcome: str | None = None) -> None:
        if outcome:
            session[outcome] += 1
        session["elapsed_s"] = time.perf_counter() - started
        write_json(path, session)

    def fail(key: str, message: str) -> None:
        session["errors"].append(f"{key}: {message}")
        session["failures"].append({"key": key, "error": message})
        save("failed")

    def abort(key: str) -> None:
        fail(key, f"still running {grace_s:.0f} s after the budget ended: taken to hang")
        session["aborted"] = key
        save()
        say(f"{key} taken to hang; stopping (exit 3)")
        if on_abort is not None:
            on_abort()

    running: list[str | None] = [None]
    stop = _watchdog(deadline + grace_s, running, abort)
    bar = _progress(len(p.units) + len(stpa))
    took: dict[tuple[str, str], float] = {}  # the last comparison's seconds, per model
    save()
    try:
        for unit in p.units:
            bar.update(1)
            left = deadline - time.perf_counter()
            if unit.key in done:
                save("existing")
            elif left < max(1.0, took.get((unit.group, unit.config.name), 0.0)):
                save("over_budget")
            else:
                running[0] = unit.key
                try:
                    record = measure(unit, p.focus)
                except Exception as exc:  # one runtime failing must not end the study
                    fail(unit.key, repr(exc))
                    continue
                finally:
                    running[0] = None
                took[unit.group, unit.config.name] = record.get("elapsed_s", 0.0)
                session["units"].append({"key": unit.key, "steps": unit.steps, **record})
                save("measured")
        for config in stpa:
            bar.update(1)
            key, left = f"stpa {config.name}", deadline - time.perf_counter()
            if key in done:
                save("existing")
                continue
            if left < (5.0 if mode == "smoke" else 20.0):
                save("over_budget")
                continue
            try:
                row = collect_stpa(config, min(FOCUS_THREADS, p.threads[-1]), timeout=left)
            except subprocess.TimeoutExpired:
                save("over_budget")
            except (RuntimeError, ValueError, OSError) as exc:
                fail(key, str(exc))
            else:
                session["stpa"].append({"key": key, **row})
                save("measured")
    finally:
        stop.set()
        bar.close()
        session["capacity_after"] = {"effective_cores": capacity_now(max(2, p.cores), 3)}
        save()
    left = session["over_budget"]
    say(f"{session['measured']} measured, {session['existing']} already there, "
        f"{session['failed']} failed, {left} left for a re-run ({session['elapsed_s']:.0f} s)"
        + (": run the same command again to finish" if left else ""))
    return session


# -- reading the results ---------------------------------------------------------------------
def _sessions(results: Path) -> list[dict[str, Any]]:
    sessions = []
    for path in sorted(Path(results).glob("session-*.json")):
        with contextlib.suppress(OSError, ValueError):
            sessions.append(json.loads(path.read_text()))
    return sessions


def _rows(unit: dict[str, Any]) -> list[dict[str, Any]]:
    """A unit's record as point rows, one per runtime (the shape the first session stored):
    steps/s, events per step, speed-up over the comparison's serial and the identity."""
    head = {k: unit[k] for k in ("group", "config", "config_name", "steps")}
    if unit["group"] == "balance":
        cpu, wall = unit["cpu_s"], unit["wall_s"]
        util = [100.0 * x / wall for x in cpu]
        return [{**head, "runtime": unit["kind"], "threads": unit["threads"],
                 "label": label(unit["kind"], unit["threads"]),
                 "steps_per_s": unit["steps"] / wall, "state_sha256": unit["state_sha256"],
                 "workers": {"cpu_s": cpu, "events": unit["events"], "steals": unit["steals"]},
                 "cpu_util_var": statistics.pvariance(util) if len(util) > 1 else None,
                 "cpu_cv": unit["cpu_cv"] if len(cpu) > 1 else None}]
    rows = []
    for name, rt in unit["runtimes"].items():
        summary = unit["summary"][name]
        rows.append({**head, "runtime": rt["kind"], "threads": rt["threads"], "label": name,
                     "steps_per_s": 1 / statistics.median(rt["wall_s"]),
                     "events_per_step": rt["events_per_step"], "identical": rt["identical"],
                     "speedup": None if name == "serial" else summary["speedup"],
                     "of_ceiling": summary["of_ceiling"]})
    return rows


def load_results(results: Path) -> dict[str, Any]:
    """Sessions, point rows by group, failures and STPA rows of the sessions in
    ``results``, with the ceiling studies beside them (``efficiency.json``, ``tax.json``)."""
    results = Path(results)
    sessions = _sessions(results)
    points: dict[str, list[dict[str, Any]]] = {"scan": [], "balance": [], "hotspot": []}
    seen = set()
    for s in sessions:
        rows = [*s.get("points", []), *(r for u in s.get("units", []) for r in _rows(u))]
        for r in rows:
            key = (r["group"], r["config_name"], r["label"])
            if r["runtime"] != "serial" or key not in seen:  # serial once per model
                seen.add(key)
                points[r["group"]].append(r)
    for rows in points.values():  # a state digest is judged against serial's, or the most
        for same in _groups(rows):  # common one where serial did not run
            hashed = [r for r in same if "state_sha256" in r]
            digests = [r["state_sha256"] for r in hashed]
            ref = [r["state_sha256"] for r in hashed if r["runtime"] == "serial"]
            want = ref[0] if ref else max(set(digests), key=digests.count, default=None)
            for r in hashed:
                r["identical"] = r["state_sha256"] == want
    once = {}
    for name in ("efficiency", "tax"):
        with contextlib.suppress(OSError, ValueError):
            once[name] = json.loads((results / f"{name}.json").read_text())
    return {"sessions": sessions, "points": points,
            "errors": [f for s in sessions for f in s.get("failures", [])],
            "stpa": [r for s in sessions for r in s.get("stpa", [])],
            "efficiency": once.get("efficiency"), "tax": once.get("tax")}


def _groups(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    by: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault((r["config_name"], r["steps"]), []).append(r)
    return list(by.values())


# -- command line ----------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.manycore",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="results directory (default: $OUT/manycore if $OUT is set, "
                        "else bench/results/manycore)")
    parser.add_argument("--budget", type=float, default=None,
                        help=f"seconds to measure for (default {DEFAULT_BUDGET_S:g}; smoke "
                        "120); what is left is measured by running again")
    parser.add_argument("--max-threads", type=int, default=None,
                        help="cap the thread counts (default: twice the cores; smoke: 2)")
    parser.add_argument("--smoke", action="store_true", help="tiny models, seconds")
    parser.add_argument("--only", nargs="+", choices=GROUPS, default=list(GROUPS))
    parser.add_argument("--runtimes", nargs="+", default=None, metavar="KIND",
                        help="only these pooled runtimes (serial always runs)")
    parser.add_argument("--retry-failed", action="store_true",
                        help="measure again what failed in an earlier session")
    args = parser.parse_args(argv)
    base = os.environ.get("OUT")
    out = args.out or (Path(base) / "manycore" if base else ROOT / "bench" / "results" /
                       "manycore")
    from seer.sched import RUNTIMES

    bad = [k for k in args.runtimes or () if k == "serial" or k not in RUNTIMES]
    if bad:
        parser.error(f"--runtimes: unknown or not pooled: {', '.join(bad)}")

    def report() -> None:
        from bench.report import render_manycore

        render_manycore(out, out / "RESULTS-manycore.md", out / "figures")
        print(f"[manycore] wrote {out / 'RESULTS-manycore.md'}", file=sys.stderr, flush=True)

    session = run_study(
        out, mode="smoke" if args.smoke else "full",
        budget_s=args.budget if args.budget is not None else (
            120.0 if args.smoke else DEFAULT_BUDGET_S),
        max_threads=args.max_threads if args.max_threads is not None else (
            2 if args.smoke else None), groups=args.only,
        kinds=tuple(args.runtimes) if args.runtimes else None,
        retry_failed=args.retry_failed, on_abort=report)
    report()
    return 1 if session["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
