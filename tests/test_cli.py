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


def _main(argv, capsys):
    """``seer ARGV`` in this process: (exit status, stdout, stderr)."""
    try:
        status = cli.main(argv)
    except SystemExit as exc:  # argparse's own exits
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


# Each bad invocation and a piece of its one error line (after "seer CMD: error: ").
MISSING = "/nonexistent-seer-dir/out"
BAD_INVOCATIONS = [
    (["nosuch"], "seer", "invalid choice: 'nosuch'"),
    (["info", "--bogus"], "seer", "unrecognized arguments: --bogus"),
    (["demo", "--steps", "-1"], "seer demo", "argument --steps: must be a whole number >= 1, "
                                             "got '-1'"),
    (["demo", "--steps", "0"], "seer demo", "argument --steps: must be a whole number >= 1"),
    (["demo", "--steps", "x"], "seer demo", "argument --steps: must be a whole number >= 1"),
    (["demo", "--threads", "0"], "seer demo", "argument --threads: must be a whole number"),
    (["demo", "--threads", "999", "--uavs", "10"], "seer demo",
     "threads must be an int in 1..256, got 999"),
    (["demo", "--uavs", "-5"], "seer demo", "argument --uavs: must be a whole number >= 1"),
    (["demo", "--seed", "-1"], "seer demo", "argument --seed: must be a whole number >= 0"),
    (["demo", "--cost-us", "-3"], "seer demo", "Aircraft cost_us must be a finite number in "
                                               "(0, 1e+06], got -3.0"),
    (["demo", "--cost-us", "nan"], "seer demo", "Aircraft cost_us must be a finite number"),
    (["demo", "--model", "nope"], "seer demo", "unknown model 'nope'"),
    (["demo", "--model", "pcs:"], "seer demo", "model spec 'pcs:' must be a registered model "
                                               "name or 'module:callable'"),
    (["demo", "--model", "no_such_module_xyz:X"], "seer demo",
     "cannot import 'no_such_module_xyz'"),
    (["demo", "--model", "seer:__version__"], "seer demo",
     "'__version__' is a str, not a callable"),
    (["demo", "--model", "pcs", "--uavs", "10"], "seer demo",
     "no argument named 'n_uavs'; it takes width"),
    (["demo", "--model", "pcs", "width"], "seer demo", "model argument 'width' must be "
                                                       "key=value"),
    (["demo", "--model", "pcs", "1x=3"], "seer demo", "model argument '1x=3' must be "
                                                      "key=value"),
    (["demo", "--model", "pcs", "width=4", "width=5"], "seer demo",
     "model argument 'width' is given twice"),
    (["demo", "--model", "pcs", "width=x"], "seer demo", "PCS width must be an int >= 1, "
                                                         "got 'x'"),
    (["demo", "--model", "pcs", "max_steps=0"], "seer demo", "PCS max_steps must be an int "
                                                             ">= 1 or None, got 0"),
    (["demo", "--model", "bench", "n_entities=4", "fanout=1.5"], "seer demo",
     r"BenchModel fanout must be an int in 0..16, got 1.5"),
    (["demo", "--model", "aircraft", "seed=-1"], "seer demo", "Aircraft seed must be an int "
                                                              ">= 0, got -1"),
    (["trace", "nope"], "seer trace", "unknown model 'nope'"),
    (["trace", "pcs", "--steps", "-2"], "seer trace", "argument --steps: must be a whole "
                                                      "number >= 1, got '-2'"),
    (["trace", "pcs", "--warmup", "-1"], "seer trace", "argument --warmup: must be a whole "
                                                       "number >= 0"),
    (["trace", "pcs", "--threads", "0"], "seer trace", "argument --threads: must be a whole"),
    (["trace", "pcs", "--seed", "-3"], "seer trace", "argument --seed: must be a whole"),
    (["trace", "pcs", "width=4", "height=4", "--runtime", "nope"], "seer trace",
     "unknown runtime 'nope'"),
    (["trace", "pcs", "-o", f"{MISSING}/t.json"], "seer trace",
     f"argument -o/--out: cannot write '{MISSING}/t.json': no directory"),
    (["trace", "pcs", "--png", f"{MISSING}/t.png"], "seer trace", "argument --png: cannot "
                                                                  "write"),
    (["trace", "pcs", "hotspot=maybe"], "seer trace", "PCS hotspot must be a bool"),
    (["verify", "nope"], "seer verify", "unknown model 'nope'"),
    (["verify", "pcs", "--steps", "-1"], "seer verify", "argument --steps: must be a whole "
                                                        "number >= 1"),
    (["verify", "pcs", "--threads", "0"], "seer verify", "argument --threads: must be a whole"),
    (["verify", "pcs", "--runtimes", "nope:2"], "seer verify", "unknown runtime 'nope'"),
    (["verify", "pcs", "--seeds", "-1"], "seer verify", "argument --seeds: must be a whole "
                                                        "number >= 0"),
    (["verify", "pcs", "--import", "no_such_module_xyz"], "seer verify",
     "No module named 'no_such_module_xyz'"),
    (["bench", "nope"], "seer bench", "unknown model 'nope'"),
    (["bench", "pcs", "--steps", "-1"], "seer bench", "argument --steps: must be a whole "
                                                      "number >= 1"),
    (["bench", "pcs", "--rounds", "0"], "seer bench", "argument --rounds: must be a whole"),
    (["bench", "pcs", "--warmup", "-1"], "seer bench", "argument --warmup: must be a whole "
                                                       "number >= 0"),
    (["bench", "pcs", "--runtimes", "seer:0"], "seer bench", "argument --runtimes: 'seer:0': "
                                                             "threads must be an int in 1..256"),
    (["bench", "pcs", "--json", f"{MISSING}/b.json"], "seer bench", "argument --json: cannot "
                                                                    "write"),
    (["bench", "pcs", "--runtimes", "nope"], "seer bench", "unknown runtime(s) nope"),
    (["check", "no_such_check"], "seer check", "unknown check no_such_check; choose from"),
    (["check", "--example", "nope"], "seer check", "argument --example: invalid choice"),
    (["check", "--example", "aba", "--strategy", "nope"], "seer check",
     "argument --strategy: unknown strategy 'nope'; use one of dfs, dpor"),
    (["check", "--example", "aba", "--replay", "garbage"], "seer check",
     "argument --replay: schedule 'garbage' must start with 'sc:' or 'weak:'"),
    (["check", "--example", "aba", "--replay", "sc:5*40"], "seer check",
     "--replay 'sc:5*40' does not fit this check: the schedule fits only its first 0 "
     "decisions: decision 1 runs thread 5, which cannot run there"),
    (["check", "--example", "aba", "--trace", f"{MISSING}/x.json"], "seer check",
     "argument --trace: cannot write"),
    (["check", "leq", "--strategy", "dpor"], "seer check", "--strategy needs --example"),
    (["check", "--example", "aba", "leq"], "seer check", "--example aba runs alone"),
    (["stpa"], "seer stpa", "required: stpa_command"),
    (["stpa", "train", "--dataset", f"{MISSING}/x.npz"], "seer stpa train",
     f"{MISSING}/x.npz"),
    (["stpa", "train", "--epochs", "-1"], "seer stpa train", "argument --epochs: must be a "
                                                             "whole number >= 1"),
    (["stpa", "evaluate", "--folds", "0"], "seer stpa evaluate", "argument --folds: must be"),
    (["stpa", "evaluate", "--dataset", f"{MISSING}/x.npz"], "seer stpa evaluate",
     f"{MISSING}/x.npz"),
    (["stpa", "collect", "--t-max", "0"], "seer stpa collect", "argument --t-max: must be"),
    (["stpa", "predict", "nope"], "seer stpa predict", "unknown model 'nope'"),
    (["stpa", "predict", "pcs", "--runtime", "nope"], "seer stpa predict",
     "unknown runtime 'nope'"),
    (["stpa", "predict", "pcs", "width=x"], "seer stpa predict", "PCS width must be an int"),
]


