"""SEER: run one step of a multi-agent environment as timestamped events on the threads of
a free-threaded CPython, with results bit-identical to serial stepping.

Quick use::

    import seer
    rt = seer.SerialRuntime(MyModel(n_entities=100))
    out = rt.reset(seed=0)
    out = rt.step(actions)
"""

from seer.errors import (
    CausalityError,
    ContractError,
    HandlerError,
    IsolationError,
    LookaheadError,
    ModelError,
    NonFiniteTimeError,
    RuntimeStateError,
    SeerError,
    UnknownKindError,
    UnknownTargetError,
)
from seer.events import Event
from seer.model import Context, Model, StateArrays
from seer.platform import GILWarning, cpu_count, free_threaded_build, gil_disabled
from seer.runtime import Runtime, StepResult
from seer.serial import SerialRuntime

__version__ = "0.1.0"

__all__ = [
    "CausalityError",
    "Context",
    "ContractError",
    "Event",
    "GILWarning",
    "HandlerError",
    "IsolationError",
    "LookaheadError",
    "Model",
    "ModelError",
    "NonFiniteTimeError",
    "Runtime",
    "RuntimeStateError",
    "SeerError",
    "SerialRuntime",
    "StateArrays",
    "StepResult",
    "UnknownKindError",
    "UnknownTargetError",
    "__version__",
    "cpu_count",
    "free_threaded_build",
    "gil_disabled",
]
