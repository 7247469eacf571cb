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
