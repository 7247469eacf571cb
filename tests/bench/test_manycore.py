"""bench.manycore: the many-core study in smoke mode (2 threads at most), its re-runs and
its report; and the pieces of scripts/bundle.sh that can be checked without building the
bundle (building it takes about 30 s and network access to the package index)."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import manycore
from bench.report import render_manycore
from seer.sched import RUNTIMES

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ("manycore_thread_scans.png", "manycore_load_balance.png", "manycore_hotspot.png")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """One smoke study through the command line, with its report."""
    out = tmp_path_factory.mktemp("manycore") / "results"
    proc = subprocess.run([sys.executable, "-m", "bench.manycore", "--smoke", "--max-threads",
                           "2", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def session_of(out: Path) -> dict:
    (path,) = out.glob("session-*.json")
    return json.loads(path.read_text())


def test_smoke_study_measures_every_planned_unit(smoke):
    plan = manycore.plan("smoke", max_threads=2)
    assert plan.threads == (1, 2) and plan.focus == 2
    s = session_of(smoke)
    assert [u["key"] for u in s["units"]] == [u.key for u in plan.units]
    assert s["measured"] == len(plan.units) + 1 and s["failed"] == 0 and s["over_budget"] == 0
    assert s["host"]["gil_enabled"] is False
    assert s["capacity_before"]["effective_cores"] > 0 and "capacity_after" in s
    data = manycore.load_results(smoke)
    for r in [*data["points"]["scan"], *data["points"]["hotspot"]]:
        assert r["steps_per_s"] > 0 and r["steps"] == 2 and r["threads"] <= 2
        assert r["runtime"] == "serial" or r["identical"] is True
    scan = [u for u in s["units"] if u["group"] == "scan"]
    assert [u["ceiling"] is not None for u in scan if u["config_name"] == "pcs-n64-c2-g2"] \
        == [False, True]  # the ceiling at the focus thread count
    balance = [r for r in data["points"]["balance"] if r["config_name"] == "pcs-n64-c2-g8"]
    assert balance and all(len(r["workers"]["cpu_s"]) == 2 and r["cpu_util_var"] is not None
                           for r in balance)
    (stpa,) = data["stpa"]
    assert stpa["t_max"] == 2 and 1 <= stpa["label"] <= 2 and len(stpa["throughput"]) == 2


def test_smoke_report_has_tables_plots_and_the_papers_figures(smoke):
    text = (smoke / "RESULTS-manycore.md").read_text()
    for heading in ("## Machine and runs", "## Next to the paper", "## Thread scans",
                    "## Load balance", "## PCS hotspot sweep", "## STPA data collection"):
        assert heading in text
    assert "16.92 -> 41.22 -> 52.93" in text and "2.81x" in text and "23.79 -> 2.59" in text
    assert "identical across runtimes and thread counts in all" in text
    assert "| seer | " in text and "static-block(2)" in text
    for figure in FIGURES:
        assert (smoke / "figures" / figure).stat().st_size > 5000
        assert f"(figures/{figure})" in text


def test_rerun_measures_only_what_is_missing(smoke, tmp_path):
    out = tmp_path / "results"
    shutil.copytree(smoke, out)
    first = session_of(smoke)
    first["units"] = [u for u in first["units"] if u["key"] != "scan aircraft-n60-c20 T=2"]
    (path,) = out.glob("session-*.json")
    path.write_text(json.dumps(first))
    session = manycore.run_study(out, mode="smoke", max_threads=2, groups=("scan",),
                                 log=lambda msg: None)
    assert session["measured"] == 1 and session["over_budget"] == 0
    assert [u["key"] for u in session["units"]] == ["scan aircraft-n60-c20 T=2"]
    assert session["existing"] == len([u for u in first["units"] if u["group"] == "scan"])


def test_an_exhausted_budget_leaves_points_for_the_next_run(tmp_path):
    session = manycore.run_study(tmp_path, mode="smoke", budget_s=0.0, max_threads=1,
                                 groups=("scan",), log=lambda msg: None)
    planned = len(manycore.plan("smoke", max_threads=1, groups=("scan",)).units)
    assert session["measured"] == 0 and session["over_budget"] == planned
    time.sleep(1.1)  # the next session file gets a name of its own
    session = manycore.run_study(tmp_path, mode="smoke", max_threads=1, groups=("scan",),
                                 log=lambda msg: None)
    assert session["measured"] == planned and len(session["units"]) == planned


def test_report_flags_a_state_that_differs_from_serial(smoke, tmp_path):
    out = tmp_path / "results"
    shutil.copytree(smoke, out)
    s = session_of(out)
    unit = next(u for u in s["units"] if u["key"] == "scan pcs-n64-c2-g2 T=2")
    unit["runtimes"]["global(2)"]["identical"] = False
    balance = next(u for u in s["units"] if u["key"] == "balance pcs-n64-c2-g8 seer(2)")
    balance["state_sha256"] = "0" * 64
    (path,) = out.glob("session-*.json")
    path.write_text(json.dumps(s))
    render_manycore(out, tmp_path / "R.md", tmp_path / "figs")
    text = (tmp_path / "R.md").read_text()
    assert "**2 of" in text and "differs from serial's**: scan pcs-n64-c2-g2 global(2); " \
        "balance pcs-n64-c2-g8 seer(2)" in text


def test_committed_report_is_what_its_results_render_to(tmp_path):
    """bench/RESULTS-manycore.md is `python -m bench.report --manycore
    bench/results/manycore`'s output, not edited by hand."""
    md = tmp_path / "bench" / "RESULTS-manycore.md"
    render_manycore(ROOT / "bench" / "results" / "manycore", md, tmp_path / "bench" / "figures")
    assert md.read_text() == (ROOT / "bench" / "RESULTS-manycore.md").read_text()


