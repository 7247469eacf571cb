"""A newcomer from the wheel: README's own model, taken out of README.md, saved in a
directory outside the repository, and every command README shows for it run there with the
installed wheel (not this checkout), as a new user would."""

from __future__ import annotations

import shlex
import site
import subprocess
import sys
from pathlib import Path

import pytest

from tests.readme_model import readme_commands, write_flock

ROOT = Path(__file__).resolve().parents[1]


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory) -> Path:
    """A fresh venv with the project's built wheel installed; the dependencies (numpy,
    atomics, gymnasium, pettingzoo, xgboost...) come from this interpreter's environment as
    plain paths, whose .pth files do not run, so this checkout's editable install is not
    seen and ``seer`` can only come from the wheel."""
    tmp = tmp_path_factory.mktemp("wheel")
    wheels = tmp / "wheels"
    built = _run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps",
                  "--no-build-isolation", "-q", "-w", str(wheels)], tmp)
    assert built.returncode == 0, built.stdout + built.stderr
    venv = tmp / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], tmp)
    assert made.returncode == 0, made.stderr
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    venv_site = next((venv / "lib").glob("python*/site-packages"))
    (venv_site / "deps.pth").write_text("\n".join(deps) + "\n")
    installed = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps",
                      "--no-index", "-q", str(next(wheels.glob("seer_ft-*.whl")))], tmp)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return venv


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """The newcomer's own directory, outside the repository, with README's flock.py."""
    folder = write_flock(tmp_path_factory.mktemp("newcomer"))
    (folder / "quiet.py").write_text("from flock import Flock\n\n\nclass Quiet(Flock):\n"
                                     "    sample_actions = None\n")
    return folder


def test_readme_model_runs_as_a_script_and_as_a_pettingzoo_env(wheel_venv, home):
    python = str(wheel_venv / "bin" / "python")
    where = _run([python, "-c", "import seer; print(seer.__file__)"], home)
    assert str(wheel_venv) in where.stdout, where.stdout + where.stderr
    ran = _run([python, "flock.py"], home)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    env = _run([python, "flock_env.py"], home)
    assert env.returncode == 0, env.stdout + env.stderr
    assert "Passed Parallel API test" in env.stdout


def test_every_command_readme_shows_works_as_written(wheel_venv, home):
    commands = readme_commands()
    assert {c.split()[1] for c in commands} >= {"verify", "bench", "trace", "stpa", "demo"}
    for command in commands:
        words = shlex.split(command)
        run = _run([str(wheel_venv / "bin" / words[0]), *words[1:]], home)
        assert run.returncode == 0, f"{command}\n{run.stdout}\n{run.stderr}"
        if words[1] == "verify":
            assert "OK: all 14 runtime(s) gave serial's results" in run.stdout, run.stdout
        if words[1] == "bench":
            assert "events per step" in run.stdout and "WARNING" not in run.stdout
        if words[1] == "trace":
            assert (home / "flock.json").stat().st_size and (home / "flock.png").stat().st_size
        if words[1] == "stpa":
            assert run.stdout.strip(), run.stderr


def test_threads_auto_from_the_wheel(wheel_venv, home):
    script = ("import seer\nfrom flock import Flock\n"
              "rt = seer.make_runtime(Flock(n_entities=500), 'seer', threads='auto')\n"
              "print(rt.threads, rt.stpa['threads'])\nrt.close()\n")
    run = _run([str(wheel_venv / "bin" / "python"), "-c", script], home)
    assert run.returncode == 0, run.stdout + run.stderr
    threads, chosen = map(int, run.stdout.split())
    assert threads == chosen >= 1


@pytest.mark.parametrize("verb", ["verify", "bench"])
def test_a_model_without_events_fails_with_the_fix(wheel_venv, home, verb):
    run = _run([str(wheel_venv / "bin" / "seer"), verb, "quiet:Quiet", "n_entities=50",
                "--steps", "2"], home)
    assert run.returncode != 0
    said = run.stdout + run.stderr
    assert "not one event ran" in said and "sample_actions(step)" in said, said
