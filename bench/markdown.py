"""The text of ``bench/RESULTS.md``: what a user reads in a minute, generated from the
result files, with the goals of ``bench/goals.toml`` first.

:func:`goal_rows` is also what ``bench/RESULTS-manycore.md`` uses for its goals, so both
documents judge a goal the same way. Nothing here measures; :mod:`bench.report` runs the
parts and calls :func:`write_results`.
"""

from __future__ import annotations

import itertools
import math
import statistics
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.harness import ALL, PEERS, Part, config_name, label, paired, ratios, table
from bench.sizes import Sizes

__all__ = ["GOALS_FILE", "Results", "also_measured", "break_even", "goal_rows", "load_goals",
           "manycore_lines", "memory_section", "scan_pairs", "write_results"]

GOALS_FILE = Path(__file__).with_name("goals.toml")
#: the STPA methods that are not baselines
NOT_BASELINES = ("stpa", "stpa-uncapped", "oracle")  # the model, itself uncapped, the bound


def load_goals(path: Path = GOALS_FILE) -> list[dict[str, Any]]:
    """The goals, each a dict with ``text``, ``source``, ``measure`` and ``at_least`` or
    ``at_most``; an entry without either target is an error naming it."""
    goals = tomllib.loads(path.read_text())["goal"]
    for g in goals:
        if ("at_least" in g) == ("at_most" in g):
            raise ValueError(f"{path.name}: goal {g.get('text')!r} needs exactly one of "
                             "at_least and at_most")
    return goals


class Results:
    """Every result file a report reads, each None where it was not measured: ``parts``
    (pyperf, by name), ``efficiency``, ``stpa``, ``memory``, ``marl_loop``, ``replicas``,
    ``pursuit``, ``mpe`` and ``manycore`` (:func:`bench.manycore.load_results`)."""

    def __init__(self, z: Sizes, parts: dict[str, Part], **once: dict | None) -> None:
        self.z, self.parts = z, parts
        self.once = once

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["once"].get(name)
        except KeyError:
            raise AttributeError(name) from None


# -- goals -----------------------------------------------------------------------------------
#: what a goal's source gives: the value, a detail, and (optionally) a second condition of
#: the goal that the value alone does not show
Reading = tuple[float, str] | tuple[float, str, bool]


def _efficiency(r: Results, g: dict) -> Reading | None:
    eff = r.efficiency
    if eff is None:
        return None
    if g["measure"] == "identical":
        checked = [(k, rt, v["identical"]) for k, w in eff["workloads"].items()
                   for rt, v in w["runtimes"].items() if v["identical"] is not None]
        bad = [f"{rt} on {k}" for k, rt, ok in checked if not ok]
        return (0.0 if bad else 1.0,
                f"{len(checked) - len(bad)} of {len(checked)} comparisons"
                + (f"; differ: {', '.join(bad)}" if bad else ""))
    w = eff["workloads"].get(g["workload"])
    if w is None:
        return None
    runtimes, s = w["runtimes"], w["summary"]
    if g["measure"] == "lead":
        mine = runtimes[g["runtime"]]["wall_s"]
        leads = {p: paired(runtimes[p]["wall_s"], mine) for p in g["peers"] if p in runtimes}
        closest = min(leads, key=leads.__getitem__)
        return leads[closest], f"closest: {closest}"
    value = s[g["runtime"]][g["measure"]]
    if value is None:
        return None
    if g["measure"] != "speedup":
        return value, f"speed-up {s[g['runtime']]['speedup']:.2f}"
    per_round = ratios(runtimes["serial"]["wall_s"], runtimes[g["runtime"]]["wall_s"])
    return value, f"rounds {min(per_round):.2f}-{max(per_round):.2f}"


def _pyperf(r: Results, g: dict) -> Reading | None:
    part = r.parts.get(g["part"])
    if part is None:
        return None
    z = r.z
    if g["measure"] == "us_per_event":
        empty = config_name("empty", z.n_bench, 0, 2.0)
        events = z.n_bench * 10  # EmptyModel(n, per_step=10)
        return (1e6 * part[f"{empty}-{g['runtime']}"] / events,
                f"serial {1e6 * part[f'{empty}-serial'] / events:.2f} µs")
    if g["measure"] == "lead":
        worst, worst_at = math.inf, ""
        for gain in (x for x in z.gains if x > 0):
            cfg = config_name("pcs", z.n_pcs, z.pcs_cost, gain)
            for p in g["peers"]:
                v = part.speedup(f"{cfg}-{p}", f"{cfg}-{g['runtime']}")
                if v < worst:
                    worst, worst_at = v, f"closest: {p} at peak {gain:g}"
        return worst, worst_at
    raise ValueError(f"goal {g['text']!r}: pyperf measure {g['measure']!r} is not known")


