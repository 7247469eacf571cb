"""The report's figures, drawn from loaded result parts (matplotlib, Agg, no display)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

import seer
from bench import markdown as mc
from bench.harness import ALL, PEERS, Part, config_name, label, save_figure
from bench.markdown import Results, Row, break_even, cost_points, scan_pairs, speedup
from bench.sizes import Sizes

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["draw", "draw_manycore", "when_seer_helps"]

#: one line of a plot: legend label, x values, y values
Series = tuple[str, Sequence[float], Sequence[float]]


def draw(r: Results, where: Path) -> list[str]:
    """Write every figure that has data into ``where``; return their file names."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    m, z = r.parts, r.z
    makers = {
        "when_seer_helps.png": lambda: when_seer_helps(r),
        "speedup_vs_threads.png": lambda: _thread_scan(m, z),
        "throughput_vs_cost.png": lambda: _cost_sweep(m["cost_sweep"], z),
        "latency_vs_entities.png": lambda: _latency(m, z),
        "hotspot.png": lambda: _hotspot(m["pcs_hotspot"], z),
        "cpu_per_thread.png": lambda: _cpu_per_thread(r.balance),
        "stpa_choices.png": lambda: _stpa_choices(r.stpa),
        "marl_loop.png": lambda: _marl_loop(r.marl_loop),
        "distributed.png": lambda: _replicas(r.replicas),
    }
    needs = {"speedup_vs_threads.png": m.get("thread_scan") and m.get("pcs_thread_scan"),
             "throughput_vs_cost.png": m.get("cost_sweep"),
             "latency_vs_entities.png": m.get("entity_sweep") and m.get("pcs_entity_sweep"),
             "hotspot.png": m.get("pcs_hotspot"), "cpu_per_thread.png": r.balance,
             "stpa_choices.png": r.stpa, "when_seer_helps.png": cost_points(r),
             "marl_loop.png": r.marl_loop, "distributed.png": (r.replicas or {}).get("throughput")}
    drawn = []
    for name, make in makers.items():
        if needs[name]:
            fig = make()
            FigureCanvasAgg(fig)
            drawn += save_figure(fig, where, name)
    return drawn


def manycore_points(manycore: dict | None, threads: int = 16) -> list[tuple[float, float]]:
    """(serial µs per event, seer(threads) speed-up) of every scanned configuration of a
    many-core study."""
    return [(1e6 / serial["steps_per_s"] / serial["events_per_step"],
             speedup(mine, serial["steps_per_s"]))
            for serial, mine in scan_pairs(manycore, threads).values()
            if serial.get("events_per_step")]


def when_seer_helps(r: Results) -> Figure:
    """The README's figure: speed-up over serial against the serial time per event, SEER
    on 2 threads (this host) and on 16 (the many-core study), with the break-even."""
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
    if even:
        ax.axvline(even, color="C0", lw=0.8, ls=":")
        ax.annotate(f"break-even\n~{even:.0f} µs", (even, 1.0), textcoords="offset points",
                    xytext=(5, 8), fontsize=8, color="C0")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("serial time per event (µs)")
    ax.set_ylabel("speed-up over serial")
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


def _speedups(part: Part, configs: Sequence[str], runtime: str) -> list[float]:
    """Speed-up over serial of ``runtime`` in each configuration."""
    return [part.speedup(f"{c}-serial", f"{c}-{runtime}") for c in configs]


def _thread_scan(m: dict[str, Part], z: Sizes) -> Figure:
    """Speed-up vs threads (the paper's Fig. 7)."""
    series = []
    for part, config, kinds, title in (("thread_scan", z.air, ("seer", "static"), "Aircraft"),
                                       ("pcs_thread_scan", z.pcs, ("seer",), "PCS")):
        s = m[part]
        for kind in kinds:
            ts = [t for t in z.scan if f"{config}-{label(kind, t)}" in s]
            series.append((f"{title}, {kind}", ts,
                           [s.speedup(f"{config}-serial", f"{config}-{label(kind, t)}")
                            for t in ts]))
    fig = _new_figure(5.5, 3.8)
    _lines(fig.add_subplot(), series, xlabel="threads", ylabel="speed-up over serial",
           title=f"Thread scan ({seer.cpu_count()} cores)", baseline=True, legend_size=8)
    return fig


