"""seer stpa calibrate: measured rows of this machine, a retrained model, used by "auto"."""

import numpy as np

import seer
from seer.stpa import predictor as predictor_module
from seer.stpa.cli import DEFAULT_DATASETS, calibrate
from seer.stpa.dataset import Configuration, load_rows
from seer.stpa.predictor import MODEL_ENV, Predictor
from seer.stpa.preflight import STATIC_FEATURES
from workloads.synthetic import BenchModel


def test_a_calibrated_predictor_is_what_threads_auto_uses(tmp_path, monkeypatch):
    config = Configuration("tiny-bench", "workloads.synthetic:BenchModel",
                           {"n_entities": 30, "cost_us": 0, "fanout": 1}, group="tiny",
                           steps=1)
    out = calibrate(tmp_path / "model", minutes=1.0, datasets=list(DEFAULT_DATASETS[:1]),
                    configs=[config], epochs=1, progress=False, say=lambda msg: None)
    rows = load_rows([out / "calibration.npz"])
    assert rows["names"].tolist() == ["tiny-bench", "tiny-bench"]  # two preflights
    calibrated = Predictor.load(out)
    assert calibrated.trained_on["calibration"]["configurations"] == ["tiny-bench"]
    monkeypatch.setenv(MODEL_ENV, str(out))
    monkeypatch.setattr(predictor_module, "_loaded", {})
    rt = seer.make_runtime(BenchModel(40, cost_us=1), "seer", threads="auto")
    try:
        info = rt.stpa
        assert info["model"] == str(out)
        static = np.array([[info["static"][k] for k in STATIC_FEATURES]])
        assert rt.threads == calibrated.choose(info["features"][None], info["mask"], static)[0]
    finally:
        rt.close()


def test_the_per_user_directory_is_used_when_nothing_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv(MODEL_ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert predictor_module.model_dir() == predictor_module.DATA_DIR
    user = tmp_path / "seer" / "stpa"
    Predictor.load(predictor_module.DATA_DIR).save(user)
    assert predictor_module.model_dir() == user
