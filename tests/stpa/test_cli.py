"""seer stpa on the command line: the evaluation report, and what collect measures."""

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


def test_collect_skips_what_a_data_set_holds_and_stops_at_its_budget(tmp_path, capsys):
    """--missing-from leaves out the configurations a data set holds (of the quick four,
    the shipped 16-core rows lack only bench-c150-f1); --budget 0 starts none, and the
    manifest says what was not measured."""
    from seer.stpa.cli import DEFAULT_DATASETS

    sixteen = next(p for p in DEFAULT_DATASETS if "16core" in p.name)
    out = tmp_path / "rows.npz"
    assert cli.main(["stpa", "collect", "--quick", "--missing-from", str(sixteen),
                     "--budget", "0", "--out", str(out)]) == 0
    manifest = json.loads(out.with_suffix(".json").read_text())
    assert manifest["not_measured"] == ["bench-c150-f1"] and not manifest["configurations"]
    assert not out.exists() and "0 of 1 configurations" in capsys.readouterr().out
    shipped = next(p for p in DEFAULT_DATASETS if "16core" not in p.name)
    assert cli.main(["stpa", "collect", "--quick", "--missing-from", str(shipped),
                     "--out", str(out)]) == 0  # nothing left to measure: still a manifest
    assert json.loads(out.with_suffix(".json").read_text())["not_measured"] == []
    assert cli.main(["stpa", "collect", "--quick", "--missing-from", str(out),
                     "--out", str(out)]) == 2  # --out would replace the rows it skips
    assert "is one of --missing-from" in capsys.readouterr().err


def test_collect_writes_what_it_measured_before_the_budget_ran_out(tmp_path):
    from seer.stpa.dataset import load_rows

    out = tmp_path / "rows.npz"
    assert cli.main(["stpa", "collect", "--quick", "--t-max", "2", "--budget", "0.5",
                     "--out", str(out)]) == 0
    manifest = json.loads(out.with_suffix(".json").read_text())
    measured = [c["name"] for c in manifest["configurations"]]
    assert measured[0] == "bench-c0-f1" and len(measured) < 4  # the budget cut it short
    assert len(measured) + len(manifest["not_measured"]) == 4
    assert set(load_rows([out])["names"].tolist()) == set(measured)
