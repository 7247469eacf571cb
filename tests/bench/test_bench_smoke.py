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


def test_microbenchmarks_run_once_each():
    """Every hot-path microbenchmark (bench/micro) runs its body once, untimed."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider",
                           "bench/micro", "--benchmark-disable"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:]
    for name in ("test_atomics[2-public-cas]", "test_leq_push[2-1]", "test_leq_merge_pop",
                 "test_pel_claim[2]", "test_simplequeue[2]", "test_deque",
                 "test_one_window[seer-2]"):
        assert f"{name} PASSED" in proc.stdout, name


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


def test_pcs_hotspot_benchmarks_run(tmp_path):
    out = tmp_path / "result.json"
    subprocess.run([sys.executable, "-m", "bench.bench_runtimes", "--debug-single-value",
                    "--quiet", "--workload", "pcs", "--entities", "36", "--costs", "5",
                    "--gains", "0", "8", "--runtimes", "serial", "static-block:2", "-o",
                    str(out)], cwd=ROOT, check=True, capture_output=True, timeout=600)
    data = json.loads(out.read_text())
    names = {b["metadata"]["name"] for b in data["benchmarks"]}
    assert names == {"pcs-n36-cost5us-gain0-serial", "pcs-n36-cost5us-gain0-static-block(2)",
                     "pcs-n36-cost5us-gain8-serial", "pcs-n36-cost5us-gain8-static-block(2)"}
    assert data["metadata"]["seer_GIL"] == "disabled"


def test_full_report_pipeline_runs_in_smoke_mode(tmp_path):
    """Every part runs in its smallest configuration, writes its file, and the report
    renders from them: every goal measured, every figure drawn and linked."""
    from bench.markdown import RESULTS_MAX_LINES, load_goals
    from bench.report import once_parts

    subprocess.run([sys.executable, "-m", "bench.report", "--smoke", "--out", str(tmp_path)],
                   cwd=ROOT, check=True, capture_output=True, text=True, timeout=900)
    for part in once_parts("smoke"):
        assert (tmp_path / f"{part}.json").exists(), part
    text = (tmp_path / "RESULTS.md").read_text()
    lines = text.splitlines()
    assert len(lines) <= RESULTS_MAX_LINES
    goals = [g for g in load_goals() if "cores" not in g]
    rows = [x for x in lines if x.startswith("| ") and any(x.startswith(f"| {g['text']} |")
                                                           for g in goals)]
    assert len(rows) == len(goals)
    assert not [r for r in rows if "not measured" in r]
    for figure in ("when_seer_helps.png", "efficiency_scans.png", "hotspot.png",
                   "cpu_per_thread.png", "stpa_choices.png"):
        assert (tmp_path / figure).stat().st_size > 1000
        assert f"(figures/{figure})" in text
    stpa = json.loads((tmp_path / "stpa.json").read_text())
    assert stpa["settings"]["folds"] == 2 and stpa["settings"]["epochs"] == 2
    assert all(0 < r["regret"] <= 1 for r in stpa["evaluation"]["rows"])
    assert stpa["evaluation"]["over_seeds"]["seeds"] == [0]
    assert [c["name"] for c in stpa["holdout"]["configurations"]] == ["pcs-12-c5",
                                                                      "aircraft-60-c20"]
    assert "seer.stpa.holdout" in text
    pursuit = json.loads((tmp_path / "pursuit.json").read_text())
    assert pursuit["speed"]["size"]["x_size"] == 32 and pursuit["speed"]["port_steps"] == 3


def test_runtime_benchmarks_take_a_model_spec(tmp_path):
    out = tmp_path / "result.json"
    subprocess.run([sys.executable, "-m", "bench.bench_runtimes", "--debug-single-value",
                    "--quiet", "--model", "bench", "n_entities=30", "--runtimes", "serial",
                    "seer:2", "-o", str(out)], cwd=ROOT, check=True, capture_output=True,
                   timeout=600)
    names = {b["metadata"]["name"] for b in json.loads(out.read_text())["benchmarks"]}
    assert names == {"bench-n_entities=30-serial", "bench-n_entities=30-seer(2)"}
