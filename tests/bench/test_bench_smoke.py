"""Every benchmark runs in its smallest configuration (correctness only, no timing)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_pyperf_module(module: str, tmp_path: Path) -> dict:
    out = tmp_path / "result.json"
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
    assert len(names) == 12
    assert "step-n60-cost5us-seer(2)" in names and "step-n60-cost0us-executor(2)" in names
    assert "throughput relative to serial" in proc.stdout


def test_full_report_pipeline_runs_in_smoke_mode():
    proc = subprocess.run([sys.executable, "-m", "bench.report", "--smoke"], cwd=ROOT,
                          check=True, capture_output=True, text=True, timeout=900)
    written = Path(proc.stdout.strip().splitlines()[-1].split("wrote ", 1)[1])
    text = written.read_text()
    for section in ("## Workloads", "## Cost sweep", "## Thread scan", "## Step latency",
                    "## Scheduler overhead", "## Load balance", "## Queue structures"):
        assert section in text
    for figure in ("speedup_vs_threads.png", "throughput_vs_cost.png",
                   "latency_vs_entities.png", "cpu_per_thread.png"):
        assert (written.parent / figure).stat().st_size > 1000
