"""``seer.check``: find, replay and explain concurrency bugs in lock-free code.

The model path of :mod:`seer.queues.atomic` makes every atomic operation a scheduling
point of a deterministic scheduler (:mod:`seer.check.execution`; each modelled primitive
is a module of its own, made by :mod:`seer.check.session`) and simulates its memory
order (:mod:`seer.check.memory`); :func:`explore` runs a check's workers, as real Python
threads one at a time, under every schedule a strategy picks (:mod:`seer.check.explorer`)
and reports the first failure with a schedule that :func:`replay` reruns exactly.
The project's own structures are checked by :mod:`seer.check.queues`; textbook bugs to
find are in :mod:`seer.check.examples`. See ``docs/checking.md``.

    >>> from seer.check import explore
    >>> report = explore(setup, worker_a, worker_b, invariant=check)   # doctest: +SKIP
"""

from seer.check.accessor import ModelAccessor
from seer.check.barrier import Barrier
from seer.check.execution import Step, name_words, yield_now
from seer.check.explorer import (
    REPLAY_ENV,
    STRATEGIES,
    CheckFailure,
    Failure,
    ReplayError,
    Report,
    _install_process_wide,
    explore,
    format_schedule,
    model_atomics,
    parse_schedule,
    replay,
)
from seer.check.stress import audit_claims, run_threads

__all__ = [
    "REPLAY_ENV",
    "STRATEGIES",
    "Barrier",
    "CheckFailure",
    "Failure",
    "ModelAccessor",
    "ReplayError",
    "Report",
    "Step",
    "audit_claims",
    "explore",
    "format_schedule",
    "model_atomics",
    "name_words",
    "parse_schedule",
    "replay",
    "run_threads",
    "yield_now",
]

_install_process_wide()
