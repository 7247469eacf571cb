"""bench.tax: the split of T threads' cost into machine, interpreter and runtime."""

import json
import threading
import time

import pytest

from bench import tax
from seer.errors import ModelError


def _setting(wall: list[float], cpu: list[float]) -> dict[str, list[float]]:
    return {"wall_s": wall, "cpu_s": cpu}


def _result() -> dict:
    """Two rounds at T=2 with ratios that can be worked out by hand."""
    seer = _setting([0.6, 0.5], [1.2, 1.3])
    seer["task_cpu_s"] = [1.1, 1.2]
    return {"workload": "pcs", "entities": 64, "cost_us": 15, "steps": 2, "by_threads": {"2": {
        "lone_process": _setting([1.0, 1.0], [1.0, 1.0]),
        "processes": _setting([0.5, 0.6], [1.1, 1.0]),
        "lone_thread": _setting([1.0, 2.0], [1.0, 2.0]),
        "threads": _setting([0.5, 1.25], [1.2, 2.2]),
        "lockstep": _setting([0.8, 1.6], [1.25, 2.3]),
        "serial": _setting([1.0, 1.0], [1.0, 1.0]),
        "seer": seer}}}


def test_summary_reads_each_setting_against_its_own_lone_run():
    s = tax.summary(_result())["2"]
    assert s["processes_cpu"] == pytest.approx(1.05)  # median of 1.1 and 1.0
    assert s["processes_speedup"] == pytest.approx((4.0 + 2 / 0.6) / 2)
    assert s["threads_cpu"] == pytest.approx((1.2 + 1.1) / 2)  # 2.2 / 2.0 in round two
    assert s["threads_speedup"] == pytest.approx((4.0 + 3.2) / 2)
    assert s["lockstep_cpu"] == pytest.approx((1.25 + 1.15) / 2)
    assert s["lockstep_speedup"] == pytest.approx((2 / 0.8 + 4 / 1.6) / 2)
    assert s["seer_cpu"] == pytest.approx(1.25)
    assert s["seer_task_cpu"] == pytest.approx(1.15)
    assert s["seer_speedup"] == pytest.approx((1 / 0.6 + 2.0) / 2)


def test_section_has_a_row_per_thread_count_and_says_how_it_was_made():
    data = {"rounds": 2, "threads": [2], "host": {"cores": 16}, "capacity_threads": 16,
            "capacity_before": 10.5, "capacity_after": 7.1, "workloads": {"pcs": _result()}}
    text = "\n".join(tax.section(data))
    assert "`python -m bench.tax --threads 2 --rounds 2` on 16 cores" in text
    assert "effective cores of 16 threads before / after: 10.50 / 7.10" in text
    assert "| 2 | 1.05 | 1.15 | 1.20 | 1.25 | 1.15 | 1.09 | 1.04 |" in text


def test_a_result_from_before_the_lockstep_setting_still_reads():
    result = _result()
    del result["by_threads"]["2"]["lockstep"]
    data = {"rounds": 2, "threads": [2], "host": {"cores": 2}, "workloads": {"pcs": result}}
    assert "| 2 | 1.05 | 1.15 | - | 1.25 | 1.15 | 1.09 | - |" in "\n".join(tax.section(data))


def test_section_without_a_result_says_how_to_measure():
    text = "\n".join(tax.section(None))
    assert tax.TITLE in text and "Not measured" in text and "bench.tax" in text


def test_smoke_run_measures_every_setting_at_every_thread_count(tmp_path):
    out = tmp_path / "tax.json"
    tax.main(["--smoke", "--threads", "1", "2", "--workloads", "pcs", "--out", str(out)])
    data = json.loads(out.read_text())
    assert data["threads"] == [1, 2] and data["capacity_threads"] == 2
    by_t = data["workloads"]["pcs"]["by_threads"]
    assert sorted(by_t) == ["1", "2"]
    for rows in by_t.values():
        assert set(rows) == {"lone_process", "lone_thread", "serial", *tax.SETTINGS}
        for setting in rows.values():
            assert len(setting["wall_s"]) == len(setting["cpu_s"]) == 1
            assert all(w > 0 for w in setting["wall_s"])
        # with one thread SEER runs every window inline: all of its CPU is the work
        if rows is by_t["1"]:
            assert rows["seer"]["task_cpu_s"] == rows["seer"]["cpu_s"]
        else:
            assert 0 < rows["seer"]["task_cpu_s"][0] <= rows["seer"]["cpu_s"][0] * 1.05


def test_a_failing_timing_process_stops_the_measurement_at_once():
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match="timing process of pcs -1 failed"):
        tax._processes(2, ("pcs", -1, 15.0, 1))  # the model refuses a negative size
    assert time.perf_counter() - start < 60


def test_refuses_bad_thread_counts(tmp_path):
    with pytest.raises(SystemExit):
        tax.main(["--threads", "0", "--out", str(tmp_path / "x.json")])


def test_runs_in_lockstep_measure_and_a_failing_one_leaves_no_other_waiting(monkeypatch):
    wall, cpu = tax._threads(2, ("pcs", 64, 15.0, 2), lockstep=True)
    assert wall > 0 and cpu > 0
    real, made, lock = tax._serial_run, [], threading.Lock()

    def serial_run(*args):
        rt, actions = real(*args)
        with lock:
            made.append(rt)
            if len(made) == 2:  # the second run gets an action PCS refuses, in step 2
                actions[2] = [99] * 64
        return rt, actions

    monkeypatch.setattr(tax, "_serial_run", serial_run)
    start = time.perf_counter()
    with pytest.raises(ModelError, match="must be an int reserve"):
        tax._threads(2, ("pcs", 64, 15.0, 3), lockstep=True)
    assert time.perf_counter() - start < 60
