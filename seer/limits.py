"""The step's event limit: a guard that makes every step end.

A step that runs more than ``max_events_per_step`` events raises
:class:`~seer.errors.StepLimitError`; the default (``None``) is
:func:`default_event_limit` of the model's entity count, far above what real models run
(the figures are below), and ``0`` turns the guard off. The message names the entity, the
event, how far model time got and how to raise the limit (``docs/design.md``, "Failures
and interrupts").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from seer.errors import ModelError, StepLimitError
from seer.events import Event, seq_is_emitted, seq_origin

__all__ = ["DEFAULT_EVENTS_PER_ENTITY", "DEFAULT_MIN_EVENTS", "NO_LIMIT", "default_event_limit",
           "event_limit", "limit_text", "step_limit_error", "step_limit_message"]

#: What a hot loop compares its count against when there is no limit (``0``).
NO_LIMIT = 1 << 62

#: The default event limit of a step (``max_events_per_step=None``) is
#: :func:`default_event_limit`: ``max(DEFAULT_MIN_EVENTS, DEFAULT_EVENTS_PER_ENTITY * n)``
#: for ``n`` entities, a guard against a step that never ends (a self-loop whose time
#: barely advances), sized far above what real models run. Measured on the serial runtime,
#: events in the busiest step (per entity): the benchmark sizes run BenchModel(1000) 2,029
#: (2.0), fanout 16: 17,199 (17); EmptyModel(1000, per_step=10) 11,000 (11); Aircraft(800)
#: 1,002 (1.3); PCS(40x40) 6,529 (4.1); Pursuit(256x256, 1000 + 4000) 5,318 (1.1);
#: Spread(50) 50 (0.5). Pushed knobs: Aircraft(200) with interaction and density 8: 23,116
#: (116); PCS(10x10) with step_length=3600: 35,652 (357); EmptyModel(50, per_step=1000):
#: 50,050 (1,001). seer.testing.RandomModel over the tests' range (fanout <= 3, ttl <= 4):
#: at most 55 per entity; at fanout 8, ttl 6: 189,494 for 50 (3,790). So the benchmarks
#: stay 580x below the per-entity part and every shipped or test configuration at least
#: 2.6x below it (the floor: 5x for the largest small-model step). RandomModel at fanout
#: 8 and ttl 8 is a branching process that grows 4x per generation (2.5 million events a
#: step for 50 entities, 30 s a step): it needs ``max_events_per_step=0``. A self-loop
#: reaches the floor in about 1 s (serial, seer, static, global, executor) to 3 s
#: (optimistic) on one core.
DEFAULT_EVENTS_PER_ENTITY = 10_000
DEFAULT_MIN_EVENTS = 1_000_000


def default_event_limit(n_entities: int) -> int:
    """The default ``max_events_per_step`` of a model with ``n_entities`` entities."""
    return max(DEFAULT_MIN_EVENTS, DEFAULT_EVENTS_PER_ENTITY * n_entities)


def step_limit_error(model: str, limit: int, entity: int, ev: Event | None, detail: str, *,
                     text: str | None = None) -> StepLimitError:
    """A :class:`StepLimitError` for ``ev`` on ``entity`` (the runtime fills in the step
    and the kind's name: :meth:`Runtime._explain_step_limit`). ``text`` says where the
    limit came from (default: ``max_events_per_step=<limit>``)."""
    err = StepLimitError("", model=model, entity=entity, kind=None,
                         time=ev[0] if ev is not None else 0.0, limit=limit,
                         limit_text=text or f"max_events_per_step={limit}", detail=detail,
                         event=ev, emitted=None)
    err.message = step_limit_message(err, None)
    return err


def step_limit_message(err: StepLimitError, step: tuple[float, float] | None,
                        how: str = "make_runtime(model, runtime, max_events_per_step=N) or "
                                   "the runtime's constructor") -> str:
    """What a :class:`StepLimitError` says: the limit and where it came from, which entity
    and event were running (or which entity emitted the most), how far model time got in
    the step ``[t0, t_end)``, and ``how`` to raise the limit."""
    ev = err.event
    if ev is not None:
        origin = seq_origin(ev[1])
        by = ("from the actions" if not seq_is_emitted(ev[1]) else "emitted by itself"
              if origin == err.entity else f"emitted by entity {origin}")
        kind = f"a {err.kind!r} event" if err.kind is not None else "an event"
        who = f"entity {err.entity} was handling {kind} {by} at t={err.time!r}"
    else:
        who = (f"entity {err.entity} emitted the most events this episode "
               f"({err.emitted}) and had reached t={err.time!r}")
    where = ""
    if step is not None:
        t0, t_end = step
        where = (f"; model time had advanced only {err.time - t0:.3g} into the step "
                 f"[{t0!r}, {t_end!r})")
    return (f"the step ran more than {err.limit} events ({err.detail}) without reaching its "
            f"end (the limit: {err.limit_text}): {who}{where}. An event loop whose time "
            "barely advances, such as an entity re-scheduling itself with a tiny delay? If "
            f"the model really needs more events per step, raise the limit: {how} "
            "(max_events_per_step=0: no limit)")




def limit_text(given: Any, limit: int, n: int) -> str:
    """How a step-limit message names the limit in force."""
    if given is None:
        return (f"max_events_per_step={limit}, the default for {n} entities: "
                f"{DEFAULT_EVENTS_PER_ENTITY} per entity, at least {DEFAULT_MIN_EVENTS}")
    return f"max_events_per_step={limit}"




def event_limit(limit: Any, n: int) -> int:
    """``max_events_per_step`` as given to a constructor, as the limit in force: None is
    :func:`default_event_limit`, 0 no limit (kept as 0), an int >= 1 itself."""
    if limit is None:
        return default_event_limit(n)
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0:
        raise ModelError(f"max_events_per_step must be None or an int >= 0 (None: the "
                         f"default, {default_event_limit(n)} events for {n} entities; 0: no "
                         f"limit; N: at most N events per step), got {limit!r}")
    return int(limit)


