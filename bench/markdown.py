"""The text of ``bench/RESULTS.md`` (:func:`write_results`: what a user reads in a minute,
the goals of ``bench/goals.toml`` first) and of ``bench/RESULTS-manycore.md``
(:func:`write_manycore`: a many-core run's files of the same parts, the same sections and
goal rows), from the result files. Nothing here measures.
"""

from __future__ import annotations

import itertools
import math
import statistics
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.harness import ALL, label, paired, ratios, table

__all__ = ["GOALS_FILE", "Results", "also_measured", "break_even", "by_threads", "goal_rows",
           "load_goals", "memory_section", "parallelism_section", "scan_speedups",
           "write_manycore", "write_results"]

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
    """Every result file a report reads, each None where it was not measured:
    ``efficiency``, ``stpa``, ``memory``, ``marl_loop``, ``replicas``, ``pursuit``, ``mpe``,
    ``parallelism``, ``vector``, ``manycore`` (the efficiency part of the many-core run,
    for the README's figure), and for RESULTS-manycore.md ``stpa_collect`` and ``holdout``."""

    def __init__(self, **once: dict | None) -> None:
        self.once = once

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["once"].get(name)
        except KeyError:
            raise AttributeError(name) from None


#: The most lines RESULTS.md may have: a page to read, not a log (the tests hold it).
RESULTS_MAX_LINES = 175


# -- goals -----------------------------------------------------------------------------------
#: a goal's reading: the value, a detail, and optionally a second condition of the goal
Reading = tuple[float, str] | tuple[float, str, bool]


def _efficiency(r: Results, g: dict) -> Reading | None:
    eff = r.efficiency  # a goal of a many-core machine reads no run on fewer cores
    if eff is None or eff.get("host", {}).get("cores", 0) < g.get("cores", 0):
        return None
    if g["measure"] == "identical":
        checked = [(k, rt, v.get("identical")) for k, w in eff["workloads"].items()
                   for rt, v in w["runtimes"].items() if v.get("identical") is not None]
        bad = [f"{rt} on {k}" for k, rt, ok in checked if not ok]
        return (0.0 if bad else 1.0,
                f"{len(checked) - len(bad)} of {len(checked)} comparisons"
                + (f"; differ: {', '.join(bad)}" if bad else ""))
    if g["measure"] == "lead":  # over every workload of the goal: the closest peer
        leads = {}
        for key in g["workloads"]:
            if key not in eff["workloads"] or g["runtime"] not in eff["workloads"][key]["runtimes"]:
                return None
            runtimes = eff["workloads"][key]["runtimes"]
            mine = runtimes[g["runtime"]]["wall_s"]
            leads.update({f"{p} on {key}": paired(runtimes[p]["wall_s"], mine)
                          for p in g["peers"] if p in runtimes})
        closest = min(leads, key=leads.__getitem__, default=None)
        return (leads[closest], f"closest: {closest}") if closest else None
    w = eff["workloads"].get(g["workload"])
    if w is None or g["runtime"] not in w["runtimes"]:
        return None
    runtimes, s = w["runtimes"], w["summary"]
    if g["measure"] == "us_per_event":
        def per_event(name: str) -> float:
            rt = runtimes[name]
            return 1e6 * statistics.median(rt["wall_s"]) / rt["events_per_step"]
        return per_event(g["runtime"]), f"serial {per_event('serial'):.2f} µs"
    value = s[g["runtime"]][g["measure"]]
    if value is None:
        return None
    if g["measure"] != "speedup":
        return value, f"speed-up {s[g['runtime']]['speedup']:.2f}"
    per_round = ratios(runtimes["serial"]["wall_s"], runtimes[g["runtime"]]["wall_s"])
    return value, f"rounds {min(per_round):.2f}-{max(per_round):.2f}"


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


