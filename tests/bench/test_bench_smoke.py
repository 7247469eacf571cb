"""Every benchmark runs in its smallest configuration (correctness only, no timing)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_pyperf_module(module: str, tmp_path: Path) -> dict:
    out = tmp_path / f"{module}.json"
    subprocess.run([sys.executable, "-m", module, "--debug-single-value", "--quiet",
                    "-o", str(out)], cwd=ROOT, check=True, capture_output=True, timeout=600)
    return json.loads(out.read_text())


def test_queue_benchmarks_run(tmp_path):
    data = run_pyperf_module("bench.bench_queues", tmp_path)
    names = {b["metadata"]["name"] for b in data["benchmarks"]}
    for expected in ("atomics-fast-cas", "atomics-public-fetch_add-x2", "leq-push",
                     "leq-merge+pop", "pel-claim-x2", "simplequeue-put+get",
                     "deque-append+popleft"):
        assert expected in names


def test_runtime_benchmarks_run(tmp_path):
    out = tmp_path / "result.json"
    proc = subprocess.run([sys.executable, "-m", "bench.bench_runtimes", "--debug-single-value",
                           "--quiet", "--entities", "60", "--costs", "0", "5", "-o", str(out)],
                          cwd=ROOT, check=True, capture_output=True, text=True, timeout=600)
    data = json.loads(out.read_text())
    names = {b["metadata"]["name"] for b in data["benchmarks"]}
    assert len(names) == 14  # 2 costs x 7 runtimes
    assert "step-n60-cost5us-seer(2)" in names and "step-n60-cost0us-executor(2)" in names
    assert "step-n60-cost5us-static-block(2)" in names
    assert "throughput relative to serial" in proc.stdout


def test_pcs_hotspot_and_capacity_benchmarks_run(tmp_path):
    out = tmp_path / "result.json"
    subprocess.run([sys.executable, "-m", "bench.bench_runtimes", "--debug-single-value",
                    "--quiet", "--workload", "pcs", "--entities", "36", "--costs", "5",
                    "--gains", "0", "8", "--runtimes", "serial", "static-block:2", "-o",
                    str(out)], cwd=ROOT, check=True, capture_output=True, timeout=600)
    names = {b["metadata"]["name"] for b in json.loads(out.read_text())["benchmarks"]}
    assert names == {"pcs-n36-cost5us-gain0-serial", "pcs-n36-cost5us-gain0-static-block(2)",
                     "pcs-n36-cost5us-gain8-serial", "pcs-n36-cost5us-gain8-static-block(2)"}
    data = run_pyperf_module("bench.bench_capacity", tmp_path)
    assert {b["metadata"]["name"] for b in data["benchmarks"]} >= {"capacity-1thread",
                                                                   "capacity-2threads"}
    assert data["metadata"]["seer_GIL"] == "disabled"


def test_full_report_pipeline_runs_in_smoke_mode(tmp_path):
    subprocess.run([sys.executable, "-m", "bench.report", "--smoke", "--out", str(tmp_path)],
                   cwd=ROOT, check=True, capture_output=True, text=True, timeout=900)
    text = (tmp_path / "RESULTS.md").read_text()
    for section in ("## DESIGN.md section 10", "## Workloads", "## PCS under a moving hotspot",
                    "## Cost sweep", "## PCS complexity sweep", "## Thread scans",
                    "## Step latency", "## Time per event", "## Load balance: aircraft",
                    "## Load balance: pcs", "## Queue structures", "Parallel capacity",
                    "## STPA: thread-count prediction", "### Held-out accuracy",
                    "### Preflight cost", "python -m bench.stpa --smoke",
                    "## Pursuit: the port against PettingZoo", "### Speed (32x32",
                    "PettingZoo `pursuit_v5.parallel_env`", "the port on `serial`",
                    "### Agreement (4 episodes each", "Welch p", "tests/workloads/test_pursuit.py",
                    "python -m bench.pursuit --smoke",
                    "python -m bench.bench_runtimes --workload pursuit",
                    "## Parallel efficiency", "total CPU of seer(2) / serial CPU",
                    "## What a handler's operations cost", "`r.exponential(2.0)`"):
        assert section in text
    for figure in ("speedup_vs_threads.png", "throughput_vs_cost.png", "hotspot.png",
                   "latency_vs_entities.png", "cpu_per_thread.png", "stpa_choices.png",
                   "efficiency.png"):
        assert (tmp_path / figure).stat().st_size > 1000
        assert f"(figures/{figure})" in text
    assert "choice vs best thread count" in text
    assert "not measured: run `python -m bench.stpa`" not in text  # the part ran
    # the STPA part in its smallest configuration: 2 folds, 2 epochs, a few groups, tiny models
    stpa = json.loads((tmp_path / "stpa.json").read_text())
    assert stpa["settings"]["folds"] == 2 and stpa["settings"]["epochs"] == 2
    assert stpa["dataset"]["rows"] < stpa["dataset"]["rows_in_file"]
    assert {"stpa", "xgboost-static", "cores", "oracle"} <= set(stpa["evaluation"]["methods"])
    assert all(0 < r["regret"] <= 1 for r in stpa["evaluation"]["rows"])
    models = stpa["preflight"]["models"]
    assert len(models) == 3 and all(m["fraction"] > 0 and m["steps"] == 2 for m in models)
    # the pursuit part in smoke mode: tiny speed sizes, 4 short episodes each
    assert "Not measured: run `.venv/bin/python -m bench.pursuit " not in text
    pursuit = json.loads((tmp_path / "pursuit.json").read_text())
    assert pursuit["speed"]["size"]["x_size"] == 32 and pursuit["agreement"]["episodes"] == 4
    assert pursuit["speed"]["pettingzoo_s_per_step"] > 0
    assert set(pursuit["agreement"]["statistics"]) == {"catches", "length", "reward"}
