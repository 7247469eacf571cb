"""The preflight: a few steps of the user's model on a separate runtime, observed per thread.

STPA (``docs/design.md``, "STPA") runs the model for ``steps`` steps on a fresh runtime
at a *probe* thread count, with a fixed seed of its own: the user's runtime, episode and
random streams are not touched (the model object is shared, so a model must not keep
mutable state outside its rows; a well-formed model does not). After one warm-up step, it
samples every metric of :mod:`seer.stpa.metrics` per thread after each step, aggregates
across threads (``F``, shape ``(N, steps, 3)``) and records *static* features: entities,
events per step, mean event cost, cross-entity fraction, windows per step, usable cores,
the largest thread count considered (:func:`machine_t_max`), the probe count and the
machine's effective capacity right now (:func:`capacity`: how many cores ``cores``
spinning threads get, measured in about 20 ms).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from seer.errors import check_events_ran
from seer.model import Model, sample_actions_of
from seer.stpa.metrics import METRICS, MetricSampler, aggregate, caller_thread_id

__all__ = ["PREFLIGHT_STEPS", "STATIC_FEATURES", "Preflight", "capacity", "default_actions",
           "machine_t_max", "observe", "run_preflight", "usable_cores"]

#: Static features, in feature order.
STATIC_FEATURES: tuple[str, ...] = (
    "entities", "events_per_step", "mean_event_us", "cross_fraction", "windows_per_step",
    "cores", "t_max", "probe", "capacity",
)

#: Timed preflight steps (after one warm-up step).
PREFLIGHT_STEPS = 4

#: The preflight's own seed: fixed, and never the user's.
PREFLIGHT_SEED = 20_261_130


@dataclass
class Preflight:
    """What a preflight measured (see the module docstring)."""

    features: np.ndarray  # (len(METRICS), steps, 3): mean, variance, range across threads
    mask: np.ndarray  # (len(METRICS),) bool: metrics available on this machine
    static: dict[str, float]
    probe: int
    seconds: float  # wall time of the whole preflight, runtime construction included
    step_seconds: list[float] = field(default_factory=list)

    def static_vector(self) -> np.ndarray:
        return np.array([self.static[k] for k in STATIC_FEATURES], np.float64)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly summary (``runtime.stpa``)."""
        return {"probe": self.probe, "seconds": self.seconds, "static": dict(self.static),
                "metrics_available": [m for m, ok in zip(METRICS, self.mask, strict=True)
                                      if ok]}


def usable_cores() -> int:
    """CPUs this process may run on (its affinity mask)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def machine_t_max(cores: int) -> int:
    """The largest thread count STPA considers on a machine with ``cores`` usable cores:
    ``max(8, cores)``, the range its training scans cover (1..8 on 2 cores, 1..16 on 16)."""
    return max(8, int(cores))


def capacity(threads: int, seconds: float = 0.01) -> float:
    """Effective cores now: the work ``threads`` spinning Python threads do together in
    ``seconds`` over what one thread does alone in as long (about ``threads`` on an idle
    machine, less when other work shares it)."""
    import threading

    def spin(out: list[int], stop: float) -> None:
        n = 0
        while time.perf_counter() < stop:
            n += 1
        out.append(n)

    one: list[int] = []
    spin(one, time.perf_counter() + seconds)
    many: list[int] = []
    barrier = threading.Barrier(threads + 1)

    def run() -> None:
        barrier.wait()
        spin(many, stop[0])

    stop = [0.0]
    workers = [threading.Thread(target=run) for _ in range(threads)]
    for w in workers:
        w.start()
    stop[0] = time.perf_counter() + seconds
    barrier.wait()
    for w in workers:
        w.join()
    return sum(many) / max(one[0], 1)


def default_actions(model: Model) -> Callable[[int], Any]:
    """The model's ``sample_actions(step)`` if it has one, else no actions."""
    return sample_actions_of(model)


def run_preflight(model: Model, *, runtime: str = "seer", probe: int | None = None,
                  steps: int = PREFLIGHT_STEPS, t_max: int | None = None,
                  actions: Callable[[int], Any] | None = None) -> Preflight:
    """Run the preflight (see the module docstring). ``t_max`` defaults to
    :func:`machine_t_max` of the usable cores, ``probe`` to ``min(max(2, cores), t_max)``:
    at least two threads, so that sharing is observed.

    An exception from the model's code propagates unchanged (it is the model's error).
    Timed steps that run no event raise :class:`~seer.NoEventsError` (there is nothing to
    predict from); fewer than two events a step warn (:class:`~seer.FewEventsWarning`)."""
    from seer.sched import make_runtime

    return observe(lambda threads: make_runtime(model, runtime, threads=threads),
                   actions or default_actions(model), entities=model.n_entities,
                   name=getattr(model, "name", type(model).__name__), probe=probe,
                   steps=steps, t_max=t_max)


def observe(build: Callable[[int], Any], actions: Callable[[int], Any], *, entities: int,
            name: str, probe: int | None = None, steps: int = PREFLIGHT_STEPS,
            t_max: int | None = None) -> Preflight:
    """The preflight of what ``build(threads)`` makes: anything with ``reset(seed)``,
    ``step(actions)``, ``pool`` (a WorkerPool or None), ``stats`` (``events_run``,
    ``emitted``, ``cross_entity``, ``windows``) and ``close()`` — a runtime, or several
    models on one pool (:mod:`seer.vector`: ``entities`` then counts all of them).
    ``actions(t)``: what step ``t`` takes. See :func:`run_preflight`."""
    t0 = time.perf_counter()
    cores = usable_cores()
    t_max = t_max or machine_t_max(cores)
    probe = probe or min(max(2, cores), t_max)
    rt = build(probe)
    try:
        rt.reset(PREFLIGHT_SEED)
        rt.step(actions(0))  # warm-up: threads started, caches filled
        pool = rt.pool
        if pool is not None:
            pool.reset_stats()
            ids = [caller_thread_id()] + [t.native_id for t in pool._threads]
            stats = pool.stats
        else:
            ids, stats = [caller_thread_id()], None
        sampler = MetricSampler(ids, stats)
        before = rt.stats
        samples, step_seconds = [], []
        try:
            for t in range(1, steps + 1):
                s0 = time.perf_counter()
                rt.step(actions(t))
                step_seconds.append(time.perf_counter() - s0)
                samples.append(sampler.sample())
        finally:
            sampler.close()
        after = rt.stats
    finally:
        rt.close()
    events = after["events_run"] - before["events_run"]
    # A preflight of empty steps measures only the scheduler: its prediction would be noise.
    check_events_ran(events, steps, f"STPA's preflight (threads='auto', seer stpa predict) "
                     f"ran {steps} step(s)", name)
    emitted = after["emitted"] - before["emitted"]
    cpu = sum(s.cpu_s for s in stats) if stats is not None else sum(step_seconds)
    static = {
        "entities": float(entities),
        "events_per_step": events / steps,
        "mean_event_us": 1e6 * cpu / max(events, 1),
        "cross_fraction": (after["cross_entity"] - before["cross_entity"]) / max(emitted, 1),
        "windows_per_step": (after.get("windows", 0) - before.get("windows", 0)) / steps,
        "cores": float(cores),
        "t_max": float(t_max),
        "probe": float(probe),
        "capacity": capacity(cores),
    }
    return Preflight(aggregate(samples), sampler.mask.copy(), static, probe,
                     time.perf_counter() - t0, step_seconds)