def _parallelism(r: Results, g: dict) -> Reading | None:
    """The worst workload's measured seer(2) speed-up over the profile's bound at T = 2."""
    par = r.parallelism
    if par is None or not par.get("workloads"):
        return None
    worst = min(par["workloads"], key=lambda k: par["workloads"][k]["measured_over_bound"])
    w = par["workloads"][worst]
    return (w["measured_over_bound"], f"worst: {worst}, {w['measured']['speedup']:.2f}x of "
            f"{w['profile']['bound']['2']:.2f}x")


def _vector(r: Results, g: dict) -> Reading | None:
    """The vector runtime (``bench.vector``), the worst of the goal's sets: its share of
    the ceiling, its lead over ``ways`` (their slowest-to-lose median time over its), or
    whether every way's states equalled serial's."""
    vec = r.vector
    sets = [s for name, s in (vec or {}).get("sets", {}).items()
            if name in g.get("sets", [name])]
    if not sets:
        return None
    if g["measure"] == "identical":
        bad = [w for s in sets for w, v in s["ways"].items() if not v["identical"]]
        return (0.0 if bad else 1.0, f"differ: {', '.join(bad)}" if bad else "every way")
    readings = []
    for s in sets:
        mine = s["ways"]["vector"]
        if g["measure"] == "of_ceiling":
            readings.append((mine["of_ceiling"], f"{len(s['environments'])} envs"))
        else:  # lead
            times = {w: s["ways"][w]["ms_per_step"] for w in g["ways"] if w in s["ways"]}
            if not times:
                return None
            peer = min(times, key=times.get)
            readings.append((times[peer] / mine["ms_per_step"], f"against {peer}"))
    return min(readings)


SOURCES: dict[str, Callable[[Results, dict], Reading | None]] = {
    "efficiency": _efficiency, "stpa": _stpa, "memory": _memory,
    "marl_loop": _marl_loop, "parallelism": _parallelism, "vector": _vector}


def goal_rows(r: Results, goals: Sequence[dict] | None = None,
              many_core: bool = False) -> list[list[str]]:
    """One row per goal: text, target, measured, met. The goals read on a many-core
    machine (those with ``cores``) when ``many_core``, else the others."""
    rows = []
    for g in goals if goals is not None else load_goals():
        if ("cores" in g) != many_core:
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
    """(serial µs per event, speed-up of ``runtime``) for every comparison of the
    efficiency part (at its one thread count) that ran ``runtime``, but EmptyModel's: its
    events do nothing, so its speed-up is the event loops' own, not a cost's."""
    return [(w["serial_us_per_event"], w["summary"][runtime]["speedup"])
            for key, w in (r.efficiency or {}).get("workloads", {}).items() if "@" not in key
            and runtime in w["summary"] and w["workload"] != "empty"]


def _header(r: Results) -> list[str]:
    facts = (r.efficiency or {}).get("host", {}).get("interpreter", {})
    return ["# Benchmark results", "",
            f"{facts.get('python', 'CPython').split(' (')[0]}, GIL {facts.get('GIL', '?')}, "
            f"{facts.get('cores available', '?')} cores. Every part names its command and "
            "commit below. Ratios are paired by round (serial's time over the runtime's "
            "within a round, the median over rounds). Goals: `bench/goals.toml`.", ""]


def _goals(r: Results) -> list[str]:
    return ["## Goals", "", *table(["goal", "target", "measured", "met"], goal_rows(r)),
            "", "Many-core goals: [RESULTS-manycore.md](RESULTS-manycore.md).", ""]


