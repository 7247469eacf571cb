"""Small models shared by the tests."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

import seer


class Recorder(seer.Model):
    """Records the order in which events run, in a per-entity trace (state), via a
    scripted list of emits per (entity, event value)."""

    kinds = ("start", "hit")
    action_kind = "start"
    lookahead = 0.5
    fields = {"trace": ((16,), np.float64), "n": ((), np.int64)}  # noqa: RUF012

    def __init__(self, n: int = 4, script: dict | None = None, **attrs: Any) -> None:
        super().__init__(n)
        self.script = script or {}
        for k, v in attrs.items():
            setattr(self, k, v)

    def _record(self, ctx: seer.Context, value: float) -> None:
        i = int(ctx.row.n)
        ctx.row.trace[i % 16] = value
        ctx.row.n += 1

    def on_start(self, ctx, event):
        self._record(ctx, float(event.payload))
        for target, delay, kind, payload in self.script.get((ctx.id, event.payload), ()):
            ctx.emit(target, delay, kind, payload)

    def on_hit(self, ctx, event):
        self._record(ctx, float(event.payload))
        for target, delay, kind, payload in self.script.get((ctx.id, event.payload), ()):
            ctx.emit(target, delay, kind, payload)

    def outputs(self, entity, state, start):
        return state.trace[entity].copy(), float(state.n[entity]), False, False, {}


def run_serial(model: seer.Model, seed: int, steps: int) -> tuple[seer.SerialRuntime, list]:
    """Run ``model`` on a new :class:`seer.SerialRuntime`: reset with ``seed``, then
    ``steps`` steps with ``model.sample_actions(t)``. Returns the runtime and its outputs,
    the reset's first (``steps + 1`` of them)."""
    rt = seer.SerialRuntime(model)
    outs = [rt.reset(seed)]
    outs += [rt.step(model.sample_actions(t)) for t in range(steps)]
    return rt, outs


def results_sha256(runtime: seer.Runtime, results: list) -> str:
    """sha256 of every output in ``results`` (step results of ``runtime``, in order), then
    ``runtime``'s final state and its event count: one fixed episode's bytes."""
    digest = hashlib.sha256()
    for r in results:
        for array in (np.asarray(r.observations), r.rewards, r.terminations, r.truncations):
            digest.update(np.ascontiguousarray(array).tobytes())
    for name in runtime.state.names:
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(runtime.state[name]).tobytes())
    digest.update(str(runtime.events_run).encode())
    return digest.hexdigest()


#: The hypothesis profile of `make test-fast` (registered in tests/conftest.py) and the
#: examples a property gets there at most.
FAST_PROFILE = "fast"
FAST_EXAMPLES = 30


def examples(n: int) -> int:
    """``max_examples`` for a property test: ``n``, or at most :data:`FAST_EXAMPLES` under
    the fast profile. An explicit ``max_examples`` beats any profile, so the cut is made
    here. Without ``get_current_profile_name`` (hypothesis < 6.139) it is always ``n``."""
    from hypothesis import settings

    name = getattr(settings, "get_current_profile_name", lambda: "")()
    # --hypothesis-verbosity derives a profile "<name>-with-<level>-verbosity"
    if name.split("-with-")[0] == FAST_PROFILE:
        return min(n, settings().max_examples)
    return n
