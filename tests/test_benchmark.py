"""seer.benchmark and ``seer bench``: paired rounds, the ceiling, the identity check, and a
model that lives outside the repository."""

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import seer
from seer.benchmark import (
    Comparison,
    capacity_now,
    compare,
    on_threads,
    paired,
    parse_runtime,
    runtime_label,
    state_digest,
)
from seer.serial import SerialRuntime

# A model written as a user would, outside the project's packages: each entity ticks on
# its action and pings a neighbour half a step later.
USER_MODEL = textwrap.dedent('''
    import numpy as np
    import seer

    class Ring(seer.Model):
        kinds = ("tick", "ping")
        action_kind = "tick"
        lookahead = 0.5
        fields = {"x": ((), np.float64)}

        def __init__(self, n=16, work=50):
            super().__init__(n)
            self.work = work

        def sample_actions(self, step):
            return [1] * self.n_entities

        def init_entity(self, ctx):
            ctx.row.x = ctx.rng.random()

        def on_tick(self, ctx, event):
            acc = float(ctx.row.x)
            for _ in range(self.work):
                acc = acc * 0.999 + 0.001
            ctx.row.x = acc
            ctx.emit((ctx.id + 1) % self.n_entities, 0.5, "ping", acc)

        def on_ping(self, ctx, event):
            ctx.row.x = float(ctx.row.x) + event.payload * 1e-3
''')


@pytest.fixture(scope="module")
def user_module(tmp_path_factory):
    where = tmp_path_factory.mktemp("user_env")
    (where / "user_env.py").write_text(USER_MODEL)
    sys.path.insert(0, str(where))
    try:
        import user_env

        yield where, user_env
    finally:
        sys.path.remove(str(where))
        sys.modules.pop("user_env", None)


class Drifting(SerialRuntime):
    """A runtime that gets a result wrong: the identity check must catch it."""

    name = "drifting-test"

    def __init__(self, model, threads=1, **options):
        super().__init__(model, **options)

    def step(self, actions=None):
        out = super().step(actions)
        self._arrays["x"][0] += 1.0
        return out


def test_labels_round_trip_and_bad_labels_are_named():
    assert parse_runtime("seer:2") == parse_runtime("seer(2)") == ("seer", 2)
    assert parse_runtime("serial") == ("serial", 1)
    assert runtime_label("seer", 2) == "seer(2)" and runtime_label("serial", 4) == "serial"
    with pytest.raises(ValueError, match="'seer 2'"):
        parse_runtime("seer 2")


def test_compare_pairs_rounds_and_checks_identity(user_module):
    _where, user_env = user_module
    result = compare(lambda: user_env.Ring(24), ["seer:2", "static:2"], steps=2, rounds=3)
    assert list(result.runtimes) == ["serial", "seer(2)", "static(2)"]
    for rt in result.runtimes.values():
        assert len(rt.wall_s) == len(rt.cpu_s) == 3
        assert rt.events_per_step == 48  # 24 ticks and 24 pings a step
    assert result.runtimes["seer(2)"].identical is True
    assert result.ceiling is not None and result.ceiling.threads == 2
    assert len(result.ceiling.wall_s) == 3
    up = result.runtimes["seer(2)"].speedup(result.serial)
    assert result.speedup("seer(2)") == pytest.approx(sorted(up)[1])
    assert result.serial_us_per_event > 0
    data = json.loads(result.dumps())  # plain JSON: no NaN
    assert data["summary"]["serial"]["of_ceiling"] is None
    assert data["summary"]["seer(2)"]["of_ceiling"] > 0
    lines = result.table()
    assert any(line.startswith("seer(2)") and line.endswith("yes") for line in lines)
    assert any(line.startswith("ceiling(2)") for line in lines)


def test_a_runtime_with_wrong_results_is_reported_not_identical(user_module):
    _where, user_env = user_module
    seer.register_runtime(Drifting, replace=True)
    try:
        result = compare(lambda: user_env.Ring(8), ["drifting-test"], steps=1, rounds=1,
                         ceiling=False)
    finally:
        seer.sched.RUNTIMES.pop("drifting-test")
    assert result.runtimes["drifting-test(1)"].identical is False
    assert result.ceiling is None
    assert any(line.endswith("NO") for line in result.table())


