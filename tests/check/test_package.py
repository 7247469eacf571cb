"""What a student needs ships in the wheel: the explorer, the checks, the examples, the
stress helper and the pytest option work from a built wheel installed into a fresh venv,
run from outside the repository. And the package keeps its shape: one modelled primitive a
module, with imports that point one way."""

from __future__ import annotations

import ast
import site
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: seer.check's modelled primitives, a module each: each may import the scheduler core
#: (``execution``) and the memory model, never another primitive or the session that
#: makes them, and the core imports none of them.
PRIMITIVES = frozenset({"accessor", "data", "lock", "barrier"})


def _run(cmd: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    run = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return run


def test_the_built_wheel_checks_from_outside_the_repo(tmp_path):
    wheels = tmp_path / "wheels"
    built = _run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps",
                  "--no-build-isolation", "-q", "-w", str(wheels)], tmp_path)
    assert built.returncode == 0, built.stdout + built.stderr
    wheel = next(wheels.glob("seer_ft-*.whl"))
    venv = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    # The dependencies come from this interpreter's environment, added as plain paths: a
    # plain path's own .pth files are not run, so this checkout's editable install is not
    # seen and `seer` can only come from the wheel.
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    venv_site = next((venv / "lib").glob("python*/site-packages"))
    (venv_site / "deps.pth").write_text("\n".join(deps) + "\n")
    installed = _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q",
                      str(wheel)], tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    script = outside / "student.py"
    script.write_text(textwrap.dedent("""
        import seer, seer.check
        from seer.check import explore, replay, run_threads
        from seer.check.examples import free_list_check
        from seer.check.queues import pel_check
        assert "site-packages" in seer.__file__, seer.__file__
        setup, a, b, inv = free_list_check(tagged=False)
        failure = explore(setup, a, b, invariant=inv, raises=False).failure
        assert replay(failure.schedule, setup, a, b, invariant=inv, raises=False).failure
        assert pel_check().run().exhaustive
        run_threads(2, lambda i: i)
        print("OK", seer.__file__)
    """))
    ran = _run([str(python), str(script)], outside)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "OK" in ran.stdout and str(venv) in ran.stdout
    cli = _run([str(venv / "bin" / "seer"), "check", "pel", "ring"], outside)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert "ring/relaxed-seq" in cli.stdout
    plugin = _run([str(python), "-m", "pytest", "--help"], outside)
    assert "--seer-replay" in plugin.stdout


def _check_imports(module: str) -> set[str]:
    """The ``seer.check`` modules that ``seer/check/<module>.py`` imports (those inside
    functions too)."""
    tree = ast.parse((ROOT / "seer" / "check" / f"{module}.py").read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("seer.check."):
            found.add(node.module.removeprefix("seer.check."))
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("seer.check.") for a in node.names
                      if a.name.startswith("seer.check.")}
    return found


def test_the_model_path_has_one_primitive_a_module_and_imports_point_one_way():
    assert _check_imports("execution") <= {"memory"}
    for primitive in sorted(PRIMITIVES):
        assert _check_imports(primitive) <= {"execution", "memory"}, primitive
    assert _check_imports("session") <= {"execution", *PRIMITIVES}
    # The old home only re-exports: every name it had still imports from it.
    from seer.check import execution, scheduler, session
    assert scheduler.Session is session.Session and scheduler.yield_now is execution.yield_now
    assert _check_imports("scheduler") == {"execution", "session", *PRIMITIVES}
