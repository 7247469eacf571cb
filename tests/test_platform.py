import subprocess
import sys
import sysconfig
import warnings

import pytest

import seer
from seer import platform


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
    names = platform.project_modules()
    for expected in ("seer", "seer.serial", "seer.model", "seer.testing", "workloads"):
        assert expected in names


def test_import_check_reports_missing_modules():
    missing, reenabled = platform.import_and_check_gil(["json", "no_such_module_xyz"])
    assert reenabled == []
    assert missing and missing[0].startswith("no_such_module_xyz")


@pytest.mark.skipif(not seer.free_threaded_build(), reason="needs a free-threaded build")
def test_a_gil_reenabling_import_is_named(tmp_path):
    # PYTHON_GIL=1 stands in for an extension without free-threading support.
    code = ("import sys; from seer import platform as p; "
            "print(p.gil_disabled(), sys._is_gil_enabled())")
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHON_GIL": "1"},
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_the_test_session_itself_runs_without_the_gil_when_required():
    import os

    if os.environ.get("SEER_REQUIRE_NOGIL") == "1":
        assert not sys._is_gil_enabled()
