"""seer stpa evaluate on the command line: the report it writes."""

import json

import numpy as np
import pytest

from seer import cli
from tests.stpa.test_predictor import _small_rows


def test_evaluate_reports_the_mean_regret_over_seeds(tmp_path, capsys):
    data = _small_rows()
    dataset = tmp_path / "rows.npz"
    np.savez_compressed(dataset, **data)
    out = tmp_path / "report.json"
    assert cli.main(["stpa", "evaluate", "--dataset", str(dataset), "--folds", "2",
                     "--epochs", "1", "--steps", "4", "--seeds", "2", "--no-machines",
                     "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    over = report["over_seeds"]
    assert over["seeds"] == [0, 1]
    held = report["held_out_configurations"]["machines"]
    for machine in ("2-core", "16-core"):
        for method, figures in over[machine].items():
            first, second = figures["regret_mean"]
            seed0 = held[machine][method].get("regret_mean", float("nan"))
            assert first == pytest.approx(seed0, nan_ok=True)  # seed 0: the run above
            assert figures["mean"] == pytest.approx((first + second) / 2, nan_ok=True)
            if np.isfinite(figures["mean"]):
                assert figures["worst"] <= figures["low"] <= figures["mean"] <= figures["high"]
    assert "over seeds 0..1, 2-core: stpa" in capsys.readouterr().out
