"""The text of bench/RESULTS.md: tables of ratios over serial, goals, load balance, queues.

Every function returns lines; :func:`write_results` joins the sections. Ratios are
throughput over serial paired by round (:meth:`bench.stats.Part.speedup`).
"""

from __future__ import annotations

from pathlib import Path

from bench.bench_runtimes import config_name
from bench.labels import label
from bench.sizes import ALL, PEERS, Sizes
from bench.stats import Part, capacity
from seer.cli import interpreter_facts

__all__ = ["goals", "ratios", "table", "write_results"]

READING = Path(__file__).resolve().parent / "READING.md"
#: the pooled peers SEER is meant to beat
PEER_NAMES = ("static(2)", "static-block(2)", "global(2)")


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(r) + " |" for r in rows)]


def ratios(m: Part, config: str, names: list[str], spread: bool = False) -> list[str]:
    """Speed-up over serial of each runtime in ``names`` (with the range over rounds)."""
    base, cells = f"{config}-serial", []
    for x in names:
        k = f"{config}-{x}"
        if base not in m or k not in m:
            cells.append("-")
        elif spread and k != base:
            lo, hi = m.spread(base, k)
            cells.append(f"{m.speedup(base, k):.2f} ({lo:.2f}-{hi:.2f})")
        else:
            cells.append(f"{m.speedup(base, k):.2f}")
    return cells


def write_results(m: dict[str, Part], balance: dict[str, dict], z: Sizes, figures: list[str],
                  run: dict, span: str) -> str:
    """The whole of RESULTS.md for the parts ``m``, measured over ``span``."""
    out = _header(m, z, run, span)
    if READING.exists() and z.mode != "smoke":
        out += [READING.read_text().strip(), ""]
    for section in (_workloads, _hotspot, _cost_sweep, _complexity, _thread_scans, _latency,
                    _overhead):
        out += section(m, z)
    out += _load_balance(balance)
    out += _queues(m["queues"])
    out += ["## Figures", "", *[f"![{f}](figures/{f})" for f in figures]]
    return "\n".join(out) + "\n"


def _header(m: dict[str, Part], z: Sizes, run: dict, span: str) -> list[str]:
    facts = interpreter_facts()
    flag = {"fast": "", "full": " --full", "smoke": " --smoke"}[z.mode]
    cores, per_round = capacity(m["capacity"].runs)
    return [
        "# Benchmark results", "",
        f"Command: `.venv/bin/python -m bench.report{flag}` ({z.mode} mode, rounds: "
        f"{z.rounds}; measured {span}; code at commit {run.get('commit', 'unknown')}).", "",
        f"Machine: {facts['cores available']} cores; {facts['python']}; free-threaded: "
        f"{facts['free-threaded build']}; GIL: {facts['GIL']}; numpy {facts['numpy']}, "
        f"atomics {facts['atomics']}.", "",
        f"Parallel capacity while this ran (`capacity`: 2 x time on 1 thread / time on 2 "
        f"threads of a pure-Python loop): {cores:.2f} effective cores over the run, "
        f"per round {', '.join(f'{c:.2f}' for c in per_round)}. A ratio above that "
        "is not possible; below 2.0 the host was taking CPU time from this machine.", "",
        "Ratios are throughput over serial (>1 is faster): in each round, mean step time "
        "of serial / mean step time of the runtime, then the median over the rounds; "
        "'(a-b)' is the lowest and highest round. Absolute times are medians of all "
        "values. Raw pyperf files are in "
        "`bench/results/` (`python -m pyperf show FILE`, `python -m pyperf compare_to "
        "A B`).", "",
        "## DESIGN.md section 10: measured next to the goals", "",
        *table(["figure", "goal", "measured in this run", "met"], goals(m, z)), ""]


# -- goals ---------------------------------------------------------------------------------
def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def _leads(part: Part, config: str) -> dict[str, float]:
    """time(peer) / time(seer(2)) per round, median: > 1 where SEER is faster."""
    return {p: part.speedup(f"{config}-{p}", f"{config}-seer(2)") for p in PEER_NAMES}


