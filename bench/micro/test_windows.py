"""One window of each runtime on a fixed model: ``EmptyModel`` with one event per entity
per step and a lookahead of a whole step, so a step is exactly one window of 1600 ready
entities (plus the step's fixed work: the snapshot and the outputs)."""

from __future__ import annotations

import pytest

import seer
from workloads.synthetic import EmptyModel

ENTITIES = 1600
RUNTIMES = [("serial", 1), ("seer", 1), ("seer", 2), ("static", 2), ("static-block", 2),
            ("global", 2), ("executor", 2)]


@pytest.mark.parametrize(("name", "threads"), RUNTIMES, ids=[f"{n}-{t}" for n, t in RUNTIMES])
def test_one_window(benchmark, name, threads):
    model = EmptyModel(ENTITIES, per_step=1)
    with seer.make_runtime(model, name, threads=threads) as rt:
        rt.reset(seed=0)
        rt.step(None)
        if rt.parallel:  # the premise: a step is one window
            before = rt.windows_run
            rt.step(None)
            assert rt.windows_run == before + 1
        benchmark(rt.step, None)
