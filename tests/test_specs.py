"""Model specs: registered names (entry points of the group seer.models), "module:qualname"
and key=value arguments."""

import importlib
import importlib.metadata
import sys

import pytest

import seer
from seer.specs import ENTRY_POINT_GROUP, load_model, registered_models, resolve_spec
from seer.stpa.dataset import default_configurations

# What pyproject.toml registers; seer resolves these names and never spells the modules.
PROJECT_MODELS = {
    "aircraft": "workloads.aircraft:Aircraft",
    "bench": "workloads.synthetic:BenchModel",
    "empty": "workloads.synthetic:EmptyModel",
    "pcs": "workloads.pcs:PCS",
    "pursuit": "workloads.pursuit:Pursuit",
}


def test_the_project_registers_its_workloads_by_name():
    registered = registered_models()
    assert PROJECT_MODELS.items() <= registered.items()
    for name, spec in PROJECT_MODELS.items():
        assert resolve_spec(name) == spec
        module, _, qualname = spec.partition(":")
        assert getattr(importlib.import_module(module), qualname).__name__ == qualname


def test_a_registered_name_and_its_spec_build_the_same_model():
    by_name = load_model("pcs", {"width": 4, "height": 3})
    by_spec = load_model("workloads.pcs:PCS", {"width": 4, "height": 3})
    assert type(by_name) is type(by_spec) and by_name.n_entities == 12


def test_unknown_names_and_bad_arguments_are_named():
    with pytest.raises(seer.ModelError, match=r"unknown model 'aircrft': not a registered "
                                              r"model name \(registered: aircraft, bench, "):
        load_model("aircrft")
    with pytest.raises(seer.ModelError, match="must be a registered model name or "
                                              "'module:callable'"):
        resolve_spec("pcs:")
    with pytest.raises(seer.ModelError, match=r"model spec 'pcs' \(= 'workloads.pcs:PCS'\): "
                                              r"no argument named 'n_uavs'; it takes width, "
                                              r"height, cost_us, "):
        load_model("pcs", {"n_uavs": 3})
    # a misspelt name is named before the required argument it was meant to be
    with pytest.raises(seer.ModelError, match=r"no argument named 'n'; it takes n_uavs"):
        load_model("aircraft", {"n": 3, "cost_us": 5})
    with pytest.raises(seer.ModelError, match="cannot import 'no_such_module_xyz'"):
        load_model("no_such_module_xyz:Model")


def _install_distribution(root, name, entry_points):
    """A minimal installed distribution under ``root`` (found through sys.path), whose
    ``seer.models`` entry points are ``entry_points``."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}")


def test_a_model_outside_the_repository_registers_through_its_own_distribution(
        tmp_path, monkeypatch):
    (tmp_path / "user_models_xyz.py").write_text(
        "from workloads.synthetic import BenchModel\n\n"
        "def tiny(n=3):\n    return BenchModel(n)\n")
    _install_distribution(tmp_path, "user_models_xyz", {"tiny": "user_models_xyz:tiny"})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert registered_models()["tiny"] == "user_models_xyz:tiny"
    assert load_model("tiny", {"n": 5}).n_entities == 5
    with seer.make_runtime(load_model("tiny"), "seer", threads=2) as rt:
        rt.reset(0)
        rt.step(None)
    sys.modules.pop("user_models_xyz", None)


def test_a_name_registered_twice_is_an_error(tmp_path, monkeypatch):
    _install_distribution(tmp_path, "other_models_xyz", {"pcs": "other_models_xyz:PCS"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(seer.ModelError, match=r"registered more than once .*'pcs'"):
        resolve_spec("pcs")


def test_stpa_training_configurations_name_the_registered_models():
    specs = {c.spec for c in default_configurations()}
    assert specs == {PROJECT_MODELS[name] for name in ("bench", "pcs", "aircraft")}


def test_count_types_take_whole_numbers_at_their_minimum_and_name_what_they_got():
    import argparse

    from seer.specs import non_negative_int, positive_int

    assert positive_int("1") == 1 and positive_int("12") == 12
    assert non_negative_int("0") == 0
    for text in ("0", "-2", "x", "1.5", "", "1e3"):
        with pytest.raises(argparse.ArgumentTypeError,
                           match=rf"must be a whole number >= 1, got {text!r}"):
            positive_int(text)
    with pytest.raises(argparse.ArgumentTypeError, match="must be a whole number >= 0, got '-1'"):
        non_negative_int("-1")


def test_output_file_refuses_a_path_whose_directory_is_missing(tmp_path):
    import argparse

    from seer.specs import output_file

    assert output_file("") == "" and output_file("out.json") == "out.json"
    assert output_file(str(tmp_path / "t.json")) == str(tmp_path / "t.json")
    with pytest.raises(argparse.ArgumentTypeError, match=r"cannot write '.*/nope/t\.json': "
                                                         r"no directory '.*/nope'"):
        output_file(str(tmp_path / "nope" / "t.json"))
    with pytest.raises(argparse.ArgumentTypeError, match="it is a directory"):
        output_file(str(tmp_path))


def test_model_arguments_are_key_value_words_each_key_once():
    from seer.specs import parse_kwargs

    assert parse_kwargs(["width=20", "hotspot=False", "name=abc", "x="]) == {
        "width": 20, "hotspot": False, "name": "abc", "x": ""}
    for word in ("width", "=3", "1x=3", "a-b=2"):
        with pytest.raises(seer.ModelError, match=rf"^model argument {word!r} must be "
                                                  "key=value$"):
            parse_kwargs([word])
    with pytest.raises(seer.ModelError, match=r"^model argument 'width' is given twice "
                                              r"\('width=4'\)$"):
        parse_kwargs(["width=3", "height=2", "width=4"])