def _stpa(r: Results, g: dict) -> Reading | None:
    stpa = r.stpa
    if stpa is None:
        return None
    if g["measure"] == "preflight_share":
        models = stpa["preflight"]["models"]
        worst = max(models, key=lambda m: m["fraction"])
        return worst["fraction"], worst["model"]
    # the goal is two-fold, on every machine: the target, and ahead of every baseline,
    # both on the mean over seeds where the report has them
    worst, details, ahead = 1.0, [], True
    for machine, methods in _stpa_machines(stpa).items():
        mine = methods["stpa"]["mean"]
        base = {k: v["mean"] for k, v in methods.items()
                if k not in NOT_BASELINES and math.isfinite(v["mean"])}
        best = max(base, key=base.__getitem__)
        worst, ahead = min(worst, mine), ahead and mine > base[best]
        details.append(f"{machine} {mine:.3f}, best baseline {best} {base[best]:.3f}")
    return worst, "; ".join(details), ahead


def _over_seeds(stpa: dict) -> dict[str, dict]:
    """Per part (a machine's held-out configurations, a held-out machine), each method's
    figures over seeds (:func:`seer.stpa.train.evaluate_seeds`)."""
    return {k: v for k, v in stpa["evaluation"]["over_seeds"].items() if k != "seeds"}


def _stpa_machines(stpa: dict) -> dict[str, dict]:
    """Each machine's held-out configurations: the methods' figures over seeds."""
    return {k: v for k, v in _over_seeds(stpa).items() if "->" not in k}


def stpa_table(stpa: dict) -> list[str]:
    """STPA against its baselines per machine and per held-out machine: mean regret over
    the seeds (their lowest and highest), the worst row and the MAE in threads."""
    columns = {(f"{k} (held-out machine)" if "->" in k else f"{k} held-out configurations"): v
               for k, v in _over_seeds(stpa).items()}
    methods = list(dict.fromkeys(k for v in columns.values() for k in v))

    def cell(m: dict | None) -> str:
        if not m or not math.isfinite(m["mean"]):
            return "-"
        spread = f" ({m['low']:.3f}-{m['high']:.3f})" if m["high"] > m["low"] else ""
        return f"{m['mean']:.3f}{spread}, worst {m['worst']:.2f}, MAE {m['mae_threads']:.1f}"

    rows = [[k, *(cell(v.get(k)) for v in columns.values())] for k in methods]
    return table(["method", *columns], rows)


def holdout_lines(stpa: dict) -> list[str]:
    """The shipped predictor's choices on fresh scans of configurations it never saw."""
    checked = stpa.get("holdout")
    if not checked:
        return []
    parts = [f"{c['name']} chose {c['chosen'][0]} (best {c['best']}, throughput "
             f"{c['regret'][0]:.2f} of the best)" for c in checked["configurations"]]
    return [f"- Fresh scans on this {checked['cores']}-core machine of configurations it was "
            f"never trained on (`python -m seer.stpa.holdout`): {'; '.join(parts)}."]


def _memory(r: Results, g: dict) -> Reading | None:
    mem = r.memory
    if mem is None:
        return None
    key = "rss_peak" if g["other"] == "serial" else "tracemalloc_peak"
    worst, at = 0.0, ""
    for workload in sorted({row["workload"] for row in mem["rows"]}):
        rows = {row["runtime"]: row for row in mem["rows"] if row["workload"] == workload}
        v = rows[g["runtime"]][key] / rows[g["other"]][key]
        if v > worst:
            worst, at = v, workload
    return worst, at


def _marl_loop(r: Results, g: dict) -> Reading | None:
    marl = r.marl_loop
    if marl is None or g["workload"] not in marl["workloads"]:
        return None
    rows = {row["label"]: row for row in marl["workloads"][g["workload"]]["rows"]}
    serial, mine = rows["serial"]["total"], rows[g["runtime"]]["total"]
    return 1 - mine / serial, f"{1e3 * mine:.0f} ms against {1e3 * serial:.0f} ms"


