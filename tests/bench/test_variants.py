"""bench.variants: candidate fixes for the scaling tax, timed against SEER as it is."""

import json

import numpy as np
import pytest

from bench import variants
from bench.bench_runtimes import make_model


def test_block_homes_are_contiguous_id_blocks():
    homes = variants.BlockSteal().home(np.arange(10), 3, 10)
    assert homes.tolist() == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_deferring_the_model_reaches_its_containers():
    model = make_model("pcs", 16, 15.0, 1)
    n = variants._defer(model)
    # the model and its neighbour and coordinate lists (their tuples of numbers are not
    # tracked by the garbage collector, so CPython does not defer them)
    assert n >= 3
    assert variants._defer(model) == 0  # already deferred: nothing left to do


def test_smoke_run_keeps_every_variant_serial_equivalent(tmp_path):
    out = tmp_path / "v.json"
    data = variants.main(["--smoke", "--threads", "2", "--out", str(out)])
    assert json.loads(out.read_text())["results"] == data["results"]
    (result,) = data["results"]
    assert list(result["variants"]) == list(variants.VARIANTS)  # the reference first
    digests = {r["digest"] for r in result["variants"].values()}
    assert len(digests) == 1
    for r in result["variants"].values():
        assert len(r["wall_s"]) == len(r["cpu_s"]) == 2 and min(r["wall_s"]) > 0
    text = "\n".join(variants.section(data))
    assert "| seer | " in text and "| 1.000 (1.00-1.00) | 1.000 | yes |" in text
    assert "**no**" not in text


def test_a_variant_that_changes_results_is_flagged():
    def rows(digest):
        return {"wall_s": [1.0], "cpu_s": [1.0], "digest": digest}

    data = {"rounds": 1, "host": {"cores": 2}, "capacity_threads": 2,
            "capacity_before": 1.9, "capacity_after": 1.8,
            "results": [{"workload": "pcs", "entities": 4, "cost_us": 15, "threads": 2,
                         "variants": {"seer": rows("a"), "parking": rows("b")}}]}
    assert "| parking | 1000.0 | 1.000 (1.00-1.00) | 1.000 | **no** |" in "\n".join(
        variants.section(data))


def test_refuses_bad_arguments(tmp_path):
    with pytest.raises(SystemExit):
        variants.main(["--threads", "0", "--out", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit):
        variants.main(["--variants", "nonsense", "--out", str(tmp_path / "x.json")])
