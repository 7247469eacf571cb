"""bench/marl_loop.py: the smoke run writes the figures report.py needs, the report's line
and the plot render, and the timed loop is step_arrays split in two (same outputs)."""

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("pettingzoo")

from bench import marl_loop
from bench.harness import make_model
from seer.marl import SeerParallelEnv


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("marl") / "marl_loop.json"
    assert marl_loop.main(["--smoke", "--out", str(out)]) == 0
    return json.loads(out.read_text())


def test_smoke_run_records_the_breakdown_and_host_facts(smoke):
    assert smoke["command"].endswith("--smoke --out " + smoke["command"].split()[-1])
    assert smoke["mode"] == "smoke" and smoke["host"]["gil_enabled"] is False
    assert set(smoke["capacity"]) == {"before", "after"} and smoke["host"]["cores"] >= 1
    assert set(smoke["workloads"]) == {"aircraft", "pcs"}
    for w in smoke["workloads"].values():
        labels = [r["label"] for r in w["rows"]]
        assert labels[0] == "serial" and "seer(2)" in labels and "global(2)" in labels
        assert any(r["threads"] == "auto" and r["chosen_threads"] >= 1 for r in w["rows"])
        assert any(r["torch_default"] for r in w["rows"])
        for r in w["rows"]:
            assert set(r["phases"]) == set(marl_loop.PHASES)
            assert all(v >= 0 for v in r["phases"].values())
            assert r["phases"]["env"] > 0 and r["phases"]["policy"] > 0
            assert r["total"] == pytest.approx(sum(r["phases"].values()), rel=0.5)


def test_report_line_and_figure(smoke, tmp_path):
    from bench.markdown import Results, also_measured

    text = "\n".join(also_measured(Results(marl_loop=smoke)))
    for key, w in smoke["workloads"].items():  # serial and seer(2) of every workload
        rows = {r["label"]: r["total"] for r in w["rows"]}
        assert (f"serial {1e3 * rows['serial']:.0f} ms, seer(2) {1e3 * rows['seer(2)']:.0f} "
                f"ms per step ({key})") in text
    from bench.plots import draw

    names = draw(Results(marl_loop=smoke), tmp_path)
    assert names == ["marl_loop.png"] and (tmp_path / names[0]).stat().st_size > 5000


def test_timed_loop_equals_step_arrays():
    """The benchmark's split step (runtime.step + np.stack, outputs wrapped for timing)
    gives what SeerParallelEnv.step_arrays gives."""
    timed = make_model("pcs", 36, 5, 1)
    phase = marl_loop.time_outputs(timed)
    a = SeerParallelEnv(timed, "seer", threads=2)
    b = SeerParallelEnv(make_model("pcs", 36, 5, 1), "seer", threads=2)
    try:
        a.reset(seed=3)
        b.reset(seed=3)
        phase()
        entities = tuple(a.runtime.spec.agents)
        for t in range(3):
            actions = np.arange(36) % 4 if t % 2 else np.zeros(36, np.int64)
            result = a.runtime.step(dict(zip(entities, actions, strict=True)))
            obs_b, rew_b, _, _ = b.step_arrays(actions)
            assert np.stack(result.observations).tobytes() == obs_b.tobytes()
            assert np.asarray(result.rewards).tobytes() == rew_b.tobytes()
            assert phase() > 0
    finally:
        a.close()
        b.close()