def _manycore(r: Results, g: dict) -> Reading | None:
    data = r.manycore
    if data is None:
        return None
    t = g["threads"]
    if g["measure"] == "speedup":
        pair = scan_pairs(data, t).get(g["config"])
        if pair is None:
            return None
        serial, mine = pair
        return speedup(mine, serial["steps_per_s"]), f"serial {serial['steps_per_s']:.2f} steps/s"
    scans = [x for x in data["points"]["scan"] if x["config"]["workload"] == g["workload"]
             and x["label"] == f"seer({t})" and x.get("of_ceiling") is not None]
    if scans:  # the scan's comparison at the focus thread count ran the ceiling
        x = min(scans, key=lambda x: x["config"]["entities"])
        return x["of_ceiling"], f"speed-up {x['speedup']:.2f}, {x['config_name']}"
    eff = (data.get("efficiency") or {}).get("workloads", {}).get(f"{g['workload']}@{t}")
    if eff is not None:
        share = eff["summary"].get(f"seer({t})", {}).get("of_ceiling")
        return (share, f"speed-up {eff['summary'][f'seer({t})']['speedup']:.2f}") \
            if share is not None else None
    tax = data.get("tax")  # the first many-core run measured the ceiling with bench.tax
    w = (tax or {}).get("workloads", {}).get(g["workload"])
    at = (w or {}).get("by_threads", {}).get(str(t))
    if at is None:
        return None
    seer_up = paired(at["serial"]["wall_s"], at["seer"]["wall_s"])
    ceiling = t * paired(at["lone_thread"]["wall_s"], at["threads"]["wall_s"])
    return seer_up / ceiling, f"seer {seer_up:.2f}x, ceiling {ceiling:.2f}x"


def scan_pairs(manycore: dict | None, threads: int) -> dict[str, tuple[dict, dict]]:
    """configuration -> (serial's point, seer(threads)'s point) of a many-core study's
    thread scans, for every configuration that has both."""
    rows = (manycore or {}).get("points", {}).get("scan", [])
    pairs = {}
    for name in dict.fromkeys(row["config_name"] for row in rows):
        of = {(x["runtime"], x["threads"]): x for x in rows if x["config_name"] == name}
        if ("serial", 1) in of and ("seer", threads) in of:
            pairs[name] = (of["serial", 1], of["seer", threads])
    return pairs


SOURCES: dict[str, Callable[[Results, dict], Reading | None]] = {
    "efficiency": _efficiency, "pyperf": _pyperf, "stpa": _stpa, "memory": _memory,
    "marl_loop": _marl_loop, "manycore": _manycore}


def goal_rows(r: Results, goals: Sequence[dict] | None = None,
              sources: Sequence[str] | None = None) -> list[list[str]]:
    """One row per goal (of ``sources`` only, when given): text, target, measured, met."""
    rows = []
    for g in goals if goals is not None else load_goals():
        if sources is not None and g["source"] not in sources:
            continue
        got = SOURCES[g["source"]](r, g)
        target = f">= {g['at_least']:g}" if "at_least" in g else f"<= {g['at_most']:g}"
        if got is None:
            rows.append([g["text"], target, "not measured", "-"])
            continue
        value, detail = got[0], got[1]
        ok = value >= g["at_least"] if "at_least" in g else value <= g["at_most"]
        ok = ok and (len(got) < 3 or got[2])
        rows.append([g["text"], target, f"{value:.2f} ({detail})" if detail else f"{value:.2f}",
                     "yes" if ok else "**no**"])
    return rows


# -- the sections ------------------------------------------------------------------------------
def break_even(points: Sequence[tuple[float, float]]) -> float | None:
    """The event cost (µs, serial time per event) at which speed-up crosses 1, linear in
    log(cost) between the two measured points around it; None if it does not cross."""
    pts = sorted(points)
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        if y0 < 1 <= y1:
            f = (1 - y0) / (y1 - y0)
            return math.exp(math.log(x0) + f * (math.log(x1) - math.log(x0)))
    return pts[0][0] if pts and pts[0][1] >= 1 else None


def cost_points(r: Results, runtime: str = "seer(2)") -> list[tuple[float, float]]:
    """(serial µs per event, speed-up of ``runtime``) for every measured configuration:
    BenchModel's cost sweep (events per step: its ticks and pings, 2 per entity) and every
    workload of the efficiency part that ran ``runtime``."""
    pts = []
    c, z = r.parts.get("cost_sweep"), r.z
    if c is not None:
        for cost in z.costs:
            cfg = config_name("bench", z.n_bench, cost, 2.0)
            if f"{cfg}-{runtime}" in c:
                pts.append((1e6 * c[f"{cfg}-serial"] / (2 * z.n_bench),
                            c.speedup(f"{cfg}-serial", f"{cfg}-{runtime}")))
    for w in (r.efficiency or {}).get("workloads", {}).values():
        if runtime in w["summary"] and w.get("serial_us_per_event"):
            pts.append((w["serial_us_per_event"], w["summary"][runtime]["speedup"]))
    return pts