def _hotspot_goal(h: Part, z: Sizes) -> tuple[str, str]:
    """The leads of SEER at every hotspot peak, and how many peaks it wins against all."""
    wins, cells = [], []
    for g in z.gains:
        lead = _leads(h, config_name("pcs", z.n_pcs, z.pcs_cost, g))
        if g > 0:  # peak 0 (no hotspot) is the control, not part of the goal
            wins.append(all(v > 1 for v in lead.values()))
        cells.append(f"peak {g:g}{' (no hotspot, control)' if g == 0 else ''}: "
                     + ", ".join(f"{p} {v:.2f}" for p, v in lead.items()))
    return "; ".join(cells), f"{sum(wins)} of {len(wins)} hotspot peaks"


def goals(m: dict[str, Part], z: Sizes) -> list[list[str]]:
    """DESIGN.md section 10, measured in this run (speed-ups paired by round)."""
    air, pcs = m["aircraft"], m["pcs"]
    air_seer = air.speedup(f"{z.air}-serial", f"{z.air}-seer(2)")
    pcs_seer = pcs.speedup(f"{z.pcs}-serial", f"{z.pcs}-seer(2)")
    hotspot_cells, hotspot_met = _hotspot_goal(m["pcs_hotspot"], z)
    air_lead = _leads(air, z.air)
    c = m["cost_sweep"]
    at50 = config_name("bench", z.n_bench, 50, 2.0) + "-"
    one = c.speedup(at50 + "serial", at50 + "seer(1)") if at50 + "serial" in c else None
    o, empty = m["overhead"], config_name("empty", z.n_bench, 0, 2.0)
    events = z.n_bench * 10  # events per step of EmptyModel(n, per_step=10)
    per_event = 1e6 * o[f"{empty}-seer(1)"] / events
    serial_event = 1e6 * o[f"{empty}-serial"] / events
    return [
        [f"Aircraft {z.n_air} UAVs ~{z.air_cost} µs: seer(2) / serial", ">= 1.7x",
         f"{air_seer:.2f}x", _yes(air_seer >= 1.7)],
        [f"PCS {z.n_pcs} cells ~20 µs: seer(2) / serial", ">= 1.25x", f"{pcs_seer:.2f}x",
         _yes(pcs_seer >= 1.25)],
        ["SEER vs `static`, `static-block`, `global` under a moving hotspot (PCS): time of "
         "the peer / time of seer(2)", "> 1 for all", hotspot_cells, hotspot_met],
        ["the same on Aircraft (moving clusters)", "> 1 for all",
         ", ".join(f"{p} {v:.2f}" for p, v in air_lead.items()),
         _yes(all(v > 1 for v in air_lead.values()))],
        ["seer(1) / serial at 50 µs events", ">= 0.90x (overhead <= 10 %)",
         "not measured in this mode" if one is None else f"{one:.2f}x",
         "-" if one is None else _yes(one >= 0.9)],
        ["time per event, empty handler, seer(1) (upper bound of the scheduler overhead)",
         "<= 3 µs", f"{per_event:.2f} µs (serial {serial_event:.2f} µs)",
         _yes(per_event <= 3)],
        ["STPA choice vs best thread count of a full scan", ">= 95 %", "not built yet", "-"],
        ["parallel runs bit-identical to serial", "always",
         "checked by the test suite (tests/sched) and by `seer demo`", "-"],
    ]


# -- sections ------------------------------------------------------------------------------
def _workloads(m: dict[str, Part], z: Sizes) -> list[str]:
    return ["## Workloads (throughput / serial)", "",
            *table(["workload", *ALL], [
                [f"Aircraft {z.n_air} UAVs, ~{z.air_cost} µs",
                 *ratios(m["aircraft"], z.air, ALL, spread=True)],
                [f"PCS {z.n_pcs} cells, cost {z.pcs_cost} µs, hotspot 2",
                 *ratios(m["pcs"], z.pcs, ALL, spread=True)]]), "",
            f"Serial step: Aircraft {1e3 * m['aircraft'][f'{z.air}-serial']:.0f} ms, PCS "
            f"{1e3 * m['pcs'][f'{z.pcs}-serial']:.0f} ms.", ""]


def _hotspot(m: dict[str, Part], z: Sizes) -> list[str]:
    rows = [[f"{g:g}", *ratios(m["pcs_hotspot"], config_name("pcs", z.n_pcs, z.pcs_cost, g),
                               PEERS, spread=True)] for g in z.gains]
    return [f"## PCS under a moving hotspot ({z.n_pcs} cells, throughput / serial)", "",
            *table(["hotspot peak", *PEERS], rows), ""]


