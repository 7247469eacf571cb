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
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

__all__ = ["Trace", "plot_gantt"]

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