def _header(r: Results, run: dict, span: str) -> list[str]:
    facts = (r.efficiency or {}).get("host", {}).get("interpreter", {})
    capacity = run.get("capacity", [])
    cap = (f", host capacity {min(capacity):.2f}-{max(capacity):.2f} effective cores over "
           "the rounds") if capacity else ""
    return ["# Benchmark results", "",
            f"{facts.get('python', 'CPython').split(' (')[0]}, GIL {facts.get('GIL', '?')}, "
            f"{facts.get('cores available', '?')} cores. The pyperf parts: `python -m "
            f"bench.report` ({r.z.mode} mode) at commit {run.get('commit', '?')}, {span}{cap}; "
            "every other part names its command and commit below. Ratios are paired by "
            "round (serial's time over the runtime's within a round, the median over "
            "rounds). Goals: `bench/goals.toml`.", ""]


def _goals(r: Results) -> list[str]:
    return ["## Goals", "", *table(["goal", "target", "measured", "met"],
                                   goal_rows(r, sources=[s for s in SOURCES
                                                         if s != "manycore"])),
            "", "Many-core goals: [RESULTS-manycore.md](RESULTS-manycore.md).", ""]


def _cost(r: Results) -> list[str]:
    c, z = r.parts.get("cost_sweep"), r.z
    if c is None:
        return []
    names = [x for x in ALL[1:] if f"{config_name('bench', z.n_bench, 0, 2.0)}-{x}" in c]
    rows = []
    for cost in z.costs:
        cfg = config_name("bench", z.n_bench, cost, 2.0)
        rows.append([f"{cost:g}", f"{1e6 * c[f'{cfg}-serial'] / (2 * z.n_bench):.1f}",
                     *[f"{c.speedup(f'{cfg}-serial', f'{cfg}-{x}'):.2f}" for x in names]])
    even = break_even(cost_points(r))
    even_text = (f"seer(2) breaks even with serial at about **{even:.1f} µs per event**"
                 if even else "seer(2) did not break even in this run")
    return ["## Speed-up by event cost", "",
            f"BenchModel, {z.n_bench} entities; speed-up over serial. {even_text} (serial "
            "time per event, interpolated over every measured configuration; "
            "[figure](figures/when_seer_helps.png)).", "",
            *table(["busy µs", "serial µs/event", *names], rows), ""]


def _threads(r: Results) -> list[str]:
    s, p, z = r.parts.get("thread_scan"), r.parts.get("pcs_thread_scan"), r.z
    if s is None or p is None:
        return []
    rows = []
    for t in z.scan:
        cells = [str(t)]
        for part, cfg, kinds in ((s, z.air, ("seer", "static", "optimistic")),
                                 (p, z.pcs, ("seer", "optimistic"))):
            for kind in kinds:
                name = f"{cfg}-{label(kind, t)}"
                cells.append(f"{part.speedup(f'{cfg}-serial', name):.2f}" if name in part
                             else "-")
        rows.append(cells)
    return ["## Speed-up by thread count", "",
            f"Aircraft {z.n_air} UAVs (~{z.air_cost} µs events) and PCS {z.n_pcs} cells; "
            "on this 2-core host more threads than cores only add switching.", "",
            *table(["threads", "Aircraft seer", "Aircraft static", "Aircraft optimistic",
                    "PCS seer", "PCS optimistic"], rows), ""]


