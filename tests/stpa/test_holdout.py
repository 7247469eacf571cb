"""The predictor's check against fresh scans, and the prepared many-core run (tiny)."""

import json
import os
import subprocess
import sys
from pathlib import Path

from seer.stpa import holdout

ROOT = Path(__file__).resolve().parents[2]


def test_holdout_scores_the_choices_against_a_fresh_scan(tmp_path):
    out = tmp_path / "holdout.json"
    assert holdout.main(["--out", str(out), "--tiny"]) == 0
    rows = json.loads(out.read_text())["configurations"]
    assert [r["name"] for r in rows] == ["pcs-12-c5", "aircraft-60-c20"]
    for r in rows:
        assert len(r["chosen"]) == 2 and all(1 <= c <= r["t_max"] for c in r["chosen"])
        assert all(0 < x <= 1.0 for x in r["regret"]) and 1 <= r["best"] <= r["t_max"]


def test_the_prepared_run_writes_every_part(tmp_path):
    done = subprocess.run(["bash", str(ROOT / "scripts" / "manycore-run.sh"), str(tmp_path),
                           "--tiny"], env={**os.environ, "PYTHON": sys.executable},
                          capture_output=True, text=True, timeout=400, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    sessions = sorted((tmp_path / "manycore").glob("session-*.json"))
    assert len(sessions) == 2 and json.loads(sessions[-1].read_text())["stpa"]
    assert json.loads((tmp_path / "efficiency.json").read_text())
    assert json.loads((tmp_path / "holdout.json").read_text())["configurations"]
