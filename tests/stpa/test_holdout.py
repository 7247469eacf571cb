"""The predictor's check against fresh scans."""

import json
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
