"""bench.report --plots-only redraws RESULTS.md and the figures from stored results."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ("speedup_vs_threads.png", "throughput_vs_cost.png", "latency_vs_entities.png",
           "hotspot.png", "cpu_per_thread.png")


def test_plots_only_redraws_the_stored_results(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(ROOT / "bench" / "results", results)
    subprocess.run([sys.executable, "-m", "bench.report", "--plots-only", "--out",
                    str(results)], cwd=ROOT, check=True, capture_output=True, timeout=120)
    text = (results / "RESULTS.md").read_text()
    committed = (ROOT / "bench" / "RESULTS.md").read_text()

    def without_machine(t: str) -> list[str]:  # the machine line describes this host
        return [line for line in t.splitlines() if not line.startswith("Machine: ")]

    assert without_machine(text) == without_machine(committed)
    assert "seer:" not in text
    for figure in FIGURES:
        assert (results / figure).stat().st_size > 1000
