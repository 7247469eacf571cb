"""bench.memory: the report-part protocol (main / --out / --smoke / section) and what one
measurement records."""

from __future__ import annotations

import json

from bench import memory


def _row(workload, runtime, traced, rss, base, **extra):
    return {"workload": workload, "entities": 64, "cost_us": 5.0, "runtime": runtime,
            "steps": 2, "seconds": 0.1, "events": 100, "tracemalloc_peak": traced,
            "rss_peak": rss, "rss_base": base, "rss_source": "VmHWM", "hwm_reset": True,
            **extra}


def test_section_without_a_result_says_how_to_measure():
    lines = memory.section(None)
    assert lines[0] == "## Memory per runtime"
    assert "Not measured: run `.venv/bin/python -m bench.memory" in "\n".join(lines)


def test_section_puts_the_ratios_beside_the_paper():
    mib = memory.MIB
    rows = [_row("pcs", "serial", 1 * mib, 60 * mib, 59 * mib),
            _row("pcs", "seer(2)", 2 * mib, 62 * mib, 59 * mib),
            _row("pcs", "static(2)", 2 * mib, 61 * mib, 59 * mib),
            _row("pcs", "optimistic(2)", 8 * mib, 70 * mib, 59 * mib, rollback_rate=0.25,
                 state_saving_bytes=3 * mib)]
    result = {"command": ".venv/bin/python -m bench.memory --smoke", "mode": "smoke",
              "steps": 2, "host": {"cores": 2, "cpu_model": "x"}, "paper": memory.PAPER,
              "rows": rows, "minutes": 0.1, "date": "today"}
    text = "\n".join(memory.section(result))
    assert text.startswith("## Memory per runtime")
    assert "| PCS 64 | optimistic(2) | 70.0 | 11.0 | 8.0 | 4.00 | 25.0 % | 3.0 |" in text
    assert "optimistic / seer = 4.00x traced, 3.67x RSS over base" in text
    assert "ROOT-Sim / SEER = 47x" in text and "SEER - ROSS-T = +0.44 GB" in text
    assert "seer - static = +0.0 MiB traced, +1.0 MiB RSS over base" in text
    assert "Command: `.venv/bin/python -m bench.memory --smoke`" in text


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
    assert memory.section(result)[0] == "## Memory per runtime"
