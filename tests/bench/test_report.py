"""bench.report and bench.markdown: RESULTS.md is short, generated from the committed
result files, and judges every goal of bench/goals.toml from the measured values."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.markdown import RESULTS_MAX_LINES, Results, break_even, goal_rows, load_goals

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"


def _render(tmp_path, without=()):
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    for name in without:
        (results / name).unlink()
    subprocess.run([sys.executable, "-m", "bench.report", "--plots-only", "--out",
                    str(results)], cwd=ROOT, check=True, capture_output=True, timeout=180)
    return results, (results / "RESULTS.md").read_text()


def test_committed_results_md_is_what_the_committed_results_render_to(tmp_path):
    results, text = _render(tmp_path)
    assert text == (ROOT / "bench" / "RESULTS.md").read_text()
    for figure in ("when_seer_helps.png", "efficiency_scans.png", "hotspot.png"):
        assert (results / figure).stat().st_size > 1000


def test_results_md_is_short_and_starts_with_the_goals():
    lines = (ROOT / "bench" / "RESULTS.md").read_text().splitlines()
    assert len(lines) <= RESULTS_MAX_LINES
    first_table = next(i for i, line in enumerate(lines) if line.startswith("|"))
    assert first_table < 20 and lines[first_table - 2] == "## Goals"


def test_a_missing_part_reads_as_not_measured(tmp_path):
    results, text = _render(tmp_path, without=["stpa.json", "efficiency.json"])
    rows = [line for line in text.splitlines() if "not measured" in line]
    stpa_goals = [g for g in load_goals() if g["source"] in ("stpa", "efficiency")
                  and "cores" not in g]
    assert len(rows) == len(stpa_goals)
    assert not (results / "stpa_choices.png").exists()


def test_every_committed_result_file_is_read_by_a_report():
    """Only the result files a report renders are committed."""
    read = {"efficiency", "memory", "marl_loop", "replicas", "stpa", "pursuit", "mpe",
            "parallelism", "load_balance_aircraft", "load_balance_pcs", "switches", "vector"}
    files = {p.stem for p in RESULTS.glob("*.json")}
    assert files == read
    from bench.report import once_parts

    assert set(once_parts("fast")) == read


def _efficiency(seer2: float, peer: float, identical: bool = True) -> dict:
    def rt(wall, threads, same=True):
        return {"wall_s": [wall, 1.1 * wall], "cpu_s": [wall, wall], "threads": threads,
                "identical": same if threads > 1 else None}

    runtimes = {"serial": rt(1.0, 1), "seer(2)": rt(1 / seer2, 2, identical),
                "static(2)": rt(1 / peer, 2)}
    summary = {k: {"speedup": 1 / v["wall_s"][0], "cpu_ratio": 1.0, "of_ceiling": 0.9}
               for k, v in runtimes.items()}
    w = {"title": "t", "runtimes": runtimes, "summary": summary, "serial_us_per_event": 5.0}
    return {"workloads": {"bench5": w, "pcs_gain8": w}, "command": "x", "rounds": 2,
            "steps": 1}


GOALS = [
    {"text": "even", "source": "efficiency", "workload": "bench5", "measure": "speedup",
     "runtime": "seer(2)", "at_least": 1.0},
    {"text": "lead", "source": "efficiency", "workloads": ["pcs_gain8"], "measure": "lead",
     "runtime": "seer(2)", "peers": ["static(2)"], "at_least": 1.0},
    {"text": "same", "source": "efficiency", "measure": "identical", "at_least": 1.0},
]


def test_goals_are_met_or_missed_from_the_values():
    good = goal_rows(Results(efficiency=_efficiency(1.5, 1.2)), GOALS)
    assert [r[3] for r in good] == ["yes", "yes", "yes"]
    assert good[1][2].startswith("1.25") and "closest: static(2) on pcs_gain8" in good[1][2]
    bad = goal_rows(Results(efficiency=_efficiency(0.9, 1.2, identical=False)), GOALS)
    assert [r[3] for r in bad] == ["**no**", "**no**", "**no**"]
    assert "differ: seer(2) on bench5" in bad[2][2]
    missing = goal_rows(Results(), GOALS)
    assert [r[2] for r in missing] == ["not measured"] * 3


def test_stpa_must_reach_the_target_and_beat_every_baseline_on_every_machine():
    stpa = json.loads((RESULTS / "stpa.json").read_text())
    goal = [g for g in load_goals() if g["measure"] == "regret"]
    over = stpa["evaluation"]["over_seeds"]
    assert len(over["seeds"]) >= 5  # the goal is read on the mean over seeds
    machines = {k: v for k, v in over.items() if k in ("2-core", "16-core")}
    assert len(machines) == 2
    for methods in machines.values():
        for name, m in methods.items():
            m["mean"] = 0.97 if name == "stpa" else 0.5
    (row,) = goal_rows(Results(stpa=stpa), goal)
    assert row[3] == "yes" and "16-core 0.970" in row[2]
    machines["16-core"]["fixed"]["mean"] = 0.98  # one baseline ahead on one machine
    (row,) = goal_rows(Results(stpa=stpa), goal)
    assert row[3] == "**no**" and "best baseline fixed 0.980" in row[2]
    machines["16-core"]["fixed"]["mean"] = 0.5
    machines["2-core"]["stpa"]["mean"] = 0.94  # below the target on one machine
    (row,) = goal_rows(Results(stpa=stpa), goal)
    assert row[3] == "**no**" and row[2].startswith("0.94")


def test_a_goal_without_exactly_one_target_is_refused(tmp_path):
    bad = tmp_path / "goals.toml"
    bad.write_text('[[goal]]\ntext = "x"\nsource = "stpa"\nmeasure = "regret"\n')
    with pytest.raises(ValueError, match="'x' needs exactly one of at_least and at_most"):
        load_goals(bad)


def test_break_even_interpolates_in_log_cost():
    assert break_even([(1.0, 0.5), (10.0, 1.5)]) == pytest.approx(10 ** 0.5)
    assert break_even([(1.0, 0.5), (10.0, 0.9)]) is None
    assert break_even([(2.0, 1.2), (10.0, 1.5)]) == 2.0


def test_the_hotspot_goal_takes_the_closest_peer_over_every_peak():
    def at(static: float) -> dict:
        w = _efficiency(1.0, static)["workloads"]["bench5"]
        return {"title": "t", "threads": 2, **{k: w[k] for k in ("runtimes", "summary")}}

    eff = {"workloads": {"pcs_gain0": at(5.0), "pcs_gain2": at(0.8), "pcs_gain8": at(0.9)}}
    goal = [g for g in load_goals() if g["measure"] == "lead"]
    assert goal[0]["workloads"] == ["pcs_gain2", "pcs_gain4", "pcs_gain8"]
    goal = [{**goal[0], "workloads": ["pcs_gain2", "pcs_gain8"]}]  # peak 0: no hotspot
    (row,) = goal_rows(Results(efficiency=eff), goal)
    assert row[2].startswith("1.11") and "static(2) on pcs_gain8" in row[2] and row[3] == "yes"
    del eff["workloads"]["pcs_gain8"]
    assert goal_rows(Results(efficiency=eff), goal)[0][2] == "not measured"


def test_the_switches_verdict_names_what_wins_at_many_threads():
    from bench.markdown import _switch_verdict

    def workload(threads, fast, slow):
        return {"threads": threads, "copies": {"seer": [], "seer-fast": [], "seer-slow": []},
                "summary": {f"seer({threads})": {"speedup": 4.0},
                            f"seer-fast({threads})": {"speedup": 4.0 * fast},
                            f"seer-slow({threads})": {"speedup": 4.0 * slow}}}

    sw = {"workloads": {"pcs10@4": workload(4, 0.5, 2.0), "pcs10@8": workload(8, 1.1, 0.8),
                        "pcs10@16": workload(16, 1.2, 0.9)}}
    line = _switch_verdict(sw, list(sw["workloads"]))[0]
    assert "in pcs10@8, pcs10@16" in line  # 4 threads do not decide
    assert "ahead by at least 5% in every column: `seer-fast` (1.10-1.20x)" in line
    assert "behind: `seer-slow` (0.80-0.90x)" in line


def _vector_sets(vector_ms: float, pool_ms: float, identical: bool = True) -> dict:
    def way(ms, of_ceiling=0.9, same=True):
        return {"ms_per_step": ms, "env_steps_per_s": 4 / ms, "speedup": 10 / ms,
                "speedup_range": [10 / ms, 10 / ms], "of_ceiling": of_ceiling,
                "identical": same}

    one = {"environments": ["PCS 40x40", "PCS 10x10"], "cost_us": 15.0, "threads": 2,
           "steps": 5, "rounds": 5, "ceiling_gain": 1.9,
           "ways": {"serial": way(10.0), "vector": way(vector_ms, 0.97, identical),
                    "thread pool": way(pool_ms), "async processes": way(2 * pool_ms),
                    "ceiling": way(5.3, 1.0)}}
    return {"command": "python -m bench.vector", "host": {"commit": "x", "cores": 2},
            "sets": {"equal": one, "dominant": dict(one)}}


def test_vector_goals_read_the_worst_set_and_the_closest_way():
    goals = [{"text": "lead", "source": "vector", "measure": "lead", "sets": ["dominant"],
              "ways": ["thread pool", "async processes"], "at_least": 1.0},
             {"text": "ceiling", "source": "vector", "measure": "of_ceiling",
              "at_least": 0.95},
             {"text": "same", "source": "vector", "measure": "identical", "at_least": 1.0}]
    good = goal_rows(Results(vector=_vector_sets(5.0, 6.0)), goals)
    assert [r[3] for r in good] == ["yes", "yes", "yes"]
    assert good[0][2].startswith("1.20") and "against thread pool" in good[0][2]
    bad = goal_rows(Results(vector=_vector_sets(6.0, 5.0, identical=False)), goals)
    assert [r[3] for r in bad] == ["**no**", "yes", "**no**"]
    assert "differ: vector" in bad[2][2]
    assert [r[2] for r in goal_rows(Results(), goals)] == ["not measured"] * 3
