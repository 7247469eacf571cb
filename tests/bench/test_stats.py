import json

import pytest

from bench.stats import Part, capacity, load, run_span


def write_pyperf(path, benchmarks):
    """A minimal pyperf file: name -> list of runs (each a list of values)."""
    path.write_text(json.dumps({"benchmarks": [
        {"metadata": {"name": name},
         "runs": [{"metadata": {"date": f"2025-01-01T10:{i:02d}:00"}, "values": values}
                  for i, values in enumerate(runs)]}
        for name, runs in benchmarks.items()]}))


def test_load_normalises_colon_runtime_names(tmp_path):
    write_pyperf(tmp_path / "r.json", {"step-n60-cost0us-seer:2": [[1.0]],
                                       "step-n60-cost0us-serial": [[2.0]]})
    assert load(tmp_path / "r.json") == {"step-n60-cost0us-seer(2)": [[1.0]],
                                         "step-n60-cost0us-serial": [[2.0]]}


def test_part_pairs_speedups_by_round():
    # round 2 ran on a machine twice as slow: the ratio within each round stays 2
    part = Part({"serial": [[2.0, 2.0], [4.0, 4.0]], "seer(2)": [[1.0, 1.0], [2.0, 2.0]]})
    assert part["serial"] == 3.0
    assert part.speedup("serial", "seer(2)") == 2.0
    assert part.spread("serial", "seer(2)") == (2.0, 2.0)


def test_capacity_and_run_span(tmp_path):
    runs = {"capacity-1thread": [[1.0], [1.0]], "capacity-2threads": [[1.0], [2.0]]}
    whole, per_round = capacity(runs)
    assert whole == pytest.approx(2 * 1.0 / 1.5)
    assert per_round == [2.0, 1.0]
    write_pyperf(tmp_path / "r.json", {"x": [[1.0], [1.0], [1.0]]})
    assert run_span([tmp_path / "r.json"]) == "2025-01-01 10:00 to 10:02 UTC, 2 minutes"