def _cost(r: Results) -> list[str]:
    sweep = sorted((w["cost_us"], w) for k, w in (r.efficiency or {}).get("workloads", {}).items()
                   if w["workload"] == "bench" and "@" not in k)
    if not sweep:
        return []
    names = [x for x in ALL[1:] if any(x in w["summary"] for _c, w in sweep)]
    rows = [[f"{cost:g}", f"{w['serial_us_per_event']:.1f}",
             *[_num(w["summary"].get(x, {}).get("speedup")) for x in names]]
            for cost, w in sweep]
    points = cost_points(r)
    even, low = break_even(points), min(points, default=(0.0, 0.0))[0]
    even_text = ("seer(2) did not break even in this run" if not even else f"seer(2) breaks "
                 f"even with serial at about **{even:.1f} µs per event**" if even > low else
                 f"seer(2) is ahead of serial from the cheapest events measured, **{low:.1f} µs**")
    return ["## Speed-up by event cost", "",
            f"BenchModel, {sweep[0][1]['entities']} entities; speed-up over serial. "
            f"{even_text} (serial time per event, interpolated over every measured "
            "configuration; [figure](figures/when_seer_helps.png)).", "",
            *table(["busy µs", "serial µs/event", *names], rows), ""]


def by_threads(eff: dict | None) -> tuple[dict[str, dict[int, dict]], dict[int, list[dict]]]:
    """The efficiency part's comparisons two ways: thread scans (``key`` and ``key@T`` at
    several T: key -> T -> comparison), and by thread count the others, with each scan's
    comparison at as many threads as the host has cores."""
    bases: dict[str, dict[int, dict]] = {}
    single: dict[int, list[dict]] = {}
    for key, w in (eff or {}).get("workloads", {}).items():
        bases.setdefault(key.partition("@")[0], {})[w["threads"]] = w
    cores = (eff or {}).get("host", {}).get("cores")
    for key, w in (eff or {}).get("workloads", {}).items():
        base = bases[key.partition("@")[0]]
        if "@" not in key or len(base) == 1 or w["threads"] == cores:
            single.setdefault(w["threads"], []).append(w)
    return {k: v for k, v in bases.items() if len(v) > 1}, single


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def scan_speedups(by_t: dict[int, dict]) -> dict[str, dict[int, float | None]]:
    """A thread scan's speed-up over serial per runtime kind and thread count (None: not run)."""
    kinds = dict.fromkeys(rt["kind"] for w in by_t.values()
                          for name, rt in w["runtimes"].items() if name != "serial")
    return {kind: {t: by_t[t]["summary"].get(label(kind, t), {}).get("speedup")
                   for t in sorted(by_t)} for kind in kinds}


def _scans(r: Results) -> list[str]:
    out = []
    for by_t in by_threads(r.efficiency)[0].values():
        ts = sorted(by_t)
        first = by_t[ts[0]]
        rows = []
        for kind, ups in scan_speedups(by_t).items():
            best = max((t for t in ts if ups[t]), key=lambda t: ups[t], default=None)
            rows.append([kind, *(f"**{ups[t]:.2f}**" if t == best else _num(ups[t])
                                 for t in ts)])
        out += [f"### {first['title']}", "", f"Serial {first['serial_us_per_event']:.1f} µs "
                "per event; speed-up over serial, bold: the runtime's best thread count.", "",
                *table(["runtime", *[f"T={t}" for t in ts]], rows), ""]
    return ["## Speed-up by thread count (bench.efficiency)", "", *out] if out else []


def _peers(r: Results) -> list[str]:
    out = []
    eff = r.efficiency or {}
    for t, ws in sorted(by_threads(eff)[1].items()):
        mine, rows = label("seer", t), []
        for w in ws:
            s = w["summary"]
            peers = {k: v["speedup"] for k, v in s.items() if k not in ("serial", "seer(1)", mine)}
            best = max(peers, key=peers.__getitem__) if peers else None
            rows.append([w["title"], f"{w['serial_us_per_event']:.1f}",
                         f"{s[mine]['speedup']:.2f}", _num(s[mine]["cpu_ratio"]),
                         _num(s[mine].get("of_ceiling")),
                         f"{best} {peers[best]:.2f}" if best else "-"])
        capacity = [w[k] for w in ws for k in ("capacity_before", "capacity_after")]
        out += [f"## SEER and its peers, {t} threads", "",
                f"`{eff['command']}` at commit {eff['host'].get('commit', '?')}: "
                f"{ws[0]['rounds']} round{'s' * (ws[0]['rounds'] != 1)} of {ws[0]['steps']} "
                f"steps; host capacity {min(capacity):.2f}-{max(capacity):.2f}. *CPU*: process "
                f"CPU over serial's; *of ceiling*: speed-up over that of {t} independent serial "
                f"runs on {t} threads (above 1 where sharing one model's read-only data beats "
                "copies of it).", "", *table(["workload", "serial µs/event", f"{mine} speed-up",
                                              "CPU", "of ceiling", "best peer"], rows), ""]
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