def _cost_sweep(c: Part, z: Sizes) -> Figure:
    """Throughput over serial vs handler cost, every runtime."""
    configs = [config_name("bench", z.n_bench, cost, 2.0) for cost in z.costs]
    series = [(name, z.costs, _speedups(c, configs, name)) for name in ALL[1:]]
    fig = _new_figure(5.5, 3.8)
    _lines(fig.add_subplot(), series, xlabel="handler cost (µs)", ylabel="throughput / serial",
           title=f"BenchModel, {z.n_bench} entities", baseline=True,
           xscale={"value": "symlog", "linthresh": 10}, legend_size=7)
    return fig


def _latency(m: dict[str, Part], z: Sizes) -> Figure:
    """Step latency vs entity count, Aircraft and PCS side by side."""
    fig = _new_figure(8, 3.5)
    for i, (part, workload, sweep, cost, title) in enumerate((
            ("entity_sweep", "aircraft", z.air_sweep, z.air_cost, "Aircraft"),
            ("pcs_entity_sweep", "pcs", z.pcs_sweep, z.pcs_cost, "PCS"))):
        e = m[part]
        configs = [config_name(workload, n, cost, 2.0) for n in sweep]
        series = [(name, sweep, [1e3 * e[f"{c}-{name}"] for c in configs])
                  for name in ("serial", "seer(2)")]
        _lines(fig.add_subplot(1, 2, i + 1), series, xlabel="entities", ylabel="ms per step",
               title=f"{title} step latency")
    return fig


def _hotspot(h: Part, z: Sizes) -> Figure:
    """SEER against the peers as the PCS hotspot grows."""
    configs = [config_name("pcs", z.n_pcs, z.pcs_cost, g) for g in z.gains]
    series = [(name, z.gains, _speedups(h, configs, name)) for name in PEERS[1:]]
    fig = _new_figure(5.5, 3.8)
    _lines(fig.add_subplot(), series, xlabel="hotspot peak (call-rate gain)",
           ylabel="speed-up over serial", title=f"PCS {z.n_pcs} cells under a moving hotspot",
           legend_size=8)
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


def _replicas(result: dict) -> Figure:
    """Replica-steps per second per configuration: one runtime, K in turn, K on Dask."""
    rows = result["throughput"]
    fig = _new_figure(6.4, 3.6, dpi=110)
    ax = fig.add_subplot()
    x = np.arange(len(rows))
    width = 0.27
    series = (("one runtime", "one_runtime_steps_per_s"),
              ("K in-process, in turn", "sequential_replica_steps_per_s"),
              ("K on Dask", "dask_replica_steps_per_s"))
    for i, (name, key) in enumerate(series):
        ax.bar(x + (i - 1) * width, [r[key] for r in rows], width, label=name)
    ax.set_xticks(x, [f"{r['replicas']} x {r['threads']}" for r in rows])
    ax.set_xlabel("replicas x threads")
    ax.set_ylabel("replica-steps per second")
    ax.set_title("Replicas on a Dask LocalCluster")
    top = max(r[key] for r in rows for _name, key in series)
    ax.set_ylim(0, 1.35 * top)  # room for the legend above the bars
    ax.legend(fontsize=8, loc="upper center", ncols=3)
    return fig


