"""Where a step's CPU goes: inside the model's handlers and ``outputs``, or everywhere else.

    .venv/bin/python -m bench.handler_time --workload pcs --cost 15 --rounds 5

For serial, seer(1), seer(T) and T independent serial runs on T threads of this process
(their own models; nothing shared but the interpreter and numpy), it times every handler
call and every ``outputs`` call with a wrapper, and reports per step: the process's CPU
(for the independent runs, each thread's own CPU), the time inside handlers and inside
``outputs`` (summed over threads), and the rest: the event loops, the coordinator, idle
threads and the wrapper itself. Against the independent runs, what seer(T) pays above
them inside the handlers is what sharing one model costs the handlers; what it pays
above seer(1) outside them is what the runtime's own work costs on T threads
(``docs/performance.md``, "Memory the runtime touches").

The wrappers are methods of a subclass that the model's instance is switched to, so each
worker thread still calls its own bound method; each keeps its sums in a
``threading.local``, which every multi-thread setting pays alike. The runtimes take turns
within a round; medians over rounds are reported.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import threading
import time
from typing import Any

import seer
from bench.bench_queues import on_threads
from bench.bench_runtimes import make_model
from bench.markdown import table

__all__ = ["main", "measure", "timed_model"]

_clock = time.perf_counter_ns
_sums = threading.local()
_all_sums: list[list[int]] = []  # [handler ns, outputs ns] of every thread that timed
_sums_lock = threading.Lock()


def _thread_sums() -> list[int]:
    sums = getattr(_sums, "v", None)
    if sums is None:
        sums = _sums.v = [0, 0]
        with _sums_lock:
            _all_sums.append(sums)
    return sums


def _timed(function: Any, slot: int) -> Any:
    @functools.wraps(function)  # the model's compiler reads the signature through it
    def timed(self: Any, *args: Any) -> Any:
        sums = _thread_sums()
        t0 = _clock()
        try:
            return function(self, *args)
        finally:
            sums[slot] += _clock() - t0

    return timed


def timed_model(model: seer.Model) -> seer.Model:
    """``model`` with its handlers (``on_<kind>``) and ``outputs`` timed (its class is
    switched to a subclass holding the wrappers; it is returned for convenience)."""
    cls = type(model)
    namespace = {name: _timed(getattr(cls, name), 0) for name in
                 (f"on_{kind}" for kind in model.kinds) if hasattr(cls, name)}
    namespace["outputs"] = _timed(cls.outputs, 1)
    namespace["__slots__"] = ()  # the same instance layout, so that the switch is allowed
    model.__class__ = type(f"Timed{cls.__name__}", (cls,), namespace)
    return model


def _reset_sums() -> None:
    with _sums_lock:
        for sums in _all_sums:
            sums[0] = sums[1] = 0


def _totals() -> tuple[float, float]:
    with _sums_lock:
        return (sum(s[0] for s in _all_sums) / 1e9, sum(s[1] for s in _all_sums) / 1e9)


def _built(workload: str, entities: int, cost: float, steps: int, kind: str,
           threads: int) -> tuple[seer.Runtime, list[Any]]:
    model = timed_model(make_model(workload, entities, cost, 1))
    actions = [model.sample_actions(t) for t in range(steps + 1)]
    rt = seer.make_runtime(model, kind, threads=threads)
    rt.reset(seed=0)
    rt.step(actions[0])
    return rt, actions


def _one(workload: str, entities: int, cost: float, steps: int, kind: str,
         threads: int) -> tuple[float, float, float]:
    """(process CPU, handler s, outputs s) per step of one runtime."""
    rt, actions = _built(workload, entities, cost, steps, kind, threads)
    try:
        _reset_sums()
        c0 = time.process_time()
        for t in range(steps):
            rt.step(actions[t + 1])
        cpu = time.process_time() - c0
        handlers, outputs = _totals()
    finally:
        rt.close()
    return cpu / steps, handlers / steps, outputs / steps


def _independent(workload: str, entities: int, cost: float, steps: int,
                 threads: int) -> tuple[float, float, float]:
    """The same for one of ``threads`` serial runs stepping at once (means over them)."""
    runs: list[Any] = [None] * threads
    results: list[tuple[float, float, float]] = [(0.0, 0.0, 0.0)] * threads

    def setup(i: int) -> None:
        runs[i] = _built(workload, entities, cost, steps, "serial", 1)

    def body(i: int, _loops: int) -> None:
        rt, actions = runs[i]
        sums = _thread_sums()
        sums[0] = sums[1] = 0
        c0 = time.thread_time()
        for t in range(steps):
            rt.step(actions[t + 1])
        results[i] = ((time.thread_time() - c0) / steps, sums[0] / 1e9 / steps,
                      sums[1] / 1e9 / steps)

    try:
        on_threads(threads, body, 1, setup=setup)
    finally:
        for r in runs:
            if r is not None:
                r[0].close()
    return tuple(statistics.fmean(r[i] for r in results) for i in range(3))  # type: ignore[return-value]


def measure(workload: str, entities: int, cost: float, threads: int, rounds: int,
            steps: int) -> dict[str, Any]:
    """Per setting: median over rounds of CPU, handler and outputs seconds per step."""
    settings = ["serial", "seer(1)", f"seer({threads})", f"{threads} independent runs"]
    rows: dict[str, list[tuple[float, float, float]]] = {s: [] for s in settings}
    for _ in range(rounds):
        rows["serial"].append(_one(workload, entities, cost, steps, "serial", 1))
        rows["seer(1)"].append(_one(workload, entities, cost, steps, "seer", 1))
        rows[f"seer({threads})"].append(_one(workload, entities, cost, steps, "seer", threads))
        rows[f"{threads} independent runs"].append(
            _independent(workload, entities, cost, steps, threads))
    return {"workload": workload, "entities": entities, "cost_us": cost, "threads": threads,
            "rounds": rounds, "steps": steps,
            "settings": {s: {k: statistics.median(r[i] for r in v) for i, k in
                             enumerate(("cpu_s", "handlers_s", "outputs_s"))}
                         for s, v in rows.items()}}


def section(result: dict[str, Any]) -> list[str]:
    rows = []
    for name, r in result["settings"].items():
        rest = r["cpu_s"] - r["handlers_s"] - r["outputs_s"]
        rows.append([name, f"{1e3 * r['cpu_s']:.1f}", f"{1e3 * r['handlers_s']:.1f}",
                     f"{1e3 * r['outputs_s']:.1f}", f"{1e3 * rest:.1f}"])
    return [f"{result['workload']} {result['entities']}, cost_us={result['cost_us']:g}: "
            f"ms per step, median of {result['rounds']} rounds of {result['steps']} steps "
            "(independent runs: per run)", "",
            *table(["setting", "CPU", "in handlers", "in outputs", "the rest"], rows)]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.handler_time",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="pcs", choices=["pcs", "aircraft", "bench"])
    parser.add_argument("--entities", type=int, default=1600)
    parser.add_argument("--cost", type=float, default=15.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args(argv)
    if args.threads < 2 or args.rounds < 1 or args.steps < 1 or args.entities < 1:
        parser.error("--threads must be >= 2, --rounds, --steps and --entities >= 1")
    result = measure(args.workload, args.entities, args.cost, args.threads, args.rounds,
                     args.steps)
    print("\n".join(section(result)))
    return result


if __name__ == "__main__":
    main()