def parallelism_section(r: Results) -> list[str]:
    """The parallelism profile's bound (``bench.parallelism``) beside seer(2)'s measured
    speed-up over serial, per workload."""
    par = r.parallelism
    if par is None or not par.get("workloads"):
        return []
    more = [t for t in par.get("threads", [2, 4, 8, 16]) if t != 2]
    rows = []
    for w in par["workloads"].values():
        p, m = w["profile"], w["measured"]
        rows.append([w["title"], f"{p['events_per_step']:.0f}", f"{p['bound']['2']:.2f}",
                     f"{m['speedup']:.2f}", _num(m.get("of_ceiling")),
                     f"{w['measured_over_bound']:.2f}",
                     *(_num(p["bound"].get(str(t))) for t in more), f"{p['limit']:.2f}"])
    first = next(iter(par["workloads"].values()))
    capacity = [c for w in par["workloads"].values() for c in w["measured"].get("capacity", [])]
    return ["## Parallelism profile: the window protocol's bound against the measured", "",
            f"`{par['command']}` at commit {par['host'].get('commit', '?')}: the bound at T "
            "threads is `seer.trace.parallelism_profile` of seer(1) traced for "
            f"{par['traced']} step{'s' * (par['traced'] != 1)} after a warm-up step (each "
            "window's entity runs list-scheduled on T workers with no scheduling cost, plus "
            f"{first['profile']['barrier_us']:g} µs a window); *measured*: seer(2)'s speed-up "
            f"over serial ({par['rounds']} rounds of {par['steps']} steps"
            + (f"; host capacity {min(capacity):.2f}-{max(capacity):.2f}" if capacity else "")
            + "), *of ceiling*: its share of 2 independent serial runs'. T = 4-16 and the "
            "limit (any T) say what more cores could buy.", "",
            *table(["workload", "events/step", "bound T=2", "measured seer(2)", "of ceiling",
                    "measured/bound", *[f"bound T={t}" for t in more], "limit"], rows), ""]


def switches_section(r: Results) -> list[str]:
    """seer(T) with each set of per-worker copies and each steal back-off
    (``bench.switches``): speed-up over serial, CPU ratio and share of the ceiling, one row
    a variant, one column a workload and thread count."""
    sw = r.switches
    if sw is None or not sw.get("workloads"):
        return []
    keys = list(sw["workloads"])
    first = sw["workloads"][keys[0]]
    rows = []
    for name, switches in first["copies"].items():
        backoff = first.get("backoff", {}).get(name, 0)
        row = [f"`{name}`", ", ".join(switches) or "none", f"{backoff} x T" if backoff else "-"]
        for key in keys:
            w = sw["workloads"][key]
            v = w["summary"].get(f"{name}({w['threads']})")
            row.append("-" if v is None else f"{v['speedup']:.2f}x / {v['cpu_ratio']:.2f} / "
                       f"{_num(v.get('of_ceiling'))}")
        rows.append(row)
    return ["## SEER's switches: per-worker copies and steal back-off", "",
            f"`{sw['command']}` at commit {sw['host'].get('commit', '?')} "
            f"({sw['host'].get('cores', '?')} cores; {sw['rounds']} rounds of {sw['steps']} "
            "steps): seer(T) with each set of the per-worker copies of `seer.sched.copies`, "
            "and with stealing that leaves a segment of fewer than B x T items to its owner "
            "(`Steal(backoff=B)`); each cell: speed-up over serial / CPU ratio / share of the "
            "ceiling (T independent serial runs). `seer` is the default.", "",
            *table(["runtime", "copies", "steal back-off", *keys], rows), "",
            *_switch_verdict(sw, keys), ""]


