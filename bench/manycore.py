"""The many-core study: thread scans, the hotspot sweep, per-thread load balance and STPA's
data collection, in one budgeted and re-runnable command for a machine with many cores.

    dist/bundle/run.sh python -m bench.manycore --out "$OUT/manycore"   # the 16-core machine
    .venv/bin/python -m bench.manycore --smoke --out /tmp/manycore       # tiny sizes, 2 threads
    .venv/bin/python -m bench.manycore --report DIR      # DIR -> bench/RESULTS-manycore.md

What runs, in this order (the most wanted first, so that a run cut off by ``--budget``
or by a time limit still has the headline figures):

1. thread scans of Aircraft 800 UAVs (~200 µs events) and PCS 1600 cells (~10 µs) at
   ``T = 1, 2, 4, 8, 12, 16, 24, 32`` (up to twice the cores, or ``--max-threads``) on
   ``serial``, ``seer``, ``static``, ``static-block``, ``global`` and ``optimistic`` when
   that runtime is registered;
2. per-thread load balance at 16 threads (Aircraft 800, PCS 1600 under a hotspot of peak 8):
   CPU seconds per thread, and the variance of per-thread CPU utilisation (the paper's
   23.79 -> 2.59);
3. the PCS hotspot sweep (peaks 0, 2, 4, 8) at 16 threads;
4. thread scans of PCS 3600 cells (~20 µs) and Aircraft 3200 UAVs (~400 µs);
5. STPA's data collection (``seer.stpa.dataset``: preflights and full scans up to 16
   threads), one configuration after another, while time is left.

Each point (one runtime at one thread count on one model) is timed directly: build,
reset, one warm-up step (pools started, caches warm), then ``steps`` timed steps, the same
steps for every runtime. pyperf would spawn a process per point and calibrate, which the
8-minute budget cannot pay for ~200 points; one round of direct timing is what fits, and
the host's parallel capacity is measured before and after so the figures can be read
against it. A point whose warm-up step says it would overrun the budget is not measured.

Every point is one JSON file (``DIR/scan/aircraft-n800-c200/seer-t16.json``); a point whose
file exists is not measured again, so running the same command again finishes a run that
was cut off. A point that raised gets ``...-t16.error.json`` instead (not retried unless
``--retry-failed``); a point still running a minute after the budget ended is taken to
hang: it gets an error file, the report is written and the process exits with status 3.
Each invocation also writes ``DIR/session-<time>.json`` (interpreter, cores,
capacity, what was done). :func:`render` turns a directory of these files into
``RESULTS-manycore.md`` and figures.
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
from typing import TYPE_CHECKING, Any

import seer
from bench.harness import (
    capacity_now,
    host_facts,
    label,
    make_model,
    state_digest,
    table,
    write_json,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["Config", "Point", "main", "plan", "render", "run_study", "runtime_kinds"]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: the thread counts of a scan, before capping at the machine's size
SCAN_THREADS = (1, 2, 4, 8, 12, 16, 24, 32)
#: the thread count of the hotspot sweep and of the load-balance runs
FOCUS_THREADS = 16
#: seconds a default run may take (the machine's 8 minutes, less unpacking the bundle,
#: the capacity probes and drawing the report)
DEFAULT_BUDGET_S = 420.0
GROUPS = ("scan", "balance", "hotspot", "stpa")
#: pooled runtimes measured against each other; ``optimistic`` joins when registered
PEERS = ("seer", "static", "static-block", "global")
OPTIONAL = ("optimistic",)
HOTSPOT_GAINS = (0.0, 2.0, 4.0, 8.0)
#: the paper's figures, beside which ours are shown (its machines, not ours)
PAPER_AIRCRAFT_STEPS_PER_S = (16.92, 41.22, 52.93)
PAPER_AIRCRAFT_SPEEDUP_4 = 2.81
PAPER_PCS_VARIANCE = (23.79, 2.59)


# -- what is measured ------------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    """A model: ``workload`` (``aircraft``/``pcs``) of ``entities`` with ``cost_us`` events;
    ``gain`` is PCS's hotspot peak."""

    workload: str
    entities: int
    cost_us: float
    gain: float = 2.0

    @property
    def name(self) -> str:
        """File-system-safe name, e.g. ``aircraft-n800-c200``, ``pcs-n1600-c10-g8``."""
        base = f"{self.workload}-n{self.entities}-c{self.cost_us:g}"
        return f"{base}-g{self.gain:g}" if self.workload == "pcs" else base

    @property
    def title(self) -> str:
        if self.workload == "aircraft":
            return f"Aircraft {self.entities} UAVs, ~{self.cost_us:g} µs"
        return f"PCS {self.entities} cells, ~{self.cost_us:g} µs, hotspot {self.gain:g}"


@dataclass(frozen=True)
class Point:
    """One runtime at one thread count on one model, ``steps`` timed steps."""

    group: str  # "scan", "balance" or "hotspot"
    config: Config
    runtime: str
    threads: int
    steps: int

    @property
    def label(self) -> str:
        return label(self.runtime, self.threads)

    def path(self, out: Path) -> Path:
        return out / self.group / self.config.name / f"{self.runtime}-t{self.threads}.json"


@dataclass(frozen=True)
class Plan:
    """Everything one invocation wants, in priority order."""

    mode: str
    cores: int
    threads: tuple[int, ...]  # the scan's thread counts
    focus: int  # the hotspot and balance thread count
    kinds: tuple[str, ...]  # pooled runtimes
    points: tuple[Point, ...]
    stpa_t_max: int