def test_compare_closes_every_runtime_when_one_fails(user_module):
    _where, user_env = user_module
    built = []

    def factory():
        model = user_env.Ring(8)
        built.append(model)
        if len(built) == 3:  # the third runtime's model fails in its handler
            model.on_ping = lambda ctx, event: 1 / 0
        return model

    before = threading.active_count()
    with pytest.raises(seer.HandlerError):
        compare(factory, ["seer:2", "static:2"], steps=1, rounds=1)
    assert threading.active_count() == before


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="rounds"):
        compare(lambda: None, ["seer:2"], rounds=0)
    with pytest.raises(ValueError, match="twice"):
        compare(lambda: None, ["seer:2", "seer(2)"])


def test_primitives():
    assert paired([2.0, 4.0, 9.0], [1.0, 1.0, 3.0]) == 3.0
    seen = []
    assert on_threads(3, lambda i, n: (seen.append((i, n)), time.sleep(0.02)), 5) >= 0.02
    assert sorted(seen) == [(0, 5), (1, 5), (2, 5)]
    with pytest.raises(ZeroDivisionError):
        on_threads(2, lambda i, n: 1 / i, 1)
    ran = []

    def setup(i):
        if i == 1:
            raise KeyError("setup of thread 1")

    with pytest.raises(KeyError, match="setup of thread 1"):  # a failed setup: no body runs
        on_threads(3, lambda i, n: ran.append(i), 1, setup=setup)
    assert ran == []
    assert 0 < capacity_now(2, repeats=1, work=2000) < 8


def test_state_digest_tells_states_apart(user_module):
    _where, user_env = user_module
    a, b = (SerialRuntime(user_env.Ring(8)) for _ in range(2))
    a.reset(0)
    b.reset(0)
    assert state_digest(a) == state_digest(b)
    b._arrays["x"][3] = np.nextafter(b._arrays["x"][3], 2.0)  # one ulp
    assert state_digest(a) != state_digest(b)


def test_seer_bench_on_a_model_defined_outside_the_repository(user_module, tmp_path):
    where, _user_env = user_module
    out = tmp_path / "ring.json"
    env = {**os.environ, "PYTHONPATH": str(where)}
    done = subprocess.run(
        [str(Path(sys.executable).with_name("seer")), "bench", "user_env:Ring", "n=16",
         "work=20", "--runtimes", "serial", "seer:2", "--steps", "2", "--rounds", "2",
         "--json", str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "user_env:Ring n=16 work=20: 32 events per step" in done.stdout
    assert "seer(2)" in done.stdout and "ceiling(2)" in done.stdout
    data = json.loads(out.read_text())
    assert data["runtimes"]["seer(2)"]["identical"] is True
    assert data["rounds"] == 2 and len(data["runtimes"]["serial"]["wall_s"]) == 2
    assert isinstance(Comparison, type)


def test_seer_bench_names_a_bad_runtime_label(user_module, tmp_path):
    where, _user_env = user_module
    done = subprocess.run(
        [str(Path(sys.executable).with_name("seer")), "bench", "user_env:Ring",
         "--runtimes", "seer two"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(where)},
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode != 0
    assert "'seer two'" in done.stderr


def test_seer_bench_times_a_runtime_registered_by_an_imported_module(tmp_path):
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [str(Path(sys.executable).with_name("seer")), "bench", "bench", "n_entities=40",
         "--runtimes", "serial", "locality:2", "--import", "examples.locality_steal",
         "--steps", "1", "--rounds", "1", "--no-ceiling"],
        cwd=root, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert any(line.startswith("locality(2)") and line.endswith("yes")
               for line in done.stdout.splitlines())


@pytest.mark.parametrize(("argv", "named"), [
    (["nosuchmodule:Model"], "nosuchmodule"),
    (["bench", "n_entities=8", "--runtimes", "serial", "sier:2"], "unknown runtime(s) sier"),
    (["bench", "--import", "nosuchmodule"], "nosuchmodule"),
])
def test_seer_bench_refuses_bad_input_by_name(argv, named, capsys):
    from seer import cli

    assert cli.main(["bench", *argv, "--steps", "1", "--rounds", "1"]) == 2
    assert named in capsys.readouterr().err
