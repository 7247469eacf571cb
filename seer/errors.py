"""Exceptions raised by SEER runtimes.

Every contract violation names the model, the entity, the event kind and the times
involved, in the spirit of ROSS's "lookahead violation" message, so that the offending
handler can be found from the message alone.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CausalityError",
    "ContractError",
    "FewEventsWarning",
    "HandlerError",
    "IsolationError",
    "LookaheadError",
    "ModelCodeError",
    "ModelError",
    "NoEventsError",
    "NonFiniteTimeError",
    "PendingEventsError",
    "RuntimeStateError",
    "SeerError",
    "SharedStateError",
    "StepLimitError",
    "UnknownKindError",
    "UnknownTargetError",
    "check_events_ran",
    "event_of",
    "tag_event",
]


class SeerError(Exception):
    """Base class of every error SEER raises on purpose."""


class ModelError(SeerError, ValueError):
    """A model definition or a runtime argument is invalid (raised before anything runs)."""


class NoEventsError(ModelError):
    """A tool that judges or measures a model (``seer verify``, ``assert_equivalent``,
    ``seer bench``, STPA's preflight) ran it and no event ran: there is nothing to judge,
    so it refuses to give a verdict. Usually the model has no ``sample_actions(step)``
    and its ``init_entity`` emits nothing, so every step is empty."""


class FewEventsWarning(UserWarning):
    """A tool that judges or measures a model ran it with so few events (fewer than
    :data:`seer.errors.FEW_EVENTS_PER_STEP` a step) that its verdict means little."""


#: Below this many events a step, a verdict or a timing says little about parallel runs:
#: a step of one event has nothing to run beside it.
FEW_EVENTS_PER_STEP = 2.0

#: What to do about a run with no or few events; every tool's message ends with it.
EVENTS_HINT = ("give the model a sample_actions(step) method that returns each step's "
               "actions (a list with one per agent, or a dict entity -> action), or make "
               "init_entity emit the first events (from Python, seer.testing.verify and "
               "assert_equivalent also take actions=)")


def check_events_ran(events: int, steps: int, what: str, model: str, *,
                     warn: bool = True, nothing: str = "nothing to judge") -> str:
    """Refuse a verdict about nothing: :class:`NoEventsError` when ``events`` is 0;
    returns a caveat line when fewer than :data:`FEW_EVENTS_PER_STEP` ran a step (and,
    with ``warn``, warns it as :class:`FewEventsWarning`), else ``""``. ``what`` names the
    tool's run (``"seer verify ran 10 step(s)"``)."""
    import warnings

    if events <= 0:
        raise NoEventsError(f"{what} of model {model!r} and not one event ran, so there is "
                            f"{nothing}: {EVENTS_HINT}")
    per_step = events / max(steps, 1)
    if per_step < FEW_EVENTS_PER_STEP:
        line = (f"only {events} event(s) ran in {steps} step(s) of model {model!r} "
                f"({per_step:.2g} a step): too few for the result to mean much; "
                f"{EVENTS_HINT}")
        if warn:
            warnings.warn(line, FewEventsWarning, stacklevel=3)
        return line
    return ""


class RuntimeStateError(SeerError, RuntimeError):
    """The runtime was used out of order: step before reset, after close, or after a
    failed step without a reset in between."""


class ContractError(SeerError):
    """A handler broke the event contract (``docs/design.md``, "The event contract").

    Attributes: ``model`` (name), ``entity`` (the running entity), ``kind`` (name of the
    kind of the event being handled), ``time`` (its timestamp), ``step`` (filled in by the
    runtime when the error leaves ``step``), plus subclass-specific fields.
    """

    def __init__(self, message: str, *, model: str, entity: int, kind: str | None,
                 time: float, **details: Any) -> None:
        self.message = message
        self.model = model
        self.entity = entity
        self.kind = kind
        self.time = time
        self.step: int | None = None
        self.details = details
        for key, value in details.items():
            setattr(self, key, value)
        super().__init__(message)

    def __str__(self) -> str:
        where = f"model {self.model!r}"
        if self.step is not None:
            where += f", step {self.step}"
        where += f", entity {self.entity}"
        if self.kind is not None:
            where += f", while handling a {self.kind!r} event at t={self.time!r}"
        else:
            where += f", at t={self.time!r}"
        return f"{self.message} [{where}]"


class CausalityError(ContractError):
    """An emitted event would not come strictly after its parent in κ = (τ, seq) order:
    a negative delay (an event into the past) or a zero-delay chain too deep to order."""


class LookaheadError(ContractError):
    """A cross-entity event was emitted with a delay below the model's lookahead."""


class NonFiniteTimeError(ContractError):
    """An emitted delay was NaN or infinite."""


class UnknownTargetError(ContractError):
    """An event was addressed to an entity id outside ``range(n_entities)``."""


class UnknownKindError(ContractError):
    """An event kind that the model does not declare."""


class IsolationError(ContractError):
    """A handler wrote to state rows of another entity (found in debug mode only)."""


class SharedStateError(ContractError):
    """A handler changed state outside the rows during a step: an attribute of the model
    (or an array, list, dict or set it holds) or a mutable global of the model's module
    (found in debug mode only). ``attribute`` names it (``"model.scratch"``,
    ``"mymodule.CACHE"``). Every thread of a parallel runtime sees that one object, so such
    writes race and parallel results differ from serial ones."""


class HandlerError(SeerError):
    """An exception escaped a handler; the step was aborted.

    The original exception is ``__cause__``. ``step``, ``entity`` and ``event`` say where it
    happened. The runtime must be ``reset`` before the next ``step``.
    """

    def __init__(self, *, model: str, step: int, entity: int, kind: str, event: Any,
                 cause: BaseException) -> None:
        self.model = model
        self.step = step
        self.entity = entity
        self.kind = kind
        self.event = event
        super().__init__(
            f"handler for {kind!r} raised {type(cause).__name__}: {describe(cause)}"
            f"{hint_for(cause)} "
            f"[model {model!r}, step {step}, entity {entity}, event {event!r}]"
        )


def describe(cause: BaseException) -> str:
    """``str(cause)``, or a placeholder when the exception's own ``__str__`` raises (the
    error report must not fail in its turn)."""
    try:
        return str(cause)
    except Exception as exc:
        return f"<str() of the exception raised {type(exc).__name__}>"


def hint_for(cause: BaseException) -> str:
    """A sentence that says which rule a common mistake broke (or "")."""
    if isinstance(cause, ValueError) and "read-only" in describe(cause):
        return (" (state seen through ctx.snapshot, runtime.state and outputs()'s arrays is "
                "read-only: a handler writes only its own ctx.row, and outputs() writes no "
                "state)")
    return ""


class ModelCodeError(HandlerError):
    """The model's own code outside a handler (``outputs``, ``prepare_step``) raised.

    The original exception is ``__cause__``; ``where`` names the method, ``step`` and
    ``entity`` (None for ``prepare_step``) say where. The runtime must be ``reset``."""

    def __init__(self, *, model: str, step: int, where: str, entity: int | None,
                 cause: BaseException) -> None:
        self.model = model
        self.step = step
        self.entity = entity
        self.kind = f"<{where}>"
        self.event = None
        self.where = where
        at = f", entity {entity}" if entity is not None else ""
        SeerError.__init__(self, f"{where}() raised {type(cause).__name__}: {describe(cause)}"
                                 f"{hint_for(cause)} [model {model!r}, step {step}{at}]")


class PendingEventsError(ContractError):
    """A model with ``strict_steps = True`` left events pending past a step's end."""


class StepLimitError(ContractError):
    """A step ran more events than the runtime's ``max_events_per_step`` allows: usually
    an event loop that never reaches the step end (a self-loop with a tiny delay)."""


# Which event an exception escaped from. A thread that runs handlers tags the exception on
# its way out; the runtime reads the tag on the caller's thread to build a HandlerError and
# to choose, among several failures of one window, the one serial stepping meets first.
_EVENT_TAG = "__seer_event__"


def tag_event(exc: BaseException, event: Any) -> BaseException:
    """Record on ``exc`` the event whose handler raised it; returns ``exc``."""
    setattr(exc, _EVENT_TAG, event)
    return exc


def event_of(exc: BaseException) -> Any:
    """The event recorded by :func:`tag_event`, or None."""
    return getattr(exc, _EVENT_TAG, None)
