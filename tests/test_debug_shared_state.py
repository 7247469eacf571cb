"""Debug mode's shared-state check (seer.serial.SharedState), ``ctx.scratch``, and
``seer verify`` / ``seer.testing.verify``, on models written as a user would, in a module
outside the repository."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import seer
from seer.errors import ModelError, SharedStateError
from seer.serial import SerialRuntime
from seer.testing import RandomModel, verify

# Each model: every entity ticks on its action, smooths a 3-vector with its neighbour's
# value from the snapshot and pings the neighbour. The mistakes differ in one place.
USER_MODELS = textwrap.dedent('''
    import numpy as np
    import seer

    SEEN = []        # a module global a handler appends to (the mistake of GlobalList)
    CALLS = 0        # a module global a handler rebinds (GlobalCounter)


    class Base(seer.Model):
        kinds = ("tick", "ping")
        action_kind = "tick"
        lookahead = 0.5
        fields = {"v": ((3,), np.float64)}

        def __init__(self, n=12):
            super().__init__(n)
            self.weights = np.linspace(0.5, 1.5, 3)   # read-only data: fine

        def sample_actions(self, step):
            return [step + 1.0] * self.n_entities

        def init_entity(self, ctx):
            ctx.row.v = ctx.rng.random(3)

        def smooth(self, ctx, x, buf):
            other = (ctx.id + 1) % self.n_entities
            np.multiply(ctx.snapshot.v[other], self.weights, out=buf)
            buf += ctx.row.v
            buf *= 0.5 + 1e-3 * x
            ctx.row.v = buf

        def on_tick(self, ctx, event):
            self.smooth(ctx, float(event.payload), self.buffer(ctx))
            ctx.emit((ctx.id + 1) % self.n_entities, 0.5, "ping", float(ctx.row.v[0]))

        def on_ping(self, ctx, event):
            self.smooth(ctx, float(event.payload), self.buffer(ctx))


    class Scratch(Base):
        """Right: the scratch buffer is the calling thread's own."""

        def buffer(self, ctx):
            return ctx.scratch("smooth", (3,), np.float64)


    class ScratchOnModel(Base):
        """Wrong: one scratch buffer on the model, reused by every handler."""

        def __init__(self, n=12):
            super().__init__(n)
            self.scratch = np.zeros(3)

        def buffer(self, ctx):
            return self.scratch


    class ListOnModel(Scratch):
        """Wrong: a handler appends to a list the model holds."""

        def __init__(self, n=12):
            super().__init__(n)
            self.log = []

        def on_ping(self, ctx, event):
            self.log.append(ctx.id)
            super().on_ping(ctx, event)


    class GlobalList(Scratch):
        """Wrong: a handler appends to a module global."""

        def on_ping(self, ctx, event):
            SEEN.append(ctx.id)
            super().on_ping(ctx, event)


    class GlobalCounter(Scratch):
        """Wrong: a handler rebinds a module global."""

        def on_ping(self, ctx, event):
            global CALLS
            CALLS += 1
            super().on_ping(ctx, event)


    class DrawsFromModelRng(Scratch):
        """Wrong: a handler draws from a Generator the model holds."""

        def __init__(self, n=12):
            super().__init__(n)
            self.rng = np.random.default_rng(0)

        def on_ping(self, ctx, event):
            super().on_ping(ctx, event)
            ctx.row.v[0] += self.rng.random() * 1e-9
