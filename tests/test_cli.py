import re
import subprocess
import sys
from pathlib import Path

import pytest

import seer
from seer import cli
from seer.platform import PACKAGES

ROOT = Path(__file__).resolve().parents[1]


def test_version(capsys):
    try:
        cli.main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    assert capsys.readouterr().out.strip() == f"seer {seer.__version__}"


def test_info_prints_interpreter_gil_cores_and_packages(capsys):
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"python\s+CPython 3\.\d+", out)
    assert re.search(r"GIL\s+(disabled|ENABLED)", out)
    assert re.search(rf"cores available\s+{seer.cpu_count()}\b", out)
    assert re.search(r"numpy\s+\d", out) and re.search(r"atomics\s+1\.0\.3", out)
    for distribution, _module in PACKAGES:
        assert re.search(rf"^{re.escape(distribution)}\s+(\d|not installed)", out, re.M)


def test_demo_runs_and_checks_identical_outputs(capsys):
    assert cli.main(["demo", "--uavs", "40", "--steps", "3", "--cost-us", "100"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"seer\(2\)\s+\d+\.\d+\s+\d+\s+\d+\.\d+x", out)
    assert "outputs and state bit-identical: yes" in out


def test_demo_takes_any_model_spec_and_its_arguments(capsys):
    assert cli.main(["demo", "--model", "bench", "n_entities=30", "cost_us=0", "--steps",
                     "2"]) == 0
    out = capsys.readouterr().out
    assert "demo: " in out and "outputs and state bit-identical: yes" in out
    with pytest.raises(seer.ModelError, match="unknown model 'nope'"):
        cli.main(["demo", "--model", "nope"])
    with pytest.raises(seer.ModelError, match="unexpected keyword argument 'n_uavs'"):
        cli.main(["demo", "--model", "pcs", "--uavs", "10"])


def test_console_script_is_installed():
    exe = Path(sys.executable).with_name("seer")
    out = subprocess.run([str(exe), "info"], capture_output=True, text=True, check=True)
    assert "free-threaded build" in out.stdout


def test_readme_example_runs():
    text = (ROOT / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "events_run" in result.stdout
