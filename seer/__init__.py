"""SEER: run one step of a multi-agent environment as timestamped events on the threads of
a free-threaded CPython, with results bit-identical to serial stepping.

Quick use::

    import seer
    rt = seer.make_runtime(MyModel(n_entities=100), "seer", threads=2)
    out = rt.reset(seed=0)
    out = rt.step(actions)
"""

from seer.errors import (
    CausalityError,
    ContractError,
    FewEventsWarning,
    HandlerError,
    IsolationError,
    LookaheadError,
    ModelCodeError,
    ModelError,
    NoEventsError,
    NonFiniteTimeError,
    PendingEventsError,
    RuntimeStateError,
    SeerError,
    StepLimitError,
    UnknownKindError,
    UnknownTargetError,
)
from seer.events import Event
from seer.model import Context, EntityGroups, Model, StateArrays, StepInfo
from seer.platform import GILWarning, cpu_count, free_threaded_build, gil_disabled
from seer.runtime import Runtime, StepResult
from seer.sched import PEER_CLASSES as _PEER_CLASSES
from seer.sched import SeerRuntime, make_runtime, register_runtime
from seer.sched.assignment import register_assignment
from seer.serial import SerialRuntime

from seer.sched import register_thread_chooser as _register_thread_chooser  # isort: skip


def _stpa_chooser(model: Model, runtime: str) -> tuple[int, dict]:
    """make_runtime(..., threads="auto") after a plain ``import seer``: STPA's predictor,
    imported on first use (importing seer.stpa registers it in this one's place)."""
    import seer.stpa

    return seer.stpa.choose_threads(model, runtime)


_register_thread_chooser(_stpa_chooser)


def __getattr__(name: str) -> object:
    """What ``import seer`` does not load, on first use: ``seer.stpa``, and the peers'
    classes (:mod:`seer.peers`); ``DualQueueRuntime``, SEER's runtime's former name
    (deprecated: ``SeerRuntime``)."""
    if name == "stpa":
        import seer.stpa

        return seer.stpa
    if name in _PEER_CLASSES:
        import seer.sched as sched

        return getattr(sched, name)
    if name == "DualQueueRuntime":
        import warnings

        warnings.warn("seer.DualQueueRuntime is now seer.SeerRuntime (it takes the same "
                      "assignment= and queues=)", DeprecationWarning, stacklevel=2)
        return SeerRuntime
    raise AttributeError(f"module 'seer' has no attribute {name!r}")

__version__ = "0.1.0"

__all__ = [
    "CausalityError",
    "Context",
    "ContractError",
    "EntityGroups",
    "Event",
    "FewEventsWarning",
    "GILWarning",
    "HandlerError",
    "IsolationError",
    "LookaheadError",
    "Model",
    "ModelCodeError",
    "ModelError",
    "NoEventsError",
    "NonFiniteTimeError",
    "PendingEventsError",
    "Runtime",
    "RuntimeStateError",
    "SeerError",
    "SeerRuntime",
    "SerialRuntime",
    "StateArrays",
    "StepInfo",
    "StepLimitError",
    "StepResult",
    "UnknownKindError",
    "UnknownTargetError",
    "__version__",
    "cpu_count",
    "free_threaded_build",
    "gil_disabled",
    "make_runtime",
    "register_assignment",
    "register_runtime",
]
