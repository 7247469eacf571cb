"""Whose code a Ctrl-C landed in (:func:`seer.interrupts.in_model_code`).

The runtime-level promises (never wedged, never hung) are in tests/sched/test_interrupts.py;
these pin the rule they rest on, frame by frame."""

from __future__ import annotations

import dataclasses
import sys
from types import FrameType

import numpy as np

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