def runtime_kinds() -> tuple[str, ...]:
    """The pooled runtimes to measure: :data:`PEERS`, plus those of :data:`OPTIONAL` that
    ``seer.make_runtime`` knows in this process (``seer.sched.RUNTIMES``)."""
    from seer.sched import RUNTIMES

    return PEERS + tuple(k for k in OPTIONAL if k in RUNTIMES)


def thread_counts(cores: int, max_threads: int | None) -> tuple[int, ...]:
    """:data:`SCAN_THREADS` up to twice the cores (oversubscription shows the fall after
    the peak; beyond that it only costs time), and up to ``max_threads``."""
    cap = 2 * cores if max_threads is None else min(max_threads, 2 * cores)
    return tuple(t for t in SCAN_THREADS if t <= cap) or (1,)


def plan(mode: str = "full", *, cores: int | None = None, max_threads: int | None = None,
         groups: Iterable[str] = GROUPS, kinds: tuple[str, ...] | None = None) -> Plan:
    """The points of a ``full`` or ``smoke`` run in priority order (module docstring)."""
    cores = cores or seer.cpu_count()
    kinds = runtime_kinds() if kinds is None else kinds
    smoke = mode == "smoke"
    threads = thread_counts(cores, max_threads)
    focus = min(FOCUS_THREADS, threads[-1])
    if smoke:  # seconds in all: correctness of the machinery, not figures
        air, pcs = Config("aircraft", 60, 20), Config("pcs", 64, 2)
        big = [Config("pcs", 100, 4), Config("aircraft", 120, 40)]
        steps = {air: 2, pcs: 2, big[0]: 2, big[1]: 2}
        balance_steps, hot_steps = 2, 2
        gains: tuple[float, ...] = (0.0, 8.0)
    else:
        air, pcs = Config("aircraft", 800, 200), Config("pcs", 1600, 10)
        big = [Config("pcs", 3600, 20), Config("aircraft", 3200, 400)]
        # About 1 to 2 s of serial stepping per point on a 2-core development machine.
        steps = {air: 5, pcs: 8, big[0]: 5, big[1]: 3}
        balance_steps, hot_steps = 10, 8
        gains = HOTSPOT_GAINS
    wanted = set(groups)

    def scan(c: Config) -> list[Point]:
        if "scan" not in wanted:
            return []
        return [Point("scan", c, "serial", 1, steps[c]),
                *(Point("scan", c, k, t, steps[c]) for t in threads for k in kinds)]

    points = [*scan(air), *scan(pcs)]
    if "balance" in wanted:
        for c in (air, Config(pcs.workload, pcs.entities, pcs.cost_us, 8.0)):
            points += [Point("balance", c, k, focus, balance_steps) for k in kinds]
    if "hotspot" in wanted:
        for g in gains:
            c = Config(pcs.workload, pcs.entities, pcs.cost_us, g)
            points += [Point("hotspot", c, "serial", 1, hot_steps),
                       *(Point("hotspot", c, k, focus, hot_steps) for k in kinds)]
    for c in big:
        points += scan(c)
    return Plan(mode, cores, threads, focus, kinds, tuple(points),
                stpa_t_max=min(FOCUS_THREADS, threads[-1]))


# -- measuring -------------------------------------------------------------------------------
def measure(point: Point, deadline: float) -> dict[str, Any] | None:
    """Time ``point`` (module docstring). None, without timing, when the warm-up step says
    the timed steps would end after ``deadline`` (a ``time.perf_counter()`` value)."""
    c = point.config
    t0 = time.perf_counter()
    model = make_model(c.workload, c.entities, c.cost_us, 1, c.gain)
    rt = seer.make_runtime(model, point.runtime, threads=point.threads)
    try:
        rt.reset(0)
        build_s = time.perf_counter() - t0
        w0 = time.perf_counter()
        rt.step(model.sample_actions(0))
        warmup_s = time.perf_counter() - w0
        # The warm-up step also starts the pool, so it over-estimates a step: safe.
        if time.perf_counter() + warmup_s * point.steps > deadline:
            return None
        pool = getattr(rt, "pool", None)
        if pool is not None:
            pool.reset_stats()
        events0 = rt.events_run
        step_s = []
        start = time.perf_counter()
        for t in range(point.steps):
            s0 = time.perf_counter()
            rt.step(model.sample_actions(t + 1))
            step_s.append(time.perf_counter() - s0)
        wall = time.perf_counter() - start
        workers = rt.worker_stats() if hasattr(rt, "worker_stats") else []
        events = (rt.events_run - events0) / point.steps
        digest = state_digest(rt)
    finally:
        rt.close()
    cpu = [w["cpu_s"] for w in workers]
    util = [100.0 * x / wall for x in cpu]  # % of the wall time each thread ran
    mean_cpu = statistics.fmean(cpu) if cpu else 0.0
    return {
        "group": point.group, "config": asdict(c), "config_name": c.name,
        "runtime": point.runtime, "threads": point.threads, "label": point.label,
        "steps": point.steps, "build_s": build_s, "warmup_s": warmup_s, "step_s": step_s,
        "wall_s": wall, "steps_per_s": point.steps / wall, "events_per_step": events,
        "state_sha256": digest,
        "workers": {k: [w.get(k, 0) for w in workers]
                    for k in ("cpu_s", "busy_s", "events", "steals", "cas_retries")},
        "cpu_util_var": statistics.pvariance(util) if len(util) > 1 else None,
        "cpu_cv": statistics.pstdev(cpu) / mean_cpu if len(cpu) > 1 and mean_cpu else None,
    }


