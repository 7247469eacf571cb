"""bench.parallelism: the parallelism profile's bound beside seer(2)'s measured speed-up, the
report's section and the goal read from it."""

import json

import pytest

from bench import parallelism
from bench.markdown import Results, goal_rows, load_goals, parallelism_section, write_results
from bench.report import once_parts


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("parallelism") / "parallelism.json"
    assert parallelism.main(["--smoke", "--out", str(out)]) == 0
    return json.loads(out.read_text())


def test_every_workload_has_its_bound_and_its_measured_speedup(smoke):
    assert list(smoke["workloads"]) == ["aircraft", "pcs", "bench10", "mpe"]
    for w in smoke["workloads"].values():
        p, m = w["profile"], w["measured"]
        assert set(p["bound"]) == {"2", "4", "8", "16"}
        bounds = [p["bound"][t] for t in ("2", "4", "8", "16")]
        assert 1.0 <= bounds[0] <= 2.0 and bounds == sorted(bounds)
        assert bounds[-1] <= p["limit"] + 1e-9
        assert p["events"] > 0 and p["windows"] > 0 and p["chain"]
        assert m["speedup"] > 0 and m["identical"] is True and m["of_ceiling"] is not None
        assert w["measured_over_bound"] == pytest.approx(m["speedup"] / p["bound"]["2"])


def test_the_report_runs_it_in_every_mode():
    for mode in ("smoke", "fast", "full"):
        _needs, args = once_parts(mode)["parallelism"]
        assert args[0] == "bench.parallelism" and ("--smoke" in args) == (mode == "smoke")


def test_the_section_and_the_goal(smoke):
    r = Results(parallelism=smoke)
    lines = parallelism_section(r)
    header = next(line for line in lines if line.startswith("| workload"))
    assert "bound T=2" in header and "measured/bound" in header and "bound T=16" in header
    assert sum(line.startswith("| ") for line in lines) == 1 + 4
    assert "## Parallelism profile" in write_results(r, [])
    (goal,) = [g for g in load_goals() if g["source"] == "parallelism"]
    assert goal["at_least"] == 0.85
    for ratio, met in ((0.9, "yes"), (0.5, "**no**")):
        for w in smoke["workloads"].values():
            w["measured_over_bound"] = 1.0
        smoke["workloads"]["pcs"]["measured_over_bound"] = ratio
        (row,) = goal_rows(Results(parallelism=smoke), [goal])
        assert row[3] == met and row[2].startswith(f"{ratio:.2f} (worst: pcs")
    assert goal_rows(Results(), [goal])[0][2] == "not measured"
