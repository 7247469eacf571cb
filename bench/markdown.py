"""The text of bench/RESULTS.md: tables of ratios over serial, goals, load balance, queues,
STPA (``bench/results/stpa.json``, written by :mod:`bench.stpa`) and the pursuit port
against PettingZoo (``bench/results/pursuit.json``, written by :mod:`bench.pursuit`).

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

__all__ = ["goals", "not_measured", "pursuit", "ratios", "stpa_goals", "table",
           "write_results"]

READING = Path(__file__).resolve().parent / "READING.md"
#: the pooled peers SEER is meant to beat
PEER_NAMES = ("static(2)", "static-block(2)", "global(2)", "optimistic(2)")
#: STPA's goals: mean regret at least this, and a preflight of at most this fraction of an
#: episode of EPISODE_STEPS steps (as in bench.stpa, which this module does not import)
REGRET_GOAL, PREFLIGHT_GOAL, EPISODE_STEPS = 0.95, 0.05, 200
#: what STPA is compared with (the oracle is the label itself, not a baseline)
NOT_BASELINES = ("stpa", "oracle")
#: the pursuit port and PettingZoo agree on a statistic where Welch's p is above this
AGREE_P = 0.01
#: the pursuit episode statistics (bench.pursuit), in table order, and what they are
PURSUIT_STATISTICS = {"catches": "evaders caught per episode",
                      "length": "episode length (steps)",
                      "reward": "mean reward per pursuer per step"}


def not_measured(title: str, part: str, needs: str = "") -> list[str]:
    """A report section whose result file is missing: the title and how to make the file
    (``needs``: what it needs installed, said after the commands)."""
    return [title, "", f"Not measured: run `.venv/bin/python -m bench.{part} --out "
            f"bench/results/{part}.json` (or `python -m bench.report --only {part}`)"
            + (f"; needs {needs}." if needs else "."), ""]


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
                  run: dict, span: str, stpa: dict | None = None,
                  pursuit_result: dict | None = None, extra: list[str] | None = None) -> str:
    """The whole of RESULTS.md for the parts ``m``, measured over ``span``; ``stpa`` and
    ``pursuit_result`` are ``bench/results/stpa.json`` and ``pursuit.json`` (None when
    they were not measured); ``extra`` are the lines of the once-run parts
    (``bench.report.ONCE_PARTS``)."""
    out = _header(m, z, run, span, stpa)
    if READING.exists() and z.mode != "smoke":
        out += [READING.read_text().strip(), ""]
    for section in (_workloads, _hotspot, _cost_sweep, _complexity, _thread_scans, _latency,
                    _overhead):
        out += section(m, z)
    out += _load_balance(balance)
    out += _queues(m["queues"])
    out += _stpa(stpa)
    out += pursuit(pursuit_result)
    out += extra or []
    out += ["## Figures", "", *[f"![{f}](figures/{f})" for f in figures]]
    return "\n".join(out) + "\n"


def _header(m: dict[str, Part], z: Sizes, run: dict, span: str, stpa: dict | None
            ) -> list[str]:
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
        *table(["figure", "goal", "measured in this run", "met"], goals(m, z, stpa)), "",
        "The other goals of section 10 are read in their own sections below: the scaling tax "
        "(total CPU of seer(2) / serial on PCS), BenchModel at 10 µs and the break-even event "
        "size, and SEER against `static` without imbalance under *Parallel efficiency*; "
        "memory under *Memory per runtime*; the end-to-end MARL loop under *The MARL loop "
        "end to end*; many cores in `bench/RESULTS-manycore.md`.", ""]


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


def goals(m: dict[str, Part], z: Sizes, stpa: dict | None = None) -> list[list[str]]:
    """DESIGN.md section 10, measured in this run (speed-ups paired by round; STPA from
    ``stpa``, measured by :mod:`bench.stpa`)."""
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
        [f"Aircraft {z.n_air} UAVs ~{z.air_cost} µs: seer(2) / serial", ">= 1.85x (was 1.7x)",
         f"{air_seer:.2f}x", _yes(air_seer >= 1.85)],
        [f"PCS {z.n_pcs} cells, cost_us={z.pcs_cost:g} (~11 µs events since the recheck "
         "rewrite; ~20 µs events: see Parallel efficiency): seer(2) / serial",
         ">= 1.6x (was 1.25x)", f"{pcs_seer:.2f}x", _yes(pcs_seer >= 1.6)],
        ["SEER vs `static`, `static-block`, `global`, `optimistic` under a moving hotspot "
         "(PCS): time of the peer / time of seer(2)", "> 1 for all", hotspot_cells,
         hotspot_met],
        ["the same on Aircraft (moving clusters)", "> 1 for all",
         ", ".join(f"{p} {v:.2f}" for p, v in air_lead.items()),
         _yes(all(v > 1 for v in air_lead.values()))],
        ["seer(1) / serial at 50 µs events", ">= 0.95x (overhead <= 5 %; was 10 %)",
         "not measured in this mode" if one is None else f"{one:.2f}x",
         "-" if one is None else _yes(one >= 0.95)],
        ["time per event, empty handler, seer(1) (upper bound of the scheduler overhead)",
         "<= 1 µs (was 3 µs)", f"{per_event:.2f} µs (serial {serial_event:.2f} µs)",
         _yes(per_event <= 1)],
        *stpa_goals(stpa),
        ["parallel runs bit-identical to serial", "always",
         "checked by the test suite (tests/sched) and by `seer demo`", "-"],
    ]


def _stpa_verdict(stpa: dict) -> tuple[dict, dict[str, dict], list[str]]:
    """STPA's metrics, the baselines' and the baselines STPA does not beat on mean regret."""
    methods = stpa["evaluation"]["methods"]
    mine = methods["stpa"]
    baselines = {k: v for k, v in methods.items() if k not in NOT_BASELINES}
    behind = [k for k, v in baselines.items() if mine["regret_mean"] <= v["regret_mean"]]
    return mine, baselines, behind


def stpa_goals(stpa: dict | None) -> list[list[str]]:
    """The STPA rows of the goals table: regret (and against the baselines), preflight."""
    if stpa is None:
        missing = "not measured: run `python -m bench.stpa`"
        return [["STPA choice vs best thread count of a full scan", ">= 95 %", missing, "-"],
                ["STPA preflight (+ prediction)", f"<= {100 * PREFLIGHT_GOAL:g} % of a "
                 f"{EPISODE_STEPS}-step episode", missing, "-"]]
    mine, baselines, behind = _stpa_verdict(stpa)
    ev, pre = stpa["evaluation"], stpa["preflight"]
    n = len(ev["rows"])
    best_other = max(baselines, key=lambda k: baselines[k]["regret_mean"])
    vs = (f"; best baseline {best_other} {100 * baselines[best_other]['regret_mean']:.1f} %"
          + (f"; not beaten: {', '.join(behind)}" if behind else "; beats every baseline"))
    fractions = [r["fraction"] for r in pre["models"]]
    return [
        ["STPA (`bench.stpa`, its own run; see the STPA section) choice vs best thread "
         "count of a full scan: mean regret (throughput at the choice / best), held out, and "
         "better than every baseline",
         f">= {100 * REGRET_GOAL:g} %, > baselines",
         f"{100 * mine['regret_mean']:.1f} % (worst {100 * mine['regret_worst']:.1f} %) "
         f"over {n} held-out preflights, {ev['folds']}-fold grouped{vs}",
         _yes(mine["regret_mean"] >= REGRET_GOAL and not behind)],
        [f"STPA preflight (+ prediction), share of a {EPISODE_STEPS}-step episode "
         "(extrapolated from measured steps)", f"<= {100 * PREFLIGHT_GOAL:g} %",
         "; ".join(f"{r['model']}: {100 * r['fraction']:.1f} %" for r in pre["models"]),
         _yes(all(f <= PREFLIGHT_GOAL for f in fractions))],
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


def _stpa(stpa: dict | None) -> list[str]:
    """STPA: the evaluation table beside the paper's, the goals, the misses and the
    preflight cost, with the commands that produced them."""
    title = "## STPA: thread-count prediction and preflight cost"
    if stpa is None:
        return not_measured(title, "stpa")
    ev, pre, data = stpa["evaluation"], stpa["preflight"], stpa["dataset"]
    got = data.get("collected", {})
    machine = got.get("machine", {})
    cap = stpa.get("capacity", {})
    t_max, n = int(ev["t_max"]), len(ev["rows"])
    settings = stpa["settings"]
    subset = (f" (a subset: {data['rows']} of its {data['rows_in_file']} rows)"
              if data["rows"] != data.get("rows_in_file", data["rows"]) else "")
    out = [title, "",
           f"- Data set: `{data['path']}`{subset}, {data['configurations']} configurations "
           f"in {data['groups']} groups, {data['rows']} preflights (rows), full scans "
           f"T = 1..{t_max}; collected by `{got.get('command', 'seer stpa collect').strip()}`"
           + (f" on {got['date']}" if "date" in got else "")
           + (f", {machine['cores']} cores" if "cores" in machine else "") + ". A row's "
           "label is the smallest T within "
           f"{100 * got.get('tolerance', 0.03):g} % of the best median throughput.",
           f"- Measured by `{stpa['command']}` on {stpa['date']} ({stpa['minutes']:.1f} "
           f"minutes, code at commit {stpa.get('commit', 'unknown')}); parallel capacity "
           + ", ".join(f"{k} {v:.2f}" for k, v in cap.items())
           + " effective cores (of 2). The same evaluation: `seer stpa evaluate --folds "
           f"{settings['folds']} --epochs {settings['epochs']} --seed {settings['seed']} "
           "--out report.json`.", ""]
    out += [f"### Held-out accuracy ({settings['folds']}-fold grouped by configuration "
            f"group, {n} held-out preflights)", "",
            *table(["method", "train MAE", "train MSE", "MAE", "MSE", "MAE (threads)",
                    "MSE (threads²)", "mean regret", "worst regret", "paper's Table 1 MAE"],
                   [[name, _opt(m, "train_mae"), _opt(m, "train_mse"), f"{m['mae']:.3f}",
                     f"{m['mse']:.3f}", f"{m['mae_threads']:.2f}",
                     f"{m['mse_threads']:.2f}", f"{m['regret_mean']:.3f}",
                     f"{m['regret_worst']:.3f}",
                     f"{stpa['paper_table_1'][name]:g}" if name in stpa["paper_table_1"]
                     else "-"] for name, m in ev["methods"].items()]), "",
            f"MAE and MSE are of T*/t_max (t_max = {t_max}), held out unless marked 'train' "
            "(each fold's model scored on its own training rows); '(threads)' is the same error "
            "in threads. Regret is the throughput at the chosen count over the best "
            "throughput of that configuration's scan (medians of the scan's repeats): 1 is "
            "the best choice. The oracle predicts the label itself; its regret is below 1 "
            "where the label is a smaller count within the tolerance of the best. The "
            "paper's Table 1 was measured on its own machines, data and thread ranges, so "
            "its figures stand beside ours for orientation, not as a like-for-like "
            "comparison.", ""]
    mine, baselines, behind = _stpa_verdict(stpa)
    ahead = [k for k in baselines if k not in behind]
    by_mae = [k for k, v in baselines.items() if v["mae"] <= mine["mae"]]
    regret_ok = mine["regret_mean"] >= REGRET_GOAL
    out += ["### Goals", "",
            f"- Mean regret >= {REGRET_GOAL:.2f}: STPA {mine['regret_mean']:.3f} "
            f"(worst {mine['regret_worst']:.3f}): "
            + ("met." if regret_ok else "**not met**."),
            "- Better than every baseline (mean regret): "
            + ("met, ahead of " + ", ".join(
                f"{k} {baselines[k]['regret_mean']:.3f}" for k in ahead) + "."
               if not behind else
               "**not met**: not ahead of " + ", ".join(
                   f"{k} ({baselines[k]['regret_mean']:.3f})" for k in behind)
               + (f"; ahead of {', '.join(ahead)}." if ahead else ".")),
            "- By MAE: " + ("STPA's is the lowest of all methods but the oracle."
                            if not by_mae else "**not** the lowest: "
                            + ", ".join(f"{k} {baselines[k]['mae']:.3f}" for k in by_mae)
                            + f" against STPA's {mine['mae']:.3f}."), ""]
    lost = [r for r in ev["rows"] if r.get("regret", 1.0) < REGRET_GOAL]
    if lost:
        by_name: dict[str, list[dict]] = {}
        for r in lost:
            by_name.setdefault(r["name"], []).append(r)
        out += [f"Held-out preflights where STPA's choice loses more than "
                f"{100 * (1 - REGRET_GOAL):g} % of the best throughput: {len(lost)} of {n}, "
                f"in {len(by_name)} configurations (figure `stpa_choices.png`):", "",
                *table(["configuration", "preflights", "best T", "STPA's T", "regret"],
                       [[name, str(len(rs)), str(rs[0]["best"]),
                         ", ".join(str(r["stpa"]) for r in rs),
                         ", ".join(f"{r['regret']:.3f}" for r in rs)]
                        for name, rs in by_name.items()]), ""]
    rows = []
    for r in pre["models"]:
        rows.append([r["model"], str(r["probe"]), ", ".join(map(str, r["choices"])),
                     f"{r['cost_s']:.2f}", f"{1e3 * r['mean_step_s']:.1f} (T={r['threads']})",
                     f"{r['episode_s']:.1f}", f"{100 * r['fraction']:.1f} %",
                     _yes(r["fraction"] <= PREFLIGHT_GOAL)])
    k, steps = pre["repeats"], pre["steps"]
    out += [f"### Preflight cost (goal: <= {100 * pre['goal']:g} % of a "
            f"{pre['episode_steps']}-step episode)", "",
            *table(["model", "probe T", "STPA's choice per preflight",
                    f"choose_threads s (median of {k})",
                    f"mean step ms at the choice ({steps} steps)",
                    f"{pre['episode_steps']}-step episode s (extrapolated)",
                    "preflight / episode", "met"], rows), "",
            "`choose_threads(model)` runs the preflight (a fresh runtime at the probe count, "
            "a warm-up step and 8 observed steps) and the prediction; its wall time is "
            "divided by 200 times the mean step time of `seer` at the chosen count, timed "
            f"over {steps} steps after a warm-up step. The episode time is extrapolated "
            "from those steps, not measured. Loading the shipped predictor (once per "
            f"process) took {pre['predictor_load_s']:.2f} s more and is not included. "
            f"The machine has {stpa.get('cores', '?')} cores.", ""]
    return out


def pursuit(result: dict | None) -> list[str]:
    """The pursuit port against PettingZoo: speed at the measured size, agreement of the
    episode statistics (Welch), the command, and where the parallel runtimes are."""
    title = "## Pursuit: the port against PettingZoo"
    parallel = ("Parallel runtimes: the port's parallel runtimes at 256x256 / 1000 pursuers "
                "/ 4000 evaders are measured with `python -m bench.bench_runtimes "
                "--workload pursuit` (pyperf, side by side with serial); not yet part of "
                "this report.")
    if result is None:
        return [*not_measured(title, "pursuit", "PettingZoo, the `marl` extra"), parallel,
                ""]
    sp, ag = result["speed"], result["agreement"]
    size = sp["size"]
    where = (f"{size['x_size']}x{size['y_size']}, {size['n_pursuers']} pursuers, "
             f"{size['n_evaders']} evaders")
    pz, port = sp["pettingzoo_s_per_step"], sp["port_serial_s_per_step"]
    out = [title, "",
           f"### Speed ({where})", "",
           *table(["implementation", "ms per step", "steps timed (median)",
                   "time / time of the port"],
                  [["PettingZoo `pursuit_v5.parallel_env`", f"{1e3 * pz:.1f}",
                    str(sp["pettingzoo_steps"]), f"{pz / port:.0f}x"],
                   ["the port on `serial` "
                    f"({sp['port_events_per_step']:.0f} events per step)",
                    f"{1e3 * port:.2f}", str(sp["port_steps"]), "1x"]]), "",
           "Simple timers (`time.perf_counter`), not pyperf: each figure is the median of "
           "the timed steps after one warm-up step, random pursuer actions. PettingZoo's "
           "catch check is O(evaders x pursuers) per step, so it gets only a few steps at "
           "this size.", "", parallel, ""]
    cfg = ag["config"]
    rows = []
    for key, st in ag["statistics"].items():
        rows.append([PURSUIT_STATISTICS.get(key, key),
                     f"{st['pettingzoo_mean']:.4g} ± {st['pettingzoo_sd']:.3g}",
                     f"{st['port_mean']:.4g} ± {st['port_sd']:.3g}", f"{st['p']:.3g}",
                     "yes" if st["p"] > AGREE_P else "**no**"])
    agree = all(st["p"] > AGREE_P for st in ag["statistics"].values())
    out += [f"### Agreement ({ag['episodes']} episodes each, {cfg['x_size']}x"
            f"{cfg['y_size']}, {cfg['n_pursuers']} pursuers, {cfg['n_evaders']} evaders, "
            f"catch by {cfg['n_catch']}{', surround' if cfg['surround'] else ''}, at most "
            f"{cfg['max_cycles']} steps)", "",
            *table(["statistic", "PettingZoo mean ± sd", "port mean ± sd", "Welch p",
                    f"agree (p > {AGREE_P:g})"], rows), "",
            "Both ran episodes with random pursuer actions (the same generator, seeded per "
            "episode) and each implementation's own random evader moves and spawn cells: "
            "PettingZoo's draws are not replayed, so the episodes differ and only their "
            "statistics are compared, with Welch's t-test per statistic. "
            + ("No statistic differs significantly at the 1 % level."
               if agree else "**At least one statistic differs at the 1 % level.**")
            + " The bit-for-bit lockstep check against PettingZoo (its draws replayed) "
            "lives in `tests/workloads/test_pursuit.py`.", "",
            f"Command: `{result.get('command', 'python -m bench.pursuit')}` (or `python -m "
            "bench.report --only pursuit`).", ""]
    return out


def _opt(metrics: dict, key: str) -> str:
    """A metric that older result files may lack."""
    return f"{metrics[key]:.3f}" if key in metrics else "-"