def capacity(threads: int, repeats: int = 3) -> dict[str, float]:
    """Effective cores right now (:func:`seer.benchmark.capacity_now`) as a session
    records it."""
    return {"threads": threads, "effective_cores": capacity_now(threads, repeats)}


def _known_runtimes() -> list[str]:
    from seer.sched import RUNTIMES

    return list(RUNTIMES)


def _done(path: Path) -> bool:
    try:
        json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return True


def _progress(total: int) -> Any:
    """A tqdm bar on stderr; where that is not a terminal (a log), an update at most every
    10 s, so that the log's tail holds the results rather than the bar."""
    from tqdm import tqdm

    return tqdm(total=total, desc="manycore", unit="point", file=sys.stderr,
                mininterval=0.1 if sys.stderr.isatty() else 10.0, dynamic_ncols=True)


def stpa_configurations(smoke: bool) -> list[Any]:
    """STPA's training configurations (``seer.stpa.dataset``), or one tiny one for smoke
    runs; [] where STPA's data collection is not in this checkout."""
    try:
        from seer.stpa.dataset import Configuration, default_configurations
    except ImportError:
        return []
    if smoke:
        return [Configuration("smoke-bench-c0", "workloads.synthetic:BenchModel",
                              {"n_entities": 40, "cost_us": 0, "fanout": 1},
                              group="smoke", steps=2)]
    return _interleave(default_configurations())


def _interleave(configs: list[Any]) -> list[Any]:
    """Configurations taken in turn from each family (BenchModel, waiting handlers, PCS,
    Aircraft, one-core budgets), so that a run cut off after a few has a spread of best
    thread counts rather than only the first family."""
    families: dict[str, list[Any]] = {}
    for c in configs:
        family = "1core" if c.cores == 1 else c.name.split("-")[0]
        families.setdefault(family, []).append(c)
    out = []
    for i in range(max(map(len, families.values()), default=0)):
        out += [f[i] for f in families.values() if i < len(f)]
    return out


def collect_stpa(config: Any, t_max: int, timeout: float) -> dict[str, Any]:
    """One configuration measured as ``seer stpa collect`` measures it (a fresh child
    process, ``taskset`` to its core budget), but with a timeout; the row has the form of
    the rows ``seer.stpa.dataset.collect`` assembles its data set from."""
    code = ("import json, sys; from seer.stpa.dataset import Configuration, "
            "measure_configuration; c = Configuration(**json.loads(sys.argv[1])); "
            "print(json.dumps(measure_configuration(c, t_max=int(sys.argv[2]))))")
    cmd = [sys.executable, "-c", code, json.dumps(asdict(config)), str(t_max)]
    if config.cores:
        cpus = sorted(os.sched_getaffinity(0))[:config.cores]
        cmd = ["taskset", "-c", ",".join(map(str, cpus)), *cmd]
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


#: seconds past the budget after which a point still running is taken to hang
HANG_GRACE_S = 60.0


