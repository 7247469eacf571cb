import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import sysconfig
import tomllib
import warnings
from pathlib import Path

import pytest

import seer
from seer import platform
from seer.specs import ENTRY_POINT_GROUP
from tests.conftest import PROJECT_PACKAGES


def test_gil_facts_match_the_interpreter():
    assert seer.free_threaded_build() == (sysconfig.get_config_var("Py_GIL_DISABLED") == 1)
    assert seer.gil_disabled() == (seer.free_threaded_build() and not sys._is_gil_enabled())
    assert seer.cpu_count() >= 1


def test_warns_once_when_threads_are_asked_for_under_the_gil(monkeypatch):
    monkeypatch.setattr(platform, "gil_disabled", lambda: False)
    monkeypatch.setattr(platform, "_warned", False)
    with pytest.warns(seer.GILWarning, match="asked for 4 threads but the GIL is enabled"):
        assert platform.warn_if_gil_enabled(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert platform.warn_if_gil_enabled(4)  # applies, but is not printed again
        assert not platform.warn_if_gil_enabled(1)


def test_no_warning_without_the_gil(monkeypatch):
    monkeypatch.setattr(platform, "gil_disabled", lambda: True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not platform.warn_if_gil_enabled(8)


def test_project_modules_are_all_listed():
    names = platform.project_modules(PROJECT_PACKAGES)
    for expected in ("seer", "seer.serial", "seer.model", "seer.testing", "seer.stpa.adam",
                     "workloads", "workloads.pcs.model", "workloads.synthetic"):
        assert expected in names
    assert names.index("workloads") < names.index("workloads.pcs")
    assert not any(name.startswith("workloads") for name in platform.project_modules())
    assert platform.project_modules(["no_such_package_xyz"]) == ["no_such_package_xyz"]


def test_the_gil_guard_imports_every_package_that_registers_models():
    # A package of this project added to the seer.models entry points is guarded too.
    eps = importlib.metadata.distribution("seer-ft").entry_points.select(
        group=ENTRY_POINT_GROUP)
    tops = {ep.module.split(".")[0] for ep in eps}
    assert tops and tops <= set(PROJECT_PACKAGES)


def test_packages_table_covers_every_dependency_and_extra():
    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra, reqs in project["optional-dependencies"].items():
        if extra != "all":
            requirements += reqs
    declared = {re.match(r"[A-Za-z0-9._-]+", r).group().lower().replace("_", "-")
                for r in requirements}
    # tools that are run, never imported, so not in the table: ruff (the linter) and
    # setuptools (the build backend tests/check/test_package.py builds the wheel with)
    declared -= {"ruff", "setuptools"}
    listed = [distribution for distribution, _module in platform.PACKAGES]
    assert sorted(listed) == sorted(declared)
    assert tuple(module for _d, module in platform.PACKAGES) == platform.EXTRA_MODULES


def test_each_installed_distribution_provides_its_module():
    for distribution, module in platform.PACKAGES:
        try:
            importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
        assert importlib.util.find_spec(module) is not None, (distribution, module)


def test_import_check_reports_missing_modules():
    missing, reenabled = platform.import_and_check_gil(["json", "no_such_module_xyz"])
    assert reenabled == []
    assert missing and missing[0].startswith("no_such_module_xyz")


ATTACH = """
import sys
from seer import platform
block = platform.attach_shared_memory(sys.argv[1])
block.buf[1] = block.buf[0] + 1
block.close()
"""


def test_a_process_that_attaches_leaves_the_block_to_its_creator():
    # Before 3.13 an attaching process's resource tracker unlinked the block at exit.
    block = platform.create_shared_memory(64)
    try:
        block.buf[0] = 7
        # capture_output: run() returns only when the child's resource tracker (which
        # shares its stderr) has exited too, so any unlinking has happened by then.
        out = subprocess.run([sys.executable, "-c", ATTACH, block.name], capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "leaked" not in out.stderr
        again = platform.attach_shared_memory(block.name)  # still there
        assert bytes(again.buf[:2]) == bytes([7, 8])
        again.close()
    finally:
        block.close()
        block.unlink()


@pytest.mark.skipif(not seer.free_threaded_build(), reason="needs a free-threaded build")
def test_a_gil_reenabling_import_is_named(tmp_path):
    # PYTHON_GIL=1 stands in for an extension without free-threading support.
    code = ("import sys; from seer import platform as p; "
            "print(p.gil_disabled(), sys._is_gil_enabled())")
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHON_GIL": "1"},
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def _gil_enabling_extension() -> str:
    """Code that loads ``_testmultiphase_null_slots``: CPython's own test extension (in
    ``_testmultiphase``) without a Py_mod_gil slot, so loading it turns the GIL on."""
    return ("import importlib.util\n"
            "spec = importlib.util.spec_from_file_location('_testmultiphase_null_slots', "
            "importlib.util.find_spec('_testmultiphase').origin)\n"
            "importlib.util.module_from_spec(spec)\n")


needs_gil_enabling_extension = pytest.mark.skipif(
    not seer.free_threaded_build() or importlib.util.find_spec("_testmultiphase") is None,
    reason="needs a free-threaded build with CPython's test extensions")


def _run(code: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHON_GIL", "PYTHONWARNINGS")}
    return subprocess.run([sys.executable, *args, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**environ, **env}, check=False)


@needs_gil_enabling_extension
def test_the_module_that_turns_the_gil_on_is_named_whatever_the_warnings_filters():
    # -W ignore drops CPython's RuntimeWarning: the loader hook still sees the module.
    code = ("import sys\nfrom seer import platform as p\nfrom seer.cli import interpreter_facts\n"
            "print(p.gil_reenabled_by(), p.gil_status())\n" + _gil_enabling_extension()
            + "print(sys._is_gil_enabled(), p.gil_reenabled_by())\n"
            "print(interpreter_facts()['GIL'])\n")
    for flags in (["-W", "ignore"], ["-W", "always"], []):
        out = _run(code, *flags)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0] == "None disabled"
        assert lines[1] == "True _testmultiphase_null_slots"
        assert lines[2] == ("ENABLED by module '_testmultiphase_null_slots', which does not "
                            "declare free-threading support (threads give no speed-up)")


@needs_gil_enabling_extension
def test_a_module_loaded_before_seer_is_named_by_its_warning():
    code = (_gil_enabling_extension() + "from seer import platform as p\n"
            "print(p.gil_reenabled_by())\nprint(p.gil_status())\n")
    out = _run(code)  # default filters: the import system's registry keeps the warning
    assert out.returncode == 0 and out.stdout.splitlines()[0] == "_testmultiphase_null_slots"
    out = _run(code, "-W", "ignore")  # nothing left to name it by
    assert out.returncode == 0 and out.stdout.splitlines() == [
        "None", "ENABLED by a module imported before seer (python -W always names it) "
                "(threads give no speed-up)"]


@pytest.mark.skipif(not seer.free_threaded_build(), reason="needs a free-threaded build")
def test_python_gil_1_is_named_as_the_reason():
    out = _run("from seer import platform as p; print(p.gil_reenabled_by(), p.gil_status())",
               PYTHON_GIL="1")
    assert out.stdout.strip() == ("None ENABLED by PYTHON_GIL=1 or -X gil=1 "
                                  "(threads give no speed-up)"), out.stderr


def test_the_recorded_module_and_the_warning_text_are_read_back(monkeypatch):
    # Synthetic: the GIL "on" in a free-threaded build, named first by the loader hook's
    # record, else by CPython's warning in the import system's registry.
    monkeypatch.setattr(platform, "free_threaded_build", lambda: True)
    monkeypatch.setattr(platform, "gil_disabled", lambda: False)
    monkeypatch.setattr(platform, "_gil_forced_on", lambda: False)
    monkeypatch.setattr(platform, "_reenabled_by", [])
    fake = type(sys)("_frozen_importlib")
    fake.__warningregistry__ = {
        "version": 3,
        (platform._GIL_MESSAGE + "triton._C.libtriton', which has not declared that it can "
         "run safely without the GIL. To override ...", RuntimeWarning, 491): True}
    monkeypatch.setitem(sys.modules, "_frozen_importlib", fake)
    monkeypatch.delitem(sys.modules, "importlib._bootstrap", raising=False)
    assert platform.gil_reenabled_by() == "triton._C.libtriton"
    assert platform.gil_status().startswith("ENABLED by module 'triton._C.libtriton', ")
    platform._record_gil_reenabled("first._ext")
    platform._record_gil_reenabled("second._ext")
    assert platform.gil_reenabled_by() == "first._ext"
    monkeypatch.setattr(platform, "gil_disabled", lambda: True)
    assert platform.gil_reenabled_by() is None and platform.gil_status() == "disabled"


GUARDED_TEST = """
def test_fine():
    pass

def test_turns_the_gil_on():
{body}

def test_after():
    pass
"""


@needs_gil_enabling_extension
def test_the_guard_fails_a_session_in_which_a_test_turned_the_gil_on(tmp_path):
    # The guard's end-of-session check (tests/conftest.py), without its session-start
    # import of every extra: a conftest that takes only those hooks.
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_runtest_teardown, pytest_sessionfinish  # noqa\n")
    body = "".join(f"    {line}\n" for line in _gil_enabling_extension().splitlines())
    (tmp_path / "test_guarded.py").write_text(GUARDED_TEST.format(body=body))
    root = str(Path(__file__).parents[1])
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHON_GIL", "PYTHONWARNINGS")}
    for guard, status in (("1", 3), ("0", 0)):
        out = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore",
             str(tmp_path)], capture_output=True, text=True, timeout=120, check=False,
            cwd=tmp_path, env={**environ, "PYTHONPATH": root, "SEER_REQUIRE_NOGIL": guard})
        assert out.returncode == status, out.stdout + out.stderr
        assert "3 passed" in out.stdout
        named = ("SEER_REQUIRE_NOGIL=1: the GIL was turned on during test_guarded.py::"
                 "test_turns_the_gil_on: ENABLED by module '_testmultiphase_null_slots'")
        assert (named in out.stdout) == (guard == "1"), out.stdout


def test_the_test_session_itself_runs_without_the_gil_when_required():
    import os

    if os.environ.get("SEER_REQUIRE_NOGIL") == "1":
        assert not sys._is_gil_enabled()


def _shm_mode(name: str) -> int:
    return os.stat(f"/dev/shm/{name.lstrip('/')}").st_mode & 0o777


posix_shm = pytest.mark.skipif(not Path("/dev/shm").is_dir(),
                               reason="POSIX shared memory under /dev/shm")


@posix_shm
def test_created_blocks_are_readable_by_their_owner_only():
    from seer.interprocess import SharedQueues
    from seer.queues.atomic import AtomicWords

    block = platform.create_shared_memory(64)
    words, words_block = AtomicWords.shared(4)
    queues = SharedQueues(2, 8)
    try:
        # Every way the project makes a block goes through create_shared_memory.
        for shm in (block, words_block, queues.block):
            assert _shm_mode(shm.name) == platform.SHARED_MEMORY_MODE == 0o600, shm.name
            assert os.stat(f"/dev/shm/{shm.name}").st_uid == os.geteuid()
    finally:
        words.release()
        queues.close()
        queues.unlink()
        for shm in (block, words_block):
            shm.close()
            shm.unlink()


UMASK = """
import os, sys
os.umask(int(sys.argv[1], 8))
from multiprocessing import shared_memory
from seer import platform
plain = shared_memory.SharedMemory(create=True, size=64)
ours = platform.create_shared_memory(64)
for shm in (plain, ours):
    print(oct(os.stat("/dev/shm/" + shm.name).st_mode & 0o777))
    shm.close()
    shm.unlink()
"""


@posix_shm
@pytest.mark.parametrize("umask", ["000", "277"])
def test_the_mode_is_0o600_whatever_the_umask(umask):
    # A child process: the umask is process-wide, and other tests run threads here.
    out = subprocess.run([sys.executable, "-c", UMASK, umask], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    plain, ours = out.stdout.split()
    assert ours == "0o600"
    # Without the fchmod a umask that takes the owner's write bit leaves 0o400.
    assert plain == ("0o600" if umask == "000" else "0o400")


def test_a_block_whose_mode_cannot_be_set_is_refused_and_removed(monkeypatch):
    if not Path("/dev/shm").is_dir():
        pytest.skip("POSIX shared memory under /dev/shm")
    made = []
    real = platform.shared_memory.SharedMemory

    def recording(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(platform.shared_memory, "SharedMemory", recording)
    monkeypatch.setattr(platform.os, "fchmod", lambda fd, mode: None)
    monkeypatch.setattr(platform, "SHARED_MEMORY_MODE", 0o640)  # what fchmod fails to set
    with pytest.raises(PermissionError, match=r"has mode 0o600 after fchmod to 0o640"):
        platform.create_shared_memory(64)
    assert not Path(f"/dev/shm/{made[0].name}").exists()


TLS_IMPORTS = """
import sys
gil = []
import ssl; gil.append(("ssl", sys._is_gil_enabled()))
import cryptography.x509, cryptography.hazmat.primitives.asymmetric.ec
gil.append(("cryptography", sys._is_gil_enabled()))
import distributed, distributed.comm.tcp; gil.append(("distributed", sys._is_gil_enabled()))
# Use them too: a key and certificate made by cryptography's extension, and the client's
# SSL context built from them.
security = distributed.Security.temporary()
assert security.get_connection_args("client")["ssl_context"] is not None
gil.append(("a TLS context", sys._is_gil_enabled()))
print(gil)
"""


@pytest.mark.skipif(not seer.free_threaded_build(), reason="needs a free-threaded build")
def test_what_tls_needs_keeps_the_gil_off():
    pytest.importorskip("distributed")
    pytest.importorskip("cryptography")
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}
    out = subprocess.run([sys.executable, "-c", TLS_IMPORTS], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str([("ssl", False), ("cryptography", False),
                                      ("distributed", False), ("a TLS context", False)])
