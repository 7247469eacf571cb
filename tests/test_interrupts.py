"""Whose code a Ctrl-C landed in (:func:`seer.interrupts.in_model_code`).

The runtime-level promises (never wedged, never hung) are in tests/sched/test_interrupts.py;
these pin the rule they rest on, frame by frame."""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
from types import FrameType

import numpy as np
import pytest

from seer import interrupts
from seer.sched.pool import WorkerStats


def _frame_in(call, name: str) -> FrameType:
    """The frame of the first call of a function called ``name`` during ``call()``."""
    found: list[FrameType] = []

    def tracer(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code.co_name == name and not found:
            found.append(frame)

    sys.setprofile(tracer)
    try:
        call()
    finally:
        sys.setprofile(None)
    assert found, f"no call of {name} during {call}"
    return found[0]


@dataclasses.dataclass
class UsersRecord:
    value: int = 0


def test_the_users_own_code_is_model_code():
    assert interrupts.in_model_code(sys._getframe())


def test_seers_code_is_not():
    frame = _frame_in(lambda: interrupts.Guard(None, None), "__init__")
    assert frame.f_code.co_filename == interrupts.__file__
    assert not interrupts.in_model_code(frame)


def test_generated_code_is_judged_by_its_module():
    # A dataclass's __init__ is made with exec: its file is "<string>".
    seers = _frame_in(WorkerStats, "__init__")
    assert seers.f_code.co_filename.startswith("<")
    assert not interrupts.in_model_code(seers)
    users = _frame_in(UsersRecord, "__init__")
    assert users.f_code.co_filename.startswith("<")
    assert interrupts.in_model_code(users)


def test_library_frames_are_stepped_over_to_their_caller():
    # numpy called from the user's code is the user's; from seer's, seer's.
    frame = _frame_in(lambda: np.testing.assert_equal(1, 1), "assert_equal")
    assert interrupts.in_model_code(frame)
    frame = _frame_in(lambda: interrupts._libraries(), "_libraries")
    assert not interrupts.in_model_code(frame)


def test_code_of_a_module_without_a_file_is_the_users():
    # As a handler typed at the interactive prompt or in a notebook cell.
    namespace = {"__name__": "a_notebook_cell", "sys": sys}
    exec("def handler():\n    return sys._getframe()\n", namespace)
    assert "a_notebook_cell" not in sys.modules
    assert interrupts.in_model_code(namespace["handler"]())


def _chain(caller_module: str, callee_file: str, callee_module: str) -> FrameType:
    """The frame of a function in ``callee_file`` (module ``callee_module``), called by a
    function of module ``caller_module``."""
    callee: dict = {"__name__": callee_module, "sys": sys}
    exec(compile("def inner():\n    return sys._getframe()\n", callee_file, "exec"), callee)
    caller: dict = {"__name__": caller_module, "inner": callee["inner"]}
    exec(compile("def outer():\n    return inner()\n", "<caller>", "exec"), caller)
    return caller["outer"]()


def test_seer_is_seers_own_code_wherever_it_is_installed(monkeypatch):
    # A system or container Python: seer installed under the standard library's folder.
    root = os.path.join(os.path.dirname(os.path.dirname(interrupts.__file__)), "")
    monkeypatch.setattr(interrupts, "_libraries_found", ((), (root,), ()))
    frame = _frame_in(lambda: interrupts.Guard(None, None), "__init__")
    assert not interrupts.in_model_code(frame)


def test_site_packages_inside_the_standard_library_is_not_the_standard_library(monkeypatch):
    stdlib, site = "/opt/py/lib/python3.14t/", "/opt/py/lib/python3.14t/site-packages/"
    monkeypatch.setattr(interrupts, "_libraries_found", ((), (stdlib,), (site,)))
    # called by seer's code: installed there, it is the user's and decides at once ...
    assert interrupts.in_model_code(_chain("seer.fake", site + "userenv/env.py", "userenv"))
    # ... while the standard library's own is stepped over to seer's code that called it
    assert not interrupts.in_model_code(_chain("seer.fake", stdlib + "json/x.py", "json.x"))


def test_code_made_for_no_module_is_judged_by_its_caller():
    # A namedtuple's __new__ runs in globals named "namedtuple_<name>", not a module.
    assert not interrupts.in_model_code(_chain("seer.fake", "<string>", "namedtuple_Event"))
    assert interrupts.in_model_code(_chain("a_users_module", "<string>", "namedtuple_Event"))


def test_a_ctrl_c_the_models_code_swallows_is_raised_when_the_operation_ends():
    # A KeyboardInterrupt raised in a user's __del__ is ignored by Python; the operation
    # still raises it when it ends.
    guard = interrupts.enter()
    assert guard.active, "needs Python's default SIGINT handler on the main thread"
    try:
        with pytest.raises(KeyboardInterrupt):
            interrupts._handler(signal.SIGINT, sys._getframe())  # lands in the user's code
    finally:
        with pytest.raises(KeyboardInterrupt):
            interrupts.leave(guard)
    assert interrupts.current() is None
