"""The report's figures, drawn from loaded result parts (matplotlib, Agg, no display)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bench.harness import label, save_figure
from bench.markdown import Results, break_even, by_threads, cost_points, scan_speedups

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["draw", "manycore_points", "when_seer_helps"]

#: one line of a plot: legend label, x values, y values
Series = tuple[str, Sequence[float], Sequence[float]]


def draw(r: Results, where: Path, prefix: str = "") -> list[str]:
    """Write every figure that has data into ``where`` (``prefix`` before each name);
    return their file names."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    scans = by_threads(r.efficiency)[0]
    hotspot = sorted((w["gain"], w) for k, w in (r.efficiency or {}).get("workloads", {}).items()
                     if k.startswith("pcs_gain") and "@" not in k)
    figures = {
        "when_seer_helps.png": (cost_points(r), lambda: when_seer_helps(r)),
        "efficiency_scans.png": (scans, lambda: _efficiency_scans(scans)),
        "hotspot.png": (len(hotspot) > 1, lambda: _hotspot(hotspot)),
        "cpu_per_thread.png": (r.balance, lambda: _cpu_per_thread(r.balance)),
        "stpa_choices.png": (r.stpa, lambda: _stpa_choices(r.stpa)),
        "marl_loop.png": (r.marl_loop, lambda: _marl_loop(r.marl_loop)),
        "vector.png": (r.vector, lambda: _vector(r.vector)),
    }
    drawn = []
    for name, (data, make) in figures.items():
        if data:
            fig = make()
            FigureCanvasAgg(fig)
            drawn += save_figure(fig, where, prefix + name)
    return drawn


def manycore_points(efficiency: dict | None, threads: int = 16) -> list[tuple[float, float]]:
    """(serial µs per event, seer(threads) speed-up) of every comparison at ``threads``
    of a many-core run's efficiency part."""
    mine = label("seer", threads)
    return [(w["serial_us_per_event"], w["summary"][mine]["speedup"])
            for w in (efficiency or {}).get("workloads", {}).values()
            if w["threads"] == threads and mine in w["summary"]]


def when_seer_helps(r: Results) -> Figure:
    """The README's figure: speed-up over serial against the serial time per event, SEER
    on 2 threads (this host) and on 16 (the many-core run), with the break-even."""
    fig = _new_figure(6.0, 3.9)
    ax = fig.add_subplot()
    two = sorted(cost_points(r, "seer(2)"))
    many = sorted(manycore_points(r.manycore))
    # one marker per measured configuration (different models): no line between them
    ax.plot(*zip(*two, strict=True), "o", color="C0", label="seer(2), 2 cores")
    if many:
        ax.plot(*zip(*many, strict=True), "s", color="C3", label="seer(16), 16 cores")
    ax.axhline(1.0, color="0.3", lw=1, label="serial")
    even = break_even(two)
    if even and even > two[0][0]:  # a crossing, not the cheapest point
        ax.axvline(even, color="C0", lw=0.8, ls=":")
        ax.annotate(f"break-even\n~{even:.0f} µs", (even, 1.0), textcoords="offset points",
                    xytext=(5, 8), fontsize=8, color="C0")
    ax.set(xscale="log", yscale="log", xlabel="serial time per event (µs)",
           ylabel="speed-up over serial")
    ax.set_title("When SEER helps: events that cost a few µs or more", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(color="0.9", lw=0.5, which="both")
    return fig


def _lines(ax: Axes, series: list[Series], *, xlabel: str, ylabel: str, title: str,
           baseline: bool = False, xscale: dict | None = None,
           legend_size: float | None = None) -> None:
    """One line plot: ``o-`` lines, an optional grey line at y = 1 (parity with serial)
    and an optional x scale (``{"value": "symlog", "linthresh": 10}``)."""
    for name, xs, ys in series:
        ax.plot(xs, ys, "o-", label=name)
    if baseline:
        ax.axhline(1.0, color="grey", lw=0.5)
    if xscale:
        ax.set_xscale(**xscale)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=legend_size)


def _new_figure(width: float, height: float, dpi: float | None = None) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=dpi)


def _hotspot(hotspot: list[tuple[float, dict]]) -> Figure:
    """SEER against the peers as the PCS hotspot grows (the efficiency part's comparisons)."""
    gains = [g for g, _w in hotspot]
    names = [k for k in hotspot[0][1]["summary"] if k != "serial"]
    series = [(name, gains, [w["summary"][name]["speedup"] for _g, w in hotspot])
              for name in names]
    fig = _new_figure(5.5, 3.8)
    _lines(fig.add_subplot(), series, xlabel="hotspot peak (call-rate gain)",
           ylabel="speed-up over serial", title=f"{hotspot[0][1]['title'].split(',')[0]} under "
           "a moving hotspot", legend_size=8)
    return fig


def _cpu_per_thread(balance: dict[str, dict]) -> Figure:
    """Per-thread CPU time of each pooled runtime, one panel per workload."""
    fig = _new_figure(8, 3.5)
    for i, (workload, lb) in enumerate(balance.items()):
        ax = fig.add_subplot(1, 2, i + 1)
        rows = lb["rows"]
        width = 0.8 / max(len(r["cpu_s"]) for r in rows)
        for j, r in enumerate(rows):
            for t, cpu in enumerate(r["cpu_s"]):
                ax.bar(j + t * width, cpu, width, color=f"C{t}",
                       label=f"thread {t}" if j == 0 else None)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(rows))],
                      [label(r["kind"], r["threads"]) for r in rows], fontsize=7)
        ax.set_ylabel("CPU seconds")
        ax.set_title(f"{workload}: per-thread CPU time", fontsize=9)
        ax.legend(fontsize=7)
    return fig