class _Watchdog:
    """Ends the process when a point is still running ``grace_s`` after the deadline (a
    runtime that hangs at some thread count must not cost the machine's whole time): the
    point gets an error file (so a re-run skips it), ``on_abort`` runs (the report), exit 3.
    Points are measured in this process to keep their cost low, so this is the only way
    to stop one."""

    def __init__(self, deadline: float, grace_s: float,
                 abort: Callable[[Point], None]) -> None:
        self.limit = deadline + grace_s
        self.abort = abort
        self.running: Point | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="manycore-watchdog",
                                        daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            running = self.running
            if running is not None and time.perf_counter() > self.limit:
                try:
                    self.abort(running)
                finally:
                    for stream in (sys.stdout, sys.stderr):
                        with contextlib.suppress(OSError, ValueError):
                            stream.flush()
                    os._exit(3)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def run_study(out: Path, *, mode: str = "full", budget_s: float = DEFAULT_BUDGET_S,
              max_threads: int | None = None, groups: Iterable[str] = GROUPS,
              kinds: tuple[str, ...] | None = None, grace_s: float = HANG_GRACE_S,
              on_abort: Callable[[], None] | None = None,
              log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Measure what :func:`plan` lists and is not in ``out`` yet, most wanted first, until
    ``budget_s`` seconds have passed; return (and write) this invocation's session record.
    ``kinds`` restricts the pooled runtimes (default :func:`runtime_kinds`); ``on_abort``
    runs before the process exits because a point hangs (:class:`_Watchdog`)."""
    started = time.perf_counter()
    deadline = started + budget_s
    groups = tuple(groups)
    p = plan(mode, max_threads=max_threads, groups=groups, kinds=kinds)
    stpa = stpa_configurations(mode == "smoke") if "stpa" in groups else []
    out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.UTC)
    session_path = out / f"session-{stamp:%Y%m%dT%H%M%SZ}.json"
    session: dict[str, Any] = {
        "session": session_path.stem, "started": stamp.isoformat(timespec="seconds"),
        "mode": mode, "budget_s": budget_s, "groups": list(groups),
        "max_threads": max_threads, "threads": list(p.threads), "focus_threads": p.focus,
        "runtimes": ["serial", *p.kinds], "stpa_t_max": p.stpa_t_max,
        "host": host_facts(), "capacity_before": capacity(max(2, p.cores)),
    }
    write_json(session_path, session)
    say = log or (lambda msg: print(f"[manycore] {msg}", file=sys.stderr, flush=True))
    say(f"{p.cores} cores, T = {list(p.threads)}, runtimes serial {' '.join(p.kinds)}; "
        f"{len(p.points)} points and {len(stpa)} STPA configurations planned, "
        f"budget {budget_s:.0f} s; effective cores now "
        f"{session['capacity_before']['effective_cores']:.2f}")
    counts = {"measured": 0, "existing": 0, "over_budget": 0, "failed": 0}
    errors: list[str] = []

    def finish() -> None:
        session.update(counts)
        session["errors"] = errors
        session["elapsed_s"] = time.perf_counter() - started

    def abort(running: Point) -> None:
        message = f"still running {grace_s:.0f} s after the budget ended: taken to hang"
        write_json(running.path(out).with_suffix(".error.json"),
                   _error_record(running, message, session["session"]))
        counts["failed"] += 1
        name = f"{running.group} {running.config.name} {running.label}"
        errors.append(f"{name}: {message}")
        finish()
        session["aborted"] = name
        write_json(session_path, session)
        say(f"{name} {message}; stopping (exit 3)")
        if on_abort is not None:
            on_abort()

    watchdog = _Watchdog(deadline, grace_s, abort)
    bar = _progress(len(p.points) + len(stpa))
    try:
        for point in p.points:
            bar.set_postfix_str(f"{point.group} {point.config.name}", refresh=False)
            watchdog.running = point
            outcome = _run_point(point, out, deadline, session["session"], errors)
            watchdog.running = None
            counts[outcome] += 1
            bar.update(1)
        for config in stpa:
            bar.set_postfix_str(f"stpa {config.name}", refresh=False)
            outcome = _run_stpa(config, out, deadline, p.stpa_t_max, session["session"],
                                errors, min_left=5.0 if mode == "smoke" else 20.0)
            counts[outcome] += 1
            bar.update(1)
    finally:
        watchdog.stop()
        bar.close()
        finish()
        session["capacity_after"] = capacity(max(2, p.cores))
        write_json(session_path, session)
    left = counts["over_budget"]
    say(f"{counts['measured']} measured, {counts['existing']} already there, "
        f"{counts['failed']} failed, {left} left for a re-run "
        f"({session['elapsed_s']:.0f} s)" + ("" if not left else
                                             ": run the same command again to finish"))
    return session


def _run_point(point: Point, out: Path, deadline: float, session: str,
               errors: list[str]) -> str:
    """Measure ``point`` unless its file (or its error file) is there or time is up;
    return the outcome: ``measured``, ``existing``, ``over_budget`` or ``failed``."""
    path = point.path(out)
    failed = path.with_suffix(".error.json")
    if _done(path) or _done(failed):  # a point that failed is not retried by a re-run
        return "existing"
    if time.perf_counter() >= deadline - 1.0:
        return "over_budget"
    try:
        result = measure(point, deadline)
    except Exception as exc:  # a runtime that fails here must not end the study
        errors.append(f"{point.group} {point.config.name} {point.label}: {exc!r}")
        write_json(failed, _error_record(point, repr(exc), session))
        return "failed"
    if result is None:
        return "over_budget"
    result["session"] = session
    write_json(path, result)
    return "measured"


def _error_record(point: Point, error: str, session: str) -> dict[str, Any]:
    return {"group": point.group, "config_name": point.config.name, "label": point.label,
            "error": error, "session": session}


def _run_stpa(config: Any, out: Path, deadline: float, t_max: int, session: str,
              errors: list[str], min_left: float) -> str:
    """One STPA configuration (:func:`collect_stpa`), like :func:`_run_point`."""
    path = out / "stpa" / f"{config.name}.json"
    if _done(path):
        return "existing"
    left = deadline - time.perf_counter()
    if left < min_left:
        return "over_budget"
    if config.cores and shutil.which("taskset") is None:
        errors.append(f"stpa {config.name}: needs taskset to run on {config.cores} core(s)")
        return "failed"
    try:
        row = collect_stpa(config, t_max, timeout=left)
    except subprocess.TimeoutExpired:
        return "over_budget"
    except (RuntimeError, ValueError, OSError) as exc:
        errors.append(f"stpa {config.name}: {exc}")
        return "failed"
    row["session"] = session
    write_json(path, row)
    return "measured"


# -- reading the results ---------------------------------------------------------------------
def load_results(results: Path) -> dict[str, Any]:
    """Sessions, points (by group) and STPA rows found under ``results``."""
    def read(paths: Iterable[Path]) -> list[dict[str, Any]]:
        rows = []
        for path in sorted(paths):
            with contextlib.suppress(OSError, ValueError):
                rows.append(json.loads(path.read_text()))
        return rows

    points = {g: [r for r in read((results / g).glob("*/*.json"))
                  if "steps_per_s" in r] for g in ("scan", "balance", "hotspot")}
    errors = read(results.glob("*/*/*.error.json"))
    # the ceiling at T threads: bench.efficiency --threads (or the one run's older tax.json)
    efficiency, tax = read([results / "efficiency.json"]), read([results / "tax.json"])
    return {"sessions": read(results.glob("session-*.json")), "points": points,
            "errors": errors, "stpa": read((results / "stpa").glob("*.json")),
            "efficiency": efficiency[0] if efficiency else None,
            "tax": tax[0] if tax else None}


def _by_config(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows by model, models in order of workload, size, hotspot peak."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(rows, key=lambda r: (r["config"]["workload"], r["config"]["entities"],
                                         r["config"]["gain"])):
        out.setdefault(r["config_name"], []).append(r)
    return out


def _title(row: dict[str, Any]) -> str:
    return Config(**row["config"]).title


def _kinds(rows: list[dict[str, Any]]) -> list[str]:
    """Pooled runtimes present, in the order of :data:`PEERS` then the others."""
    seen = {r["runtime"] for r in rows if r["runtime"] != "serial"}
    order = [*PEERS, *OPTIONAL]
    return sorted(seen, key=lambda k: (order.index(k) if k in order else len(order), k))


def _serial(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((r for r in rows if r["runtime"] == "serial"), None)


def _identity(points: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Points whose state after the timed steps differs from the rest of their model's
    (serial's where it was measured): there should be none."""
    bad, n = [], 0
    for group, rows in points.items():
        for name, cfg_rows in _by_config(rows).items():
            by_steps: dict[int, list[dict[str, Any]]] = {}
            for r in cfg_rows:
                by_steps.setdefault(r["steps"], []).append(r)
            for same in by_steps.values():
                n += len(same)
                ref = _serial(same)
                digests = [r["state_sha256"] for r in same]
                want = ref["state_sha256"] if ref else max(set(digests), key=digests.count)
                bad += [f"{group} {name} {r['label']}" for r in same
                        if r["state_sha256"] != want]
    return bad if bad or not n else []


# -- the report ------------------------------------------------------------------------------
def render(results_dir: Path, out_md: Path, figures: Path) -> None:
    """Write ``out_md`` (RESULTS-manycore.md) and its figures into ``figures`` from the files
    of a study in ``results_dir``; where nothing was measured, say so."""
    results_dir, out_md, figures = Path(results_dir), Path(out_md), Path(figures)
    data = load_results(results_dir)
    drawn: list[str] = []
    note = ""
    if any(data["points"].values()):
        try:
            drawn = draw(data, figures)
        except ImportError as exc:  # matplotlib absent (a bundle built without it)
            note = f"Figures not drawn here ({exc}): run `--report` where matplotlib is."
    out_md.parent.mkdir(parents=True, exist_ok=True)
    rel = os.path.relpath(figures, out_md.parent)
    out_md.write_text("\n".join(markdown(data, [f"{rel}/{f}" for f in drawn], note)) + "\n")


def markdown(data: dict[str, Any], figures: list[str], note: str = "") -> list[str]:
    """The lines of RESULTS-manycore.md (see :func:`render`)."""
    out = ["# Many-core study", ""]
    sessions, points = data["sessions"], data["points"]
    if not sessions and not any(points.values()) and not data["stpa"]:
        return [*out, "Not run yet: no results in this directory. On a machine with many "
                "cores: `scripts/bundle.sh` here, then `dist/bundle/run.sh python -m "
                "bench.manycore --out $OUT/manycore` there (docs/manycore.md), then "
                "`python -m bench.manycore --report DIR` here."]
    out += ["Produced by `python -m bench.manycore` (one round of directly timed steps per "
            "point: build, reset, one warm-up step, then the same timed steps for every "
            "runtime; steps/s = timed steps / their wall time). Speed-ups are over "
            "`serial` on the same model and steps.", ""]
    out += _sessions(sessions)
    out += _goals(data)
    out += _paper(points)
    out += _scans(points["scan"])
    out += _balance(points["balance"])
    out += _hotspot(points["hotspot"])
    out += _stpa(data["stpa"])
    bad = _identity(points)
    n = sum(len(v) for v in points.values())
    out += ["## Bit-identical results", "",
            (f"State after the timed steps identical across runtimes and thread counts in "
             f"all {n} points (sha256 of every state field)." if not bad else
             f"**{len(bad)} of {n} points end in a state that differs from serial's**: "
             + "; ".join(bad[:20]) + "."), ""]
    if data["errors"]:
        out += ["## Points that failed", "",
                *[f"- {e.get('group', '?')} `{e.get('config_name', '?')}` "
                  f"`{e.get('label', '?')}`: {e.get('error', '')}" for e in data["errors"]],
                ""]
    out += ["## Figures", ""]
    out += [f"![{Path(f).stem}]({f})" for f in figures] or [note or "No points measured."]
    return out


def _goals(data: dict[str, Any]) -> list[str]:
    """The many-core goals of ``bench/goals.toml``, judged as RESULTS.md judges its own."""
    from bench.markdown import Results, goal_rows
    from bench.sizes import Sizes

    rows = goal_rows(Results(Sizes("fast"), {}, manycore=data), sources=["manycore"])
    return ["## Goals", "", *table(["goal", "target", "measured", "met"], rows), ""]


def _sessions(sessions: list[dict[str, Any]]) -> list[str]:
    if not sessions:
        return ["No session record (host facts) in this directory.", ""]
    rows = []
    for s in sessions:
        h = s.get("host", {})
        facts = h.get("interpreter", {})
        cap = [s.get(k, {}).get("effective_cores") for k in ("capacity_before",
                                                             "capacity_after")]
        rows.append([
            s.get("started", "?"), s.get("mode", "?"), str(h.get("cores", "?")),
            h.get("cpu_model", "") or "?",
            f"{facts.get('python', '?').split(' (')[0]}, GIL "
            f"{'on' if h.get('gil_enabled') else 'off'}",
            " / ".join("-" if c is None else f"{c:.1f}" for c in cap),
            f"{s.get('elapsed_s', 0):.0f} of {s.get('budget_s', 0):.0f}",
            f"{s.get('measured', '?')} / {s.get('existing', '?')} / "
            f"{s.get('over_budget', '?')} / {s.get('failed', '?')}",
            str(h.get("commit", "?"))])
    return ["## Machine and runs", "",
            *table(["started (UTC)", "mode", "cores", "CPU", "Python", "effective cores "
                     "before / after", "seconds of budget", "measured / there / left / "
                     "failed", "commit"], rows), "",
            "Effective cores: T x time of a pure-Python loop on 1 thread / time on T threads "
            "at once (T = the cores), before and after the run; T on an idle machine.", ""]


def _rate(rows: list[dict[str, Any]], runtime: str, threads: int) -> float | None:
    r = next((x for x in rows if x["runtime"] == runtime and
              (runtime == "serial" or x["threads"] == threads)), None)
    return r["steps_per_s"] if r else None


def _paper(points: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The paper's headline figures beside ours."""
    air = [r for r in points["scan"] if r["config"]["workload"] == "aircraft"
           and r["config"]["entities"] == 800]
    serial = _rate(air, "serial", 1)
    seer4 = _rate(air, "seer", 4)
    seer_rows = [r for r in air if r["runtime"] == "seer"]
    best = max(seer_rows, key=lambda r: r["steps_per_s"], default=None)
    if serial and seer4 and best:
        ours_scan = (f"serial {serial:.2f} -> seer(4) {seer4:.2f} -> best "
                     f"{best['label']} {best['steps_per_s']:.2f}")
        ours_4 = f"{seer4 / serial:.2f}x (seer(4) / serial)"
    else:
        ours_scan = ours_4 = "not measured"
    pcs = [r for r in points["balance"] if r["config"]["workload"] == "pcs"]
    var = {r["runtime"]: r["cpu_util_var"] for r in pcs if r.get("cpu_util_var") is not None}
    threads = pcs[0]["threads"] if pcs else FOCUS_THREADS
    ours_var = (", ".join(f"{k}({threads}) {var[k]:.2f}" for k in _kinds(pcs) if k in var)
                or "not measured")
    return ["## Next to the paper", "",
            *table(["figure", "paper", "this run"], [
                ["Aircraft 800 UAVs ~200 µs, steps/s", " -> ".join(
                    f"{x:.2f}" for x in PAPER_AIRCRAFT_STEPS_PER_S), ours_scan],
                ["Aircraft speed-up with 4 workers", f"{PAPER_AIRCRAFT_SPEEDUP_4:.2f}x",
                 ours_4],
                ["PCS load balance: variance of per-thread CPU utilisation (%²), baseline "
                 "-> SEER", " -> ".join(f"{x:.2f}" for x in PAPER_PCS_VARIANCE), ours_var],
            ]), "",
            "The paper's figures come from its own machines and implementation; they stand "
            "here for orientation, not as a like-for-like comparison. Ours are one round "
            "on the machine of the table above.", ""]


def _scans(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return ["## Thread scans", "", "Not run.", ""]
    out = ["## Thread scans (steps/s, speed-up over serial in parentheses)", ""]
    for name, cfg in _by_config(rows).items():
        threads = sorted({r["threads"] for r in cfg if r["runtime"] != "serial"})
        serial = _rate(cfg, "serial", 1)
        table_rows = []
        for kind in _kinds(cfg):
            cells = []
            mine = {r["threads"]: r for r in cfg if r["runtime"] == kind}
            best = max(mine.values(), key=lambda r: r["steps_per_s"])["threads"]
            for t in threads:
                r = mine.get(t)
                if r is None:
                    cells.append("-")
                    continue
                cell = f"{r['steps_per_s']:.2f}"
                if serial:
                    cell += f" ({r['steps_per_s'] / serial:.2f}x)"
                cells.append(f"**{cell}**" if t == best else cell)
            table_rows.append([kind, *cells])
        steps = cfg[0]["steps"]
        out += [f"### {_title(cfg[0])} (`{name}`, {steps} timed steps per point)", "",
                f"serial: {serial:.2f} steps/s." if serial else "serial: not measured.",
                "", *table(["runtime", *[f"T={t}" for t in threads]], table_rows), "",
                "Bold: the runtime's best thread count.", ""]
    return out


def _balance(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return ["## Load balance", "", "Not run.", ""]
    out = ["## Load balance (per-thread CPU time)", ""]
    for name, cfg in _by_config(rows).items():
        table_rows = []
        for kind in _kinds(cfg):
            r = next(x for x in cfg if x["runtime"] == kind)
            cpu = r["workers"]["cpu_s"]
            events = r["workers"]["events"]
            var, cv = r.get("cpu_util_var"), r.get("cpu_cv")
            table_rows.append([
                r["label"], f"{r['steps_per_s']:.2f}",
                f"{min(cpu):.3f} / {statistics.fmean(cpu):.3f} / {max(cpu):.3f}" if cpu
                else "-",
                f"{min(events)} / {max(events)}" if events else "-",
                str(sum(r["workers"]["steals"])) if cpu else "-",
                "-" if var is None else f"{var:.2f}", "-" if cv is None else f"{cv:.3f}"])
        out += [f"### {_title(cfg[0])} (`{name}`, {cfg[0]['steps']} steps)", "",
                *table(["runtime", "steps/s", "CPU s per thread min / mean / max",
                         "events per thread min / max", "chunks stolen", "utilisation "
                         "variance (%²)", "CPU CV"], table_rows), ""]
    out += ["Utilisation of a thread: its CPU time inside the runtime's tasks over the wall "
            "time of the timed steps, in %; the variance is over the threads (the paper's "
            f"PCS figure: {PAPER_PCS_VARIANCE[0]} for its baseline, {PAPER_PCS_VARIANCE[1]} "
            "for SEER). CV: standard deviation / mean of the CPU seconds.", ""]
    return out


def _hotspot(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return ["## PCS hotspot sweep", "", "Not run.", ""]
    kinds = _kinds(rows)
    threads = max(r["threads"] for r in rows)
    table_rows = []
    for cfg in sorted(_by_config(rows).values(), key=lambda c: c[0]["config"]["gain"]):
        serial = _rate(cfg, "serial", 1)
        cells = []
        for k in kinds:
            rate = _rate(cfg, k, threads)
            cells.append("-" if rate is None else f"{rate:.2f}"
                         + (f" ({rate / serial:.2f}x)" if serial else ""))
        table_rows.append([f"{cfg[0]['config']['gain']:g}",
                           "-" if serial is None else f"{serial:.2f}", *cells])
    first = rows[0]["config"]
    return [f"## PCS hotspot sweep ({first['entities']} cells, ~{first['cost_us']:g} µs, "
            f"{threads} threads; steps/s and speed-up over serial)", "",
            *table(["hotspot peak", "serial", *[label(k, threads) for k in kinds]],
                    table_rows), ""]


def _stpa(rows: list[dict[str, Any]]) -> list[str]:
    title = "## STPA data collection"
    if not rows:
        return [title, "", "Not run (or no configuration finished).", ""]
    table_rows = []
    for r in rows:
        tput = [statistics.median(x) for x in r["throughput"]]
        table_rows.append([r["config"]["name"], str(r.get("cores", "?")),
                           str(r.get("t_max", len(tput))), str(r["label"]),
                           f"{tput[0]:.2f}", f"{max(tput):.2f}",
                           f"{r.get('seconds', 0):.1f}"])
    return [title, "",
            f"Configurations measured: {len(rows)} (those of "
            "`seer.stpa.dataset.default_configurations()`, one tiny one in a smoke run), "
            "each as `seer stpa collect` measures it: preflights, and a full scan T = "
            "1..t_max whose best T is the label. The rows are in `stpa/*.json`, in the form "
            "`collect` assembles its data set from.", "",
            *table(["configuration", "cores seen", "t_max", "label (best T)",
                     "steps/s at T=1", "best steps/s", "seconds"], table_rows), ""]


# -- figures ---------------------------------------------------------------------------------
def draw(data: dict[str, Any], where: Path) -> list[str]:
    """Draw the figures of the measured groups into ``where``; return their file names."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    where.mkdir(parents=True, exist_ok=True)
    points = data["points"]
    figures: dict[str, Figure] = {}
    if points["scan"]:
        figures["manycore_thread_scans.png"] = _scan_figure(points["scan"], data["sessions"])
    if points["balance"]:
        figures["manycore_load_balance.png"] = _balance_figure(points["balance"])
    if points["hotspot"]:
        figures["manycore_hotspot.png"] = _hotspot_figure(points["hotspot"])
    for name, fig in figures.items():
        FigureCanvasAgg(fig)
        fig.tight_layout()
        fig.savefig(where / name, dpi=110)
    return list(figures)


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _scan_figure(rows: list[dict[str, Any]], sessions: list[dict[str, Any]]) -> Figure:
    """Steps/s vs threads per runtime, one panel per model; serial dashed; the paper's
    Aircraft figures noted on the Aircraft 800 panel."""
    configs = _by_config(rows)
    cols = min(2, len(configs))
    nrows = (len(configs) + cols - 1) // cols
    fig = _figure(5.2 * cols, 3.6 * nrows)
    cores = max((s.get("host", {}).get("cores", 0) for s in sessions), default=0)
    for i, cfg in enumerate(configs.values()):
        ax = fig.add_subplot(nrows, cols, i + 1)
        for j, kind in enumerate(_kinds(cfg)):
            mine = sorted((r for r in cfg if r["runtime"] == kind), key=lambda r: r["threads"])
            ax.plot([r["threads"] for r in mine], [r["steps_per_s"] for r in mine], "o-",
                    color=f"C{j}", label=kind, ms=4)
        serial = _rate(cfg, "serial", 1)
        if serial:
            ax.axhline(serial, color="grey", ls="--", lw=1, label="serial")
        if cores:
            ax.axvline(cores, color="0.7", ls=":", lw=1)
        c = cfg[0]["config"]
        if c["workload"] == "aircraft" and c["entities"] == 800:
            ax.text(0.02, 0.97, "paper: " + " -> ".join(
                f"{x:g}" for x in PAPER_AIRCRAFT_STEPS_PER_S) + " steps/s,\n"
                f"{PAPER_AIRCRAFT_SPEEDUP_4}x with 4 workers", transform=ax.transAxes,
                va="top", fontsize=7, color="0.3")
        ax.set_xscale("log", base=2)
        ts = sorted({r["threads"] for r in cfg})
        ax.set_xticks(ts, [str(t) for t in ts])
        ax.set_xlabel("threads" + (f" (dotted: {cores} cores)" if cores else ""))
        ax.set_ylabel("steps/s")
        ax.set_title(_title(cfg[0]), fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    return fig


def _balance_figure(rows: list[dict[str, Any]]) -> Figure:
    """Variance of per-thread CPU utilisation per runtime, one panel per model; the
    paper's PCS figures as reference lines."""
    configs = _by_config(rows)
    fig = _figure(4.6 * len(configs), 3.6)
    for i, cfg in enumerate(configs.values()):
        ax = fig.add_subplot(1, len(configs), i + 1)
        kinds = [k for k in _kinds(cfg)
                 if next(r for r in cfg if r["runtime"] == k).get("cpu_util_var") is not None]
        values = [next(r for r in cfg if r["runtime"] == k)["cpu_util_var"] for k in kinds]
        ax.bar(range(len(kinds)), values, color=[f"C{j}" for j in range(len(kinds))])
        for j, v in enumerate(values):
            ax.text(j, v, f"{v:.2f}", ha="center", va="bottom", fontsize=7)
        if cfg[0]["config"]["workload"] == "pcs":
            for value, name, style in ((PAPER_PCS_VARIANCE[0], "paper, baseline", "--"),
                                       (PAPER_PCS_VARIANCE[1], "paper, SEER", ":")):
                ax.axhline(value, color="0.4", ls=style, lw=1, label=name)
            ax.legend(fontsize=7)
        positive = [v for v in values if v > 0]
        if positive and max(positive) > 30 * min(positive):  # a few bars would vanish
            ax.set_yscale("log")
        ax.set_xticks(range(len(kinds)), kinds, fontsize=8)
        ax.set_ylabel("variance of CPU utilisation (%²)")
        ax.set_title(f"{_title(cfg[0])}, {cfg[0]['threads']} threads", fontsize=8)
    return fig


def _hotspot_figure(rows: list[dict[str, Any]]) -> Figure:
    """Speed-up over serial vs hotspot peak, per runtime."""
    configs = sorted(_by_config(rows).values(), key=lambda c: c[0]["config"]["gain"])
    threads = max(r["threads"] for r in rows)
    fig = _figure(5.2, 3.6)
    ax = fig.add_subplot()
    for j, kind in enumerate(_kinds(rows)):
        xs, ys = [], []
        for cfg in configs:
            serial, rate = _rate(cfg, "serial", 1), _rate(cfg, kind, threads)
            if serial and rate:
                xs.append(cfg[0]["config"]["gain"])
                ys.append(rate / serial)
        ax.plot(xs, ys, "o-", color=f"C{j}", label=label(kind, threads), ms=4)
    ax.axhline(1.0, color="grey", lw=0.5)
    ax.set_xlabel("hotspot peak (call-rate gain)")
    ax.set_ylabel("speed-up over serial")
    first = rows[0]["config"]
    ax.set_title(f"PCS {first['entities']} cells under a moving hotspot", fontsize=9)
    ax.legend(fontsize=7)
    return fig


# -- command line ----------------------------------------------------------------------------
def default_out() -> Path:
    """``$OUT/manycore`` where ``$OUT`` is set (the device machine), else
    ``bench/results/manycore``."""
    base = os.environ.get("OUT")
    return Path(base) / "manycore" if base else HERE / "results" / "manycore"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.manycore", description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None,
                        help="results directory (default: $OUT/manycore if $OUT is set, "
                        "else bench/results/manycore)")
    parser.add_argument("--budget", type=float, default=None,
                        help=f"seconds to measure for (default {DEFAULT_BUDGET_S:g}; smoke: "
                        "120); what is left over is measured by running again")
    parser.add_argument("--max-threads", type=int, default=None,
                        help="cap the thread counts (default: twice the cores; smoke: 2)")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny models and steps: checks the machinery in seconds")
    parser.add_argument("--only", nargs="+", choices=GROUPS, default=list(GROUPS),
                        help="measure only these groups")
    parser.add_argument("--runtimes", nargs="+", default=None, metavar="KIND",
                        help="only these pooled runtimes (default: seer static static-block "
                        "global, and optimistic when registered); serial always runs")
    parser.add_argument("--retry-failed", action="store_true",
                        help="measure again the points that failed in an earlier run")
    parser.add_argument("--no-render", action="store_true",
                        help="do not write RESULTS-manycore.md and figures into --out")
    parser.add_argument("--report", type=Path, default=None, metavar="DIR",
                        help="measure nothing: render the results in DIR into --md and "
                        "--figures")
    parser.add_argument("--md", type=Path, default=HERE / "RESULTS-manycore.md",
                        help="with --report: the markdown file (default "
                        "bench/RESULTS-manycore.md)")
    parser.add_argument("--figures", type=Path, default=HERE / "figures",
                        help="with --report: where the figures go (default bench/figures)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.report is not None:
        if not args.report.is_dir():
            _parser().error(f"--report {args.report}: no such directory")
        render(args.report, args.md, args.figures)
        print(f"[manycore] wrote {args.md}", file=sys.stderr)
        return 0
    out = args.out or default_out()
    mode = "smoke" if args.smoke else "full"
    budget = args.budget if args.budget is not None else (
        120.0 if args.smoke else DEFAULT_BUDGET_S)
    max_threads = args.max_threads if args.max_threads is not None else (
        2 if args.smoke else None)
    if args.runtimes:
        bad = [k for k in args.runtimes if k == "serial" or k not in _known_runtimes()]
        if bad:
            _parser().error(f"--runtimes: unknown or not pooled: {', '.join(bad)}")
    if args.retry_failed:
        for failed in out.glob("*/*/*.error.json"):
            failed.unlink()

    def report() -> None:
        if not args.no_render:
            render(out, out / "RESULTS-manycore.md", out / "figures")
            print(f"[manycore] wrote {out / 'RESULTS-manycore.md'}", file=sys.stderr,
                  flush=True)

    session = run_study(out, mode=mode, budget_s=budget, max_threads=max_threads,
                        groups=args.only,
                        kinds=tuple(args.runtimes) if args.runtimes else None,
                        on_abort=report)
    report()
    return 1 if session["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