def vector_section(r: Results) -> list[str]:
    """K environments on one pool (``bench.vector``): per set, each way's time per vector
    step, environment-steps per second, speed-up over serial and share of the ceiling."""
    vec = r.vector
    if vec is None or not vec.get("sets"):
        return []
    out = ["## K environments, one pool", "",
           f"`{vec['command']}` at commit {vec['host'].get('commit', '?')} "
           f"({vec['host'].get('cores', '?')} cores): the same K environments, seeds and "
           "actions stepped each way in rotated rounds; *serial*: one after another on the "
           "serial runtime (gymnasium's `SyncVectorEnv` way); *vector*: "
           "`seer.vector.VectorRuntime` on one pool (`split=\"auto\"`: equal environments "
           "stepped whole, a dominant one's events across the threads); *seer in "
           "turn*: K seer(T) runtimes one after another; *thread pool*: K serial runtimes "
           "handed to T threads as each finishes; *async processes*: gymnasium's "
           "`AsyncVectorEnv`, one process per environment, all held to T cores; *ceiling*: "
           "serial's time over "
           "what T independent runs of the same work gain on T threads (a share above 1: "
           "faster than T independent runs of the whole set, where they gain little). "
           "Speed-up over serial paired by round (median, range); every way's final states "
           "checked against serial's, bit for bit.", ""]
    sets = vec["sets"]
    heads, envs = [], []
    for name, s in sets.items():
        counts: dict[str, int] = {}
        for env in s["environments"]:
            counts[env] = counts.get(env, 0) + 1
        envs.append(f"*{name}*: " + ", ".join(f"{n} x {e}" if n > 1 else e
                                             for e, n in counts.items()))
        heads += [f"{name}: ms per step", f"{name}: speed-up (range)", f"{name}: of ceiling"]
    first = next(iter(sets.values()))
    rows = []
    for way in first["ways"]:
        row = [way]
        for s in sets.values():
            w = s["ways"][way]
            lo, hi = w["speedup_range"]
            row += [f"{w['ms_per_step']:.1f}", f"{w['speedup']:.2f}x ({lo:.2f}-{hi:.2f})",
                    f"{w['of_ceiling']:.2f}"]
        same = all(s["ways"][way]["identical"] for s in sets.values())
        row.append("-" if way in ("serial", "ceiling") else "yes" if same else "**no**")
        rows.append(row)
    out += ["; ".join(envs) + f"; cost_us={first['cost_us']:g}, T = {first['threads']} "
            f"({first['rounds']} rounds of {first['steps']} vector steps; the ceiling's gain "
            + ", ".join(f"{s['ceiling_gain']:.2f}x" for s in sets.values()) + ").", "",
            *table(["way", *heads, "identical"], rows), ""]
    return out


#: A variant is ahead of (behind) the default when its speed-up is at least this much
#: above (below) the default's in every column that decides (docs/manycore.md).
SWITCH_MARGIN = 0.05


