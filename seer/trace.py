"""Execution traces: what each thread of a runtime did, for Perfetto and ``chrome://tracing``.

Build a runtime with ``trace=True`` (any runtime; ``seer.make_runtime(model, "seer",
threads=4, trace=True)``) and read ``runtime.trace`` after some steps. Each thread appends
records to its *own* list (no object shared between threads is written while a window
runs), so tracing does not serialise the threads it observes. With ``trace=False`` (the
default) the runtimes run their ordinary loops: nothing is recorded and nothing is paid.

What is recorded, per thread (thread 0 is the caller, which also coordinates):

* ``run``: a slice per entity run: the entity, the number of events, the first and last
  event key κ = (τ, seq) (for the serial runtime, a run is a stretch of consecutive events
  of one entity);
* ``window``: a slice on the caller per window, with its bound and ready count (also a
  counter track "ready entities");
* ``claim`` / ``steal``: instants when a thread claims a chunk of the PEL (``steal`` when
  it comes from another thread's home segment);
* ``wait``: a slice from a thread's end of work in a window to the window's end (the
  barrier);
* ``wake``: an instant when a pool worker picks up a task, saying whether it had parked on
  the condition variable or caught it while spinning;
* ``outputs``: a slice per thread building outputs.

:meth:`Trace.to_chrome` gives the Chrome Trace Event format (JSON object form): ``X``
complete events for slices, ``i`` instants, ``C`` counters, ``M`` thread names; times in
µs since the trace started. :func:`plot_gantt` draws the same data with matplotlib.

:func:`parallelism_profile` answers *how much could more cores buy?* from a trace of a
windowed runtime (best: ``seer`` on one thread, so that no run is slowed by another): the
speed-up the window protocol allows at T threads when scheduling costs nothing, and the
chain of runs that bounds it (``seer trace MODEL --parallelism``).
"""

from __future__ import annotations

import bisect
import heapq
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_BARRIER_US", "ParallelismProfile", "Trace", "parallelism_profile",
           "plot_gantt"]

_ns = time.perf_counter_ns


class Trace:
    """Records of one runtime (see the module docstring). ``threads[i]`` is thread ``i``'s
    list: ``("X", name, start_ns, end_ns, args)``, ``("i", name, ns, args)``,
    ``("C", name, ns, value)`` or a flow end ``("s" | "f", name, ns, id)``; only thread
    ``i`` appends to it while a window runs."""

    def __init__(self) -> None:
        self.start_ns = _ns()
        self.threads: list[list[tuple]] = []
        self.names: list[str] = []

    def ensure(self, threads: int, names: list[str] | None = None) -> None:
        """Have lists for ``threads`` threads (call between windows only)."""
        while len(self.threads) < threads:
            self.threads.append([])
            self.names.append(f"thread {len(self.names)}")
        if names:
            for i, name in enumerate(names[:threads]):
                self.names[i] = name

    # -- recording (each call appends to the calling thread's own list) ------------------
    def slice(self, thread: int, name: str, start: int, end: int, **args: Any) -> None:
        self.threads[thread].append(("X", name, start, end, args))

    def instant(self, thread: int, name: str, **args: Any) -> None:
        self.threads[thread].append(("i", name, _ns(), args))

    def counter(self, thread: int, name: str, value: float) -> None:
        self.threads[thread].append(("C", name, _ns(), value))

    def flow(self, thread: int, name: str, ns: int, flow_id: int, *, end: bool) -> None:
        """One end of an arrow between two slices (``end=False``: where it starts, in the
        slice of ``thread`` that encloses ``ns``; ``end=True``: where it lands). Both ends
        share ``flow_id``. Perfetto draws it as a flow."""
        self.threads[thread].append(("f" if end else "s", name, ns, flow_id))

    def clear(self) -> None:
        for records in self.threads:
            records.clear()
        self.start_ns = _ns()

    # -- reading ---------------------------------------------------------------------------
    def slices(self, name: str | None = None) -> list[tuple[int, str, int, int, dict]]:
        """``(thread, name, start_ns, end_ns, args)`` of every slice (named ``name``)."""
        return [(i, r[1], r[2], r[3], r[4]) for i, records in enumerate(self.threads)
                for r in records if r[0] == "X" and (name is None or r[1] == name)]

    def runs(self) -> list[dict[str, Any]]:
        """Every entity run as a dict: thread, entity, events, first, last, start, end."""
        return [{"thread": t, "start": s, "end": e, **args}
                for t, _, s, e, args in self.slices("run")]

    def to_chrome(self) -> dict[str, Any]:
        """The trace in Chrome Trace Event format (load it in Perfetto)."""
        pid = os.getpid()
        base = self.start_ns
        events: list[dict[str, Any]] = []
        for tid, name in enumerate(self.names):
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                           "args": {"name": name}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                           "args": {"sort_index": tid}})
        for tid, records in enumerate(self.threads):
            for r in records:
                if r[0] == "X":
                    events.append({"name": r[1], "cat": "seer", "ph": "X", "pid": pid,
                                   "tid": tid, "ts": (r[2] - base) / 1e3,
                                   "dur": max(r[3] - r[2], 0) / 1e3, "args": _jsonable(r[4])})
                elif r[0] == "i":
                    events.append({"name": r[1], "cat": "seer", "ph": "i", "s": "t",
                                   "pid": pid, "tid": tid, "ts": (r[2] - base) / 1e3,
                                   "args": _jsonable(r[3])})
                elif r[0] in ("s", "f"):
                    event = {"name": r[1], "cat": "seer", "ph": r[0], "id": r[3],
                             "pid": pid, "tid": tid, "ts": (r[2] - base) / 1e3}
                    if r[0] == "f":
                        event["bp"] = "e"  # bind to the enclosing slice
                    events.append(event)
                else:
                    events.append({"name": r[1], "cat": "seer", "ph": "C", "pid": pid,
                                   "tid": tid, "ts": (r[2] - base) / 1e3,
                                   "args": {"value": r[3]}})
        return {"traceEvents": events, "displayTimeUnit": "ms",
                "otherData": {"generator": "seer"}}

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_chrome()))
        return path


