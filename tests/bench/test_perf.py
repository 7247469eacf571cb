"""bench.compare --perf: perf samples attributed to the innermost Python function."""

import json
import subprocess

import pytest

from bench import compare

ROOT = compare.ROOT

# What `perf script -F tid,time,period,ip,sym,dso --ns` prints with call chains: one
# block per sample, the leaf first.
SCRIPT = f"""\
  101 10.000000100:    1000000
\t    15f7a3 _Py_TryIncrefCompare (/opt/python3.14t)
\t    164b5c _Py_dict_lookup_threadsafe+0x41c (/opt/python3.14t)
\t7f58a25385 py::PCS.hotspot_factor:{ROOT}/workloads/pcs/model.py (/tmp/perf-101.map)
\t7f58a25395 py::WindowWorker.run_entities:{ROOT}/seer/sched/dual_queue.py (/tmp/perf-101.map)

  101 10.000000200:    2000000
\t    2a9fe scipy_dlasq5_64_ (/venv/site-packages/numpy.libs/libscipy_openblas64_.so)
\t    2a9ff scipy_dlasq3_64_ (/venv/site-packages/numpy.libs/libscipy_openblas64_.so)

  101 10.000000250:    500000
\t    180047 _Py_DecRefSharedIsDead (inlined)
\t    180047 _Py_DecRefShared (/opt/python3.14t)

  102 10.000000300:    3000000
\t7f58a26b25 py::svd:/venv/lib/python3.14t/site-packages/numpy/linalg/_linalg.py (/tmp/perf-101.map)

  102 10.000000400:    4000000
\t7f58a25385 py::PCS.hotspot_factor:{ROOT}/workloads/pcs/model.py (/tmp/perf-101.map)

  102 10.000000900:    5000000
\t7f58a25385 py::PCS.hotspot_factor:{ROOT}/workloads/pcs/model.py (/tmp/perf-101.map)

"""


def test_each_sample_goes_to_its_innermost_python_function_or_its_library():
    ns = compare.attribute(SCRIPT, 10_000_000_000, 10_000_000_500)
    assert ns == {
        "PCS.hotspot_factor (workloads/pcs/model.py)": 1_000_000 + 4_000_000,
        "(native) libscipy_openblas64_.so": 2_000_000,
        "(native) python3.14t": 500_000,  # the library of the frame the inlined one is in
        "svd (numpy/linalg/_linalg.py)": 3_000_000,
    }  # the sample at 10.0000009 s is after the window


def test_an_empty_window_counts_nothing():
    assert compare.attribute(SCRIPT, 0, 9_000_000_000) == {}


def _profiles():
    def run(cpu, functions):
        return {"cpu_ms": cpu, "wall_ms": cpu, "functions": functions}

    return {"serial": run(10.0, {"a": 4.0, "b": 6.0}), "seer:1": run(11.0, {"a": 4.0, "b": 7.0}),
            "independent:2": run(10.5, {"a": 4.5, "b": 6.0}),
            "seer:2": run(14.0, {"a": 4.5, "b": 6.0, "c": 3.5})}


def test_the_table_orders_functions_by_what_the_last_run_pays_above_the_one_before():
    lines = compare.perf_table(_profiles(), top=2)
    assert lines[0] == ("| function | serial | seer:1 | independent:2 | seer:2 | "
                        "seer:2 - independent:2 |")
    rows = [line for line in lines if line.startswith("| ") and "---" not in line][1:]
    assert rows[0] == "| c | 0.00 | 0.00 | 0.00 | 3.50 | +3.50 |"
    assert rows[1] == "| a | 4.00 | 4.00 | 4.50 | 4.50 | +0.00 |"  # ties by name
    assert rows[-1] == "| **all (CPU per step)** | 10.0 | 11.0 | 10.5 | 14.0 | +3.5 |"
    assert len(rows) == 3  # top=2, then the totals


def test_refuses_without_perf(monkeypatch, capsys):
    monkeypatch.setattr(compare.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit):
        compare.main(["--perf", "serial", "seer:2", "--entities", "16"])
    assert "perf` is not installed" in capsys.readouterr().err


def test_refuses_a_single_run(capsys):
    with pytest.raises(SystemExit):
        compare.main(["--perf", "seer:2"])
    assert "give two runtimes, or two revisions" in capsys.readouterr().err


@pytest.mark.parametrize(("runtime", "runs"), [("seer:2", 1), ("independent:2", 2)])
def test_the_child_records_the_interval_of_its_timed_steps(runtime, runs):
    model = compare._model_parser().parse_args(["--entities", "64"])
    proc = subprocess.run([compare.sys.executable, *compare._child_args(model, runtime, 2)],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    window = json.loads(proc.stdout.strip().splitlines()[-1])
    assert window["steps"] == 2 and window["runs"] == runs
    assert 0 < window["start_ns"] < window["end_ns"]
    assert window["wall_s"] > 0 and window["cpu_s"] > 0


def _perf_works(tmp_path) -> bool:
    if compare.perf_problem() is not None:
        return False
    probe = subprocess.run(["perf", "record", "-q", "-o", str(tmp_path / "probe.data"), "--",
                            "true"], capture_output=True)
    return probe.returncode == 0


def test_smoke_profile_of_every_runtime(tmp_path):
    if not _perf_works(tmp_path):
        pytest.skip(f"perf cannot sample here: {compare.perf_problem() or 'perf failed'}")
    result = compare.main(["--perf", "serial", "seer:1", "independent:2", "seer:2",
                           "--entities", "400", "--steps", "4", "--top", "5",
                           "--out", str(tmp_path / "r.json")])
    assert list(result) == ["serial", "seer:1", "independent:2", "seer:2"]
    for s in result.values():
        assert s["cpu_ms"] > 0 and s["wall_ms"] > 0
        assert abs(sum(s["functions"].values()) - s["cpu_ms"]) < 1e-6
        # Python functions are named, with their file: the trampolines worked
        assert any(k.endswith(".py)") for k in s["functions"])
    # the runtime's own code is seen, under the repository-relative path
    assert any("(seer/sched/" in k for k in result["seer:2"]["functions"])
    assert json.loads((tmp_path / "r.json").read_text())["per_step"] == result


def test_a_failing_child_is_reported_with_its_error(tmp_path):
    if not _perf_works(tmp_path):
        pytest.skip(f"perf cannot sample here: {compare.perf_problem() or 'perf failed'}")
    model = compare._model_parser().parse_args(["--entities", "64", "--cost", "-1"])
    with pytest.raises(RuntimeError, match=r"(?s)perf record.*ModelError"):
        compare.perf_per_step("serial", model, 1, ROOT)
