"""bench.report --plots-only redraws RESULTS.md and the figures from stored results."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from bench.markdown import pursuit, stpa_goals

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ("speedup_vs_threads.png", "throughput_vs_cost.png", "latency_vs_entities.png",
           "hotspot.png", "cpu_per_thread.png", "stpa_choices.png")


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


def _render_without(tmp_path, name):
    """RESULTS.md regenerated from the stored results, less the file ``name``."""
    results = tmp_path / "results"
    shutil.copytree(ROOT / "bench" / "results", results)
    (results / name).unlink()
    subprocess.run([sys.executable, "-m", "bench.report", "--plots-only", "--out",
                    str(results)], cwd=ROOT, check=True, capture_output=True, timeout=120)
    return results, (results / "RESULTS.md").read_text()


def test_plots_only_without_stpa_results_says_not_measured(tmp_path):
    # result sets from before bench.stpa have no stpa.json: the report still renders
    results, text = _render_without(tmp_path, "stpa.json")
    assert "## STPA" in text and "not measured: run `python -m bench.stpa`" in text
    assert not (results / "stpa_choices.png").exists()


def test_plots_only_without_pursuit_results_says_not_measured(tmp_path):
    # result sets from before bench.pursuit have no pursuit.json: the report still renders
    _, text = _render_without(tmp_path, "pursuit.json")
    assert "## Pursuit: the port against PettingZoo" in text
    assert "Not measured: run `.venv/bin/python -m bench.pursuit " in text
    assert "python -m bench.bench_runtimes --workload pursuit" in text
    assert "## STPA" in text and "### Held-out accuracy" in text  # the rest is unchanged


def test_pursuit_section_flags_a_statistic_that_differs():
    result = json.loads((ROOT / "bench" / "results" / "pursuit.json").read_text())
    text = "\n".join(pursuit(result))
    size = result["speed"]["size"]
    assert f"### Speed ({size['x_size']}x{size['y_size']}, {size['n_pursuers']} pursuers" in text
    assert "O(evaders x pursuers)" in text and "not replayed" in text
    result["agreement"]["statistics"]["reward"]["p"] = 0.5
    assert "differs at the 1 % level" not in "\n".join(pursuit(result))
    result["agreement"]["statistics"]["reward"]["p"] = 0.001
    text = "\n".join(pursuit(result))
    assert "| 0.001 | **no** |" in text and "differs at the 1 % level" in text


def test_stpa_goals_name_the_baselines_stpa_does_not_beat():
    stpa = json.loads((ROOT / "bench" / "results" / "stpa.json").read_text())
    methods = stpa["evaluation"]["methods"]
    methods["stpa"]["regret_mean"] = 0.97
    methods["lstm"]["regret_mean"] = 0.98  # a baseline ahead of STPA: the goal is not met
    regret, preflight = stpa_goals(stpa)
    assert "not beaten: lstm" in regret[2] and regret[3] == "**no**"
    methods["lstm"]["regret_mean"] = 0.5
    for m in stpa["preflight"]["models"]:
        m["fraction"] = 0.01
    regret, preflight = stpa_goals(stpa)
    assert "beats every baseline" in regret[2] and regret[3] == "yes"
    assert preflight[3] == "yes"