def _peers(r: Results) -> list[str]:
    out = []
    eff = r.efficiency
    if eff is not None:
        rows = []
        for w in eff["workloads"].values():
            s = w["summary"]
            peers = {k: v["speedup"] for k, v in s.items()
                     if k not in ("serial", "seer(1)", "seer(2)")}
            best = max(peers, key=peers.__getitem__) if peers else None
            share = s.get("seer(2)", {}).get("of_ceiling")
            rows.append([w["title"], f"{w['serial_us_per_event']:.1f}",
                         f"{s['seer(2)']['speedup']:.2f}", f"{s['seer(2)']['cpu_ratio']:.2f}",
                         "-" if share is None else f"{share:.2f}",
                         f"{best} {peers[best]:.2f}" if best else "-"])
        out += ["## SEER and its peers, 2 threads", "",
                f"`{eff['command']}` at commit {eff['host'].get('commit', '?')}: "
                f"{eff['rounds']} rounds of {eff['steps']} steps; host capacity "
                f"{min(w['capacity_before'] for w in eff['workloads'].values()):.2f}-"
                f"{max(w['capacity_after'] for w in eff['workloads'].values()):.2f}. *CPU*: "
                "process CPU over serial's; *of ceiling*: speed-up over that of two "
                "independent serial runs on two threads (above 1 where sharing one model's "
                "read-only data beats two copies of it).", "",
                *table(["workload", "serial µs/event", "seer(2) speed-up", "CPU",
                        "of ceiling", "best peer"], rows), ""]
    h, z = r.parts.get("pcs_hotspot"), r.z
    if h is not None:
        rows = [[f"{g:g}", *[f"{h.speedup(f'{cfg}-serial', f'{cfg}-{x}'):.2f}"
                             for x in PEERS[1:]]]
                for g in z.gains for cfg in [config_name("pcs", z.n_pcs, z.pcs_cost, g)]]
        out += [f"PCS {z.n_pcs} cells under a moving hotspot (pyperf), speed-up over serial:",
                "", *table(["hotspot peak", *PEERS[1:]], rows), ""]
    return out


def memory_section(r: Results) -> list[str]:
    mem = r.memory
    if mem is None:
        return []
    runtimes = list(dict.fromkeys(row["runtime"] for row in mem["rows"]))
    rows = []
    for workload in dict.fromkeys(row["workload"] for row in mem["rows"]):
        by = {row["runtime"]: row for row in mem["rows"] if row["workload"] == workload}
        rows.append([workload, *[f"{by[x]['rss_peak'] / 2**20:.0f} / "
                                 f"{by[x]['tracemalloc_peak'] / 2**20:.1f}" for x in runtimes]])
    return ["## Memory", "", f"Peak RSS / peak traced allocations in MiB, {mem['steps']} "
            "steps, each runtime in a fresh process (`python -m bench.memory`).", "",
            *table(["workload", *runtimes], rows), ""]


def also_measured(r: Results) -> list[str]:
    """One line per once-run study that ``r`` holds (what each study prints when it ends)."""
    out = []
    if r.stpa is not None:
        costs = ", ".join(f"{m['model']} {100 * m['fraction']:.1f} %"
                          for m in r.stpa["preflight"]["models"])
        out += [f"- **STPA** (`threads=\"auto\"`, `python -m bench.stpa`): mean throughput at "
                "its choice over the best count's on held-out configurations, the mean of "
                f"{len(r.stpa['evaluation']['over_seeds']['seeds'])} seeds (their range in "
                "brackets), the worst row and the MAE in threads, per machine and trained on "
                "one machine, tested on the other; preflight cost, share of a "
                f"{r.stpa['preflight']['episode_steps']}-step "
                f"episode: {costs}; [figure](figures/stpa_choices.png).",
                *holdout_lines(r.stpa), "", *stpa_table(r.stpa), ""]
    if r.marl_loop is not None:
        for key, w in r.marl_loop["workloads"].items():
            rows = {row["label"]: row["total"] for row in w["rows"]}
            if "seer(2)" in rows:
                out.append(f"- **MARL loop** ({w['model']}, policy + step, "
                           f"`python -m bench.marl_loop`): serial {1e3 * rows['serial']:.0f} "
                           f"ms, seer(2) {1e3 * rows['seer(2)']:.0f} ms per step ({key}).")
    if r.replicas is not None:
        best = max(r.replicas["throughput"], key=lambda x: x["dask_replica_steps_per_s"])
        out.append(f"- **Replicas on Dask** (`python -m bench.replicas`): {best['replicas']} "
                   f"replicas x {best['threads']} threads, "
                   f"{best['dask_replica_steps_per_s']:.0f} replica-steps/s against "
                   f"{best['sequential_replica_steps_per_s']:.0f} in one process, "
                   f"bit-identical: {'yes' if best['identical'] else 'NO'}.")
    if r.pursuit is not None:
        sp, ag = r.pursuit["speed"], r.pursuit["agreement"]
        agree = all(s["agree"] for s in ag["statistics"].values())
        out.append(f"- **Pursuit port** (`python -m bench.pursuit`): "
                   f"{sp['speedup_port_over_pettingzoo']:.0f}x PettingZoo's step on serial; "
                   f"episode statistics agree with PettingZoo's (Welch, p > 0.01): "
                   f"{'yes' if agree else 'NO'}.")
    if r.mpe is not None:
        from bench.mpe import summary

        out.append("- **MPE spread port against whole-array numpy** (`python -m bench.mpe`; "
                   "ms per step, the three taking turns): " + "; ".join(summary(r.mpe)) + ".")
    return ["## Also measured", "", *out, ""] if out else []


