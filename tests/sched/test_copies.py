"""Per-worker copies (seer.sched.copies): every switch is bit-identical to serial, the
copies are equal objects that the worker's thread made, and the sharing audit
(seer.sched.sharing) sees what each switch stops sharing."""

from __future__ import annotations

import struct
import threading

import numpy as np
import pytest

from seer.errors import ModelError
from seer.sched import SeerRuntime
from seer.sched.copies import (
    COPIES,
    DEFAULT_COPIES,
    parse_copies,
    thread_copy,
    worker_handlers,
    worker_model,
)
from seer.sched.sharing import owner_of, sharing_audit, uncounted
from seer.testing import RandomModel, assert_equivalent
from workloads.aircraft import Aircraft
from workloads.pcs import PCS

SWITCHES = ["none", "all", *COPIES]


@pytest.mark.parametrize("copies", SWITCHES)
@pytest.mark.parametrize("threads", [2, 3])
def test_every_switch_matches_serial_on_random_models(copies, threads):
    model = RandomModel(60, seed=7, fanout=2, p_fan_in=0.5)
    assert_equivalent(lambda m: SeerRuntime(m, threads=threads, copies=copies), model,
                      seeds=range(3), steps=4)


@pytest.mark.parametrize("copies", ["none", "all", "model"])
@pytest.mark.parametrize("make", [lambda: PCS(width=8, height=8),
                                  lambda: Aircraft(40)], ids=["pcs", "aircraft"])
def test_every_switch_matches_serial_on_the_workloads(copies, make):
    assert_equivalent(lambda m: SeerRuntime(m, threads=2, copies=copies), make(),
                      seeds=range(2), steps=3)


def test_the_runtime_names_its_copies():
    model = RandomModel(10, seed=1)
    with SeerRuntime(model, threads=2) as rt:
        assert rt.copies == DEFAULT_COPIES
        assert rt.stats["copies"] == "contexts,handlers,snapshot"
    with SeerRuntime(model, threads=2, copies="all") as rt:
        assert rt.stats["copies"] == "contexts,handlers,snapshot,model"
        assert all(w.model is not model for w in rt._workers)
        assert all(h.__self__ is w.model for w in rt._workers for h in w.handlers)
    with SeerRuntime(model, threads=2, copies="none") as rt:
        assert rt.stats["copies"] == "none"
        assert all(w.handlers is rt._handlers and w.model is model for w in rt._workers)


@pytest.mark.parametrize("bad", ["models", ["contexts", "rows"], 3, "", " "])
def test_an_unknown_switch_is_named(bad):
    with pytest.raises(ModelError, match="copies"):
        parse_copies(bad)
    assert parse_copies("contexts, model") == {"contexts", "model"}


def test_thread_copy_makes_equal_objects_of_its_own():
    nan = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000123))[0]
    frozen = np.arange(6.0).reshape(2, 3)
    frozen.flags.writeable = False
    # values made at run time: constants of the code object are immortal (never copied)
    value = {"x": float("1.25"), "big": int("1" + "0" * 30), "nan": nan,
             "name": "".join(["a longer", " name"]),
             "table": [(1.5, 2.5), (3.5, 4.5)], "frozen": frozen, "scalar": np.float32(2.5),
             "lock": threading.Lock()}
    value["again"] = value["table"]  # shared structure stays shared within the copy
    out = thread_copy(value)
    assert out["x"] == 1.25 and out["x"] is not value["x"]
    assert thread_copy(1.5) is 1.5  # noqa: F632 - an immortal constant comes back as it is
    assert out["big"] == 10**30 and out["big"] is not value["big"]
    assert struct.pack("<d", out["nan"]) == struct.pack("<d", nan)
    assert out["name"] == value["name"] and out["name"] is not value["name"]
    assert out["table"] == value["table"] and out["table"] is not value["table"]
    assert out["again"] is out["table"]
    assert np.array_equal(out["frozen"], frozen) and out["frozen"] is not frozen
    assert not out["frozen"].flags.writeable
    assert out["scalar"] == value["scalar"] and out["scalar"].dtype == np.float32
    assert out["lock"] is value["lock"]  # cannot be copied: shared


def test_thread_copy_shares_what_a_copy_could_change():
    base = np.arange(12.0).reshape(3, 4)
    strided = base[:, ::2]  # numpy picks kernels by layout: a contiguous copy could differ
    fortran = np.asfortranarray(base)
    values = {"strided": strided, "masked": np.ma.array(base), "set": {5000, 2050, 995},
              "object": object(), "fortran": fortran}
    out = thread_copy(values)
    for name in ("strided", "masked", "set", "object"):
        assert out[name] is values[name], name
    assert out["fortran"] is not fortran and out["fortran"].flags.f_contiguous

def test_a_worker_model_is_made_of_the_workers_own_objects():
    model = PCS(width=6, height=6)
    made: dict[str, object] = {}

    def build():
        made["twin"] = worker_model(model)
        made["tid"] = owner_of(object())

    t = threading.Thread(target=build)
    t.start()
    t.join()
    twin = made["twin"]
    assert type(twin) is PCS and twin is not model
    for name, value in vars(model).items():
        copied = vars(twin)[name]
        if uncounted(value):
            continue  # immortal: nothing to copy
        assert copied is not value, name
        assert owner_of(copied) == made["tid"], name
    handlers = worker_handlers(tuple(getattr(model, f"on_{k}") for k in model.kinds),
                               model, twin)
    assert all(h.__self__ is twin for h in handlers)


def test_the_audit_sees_what_each_switch_stops_sharing():
    model = PCS(width=10, height=10)
    none = sharing_audit(model, threads=2, copies="none").paths(contended=True)
    default = sharing_audit(model, threads=2).paths(contended=True)
    every = sharing_audit(model, threads=2, copies="all").paths(contended=True)
    # what every thread reaches whatever it ran (which entities each ran is timing)
    assert {"model", "handlers", "worker.snapshot"} <= none
    assert "model" in default and "handlers" not in default
    assert "worker.snapshot" not in default
    assert not {p for p in every if p.startswith(("model", "handlers", "worker."))}


def test_seer_trace_sharing_prints_the_audit(capsys):
    from seer.cli import main

    assert main(["trace", "pcs", "width=6", "height=6", "--sharing", "none", "--steps",
                 "1"]) == 0
    out = capsys.readouterr().out
    assert "objects the 2 threads of seer(2) reach on PCS" in out and "(copies: none)" in out
    assert "\nmodel " in out and "contended" in out
    assert main(["trace", "pcs", "width=6", "height=6", "--runtime", "static",
                 "--sharing"]) == 2
    assert "--sharing audits the runtime 'seer'" in capsys.readouterr().err