def test_report_without_results_says_not_run(tmp_path):
    render_manycore(tmp_path / "empty", tmp_path / "R.md", tmp_path / "figs")
    text = (tmp_path / "R.md").read_text()
    assert "Not run yet" in text and "dist/bundle/run.sh python -m bench.manycore" in text
    assert not (tmp_path / "figs").exists()


def test_full_plan_on_sixteen_cores():
    kinds = ("seer", "static", "static-block", "global")
    p = manycore.plan("full", cores=16, kinds=kinds)
    assert p.threads == (1, 2, 4, 8, 12, 16, 24, 32) and p.focus == 16
    scans = [x for x in p.units if x.group == "scan"]
    assert {x.config.name for x in scans} == {"aircraft-n800-c200", "aircraft-n3200-c400",
                                              "pcs-n1600-c10-g2", "pcs-n3600-c20-g2"}
    assert len(scans) == 4 * 8 and all(x.kinds == kinds for x in scans)
    assert {(x.threads, x.config.gain) for x in p.units if x.group == "hotspot"} == \
        {(16, g) for g in (0, 2, 4, 8)}
    assert {(x.threads, x.kinds) for x in p.units if x.group == "balance"} == \
        {(16, (k,)) for k in kinds}
    # the headline models first, the large ones last: a cut-off run keeps the headline
    order = [x.config.name for x in p.units]
    assert order[0] == "aircraft-n800-c200" and order[-1] == "aircraft-n3200-c400"
    assert order.index("pcs-n1600-c10-g2") < order.index("pcs-n1600-c10-g8")
    assert manycore.plan("full", cores=2).threads == (1, 2, 4)
    assert manycore.plan("full", cores=64, max_threads=12).threads == (1, 2, 4, 8, 12)


def test_optimistic_joins_only_when_registered(monkeypatch):
    monkeypatch.delitem(RUNTIMES, "optimistic", raising=False)
    assert manycore.runtime_kinds() == ("seer", "static", "static-block", "global")
    monkeypatch.setitem(RUNTIMES, "optimistic", RUNTIMES["seer"])
    assert manycore.runtime_kinds()[-1] == "optimistic"
    assert all("optimistic" in x.kinds for x in manycore.plan("smoke", max_threads=2).units
               if x.group != "balance")


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


HANGING = '''
import json, sys, threading
from pathlib import Path
import seer
from bench import manycore

class Hang(seer.SerialRuntime):
    """Serial, but a step after the warm-up never returns on the 60-UAV model."""
    name = "hang"

    def __init__(self, model, threads=1, **options):
        super().__init__(model, **options)
        self.steps_taken = 0

    def step(self, actions=None):
        self.steps_taken += 1
        if self.steps_taken > 1 and self.model.n_entities == 60:
            threading.Event().wait()
        return super().step(actions)

seer.register_runtime(Hang)
session = manycore.run_study(Path(sys.argv[1]), mode="smoke", budget_s=float(sys.argv[2]),
                             max_threads=1, groups=("scan",), kinds=("hang",), grace_s=1.0,
                             on_abort=lambda: print("report written"), log=lambda m: None)
print(json.dumps(session))
'''


def test_a_hanging_point_ends_the_run_with_a_report_and_is_skipped_next_time(tmp_path):
    def study(budget: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", HANGING, str(tmp_path), budget], cwd=ROOT,
                              capture_output=True, text=True, timeout=120, check=False)

    done = study("5")  # serial, then the hanging runtime, in the first comparison
    assert done.returncode == 3, done.stderr[-2000:]
    assert done.stdout.strip() == "report written"
    (session,) = (json.loads(p.read_text()) for p in tmp_path.glob("session-*.json"))
    assert session["aborted"] == "scan aircraft-n60-c20 T=1" and session["failed"] == 1
    (failure,) = session["failures"]
    assert failure["key"] == session["aborted"] and "taken to hang" in failure["error"]
    time.sleep(1.1)  # the next session file gets a name of its own
    again = study("60")
    assert again.returncode == 0, again.stderr[-2000:]
    session = json.loads(again.stdout)
    assert session["existing"] == 1 and session["measured"] == 3 and session["failed"] == 0
