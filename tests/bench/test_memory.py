"""bench.memory: the report-part protocol (main / --out / --smoke) and what one
measurement records."""

from __future__ import annotations

import json

from bench import memory


def _row(workload, runtime, traced, rss, base, **extra):
    return {"workload": workload, "entities": 64, "cost_us": 5.0, "runtime": runtime,
            "steps": 2, "seconds": 0.1, "events": 100, "tracemalloc_peak": traced,
            "rss_peak": rss, "rss_base": base, "rss_source": "VmHWM", "hwm_reset": True,
            **extra}


def test_the_report_reads_the_worst_workload_against_each_goal():
    from bench.markdown import Results, goal_rows, load_goals

    mib = memory.MIB
    rows = [_row("pcs", "serial", 1 * mib, 60 * mib, 59 * mib),
            _row("pcs", "seer(2)", 2 * mib, 75 * mib, 59 * mib),
            _row("pcs", "optimistic(2)", 8 * mib, 70 * mib, 59 * mib),
            _row("aircraft", "serial", 1 * mib, 50 * mib, 49 * mib),
            _row("aircraft", "seer(2)", 3 * mib, 51 * mib, 49 * mib),
            _row("aircraft", "optimistic(2)", 4 * mib, 55 * mib, 49 * mib)]
    goals = [g for g in load_goals() if g["source"] == "memory"]
    over_serial, over_optimistic = goal_rows(Results(memory={
        "rows": rows, "steps": 2}), goals)
    assert over_serial[2].startswith("1.25 (pcs)") and over_serial[3] == "**no**"
    assert over_optimistic[2].startswith("0.75 (aircraft)") and over_optimistic[3] == "yes"


def test_one_measurement_records_peaks_and_the_optimistic_counters():
    row = memory.measure_child("pcs", 36, 5.0, "optimistic(2)", 2, traced=False)
    assert row["rss_peak"] > 0 and row["rss_base"] > 0 and row["events"] > 0
    assert 0.0 <= row["rollback_rate"] < 1.0 and row["state_saving_bytes"] > 0
    traced = memory.measure_child("pcs", 36, 5.0, "serial", 2, traced=True)
    assert traced["tracemalloc_peak"] > 0 and "rollback_rate" not in traced


def test_main_smoke_writes_one_json_with_the_command_and_host(tmp_path):
    out = tmp_path / "memory.json"
    assert memory.main(["--smoke", "--out", str(out), "--workloads", "pcs",
                        "--runtimes", "serial", "optimistic(2)"]) == 0
    result = json.loads(out.read_text())
    assert result["command"].endswith("bench.memory --smoke --out " + str(out)
                                      + " --workloads pcs --runtimes serial 'optimistic(2)'")
    assert result["host"]["cores"] >= 1 and "interpreter" in result["host"]
    assert [r["runtime"] for r in result["rows"]] == ["serial", "optimistic(2)"]
    assert all(r["tracemalloc_peak"] > 0 and r["rss_peak"] > 0 for r in result["rows"])