def _switch_verdict(sw: dict, keys: list[str]) -> list[str]:
    """Which variants beat the default ``seer`` by :data:`SWITCH_MARGIN` in every column
    at 8 threads or more (every column when none has that many), which lose, and which
    are level: the line docs/manycore.md's "adopt what wins" reads."""
    deciding = [k for k in keys if sw["workloads"][k]["threads"] >= 8] or keys
    ahead, behind = [], []
    for name in sw["workloads"][keys[0]]["copies"]:
        if name == "seer":
            continue
        ratios = []
        for key in deciding:
            w = sw["workloads"][key]
            mine = w["summary"].get(f"{name}({w['threads']})")
            base = w["summary"].get(f"seer({w['threads']})")
            if mine and base and base["speedup"]:
                ratios.append(mine["speedup"] / base["speedup"])
        if ratios and min(ratios) >= 1 + SWITCH_MARGIN:
            ahead.append(f"`{name}` ({min(ratios):.2f}-{max(ratios):.2f}x)")
        elif ratios and max(ratios) <= 1 - SWITCH_MARGIN:
            behind.append(f"`{name}` ({min(ratios):.2f}-{max(ratios):.2f}x)")
    where = ", ".join(deciding)
    return [f"Against the default's speed-up in {where}: ahead by at least "
            f"{SWITCH_MARGIN:.0%} in every column: {', '.join(ahead) or 'none'}; behind: "
            f"{', '.join(behind) or 'none'}; the rest level."]


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
        sp = r.pursuit["speed"]
        out.append(f"- **Pursuit port** (`python -m bench.pursuit`): "
                   f"{sp['speedup_port_over_pettingzoo']:.0f}x PettingZoo's step on serial, "
                   "bit for bit the same episodes (`tests/workloads/test_pursuit.py`).")
    if r.mpe is not None:
        from bench.mpe import summary

        out.append("- **MPE spread port against whole-array numpy** (`python -m bench.mpe`; "
                   "ms per step, the three taking turns): " + "; ".join(summary(r.mpe)) + ".")
    return ["## Also measured", "", *out, ""] if out else []


def write_results(r: Results, figures: list[str]) -> str:
    """The whole of RESULTS.md."""
    out = [*_header(r), *_goals(r), *_cost(r), *_scans(r), *_peers(r),
           *parallelism_section(r), *switches_section(r), *vector_section(r),
           *memory_section(r), *also_measured(r)]
    out += ["## Figures", "", " · ".join(f"[{f.removesuffix('.png')}](figures/{f})"
                                         for f in figures), ""]
    return "\n".join(out) + "\n"




# -- RESULTS-manycore.md -----------------------------------------------------------------------
def write_manycore(r: Results, figures: list[str], note: str = "") -> str:
    """The whole of RESULTS-manycore.md from a many-core run's files, the same parts as
    RESULTS.md's (``bench.efficiency``'s comparisons and load balance) and ``seer stpa
    collect``'s manifest (``stpa_collect``) and ``seer.stpa.holdout``'s checks (``holdout``)."""
    out = ["# Many-core results", ""]
    eff, collected = r.efficiency, r.stpa_collect
    if eff is None and collected is None:
        return "\n".join([*out, "Not run yet: no results in this directory. The prepared "
                          "run and how to render it: docs/manycore.md."]) + "\n"
    if eff is not None:
        h = eff["host"]
        out += [f"{h['interpreter']['python'].split(' (')[0]}, GIL "
                f"{'on' if h.get('gil_enabled') else 'off'}, {h['cores']} cores "
                f"({h.get('cpu_model') or '?'}), {h.get('date', '?')}, commit {h['commit']}: "
                f"`{eff['command']}`.", *([f"{eff['note']}"] if eff.get("note") else []), ""]
    out += ["## Goals", "", *table(["goal", "target", "measured", "met"],
                                   goal_rows(r, many_core=True)), "", *_scans(r), *_peers(r),
            *switches_section(r)]
    if collected is not None:
        configs = collected["configurations"]
        out += ["## STPA data", "", f"`{collected['command']}` ({collected['date']}): "
                f"{len(configs)} configurations measured, best thread count of each: "
                + ", ".join(f"{c['name']} {c['label']}" for c in configs) + "; not measured: "
                + (", ".join(collected.get("not_measured", [])) or "none") + ".",
                *holdout_lines({"holdout": r.holdout}), ""]
    return "\n".join([*out, "## Figures", "", *([f"![{Path(f).stem}]({f})" for f in figures]
                                                or [note or "None drawn."])]) + "\n"
