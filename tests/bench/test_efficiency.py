"""bench.efficiency: every workload is one paired comparison, with the ceiling and the
identity check, at any thread count."""

import json

from bench import efficiency


def test_at_threads_renames_only_the_two_thread_labels():
    assert efficiency.at_threads(["serial", "seer(1)", "seer(2)", "static(2)"], 8) == [
        "serial", "seer(1)", "seer(8)", "static(8)"]


def test_smoke_measure_of_one_workload(tmp_path):
    out = tmp_path / "eff.json"
    efficiency.main(["--smoke", "--only", "bench5", "pcs20", "--out", str(out)])
    data = json.loads(out.read_text())
    assert set(data["workloads"]) == {"bench5", "pcs20"}
    w = data["workloads"]["pcs20"]
    assert list(w["runtimes"]) == ["serial", "seer(1)", "seer(2)", "static(2)"]
    assert all(w["runtimes"][r]["identical"] for r in ("seer(1)", "seer(2)", "static(2)"))
    assert w["ceiling"]["threads"] == 2 and w["summary"]["seer(2)"]["of_ceiling"] > 0
    assert w["entities"] == 64 and w["serial_us_per_event"] > 0
    assert data["host"]["interpreter"]["GIL"] and data["command"].startswith("python -m")


def test_threads_gives_one_comparison_per_thread_count(tmp_path):
    out = tmp_path / "eff.json"
    efficiency.main(["--smoke", "--only", "bench5", "--threads", "1", "3", "--out", str(out)])
    data = json.loads(out.read_text())
    assert set(data["workloads"]) == {"bench5@1", "bench5@3"}
    assert "seer(3)" in data["workloads"]["bench5@3"]["runtimes"]
    assert data["workloads"]["bench5@1"]["ceiling"] is None  # one thread: nothing to bound


def test_a_model_spec_instead_of_the_workloads(tmp_path):
    out = tmp_path / "eff.json"
    efficiency.main(["--smoke", "--model", "bench", "n_entities=24", "cost_us=1",
                     "--out", str(out)])
    (w,) = json.loads(out.read_text())["workloads"].values()
    assert w["title"] == "bench n_entities=24 cost_us=1" and "optimistic(2)" in w["runtimes"]
    assert all(v["identical"] for k, v in w["runtimes"].items() if k != "serial")