''')

MISTAKES = [("ScratchOnModel", "model.scratch"), ("ListOnModel", "model.log"),
            ("GlobalList", "user_models.SEEN"), ("GlobalCounter", "user_models.CALLS"),
            ("DrawsFromModelRng", "model.rng")]


@pytest.fixture(scope="module")
def user_models(tmp_path_factory):
    where = tmp_path_factory.mktemp("user_models")
    (where / "user_models.py").write_text(USER_MODELS)
    sys.path.insert(0, str(where))
    try:
        import user_models

        yield where, user_models
    finally:
        sys.path.remove(str(where))
        sys.modules.pop("user_models", None)


def _run_serial(model, *, debug, steps=3, seed=0):
    with SerialRuntime(model, debug=debug) as rt:
        rt.reset(seed)
        for t in range(steps):
            rt.step(model.sample_actions(t))
        return {k: rt.state[k].copy() for k in rt.state.names}


@pytest.mark.parametrize(("name", "attribute"), MISTAKES)
def test_debug_mode_names_the_state_written_outside_the_rows(user_models, name, attribute):
    _where, mod = user_models
    model = getattr(mod, name)()
    _run_serial(model, debug=False)  # without debug mode nothing is checked
    with pytest.raises(SharedStateError) as info:
        _run_serial(getattr(mod, name)(), debug=True)
    err = info.value
    assert err.attribute == attribute
    text = str(err)
    assert attribute in text and "ctx.scratch" in text
    assert err.step == 0 and err.kind in ("tick", "ping")
    assert f"model {model.name!r}" in text and f"entity {err.entity}" in text
    assert f"{err.kind!r} event" in text


def test_the_scratch_buffer_port_passes_debug_mode_and_matches_serial(user_models):
    _where, mod = user_models
    serial = _run_serial(mod.Scratch(), debug=False)
    assert all(np.array_equal(serial[k], v) for k, v in
               _run_serial(mod.Scratch(), debug=True).items())
    report = verify(mod.Scratch, ["seer(2)", "static(2)"], steps=4, seeds=(0, 1))
    assert report.ok, str(report)
    with seer.make_runtime(mod.Scratch(), "seer", threads=2) as rt:
        rt.reset(0)
        for t in range(3):
            rt.step(rt.model.sample_actions(t))
        for k, v in serial.items():
            assert rt.state[k].tobytes() == v.tobytes()


@pytest.mark.parametrize(("name", "attribute"), MISTAKES[:3])
def test_verify_reports_the_contract_failure_naming_the_attribute(user_models, name,
                                                                  attribute):
    _where, mod = user_models
    report = verify(getattr(mod, name), ["seer(2)"], steps=3)
    assert not report.ok
    assert isinstance(report.contract_error, SharedStateError)
    assert report.contract_error.attribute == attribute
    assert attribute in str(report) and "debug mode" in str(report)
    assert report.results == {}  # no parallel runtime ran


def test_no_false_alarm_on_the_test_models_and_workloads():
    from examples.mistakes import LiveNeighbour  # noqa: F401 - reads, never writes shared
    from tests.helpers import Recorder
    from workloads.aircraft.model import Aircraft
    from workloads.pcs.model import PCS
    from workloads.pursuit.model import Pursuit
    from workloads.synthetic import BenchModel, EmptyModel

    models = [RandomModel(30, 1), RandomModel(20, 5, lookahead=0.0, cost_us=1.0),
              Aircraft(40, cost_us=1.0), PCS(5, 5, cost_us=1.0),
              Pursuit(8, 8, n_evaders=5, n_pursuers=3), BenchModel(30, cost_us=1.0, fanout=2),
              EmptyModel(20), Recorder(4, {(0, 1.0): [(1, 0.5, "hit", 2.0)]})]
    for model in models:
        sample = getattr(model, "sample_actions", None)
        with SerialRuntime(model, debug=True) as rt:
            rt.reset(2)
            for t in range(3):
                rt.step(sample(t) if callable(sample) else ({0: 1.0} if t == 0 else None))


def test_ctx_scratch_is_per_thread_and_reused():
    ctx = SerialRuntime(RandomModel(3))._contexts[0]
    a = ctx.scratch("x", (4,), np.float64)
    assert ctx.scratch("x", (4,), np.float64) is a
    assert ctx.scratch("x", (5,), np.float64) is not a
    assert ctx.scratch("y", 3, np.int32).dtype == np.int32
    other = []
    t = threading.Thread(target=lambda: other.append(ctx.scratch("x", (4,), np.float64)))
    t.start()
    t.join()
    assert other[0] is not a and other[0].shape == (4,)
    with pytest.raises(ModelError, match="scratch"):
        ctx.scratch("z", (-1,), np.float64)
    with pytest.raises(ModelError, match="hashable"):
        ctx.scratch("z", [3], np.float64)


def test_debug_off_runs_the_unchecked_loop(user_models):
    _where, mod = user_models
    rt = SerialRuntime(mod.ScratchOnModel())
    rt._run_checked = None  # the plain loop never calls the checked one
    rt.reset(0)
    rt.step(rt.model.sample_actions(0))


class Drifting(SerialRuntime):
    """Gets one result wrong from its second step on."""

    name = "drifting-verify-test"

    def _step(self, batch):
        result = super()._step(batch)
        if self._step_index == 2:
            self._arrays["acc"][3] += 1e-12
        return result


def test_verify_reports_the_first_divergence_with_step_field_entity_and_runtime():
    report = verify(lambda: RandomModel(10, 3),
                    ["serial", ("drifting", lambda m: Drifting(m))], steps=4)
    assert not report.ok and report.results["serial"] is None
    first = report.first
    assert (first.runtime, first.step, first.what, first.field, first.entity) == \
        ("drifting", 1, "state", "acc", 3)
    text = str(report)
    assert "FIRST DIVERGENCE: drifting diverged from serial at step 1" in text
    assert "field 'acc' of entity 3" in text


def test_verify_rejects_bad_input():
    with pytest.raises(ModelError, match="unknown runtime 'nosuch'"):
        verify(RandomModel(4), ["nosuch(2)"])
    with pytest.raises(ModelError, match="steps"):
        verify(RandomModel(4), steps=0)
    with pytest.raises(ModelError, match=r"seer\.Model"):
        verify(lambda: 42)


# -- the command line ---------------------------------------------------------------------
def _seer(args, where, cwd):
    return subprocess.run([str(Path(sys.executable).with_name("seer")), *args], cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(where)}, capture_output=True,
                          text=True, timeout=300, check=False)


def test_seer_verify_on_a_model_outside_the_repository(user_models, tmp_path):
    where, _mod = user_models
    done = _seer(["verify", "user_models:Scratch", "n=10", "--steps", "3", "--threads", "2"],
                 where, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "seer(2)" in done.stdout and "optimistic(2)" in done.stdout
    assert "OK: all" in done.stdout
    for name, attribute in (("ScratchOnModel", "model.scratch"),
                            ("GlobalList", "user_models.SEEN")):
        done = _seer(["verify", f"user_models:{name}", "--steps", "2", "--runtimes",
                      "seer:2"], where, tmp_path)
        assert done.returncode == 1, done.stdout + done.stderr
        assert attribute in done.stdout and "SharedStateError" in done.stdout


def test_seer_verify_with_import_and_bad_input(user_models, tmp_path, capsys):
    from seer.cli import main

    del user_models  # on sys.path: imported in process
    assert main(["verify", "user_models:ListOnModel", "--import", "user_models",
                 "--runtimes", "seer:2", "--steps", "2"]) == 1
    assert "model.log" in capsys.readouterr().out
    assert main(["verify", "user_models:Nope"]) == 2
    assert "has no 'Nope'" in capsys.readouterr().err
    assert main(["verify", "user_models:Scratch", "--runtimes", "seer two"]) == 2
    assert "'seer two'" in capsys.readouterr().err
    assert main(["verify", "user_models:Scratch", "n=x=1"]) == 2
    assert main(["verify", "user_models:Scratch", "--import", "no_such_module_xyz"]) == 2
    assert "no_such_module_xyz" in capsys.readouterr().err
    assert main(["verify", "user_models:Scratch", "--steps", "2", "--runtimes", "seer:2",
                 "static:2"]) == 0