@pytest.mark.parametrize(("argv", "prog", "message"), BAD_INVOCATIONS,
                         ids=[" ".join(argv) for argv, _, _ in BAD_INVOCATIONS])
def test_a_bad_invocation_is_one_error_line_and_exit_status_2(argv, prog, message, capsys,
                                                              tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # whatever a command would write lands here
    status, out, err = _main(argv, capsys)
    assert status == 2, (out, err)
    assert out == ""  # refused before the command began
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{prog}: error: "), lines[0]
    assert message in lines[0]
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


def test_a_bug_in_a_model_keeps_its_traceback(tmp_path, monkeypatch, capsys):
    (tmp_path / "buggy_models_xyz.py").write_text(
        "import seer\n\n"
        "def broken(n=3):\n    return 1 / 0\n\n"
        "def refusing(n=3):\n    raise seer.ModelError('refusing n=' + str(n))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ZeroDivisionError):
        cli.main(["demo", "--model", "buggy_models_xyz:broken"])
    status, _, err = _main(["trace", "buggy_models_xyz:refusing", "n=4"], capsys)
    assert status == 2 and err == "seer trace: error: refusing n=4\n"


def test_the_console_script_refuses_a_negative_count_in_one_line(tmp_path):
    exe = Path(sys.executable).with_name("seer")
    result = subprocess.run([str(exe), "trace", "pcs", "--steps", "-2"], capture_output=True,
                            text=True, cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "seer trace: error: argument --steps: must be a whole number >= 1, got '-2' "
        "(see seer trace --help)"]
    assert list(tmp_path.iterdir()) == []


def test_trace_writes_its_file(tmp_path, capsys):
    out = tmp_path / "t.json"
    assert cli.main(["trace", "pcs", "width=4", "height=4", "--steps", "1", "--warmup", "0",
                     "--threads", "2", "-o", str(out)]) == 0
    assert out.exists() and f"{out}: " in capsys.readouterr().out


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


def test_list_names_every_registered_model_and_runtime(capsys):
    from seer.sched import RUNTIMES
    from seer.specs import registered_models

    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for name, target in registered_models().items():
        assert re.search(rf"^\s+{re.escape(name)}\s+{re.escape(target)}$", out, re.M), name
    for name in RUNTIMES:
        assert re.search(rf"^\s+{re.escape(name)}\s+\S", out, re.M), name


def test_help_describes_seer_in_whole_sentences_and_names_no_missing_command(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "bit-identical to serial stepping." in out and "seer list" in out
    for verb in ("bench", "verify", "trace"):
        with pytest.raises(SystemExit):
            cli.main([verb, "--help"])
        text = capsys.readouterr().out
        assert "--list" not in text and "--import" in text, verb