def _stpa_choices(stpa: dict) -> Figure:
    """Per held-out configuration: the best thread count of its full scan (the label, a
    ring) and STPA's choice for each of its preflights (dots, red where the choice loses
    more than 5 % of the best throughput)."""
    report = stpa["evaluation"]
    t_max = int(report["t_max"])
    by_name: dict[str, list[dict]] = {}
    for row in report["rows"]:
        by_name.setdefault(row["name"], []).append(row)
    names = list(by_name)
    fig = _new_figure(6.5, 1.6 + 0.24 * len(names))
    ax = fig.add_subplot()
    for y, name in enumerate(names):
        rows = by_name[name]
        ax.plot(rows[0]["best"], y, "o", ms=11, mfc="none", mec="black", mew=1.3,
                label="best (label)" if y == 0 else None)
        for j, r in enumerate(rows):
            offset = 0.18 * (j - (len(rows) - 1) / 2)
            lost = r.get("regret", 1.0) < 0.95
            ax.plot(r["stpa"], y + offset, "o", ms=4.5, color="C3" if lost else "C0",
                    label=None)
    ax.plot([], [], "o", ms=4.5, color="C0", label="STPA, one dot per preflight")
    ax.plot([], [], "o", ms=4.5, color="C3", label="STPA, regret < 0.95")
    ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.set_ylim(len(names) - 0.5, -0.5)  # first configuration on top
    ax.set_xticks(range(1, t_max + 1))
    ax.set_xlim(0.5, t_max + 0.5)
    ax.grid(axis="x", color="0.85", lw=0.5)
    ax.set_xlabel("threads")
    ax.set_title(f"STPA's choice vs the best thread count (held out, "
                 f"{report['folds']}-fold grouped)", fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.07), ncol=3,
              frameon=False)  # below the axis: no configuration's dots hidden
    return fig


def _marl_loop(result: dict) -> Figure:
    """The MARL loop's per-step latency, stacked by phase, per run; one panel a workload."""
    from bench.marl_loop import PHASES

    ws = result["workloads"]
    fig = _new_figure(5.0 * len(ws), 4.6)
    for i, w in enumerate(ws.values()):
        ax = fig.add_subplot(1, len(ws), i + 1)
        labels = [r["label"].replace(", torch ", "\ntorch ") for r in w["rows"]]
        bottom = np.zeros(len(labels))
        for j, (key, heading) in enumerate(PHASES.items()):
            ms = np.array([1e3 * r["phases"][key] for r in w["rows"]])
            ax.bar(range(len(labels)), ms, bottom=bottom, label=heading, color=f"C{j}")
            bottom += ms
        # the loop's median can differ from the stacked phase medians on a noisy machine
        ax.scatter(range(len(labels)), [1e3 * r["total"] for r in w["rows"]], marker="_",
                   s=300, color="black", zorder=3, label="loop (median of rounds)")
        ax.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("ms per loop step")
        ax.set_title(f"{w['model']}", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        if i == 0:
            ax.legend(fontsize=7)
    fig.suptitle("MARL inference loop: per-step latency breakdown", fontsize=10)
    return fig


def _efficiency_scans(scans: dict[str, dict[int, dict]]) -> Figure:
    """Speed-up over serial against threads per runtime, one panel per scanned workload."""
    cols = min(2, len(scans))
    rows = (len(scans) + cols - 1) // cols
    fig = _new_figure(5.2 * cols, 3.6 * rows)
    for i, by_t in enumerate(scans.values()):
        ts = sorted(by_t)
        series = [(kind, [t for t in ts if ups[t] is not None],
                   [ups[t] for t in ts if ups[t] is not None])
                  for kind, ups in scan_speedups(by_t).items()]
        ax = fig.add_subplot(rows, cols, i + 1)
        _lines(ax, series, xlabel="threads", ylabel="speed-up over serial",
               title=by_t[ts[0]]["title"], baseline=True, legend_size=7)
        ax.set_xscale("log", base=2)
        ax.set_xticks(ts, [str(t) for t in ts])
    return fig


def _vector(vec: dict) -> Figure:
    """Environment-steps per second of each way, one panel a set, the ceiling dashed."""
    sets = vec["sets"]
    fig = _new_figure(4.2 * len(sets), 3.4)
    for i, (name, s) in enumerate(sets.items()):
        ax = fig.add_subplot(1, len(sets), i + 1)
        ways = [w for w in s["ways"] if w != "ceiling"]
        rates = [s["ways"][w]["env_steps_per_s"] for w in ways]
        bars = ax.bar(range(len(ways)), rates,
                      color=["#1f77b4" if w == "vector" else "#999999" for w in ways])
        ax.axhline(s["ways"]["ceiling"]["env_steps_per_s"], color="k", ls="--", lw=1,
                   label="ceiling")
        for bar, w in zip(bars, ways, strict=True):
            ax.annotate(f"{s['ways'][w]['speedup']:.2f}x", (bar.get_x() + bar.get_width() / 2,
                        bar.get_height()), ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(ways)), ways, rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("environment-steps / s")
        ax.set_title(f"{name}: {len(s['environments'])} envs, T = {s['threads']}", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