def _jsonable(args: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in args.items():
        if isinstance(v, tuple):
            v = list(v)
        out[k] = v if isinstance(v, (int, float, str, list, bool, type(None))) else repr(v)
    return out


def plot_gantt(trace: Trace, path: str | Path, *, title: str = "") -> Path:
    """A Gantt chart of the trace's entity runs, windows and waits (matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    base = trace.start_ns
    n = len(trace.threads)
    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.7 * n))
    colours = {"run": "tab:blue", "wait": "tab:red", "outputs": "tab:green",
               "window": "0.85"}
    bars: dict[tuple, list[tuple[float, float]]] = {}  # one broken_barh per colour and row
    for t, name, s, e, args in trace.slices():
        if name not in colours:
            continue
        y, h = (n - t - 1, 0.8) if name != "window" else (-0.9, 0.6)
        colour = colours[name]
        if name == "run":  # alternate shades so neighbouring runs stay distinguishable
            colour = "tab:blue" if args.get("entity", 0) % 2 else "tab:cyan"
        bars.setdefault((y, h, colour), []).append(((s - base) / 1e6, max(e - s, 1) / 1e6))
    for (y, h, colour), spans in bars.items():
        ax.broken_barh(spans, (y, h), color=colour)
    ax.set_yticks([n - i - 1 + 0.4 for i in range(n)] + [-0.6])
    ax.set_yticklabels([trace.names[i] for i in range(n)] + ["windows"])
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color="tab:blue", label="entity runs (blue/cyan alternate)"),
                       Patch(color="tab:red", label="barrier wait"),
                       Patch(color="tab:green", label="outputs"),
                       Patch(color="0.85", label="window")],
              loc="upper right", fontsize="small", framealpha=0.8)
    ax.set_xlabel("time since the trace started (ms)")
    ax.set_title(title or "SEER execution trace: entity runs (blue/cyan), barrier waits "
                          "(red), outputs (green)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


#: What a window's barrier and hand-off cost in the profile's model (µs): about what the
#: pool's hand-off and barrier take on a quiet machine.
DEFAULT_BARRIER_US = 20.0


@dataclass
class ParallelismProfile:
    """What the window protocol allows a traced run (:func:`parallelism_profile`).

    ``work_us``: the entity runs' time, all of it (what one thread with no scheduling cost
    would take); ``span_us``: each window's longest run, summed (the time no thread count
    can beat); ``makespan_us[T]``: each window's runs list-scheduled on T workers (longest
    first), summed, plus ``barrier_us`` per window; ``speedup[T]``: ``work_us`` over that.
    ``chain``: the windows whose longest run weighs most in the span, as ``(window,
    entity, run µs, share of span)``, longest first. ``runtime_us``: the traced windows'
    wall time beyond their runs on the caller's thread (the runtime's own cost at the
    traced thread count)."""

    windows: int
    runs: int
    events: int
    work_us: float
    span_us: float
    barrier_us: float
    makespan_us: dict[int, float] = field(default_factory=dict)
    speedup: dict[int, float] = field(default_factory=dict)
    chain: list[tuple[int, int, float, float]] = field(default_factory=list)
    median_ready: float = 0.0
    runtime_us: float = 0.0

    @property
    def limit(self) -> float:
        """The speed-up with unboundedly many threads: ``work_us`` over the span plus the
        barriers."""
        return self.work_us / (self.span_us + self.windows * self.barrier_us)

    def lines(self) -> list[str]:
        """The profile as text (what ``seer trace --parallelism`` prints)."""
        out = [f"{self.windows} windows, {self.runs} entity runs, {self.events} events; "
               f"median {self.median_ready:.0f} ready entities a window",
               f"work {self.work_us / 1e3:.2f} ms (entity runs), span {self.span_us / 1e3:.2f}"
               f" ms (each window's longest run), barrier {self.barrier_us:g} µs a window",
               "speed-up the window protocol allows with no scheduling cost:"]
        for t, up in self.speedup.items():
            out.append(f"  {t:>4} threads  {up:6.2f}x  ({self.makespan_us[t] / 1e3:.2f} ms)")
        out.append(f"  {'any':>4} threads  {self.limit:6.2f}x  (the span and the barriers)")
        if self.runtime_us > 0:
            share = self.runtime_us / (self.work_us + self.runtime_us)
            out.append(f"the runtime's own time in the windows, on one thread: "
                       f"{self.runtime_us / 1e3:.2f} ms ({100 * share:.1f} % of the windows)")
        if self.chain:
            out.append("the chain that bounds it (each window's longest run, heaviest first):")
            for window, entity, us, share in self.chain:
                out.append(f"  window {window:>4}: entity {entity} ran {us:.1f} µs "
                           f"({100 * share:.1f} % of the span)")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _makespan(durations: list[float], threads: int) -> float:
    """Longest-first list scheduling of ``durations`` on ``threads`` workers (within 4/3 of
    the optimum): the time the last worker finishes."""
    if threads <= 1 or len(durations) <= 1:
        return sum(durations) if threads <= 1 else max(durations, default=0.0)
    finish = [0.0] * min(threads, len(durations))
    for d in sorted(durations, reverse=True):
        heapq.heapreplace(finish, finish[0] + d)
    return max(finish)


def parallelism_profile(trace: Trace, threads: Iterable[int] = (1, 2, 4, 8, 16), *,
                        barrier_us: float = DEFAULT_BARRIER_US,
                        chain: int = 5) -> ParallelismProfile:
    """The speed-up the window protocol allows the traced run at each of ``threads``
    (see :class:`ParallelismProfile`): every window's entity runs, as long as they took in
    the trace, list-scheduled on T workers, plus ``barrier_us`` per window. It separates
    the protocol's limit (too few ready entities, one long run per window) from the
    runtime's own cost: a runtime measured far below the bound loses time to scheduling,
    sharing or the host, not to the protocol. Trace a windowed runtime (``seer``, best on
    one thread, so that no run is slowed by another running beside it); a trace without
    windows (the serial runtime's) is a :class:`~seer.ModelError`."""
    from seer.errors import ModelError

    counts = sorted({int(t) for t in threads})
    if not counts or counts[0] < 1:
        raise ModelError(f"parallelism_profile: threads must be ints >= 1, got {threads!r}")
    if barrier_us < 0:
        raise ModelError(f"parallelism_profile: barrier_us must be >= 0, got {barrier_us!r}")
    windows = sorted((s, e, args) for _t, _n, s, e, args in trace.slices("window"))
    if not windows:
        raise ModelError("parallelism_profile needs a trace with windows: trace a windowed "
                         "runtime, such as make_runtime(model, 'seer', threads=1, trace=True)")
    starts = [w[0] for w in windows]
    per_window: list[list[tuple[float, int]]] = [[] for _ in windows]
    events = 0
    for run in trace.runs():
        i = bisect.bisect_right(starts, run["start"]) - 1
        if i < 0 or run["start"] > windows[i][1]:
            continue  # outside every window (none should be)
        per_window[i].append(((run["end"] - run["start"]) / 1e3, run.get("entity", -1)))
        events += run.get("events", 0)
    durations = [[d for d, _e in runs] for runs in per_window]
    work = sum(map(sum, durations))
    longest = [max(runs, default=(0.0, -1)) for runs in per_window]
    span = sum(d for d, _e in longest)
    profile = ParallelismProfile(
        windows=len(windows), runs=sum(map(len, per_window)), events=events, work_us=work,
        span_us=span, barrier_us=float(barrier_us),
        median_ready=sorted(a.get("ready", 0) for _s, _e, a in windows)[len(windows) // 2],
        runtime_us=sum((e - s) / 1e3 for s, e, _a in windows) - work
        if len(trace.threads) == 1 else 0.0)
    for t in counts:
        makespan = sum(_makespan(d, t) for d in durations) + len(windows) * barrier_us
        profile.makespan_us[t] = makespan
        profile.speedup[t] = work / makespan if makespan else float("nan")
    heaviest = sorted(range(len(windows)), key=lambda i: -longest[i][0])[:chain]
    profile.chain = [(i, longest[i][1], longest[i][0], longest[i][0] / span if span else 0.0)
                     for i in heaviest]
    return profile