# -- RESULTS-manycore.md -----------------------------------------------------------------------
def draw_manycore(data: dict, where: Path) -> list[str]:
    """The many-core study's figures of the measured groups; their file names."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    points, figures = data["points"], {}
    cores = max((s.get("host", {}).get("cores", 0) for s in data["sessions"]), default=0)
    if points["scan"]:
        figures["manycore_thread_scans.png"] = _mc_scans(points["scan"], cores)
    if points["balance"]:
        figures["manycore_load_balance.png"] = _mc_balance(points["balance"])
    if points["hotspot"]:
        figures["manycore_hotspot.png"] = _mc_hotspot(points["hotspot"])
    for name, fig in figures.items():
        FigureCanvasAgg(fig)
        save_figure(fig, where, name, dpi=110)
    return list(figures)


def _mc_scans(rows: list[Row], cores: int) -> Figure:
    """Steps/s against threads per runtime, one panel per model; serial dashed; the
    paper's Aircraft figures on the Aircraft 800 panel."""
    configs = mc.by_config(rows)
    cols = min(2, len(configs))
    nrows = (len(configs) + cols - 1) // cols
    fig = _new_figure(5.2 * cols, 3.6 * nrows)
    for i, cfg in enumerate(configs.values()):
        ax = fig.add_subplot(nrows, cols, i + 1)
        for j, kind in enumerate(mc.kinds(cfg)):
            mine = sorted((r for r in cfg if r["runtime"] == kind), key=lambda r: r["threads"])
            ax.plot([r["threads"] for r in mine], [r["steps_per_s"] for r in mine], "o-",
                    color=f"C{j}", label=kind, ms=4)
        serial = mc.rate(cfg, "serial", 1)
        if serial:
            ax.axhline(serial, color="grey", ls="--", lw=1, label="serial")
        if cores:
            ax.axvline(cores, color="0.7", ls=":", lw=1)
        c = cfg[0]["config"]
        if c["workload"] == "aircraft" and c["entities"] == 800:
            ax.text(0.02, 0.97, "paper: " + " -> ".join(f"{x:g}" for x in mc.PAPER_AIRCRAFT)
                    + f" steps/s,\n{mc.PAPER_SPEEDUP_4}x with 4 workers",
                    transform=ax.transAxes, va="top", fontsize=7, color="0.3")
        ax.set_xscale("log", base=2)
        ts = sorted({r["threads"] for r in cfg})
        ax.set_xticks(ts, [str(t) for t in ts])
        ax.set_xlabel("threads" + (f" (dotted: {cores} cores)" if cores else ""))
        ax.set_ylabel("steps/s")
        ax.set_title(mc.title(cfg[0]), fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    return fig


def _mc_balance(rows: list[Row]) -> Figure:
    """Variance of per-thread CPU utilisation per runtime, one panel per model."""
    configs = mc.by_config(rows)
    fig = _new_figure(4.6 * len(configs), 3.6)
    for i, cfg in enumerate(configs.values()):
        ax = fig.add_subplot(1, len(configs), i + 1)
        first = {k: next(r for r in cfg if r["runtime"] == k) for k in mc.kinds(cfg)}
        names = [k for k, r in first.items() if r.get("cpu_util_var") is not None]
        values = [first[k]["cpu_util_var"] for k in names]
        ax.bar(range(len(names)), values, color=[f"C{j}" for j in range(len(names))])
        for j, v in enumerate(values):
            ax.text(j, v, f"{v:.2f}", ha="center", va="bottom", fontsize=7)
        if cfg[0]["config"]["workload"] == "pcs":
            for value, name, style in ((mc.PAPER_PCS_VARIANCE[0], "paper, baseline", "--"),
                                       (mc.PAPER_PCS_VARIANCE[1], "paper, SEER", ":")):
                ax.axhline(value, color="0.4", ls=style, lw=1, label=name)
            ax.legend(fontsize=7)
        positive = [v for v in values if v > 0]
        if positive and max(positive) > 30 * min(positive):  # a few bars would vanish
            ax.set_yscale("log")
        ax.set_xticks(range(len(names)), names, fontsize=8)
        ax.set_ylabel("variance of CPU utilisation (%²)")
        ax.set_title(f"{mc.title(cfg[0])}, {cfg[0]['threads']} threads", fontsize=8)
    return fig


def _mc_hotspot(rows: list[Row]) -> Figure:
    """Speed-up over serial against the hotspot peak, per runtime."""
    configs = sorted(mc.by_config(rows).values(), key=lambda c: c[0]["config"]["gain"])
    threads = max(r["threads"] for r in rows)
    fig = _new_figure(5.2, 3.6)
    ax = fig.add_subplot()
    for j, kind in enumerate(mc.kinds(rows)):
        got = [(cfg[0]["config"]["gain"], speedup(r, mc.rate(cfg, "serial", 1)))
               for cfg in configs for r in cfg if r["runtime"] == kind
               and r["threads"] == threads]
        got = [(x, y) for x, y in got if y]
        ax.plot([x for x, _ in got], [y for _, y in got], "o-", color=f"C{j}",
                label=label(kind, threads), ms=4)
    ax.axhline(1.0, color="grey", lw=0.5)
    ax.set_xlabel("hotspot peak (call-rate gain)")
    ax.set_ylabel("speed-up over serial")
    ax.set_title(f"PCS {rows[0]['config']['entities']} cells under a moving hotspot",
                 fontsize=9)
    ax.legend(fontsize=7)
    return fig
