"""The prepared many-core run (scripts/manycore-run.sh, tiny on 2 cores) and its report,
and the pieces of scripts/bundle.sh that can be checked without building the bundle
(building it takes about 30 s and network access to the package index)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.report import render_manycore

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """One tiny prepared run through the script, with its report."""
    out = tmp_path_factory.mktemp("manycore")
    done = subprocess.run(["bash", str(ROOT / "scripts" / "manycore-run.sh"), str(out),
                           "--tiny"], env={**os.environ, "PYTHON": sys.executable},
                          capture_output=True, text=True, timeout=400, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    render_manycore(out, out / "RESULTS-manycore.md", out / "figures")
    return out


def test_the_prepared_run_writes_every_part(tiny):
    eff = json.loads((tiny / "efficiency.json").read_text())
    assert set(eff["workloads"]) == {"aircraft@1", "aircraft@2", "pcs10@1", "pcs10@2"}
    for w in ("aircraft", "pcs"):
        rows = json.loads((tiny / f"load_balance_{w}.json").read_text())["rows"]
        assert [r["kind"] for r in rows] == ["seer", "static", "static-block", "global"]
    collected = json.loads((tiny / "stpa_collect.json").read_text())
    assert collected["configurations"][0]["name"] == "bench-c0-f1"
    assert len(collected["configurations"]) + len(collected["not_measured"]) == 4
    assert (tiny / "stpa_collect.npz").exists()
    switches = json.loads((tiny / "switches.json").read_text())["workloads"]["pcs10@2"]
    assert {"seer(2)", "seer-copies-all(2)", "seer-copies-none(2)", "seer-backoff-2(2)",
            "seer-backoff-8(2)"} <= set(switches["summary"])
    assert switches["ceiling"] is not None  # each variant beside independent:T
    assert (tiny / "perf.json").exists() or "not installed" in (tiny / "perf.log").read_text()


def test_the_report_renders_every_part_with_the_many_core_goals(tiny):
    text = (tiny / "RESULTS-manycore.md").read_text()
    goals = [line for line in text.splitlines() if line.startswith("| 16 cores: ")]
    assert len(goals) == 5 and all("| not measured |" in g for g in goals)  # a 2-core run
    assert "| T=1 | T=2 |" in text and "## SEER and its peers, 2 threads" in text
    assert "bench-c0-f1 2" in text or "bench-c0-f1 1" in text
    assert "## SEER's switches: per-worker copies and steal back-off" in text
    assert "Aircraft 800 UAVs (~200 µs events): seer(2)" not in text  # the 2-core goals
    assert sorted(p.name for p in (tiny / "figures").iterdir()) == [
        "manycore_cpu_per_thread.png", "manycore_efficiency_scans.png"]


def test_committed_report_is_what_its_results_render_to(tmp_path):
    """bench/RESULTS-manycore.md is `python -m bench.report --manycore
    bench/results/manycore`'s output, not edited by hand."""
    md = tmp_path / "bench" / "RESULTS-manycore.md"
    render_manycore(ROOT / "bench" / "results" / "manycore", md, tmp_path / "bench" / "figures")
    assert md.read_text() == (ROOT / "bench" / "RESULTS-manycore.md").read_text()


def test_report_without_results_says_not_run(tmp_path):
    render_manycore(tmp_path / "empty", tmp_path / "R.md", tmp_path / "figs")
    text = (tmp_path / "R.md").read_text()
    assert "Not run yet" in text and "docs/manycore.md" in text
    assert not list((tmp_path / "figs").glob("*.png"))


# -- scripts/bundle.sh -------------------------------------------------------------------------
def run_sh(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """Write run.sh alone (no bundle beside it) and run it."""
    script = tmp_path / "bundle" / "run.sh"
    script.parent.mkdir(parents=True)
    subprocess.run(["bash", str(ROOT / "scripts" / "bundle.sh"), "--write-run-sh",
                    str(script)], check=True, timeout=60)
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SEER_REPO": str(ROOT), **env}, check=False)


def test_bundle_script_parses_and_documents_itself():
    subprocess.run(["bash", "-n", str(ROOT / "scripts" / "bundle.sh")], check=True)
    done = subprocess.run(["bash", str(ROOT / "scripts" / "bundle.sh"), "--help"],
                          capture_output=True, text=True, check=True, timeout=60)
    assert "dist/bundle/run.sh" in done.stdout and "60 MiB" in done.stdout
    bad = subprocess.run(["bash", str(ROOT / "scripts" / "bundle.sh"), "--bogus"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode != 0 and "unknown argument" in bad.stderr


def test_run_sh_refuses_the_gil(tmp_path):
    done = run_sh(tmp_path, "true", PYTHON_GIL="1")
    assert done.returncode == 3 and "GIL" in done.stderr


def test_run_sh_without_the_bundle_says_how_to_build_it(tmp_path):
    done = run_sh(tmp_path, "true")
    assert done.returncode == 1 and "scripts/bundle.sh" in done.stderr
    assert run_sh(tmp_path / "again", ).returncode == 1  # no command: usage


@pytest.mark.slow
@pytest.mark.skipif(not (ROOT / "dist" / "bundle" / "python.tar.xz").exists()
                    or os.environ.get("SEER_TEST_BUNDLE") != "1",
                    reason="set SEER_TEST_BUNDLE=1 after scripts/bundle.sh (about 20 s)")
def test_built_bundle_runs_offline_without_the_gil(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV"))}
    env.update(HOME=str(tmp_path), TMPDIR=str(tmp_path), PIP_NO_INDEX="1")
    done = subprocess.run([str(ROOT / "dist" / "bundle" / "run.sh"), "python", "-c",
                           "import sys, seer; print(sys.prefix, sys._is_gil_enabled())"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("False") and str(tmp_path) in done.stdout
    assert not list(tmp_path.glob("seer-bundle.*"))  # the temporary environment is gone


def test_every_committed_many_core_file_is_read_by_the_report():
    names = {p.stem for p in (ROOT / "bench" / "results" / "manycore").glob("*.json")}
    assert names <= {"efficiency", "load_balance_aircraft", "load_balance_pcs", "stpa_collect",
                     "holdout", "switches"} and "efficiency" in names