def write_results(r: Results, figures: list[str], run: dict, span: str) -> str:
    """The whole of RESULTS.md."""
    out = [*_header(r, run, span), *_goals(r), *_cost(r), *_threads(r), *_peers(r),
           *memory_section(r), *also_measured(r)]
    out += ["## Figures", "", " · ".join(f"[{f.removesuffix('.png')}](figures/{f})"
                                         for f in figures), ""]
    return "\n".join(out) + "\n"


# -- RESULTS-manycore.md -----------------------------------------------------------------------
#: the paper's figures, beside which the many-core study's are shown (its machines, not ours)
PAPER_AIRCRAFT = (16.92, 41.22, 52.93)  # steps/s: serial -> 4 workers -> best
PAPER_SPEEDUP_4 = 2.81
PAPER_PCS_VARIANCE = (23.79, 2.59)  # per-thread CPU utilisation variance, baseline -> SEER
Row = dict[str, Any]


def by_config(rows: list[Row]) -> dict[str, list[Row]]:
    """Point rows by model, in order of workload, size, hotspot peak."""
    out: dict[str, list[Row]] = {}
    for r in sorted(rows, key=lambda r: (r["config"]["workload"], r["config"]["entities"],
                                         r["config"]["gain"])):
        out.setdefault(r["config_name"], []).append(r)
    return out


def title(row: Row) -> str:
    c = row["config"]
    if c["workload"] == "aircraft":
        return f"Aircraft {c['entities']} UAVs, ~{c['cost_us']:g} µs"
    return f"PCS {c['entities']} cells, ~{c['cost_us']:g} µs, hotspot {c['gain']:g}"


def kinds(rows: list[Row]) -> list[str]:
    """Pooled runtimes present: seer and the peers, then the others."""
    order = ["seer", "static", "static-block", "global", "optimistic"]
    seen = {r["runtime"] for r in rows if r["runtime"] != "serial"}
    return sorted(seen, key=lambda k: (order.index(k) if k in order else len(order), k))


def rate(rows: list[Row], runtime: str, threads: int) -> float | None:
    r = next((x for x in rows if x["runtime"] == runtime and
              (runtime == "serial" or x["threads"] == threads)), None)
    return r["steps_per_s"] if r else None


def speedup(row: Row, serial: float | None) -> float | None:
    """Over the comparison's own serial where the row has it, else over ``serial``."""
    if row.get("speedup") is not None:
        return row["speedup"]
    return row["steps_per_s"] / serial if serial else None


def manycore_lines(data: dict[str, Any], figures: list[str], note: str = "") -> list[str]:
    """The lines of RESULTS-manycore.md from :func:`bench.manycore.load_results`."""
    out = ["# Many-core study", ""]
    sessions, points = data["sessions"], data["points"]
    if not sessions and not any(points.values()) and not data["stpa"]:
        return [*out, "Not run yet: no results in this directory. On a machine with many "
                "cores: `scripts/bundle.sh` here, then `dist/bundle/run.sh python -m "
                "bench.manycore --out $OUT/manycore` there (docs/manycore.md), then "
                "`python -m bench.report --manycore DIR` here."]
    out += ["Produced by `python -m bench.manycore` (one round of directly timed steps per "
            "point: build, reset, one warm-up step, then the same timed steps for every "
            "runtime; steps/s = timed steps / their wall time). Speed-ups are over "
            "`serial` on the same model and steps.", ""]
    goals = goal_rows(Results(Sizes("fast"), {}, manycore=data), sources=["manycore"])
    out += [*_mc_sessions(sessions), "## Goals", "",
            *table(["goal", "target", "measured", "met"], goals), "", *_mc_paper(points),
            *_mc_scans(points["scan"]), *_mc_balance(points["balance"]),
            *_mc_hotspot(points["hotspot"]), *_mc_stpa(data["stpa"])]
    checked = [r for rows in points.values() for r in rows if r.get("identical") is not None
               or r["runtime"] == "serial"]
    bad = [f"{r['group']} {r['config_name']} {r['label']}" for r in checked
           if r.get("identical") is False]
    out += ["## Bit-identical results", "",
            (f"State after the timed steps identical across runtimes and thread counts in "
             f"all {len(checked)} points (sha256 of every state field)." if not bad else
             f"**{len(bad)} of {len(checked)} points end in a state that differs from "
             "serial's**: " + "; ".join(bad[:20]) + "."), ""]
    if data["errors"]:
        out += ["## Points that failed", "",
                *[f"- {e.get('key', '?')}: {e.get('error', '')}" for e in data["errors"]], ""]
    return [*out, "## Figures", "",
            *([f"![{Path(f).stem}]({f})" for f in figures] or [note or "No points measured."])]


