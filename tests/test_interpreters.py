"""The same results on every interpreter: a GIL build (Python >= 3.11) and 3.14t agree.

A user may develop a model on the Python they have and move to 3.14t for speed, so a fixed
episode must give the same bytes on both. `make test` runs this file on .venv-gil too.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import seer
from tests.helpers import results_sha256

ROOT = Path(__file__).resolve().parents[1]

KINDS = ["serial", "seer", "static", "static-block", "global", "executor"]

#: sha256 of the episode below, computed on CPython 3.14.7t (numpy 2.5.5) and confirmed on
#: CPython 3.11.7 with the GIL (numpy 2.4.6). A change here means results changed: either
#: the event order or the seeding is different now (then update it on purpose, on both
#: interpreters), or an interpreter or numpy version gives different bytes (a bug to find).
EXPECTED_SHA256 = "a8fef6139d26bac8167daf6a2e1308c6a834e06fad84506b4aacafe56c6130c1"


class Relay(seer.Model):
    """Entities on a ring pass tokens on. Each token is folded into the state in arrival
    order (``x = 0.75 x + 0.25 payload`` does not commute), tokens of one step often arrive
    at the same time, and every third token sends a zero-delay token to the entity itself:
    the bytes depend on the whole event order. Only uniform draws, integer draws and
    exactly rounded arithmetic are used, so no libm difference can change them."""

    kinds = ("act", "token")
    action_kind = "act"
    lookahead = 0.25
    step_length = 1.0
    fields = {"x": ((), np.float64), "n": ((), np.int64)}  # noqa: RUF012

    def init_entity(self, ctx):
        ctx.row.x = ctx.rng.uniform(-1.0, 1.0)

    def on_act(self, ctx, event):
        ctx.row.x = ctx.row.x * 0.5 + event.payload
        for j in range(int(ctx.rng.integers(0, 3))):
            target = (ctx.id + 1 + j) % self.n_entities
            delay = self.lookahead * int(ctx.rng.integers(1, 4))
            ctx.emit(target, delay, "token", float(ctx.row.x + ctx.snapshot.x[target]))

    def on_token(self, ctx, event):
        ctx.row.x = ctx.row.x * 0.75 + event.payload * 0.25
        ctx.row.n += 1
        if ctx.row.n % 3 == 0:
            ctx.emit(ctx.id, 0.0, "token", float(-ctx.row.x))

    def outputs(self, entity, state, start):
        obs = np.array([state.x[entity], state.n[entity]], dtype=np.float64)
        return obs, float(state.n[entity] - start.n[entity]), False, False, {}


def episode_sha256(kind: str, n: int = 40, steps: int = 6, seed: int = 123) -> str:
    """sha256 of every output of a fixed episode, then the final state and event count."""
    with seer.make_runtime(Relay(n), kind, threads=None if kind == "serial" else 2) \
            as runtime:
        results = [runtime.reset(seed=seed)]
        for t in range(steps):
            results.append(runtime.step([((t * 7 + i) % 5) * 0.125 for i in range(n)]))
        return results_sha256(runtime, results)


@pytest.mark.parametrize("kind", KINDS)
def test_a_fixed_episode_gives_the_stored_hash_on_this_interpreter(kind):
    assert episode_sha256(kind) == EXPECTED_SHA256


WARN_ONCE = """
import warnings
import seer
from seer.testing import RandomModel

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for kind in ("seer", "static", "static-block", "global", "executor", "seer"):
        with seer.make_runtime(RandomModel(20, seed=1), kind, threads=2) as runtime:
            runtime.reset(seed=0)
    with seer.make_runtime(RandomModel(20, seed=1), "seer", threads=1) as runtime:
        runtime.reset(seed=0)
for w in caught:
    print(w.category.__name__, "|", w.message)
"""


def test_threads_under_the_gil_warn_exactly_once_per_process():
    # A fresh process, so that no earlier test has used up the once-per-process warning.
    # On a free-threaded build PYTHON_GIL=1 turns the GIL on; a GIL build has it anyway.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON_GIL", "PYTHONWARNINGS")}
    if seer.free_threaded_build():
        env["PYTHON_GIL"] = "1"
    out = subprocess.run([sys.executable, "-c", WARN_ONCE], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 1, out.stdout
    assert lines[0].startswith("GILWarning | SEER was asked for 2 threads but the GIL is "
                               "enabled")
    reason = ("the GIL was re-enabled at run time" if seer.free_threaded_build()
              else "this is not a free-threaded build")
    assert reason in lines[0]