def _cost_sweep(m: dict[str, Part], z: Sizes) -> list[str]:
    rows = [[f"{c:g}", *ratios(m["cost_sweep"], config_name("bench", z.n_bench, c, 2.0),
                               ALL[1:])] for c in z.costs]
    return [f"## Cost sweep (BenchModel, {z.n_bench} entities, fanout 1)", "",
            *table(["cost µs", *ALL[1:]], rows), ""]


def _complexity(m: dict[str, Part], z: Sizes) -> list[str]:
    cx, part, rows = ["seer(2)", "static(2)", "global(2)"], m["pcs_complexity"], []
    for c in z.pcs_costs:
        k = config_name("pcs", z.n_pcs, c, 2.0)
        rows.append([f"{c:g}", f"{1e3 * part[f'{k}-serial']:.0f}", *ratios(part, k, cx)])
    return [f"## PCS complexity sweep ({z.n_pcs} cells, throughput / serial)", "",
            *table(["cost_us", "serial ms", *cx], rows), ""]


def _thread_scans(m: dict[str, Part], z: Sizes) -> list[str]:
    s, p = m["thread_scan"], m["pcs_thread_scan"]
    rows = [[str(t), *ratios(s, z.air, [label("seer", t), label("static", t)]),
             *ratios(p, z.pcs, [label("seer", t)])] for t in z.scan]
    return [f"## Thread scans (Aircraft {z.n_air} UAVs, PCS {z.n_pcs} cells; "
            "throughput / serial)", "",
            *table(["threads", "Aircraft seer", "Aircraft static", "PCS seer"], rows), ""]


def _latency(m: dict[str, Part], z: Sizes) -> list[str]:
    rows = []
    for title, part, workload, sweep, cost in (
            ("Aircraft", "entity_sweep", "aircraft", z.air_sweep, z.air_cost),
            ("PCS", "pcs_entity_sweep", "pcs", z.pcs_sweep, z.pcs_cost)):
        e = m[part]
        for n in sweep:
            k = config_name(workload, n, cost, 2.0)
            se, pa = e[f"{k}-serial"], e[f"{k}-seer(2)"]
            rows.append([title, str(n), f"{1e3 * se:.0f}", f"{1e3 * pa:.0f}", f"{se / pa:.2f}"])
    return ["## Step latency vs entity count", "",
            *table(["workload", "entities", "serial ms", "seer(2) ms", "speed-up"], rows), ""]


def _overhead(m: dict[str, Part], z: Sizes) -> list[str]:
    o, empty = m["overhead"], config_name("empty", z.n_bench, 0, 2.0)
    ev = z.n_bench * 10  # events per step of EmptyModel(n, per_step=10)
    return [f"## Time per event with an empty handler (EmptyModel, {z.n_bench} entities, "
            f"{ev} events per step, per-step outputs included)", "",
            *table(["runtime", "µs per event"],
                   [[x, f"{1e6 * o[f'{empty}-{x}'] / ev:.2f}"]
                    for x in ("serial", "seer(1)", "seer(2)")]), ""]


def _load_balance(balance: dict[str, dict]) -> list[str]:
    out = []
    for workload, lb in balance.items():
        a = lb["args"]
        gain = f", hotspot peak {a['gain']:g}" if workload == "pcs" else ""
        rows = [[label(r["kind"], r["threads"]), f"{r['wall_s']:.2f}",
                 ", ".join(f"{c:.2f}" for c in r["cpu_s"]),
                 ", ".join(str(e) for e in r["events"]),
                 ", ".join(str(e) for e in r.get("steals", [])) or "-",
                 f"{r['cpu_cv']:.3f}"] for r in lb["rows"]]
        out += [f"## Load balance: {workload}, {a['entities']} entities{gain}, 2 threads, "
                f"{a['steps']} steps", "",
                *table(["runtime", "wall s", "CPU s per thread", "events per thread",
                        "chunks stolen per thread", "CPU coefficient of variation"], rows), ""]
    return out


def _queues(q: Part) -> list[str]:
    return ["## Queue structures and atomics paths (time per operation)", "",
            *table(["benchmark", "median"],
                   [[name, f"{v * 1e9:.0f} ns"] for name, v in q.items()]), ""]