def _mc_sessions(sessions: list[dict[str, Any]]) -> list[str]:
    if not sessions:
        return ["No session record (host facts) in this directory.", ""]
    rows = []
    for s in sessions:
        h = s.get("host", {})
        cap = [s.get(k, {}).get("effective_cores") for k in ("capacity_before",
                                                             "capacity_after")]
        rows.append([
            s.get("started", "?"), s.get("mode", "?"), str(h.get("cores", "?")),
            h.get("cpu_model", "") or "?",
            f"{h.get('interpreter', {}).get('python', '?').split(' (')[0]}, GIL "
            f"{'on' if h.get('gil_enabled') else 'off'}",
            " / ".join("-" if c is None else f"{c:.1f}" for c in cap),
            f"{s.get('elapsed_s', 0):.0f} of {s.get('budget_s', 0):.0f}",
            " / ".join(str(s.get(k, "?")) for k in ("measured", "existing", "over_budget",
                                                    "failed")), str(h.get("commit", "?"))])
    return ["## Machine and runs", "",
            *table(["started (UTC)", "mode", "cores", "CPU", "Python", "effective cores "
                     "before / after", "seconds of budget", "measured / there / left / "
                     "failed", "commit"], rows), "",
            "Effective cores: T x time of a pure-Python loop on 1 thread / time on T threads "
            "at once (T = the cores), before and after the run; T on an idle machine.", ""]


def _mc_paper(points: dict[str, list[Row]]) -> list[str]:
    air = [r for r in points["scan"] if r["config"]["workload"] == "aircraft"
           and r["config"]["entities"] == 800]
    serial, seer4 = rate(air, "serial", 1), rate(air, "seer", 4)
    best = max((r for r in air if r["runtime"] == "seer"), key=lambda r: r["steps_per_s"],
               default=None)
    if serial and seer4 and best:
        ours_scan = (f"serial {serial:.2f} -> seer(4) {seer4:.2f} -> best "
                     f"{best['label']} {best['steps_per_s']:.2f}")
        four = next(r for r in air if r["runtime"] == "seer" and r["threads"] == 4)
        ours_4 = f"{speedup(four, serial):.2f}x (seer(4) / serial)"
    else:
        ours_scan = ours_4 = "not measured"
    pcs = [r for r in points["balance"] if r["config"]["workload"] == "pcs"]
    var = {r["runtime"]: r["cpu_util_var"] for r in pcs if r.get("cpu_util_var") is not None}
    t = pcs[0]["threads"] if pcs else 16
    ours_var = ", ".join(f"{k}({t}) {var[k]:.2f}" for k in kinds(pcs) if k in var) \
        or "not measured"
    return ["## Next to the paper", "",
            *table(["figure", "paper", "this run"], [
                ["Aircraft 800 UAVs ~200 µs, steps/s", " -> ".join(
                    f"{x:.2f}" for x in PAPER_AIRCRAFT), ours_scan],
                ["Aircraft speed-up with 4 workers", f"{PAPER_SPEEDUP_4:.2f}x", ours_4],
                ["PCS load balance: variance of per-thread CPU utilisation (%²), baseline "
                 "-> SEER", " -> ".join(f"{x:.2f}" for x in PAPER_PCS_VARIANCE), ours_var],
            ]), "",
            "The paper's figures come from its own machines and implementation; they stand "
            "here for orientation, not as a like-for-like comparison. Ours are one round "
            "on the machine of the table above.", ""]


def _cell(r: Row | None, serial: float | None) -> str:
    if r is None:
        return "-"
    up = speedup(r, serial)
    return f"{r['steps_per_s']:.2f}" + ("" if up is None else f" ({up:.2f}x)")


