"""STPA: preflight-guided thread-count prediction (``docs/design.md``, "STPA").

``seer.stpa.predict(model)`` runs a short preflight of the model on a separate runtime,
embeds the per-thread metric traces with a TimesURL-style encoder (numpy forward pass; torch
is needed only to train it) and asks an xgboost regressor for the thread count.
``seer.make_runtime(model, "seer", threads="auto")`` does the same and builds the runtime at
that size: importing this package registers :func:`choose_threads` as ``seer.sched``'s thread
chooser (``import seer`` imports it). Needs the ``stpa`` extra (xgboost).
"""

from __future__ import annotations

from seer.sched import register_thread_chooser
from seer.stpa.metrics import METRICS
from seer.stpa.predictor import Predictor, choose_threads, predict
from seer.stpa.preflight import STATIC_FEATURES, Preflight, run_preflight

# threads="auto" asks seer.sched for a chooser; seer.sched cannot import this package
# (seer.stpa builds on it), so STPA offers its own here.
register_thread_chooser(choose_threads)

__all__ = [
           "METRICS",
           "STATIC_FEATURES",
           "Predictor",
           "Preflight",
           "choose_threads",
           "predict",
           "run_preflight",
]