def _mc_scans(rows: list[Row]) -> list[str]:
    if not rows:
        return ["## Thread scans", "", "Not run.", ""]
    out = ["## Thread scans (steps/s, speed-up over serial in parentheses)", ""]
    for name, cfg in by_config(rows).items():
        threads = sorted({r["threads"] for r in cfg if r["runtime"] != "serial"})
        serial = rate(cfg, "serial", 1)
        table_rows = []
        for kind in kinds(cfg):
            mine = {r["threads"]: r for r in cfg if r["runtime"] == kind}
            best = max(mine.values(), key=lambda r: r["steps_per_s"])["threads"]
            table_rows.append([kind, *(f"**{_cell(mine[t], serial)}**" if t == best else
                                       _cell(mine.get(t), serial) for t in threads)])
        out += [f"### {title(cfg[0])} (`{name}`, {cfg[0]['steps']} timed steps per point)",
                "", f"serial: {serial:.2f} steps/s." if serial else "serial: not measured.",
                "", *table(["runtime", *[f"T={t}" for t in threads]], table_rows), "",
                "Bold: the runtime's best thread count.", ""]
    return out


def _mc_balance(rows: list[Row]) -> list[str]:
    if not rows:
        return ["## Load balance", "", "Not run.", ""]
    out = ["## Load balance (per-thread CPU time)", ""]
    for name, cfg in by_config(rows).items():
        table_rows = []
        for kind in kinds(cfg):
            r = next(x for x in cfg if x["runtime"] == kind)
            cpu, events = r["workers"]["cpu_s"], r["workers"]["events"]
            var, cv = r.get("cpu_util_var"), r.get("cpu_cv")
            table_rows.append([
                r["label"], f"{r['steps_per_s']:.2f}",
                f"{min(cpu):.3f} / {statistics.fmean(cpu):.3f} / {max(cpu):.3f}" if cpu
                else "-", f"{min(events)} / {max(events)}" if events else "-",
                str(sum(r["workers"]["steals"])) if cpu else "-",
                "-" if var is None else f"{var:.2f}", "-" if cv is None else f"{cv:.3f}"])
        out += [f"### {title(cfg[0])} (`{name}`, {cfg[0]['steps']} steps)", "",
                *table(["runtime", "steps/s", "CPU s per thread min / mean / max",
                        "events per thread min / max", "chunks stolen", "utilisation "
                        "variance (%²)", "CPU CV"], table_rows), ""]
    return [*out, "Utilisation of a thread: its CPU time inside the runtime's tasks over the "
            "wall time of the timed steps, in %; the variance is over the threads (the "
            f"paper's PCS figure: {PAPER_PCS_VARIANCE[0]} for its baseline, "
            f"{PAPER_PCS_VARIANCE[1]} for SEER). CV: standard deviation / mean of the CPU "
            "seconds.", ""]


def _mc_hotspot(rows: list[Row]) -> list[str]:
    if not rows:
        return ["## PCS hotspot sweep", "", "Not run.", ""]
    present, threads = kinds(rows), max(r["threads"] for r in rows)
    table_rows = []
    for cfg in sorted(by_config(rows).values(), key=lambda c: c[0]["config"]["gain"]):
        serial = rate(cfg, "serial", 1)
        at = {r["runtime"]: r for r in cfg if r["threads"] == threads}
        table_rows.append([f"{cfg[0]['config']['gain']:g}",
                           "-" if serial is None else f"{serial:.2f}",
                           *(_cell(at.get(k), serial) for k in present)])
    first = rows[0]["config"]
    return [f"## PCS hotspot sweep ({first['entities']} cells, ~{first['cost_us']:g} µs, "
            f"{threads} threads; steps/s and speed-up over serial)", "",
            *table(["hotspot peak", "serial", *[label(k, threads) for k in present]],
                   table_rows), ""]


def _mc_stpa(rows: list[Row]) -> list[str]:
    if not rows:
        return ["## STPA data collection", "", "Not run (or no configuration finished).", ""]
    table_rows = []
    for r in rows:
        tput = [statistics.median(x) for x in r["throughput"]]
        table_rows.append([r["config"]["name"], str(r.get("cores", "?")),
                           str(r.get("t_max", len(tput))), str(r["label"]),
                           f"{tput[0]:.2f}", f"{max(tput):.2f}", f"{r.get('seconds', 0):.1f}"])
    return ["## STPA data collection", "",
            f"Configurations measured: {len(rows)} (those of "
            "`seer.stpa.dataset.default_configurations()`, one tiny one in a smoke run), "
            "each as `seer stpa collect` measures it: preflights, and a full scan T = "
            "1..t_max whose best T is the label. The rows are in the session files, in the "
            "form `collect` assembles its data set from.", "",
            *table(["configuration", "cores seen", "t_max", "label (best T)",
                    "steps/s at T=1", "best steps/s", "seconds"], table_rows), ""]
