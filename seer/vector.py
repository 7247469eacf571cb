"""K environments on one pool: SEER's runtime for each, its windows run side by side.

:class:`VectorRuntime` steps K models (one model class with K seeds, or K instances) on
one :class:`~seer.sched.pool.WorkerPool`. Each model has a :class:`~seer.sched.SeerRuntime`
of its own — its LEQs, PEL, contexts, workers and seeding — built on the shared pool, so
each model's results are those of stepping it alone, bit for bit. A step runs the models'
windows in lockstep: the coordinator opens the next window of every model whose step has
not reached its end, then one pool task runs them all, each thread claiming from one
model's window and going on to the next model's when that one has no work left (thread
``i`` starts at model ``i % K``); after the barrier each model closes its window. So a
thread that finishes one environment's work takes another's, within the step.

This is the core of a vector environment: ``reset`` and ``step`` take and return one item
per model, in model order, for every model or for a subset (``envs=``: the others stay
as they are, which autoreset and ``send``/``recv`` build on). A model's handler error
fails the whole step, as in one runtime, and every model then needs ``reset``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

import seer.interrupts as interrupts
from seer.actions import action_batch
from seer.blas import blas_cap
from seer.errors import ModelError, RuntimeStateError
from seer.model import Model
from seer.runtime import StepResult, validate_threads
from seer.sched.dual_queue import SeerRuntime
from seer.sched.pool import WorkerPool

__all__ = ["VectorRuntime"]


class VectorRuntime:
    """``models`` (K of them) stepped on one pool of ``threads`` threads; ``options`` go to
    each model's :class:`~seer.sched.SeerRuntime` (``assignment``, ``copies``,
    ``max_events_per_step``...).

    ``reset(seed)``: ``seed`` an int (model ``k`` gets ``seed + k``, as gymnasium's vector
    environments seed), K seeds, or None. ``step(actions)``: K actions (None for a model
    without). Both return K :class:`~seer.runtime.StepResult`."""

    def __init__(self, models: Sequence[Model], *, threads: int = 2, spin_us: float = 50.0,
                 hot_spin_us: float = 1000.0, **options: Any) -> None:
        models = list(models)
        if not models:
            raise ModelError("VectorRuntime needs at least one model")
        threads = validate_threads(threads)
        self.pool = WorkerPool(threads, name="seer-vector", spin_us=spin_us,
                               hot_spin_us=hot_spin_us)
        self.envs: list[SeerRuntime] = []
        try:
            self.envs = [SeerRuntime(m, threads=threads, pool=self.pool, **options)
                         for m in models]
        except BaseException:
            self.close()
            raise
        self._lock = threading.Lock()
        self._closed = False

    @property
    def num_envs(self) -> int:
        return len(self.envs)

    @property
    def threads(self) -> int:
        return self.pool.threads

    def reset(self, seed: int | Sequence[int | None] | None = None, *,
              envs: Sequence[int] | None = None) -> list[StepResult]:
        """Start an episode of every model (model ``k`` seeded as the class docstring
        says), or of the models ``envs`` only (``seed``: an int for model ``envs[0]``,
        ``+ 1`` for the next, or one seed each); their initial outputs, in that order."""
        which = self._which(envs)
        seeds = self._seeds(seed, len(which))
        with self._operation("reset"):
            return [self.envs[k].reset(s) for k, s in zip(which, seeds, strict=True)]

    def step(self, actions: Sequence[Any] | None = None, *,
             envs: Sequence[int] | None = None) -> list[StepResult]:
        """One step of every model, or of the models ``envs`` only (the others stay as
        they are), their events run side by side on the pool; the outputs, in that order.
        ``actions``: one item per model stepped. Every model's actions are checked before
        anything changes."""
        which = self._which(envs)
        if actions is None:
            actions = [None] * len(which)
        if len(actions) != len(which):
            raise ModelError(f"step() needs {len(which)} actions (one per environment "
                             f"stepped), got {len(actions)}")
        with self._operation("step"):
            stepped = [self.envs[k] for k in which]
            for k, env in zip(which, stepped, strict=True):
                if env._status != "ready":
                    env._check_open()
                    raise RuntimeStateError(f"environment {k} needs reset() first")
            batches = [action_batch(env.model, env.spec, a, env.time, env._external_counters,
                                    env._action_marks)
                       for env, a in zip(stepped, actions, strict=True)]
            # Ctrl-C as one runtime's operation takes it (seer.interrupts): recorded in
            # SEER's own code, raised when the step ends; the step then needs a reset.
            guard = interrupts.enter(self._stop, self._mark_failed)
            try:
                results = self._guarded(stepped, batches)
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    guard.pending = 0  # this is the Ctrl-C: raise it once
                    self._mark_failed()
                interrupts.leave(guard)
                raise
            return interrupts.leave(guard, results)

    def close(self) -> None:
        """Close every model's runtime and the pool. Idempotent."""
        for env in self.envs:
            env.close()
        self.pool.close()
        self._closed = True

    def __enter__(self) -> VectorRuntime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the step ---------------------------------------------------------------------------
    def _guarded(self, envs: list[SeerRuntime], batches: list) -> list[StepResult]:
        """The step with BLAS capped and the pool hot; after a failure every model needs
        ``reset``, and the pool gets new threads (unless some never came back)."""
        try:
            with blas_cap(1):
                self.pool.hot = True
                try:
                    return self._step(envs, batches)
                finally:
                    self.pool.hot = False
        except BaseException:
            self._mark_failed()
            if not self.pool.stuck:
                self.pool.restart()
            raise

    def _step(self, envs: list[SeerRuntime], batches: list) -> list[StepResult]:
        ends = [env._begin_step(batch) for env, batch in zip(envs, batches, strict=True)]
        limits = [env.events_run + env._event_limit for env in envs]
        windows: list[Iterator | None] = [
            env._events.windows(t_end, env.spec.lookahead)
            for env, t_end in zip(envs, ends, strict=True)]
        while True:
            open_ = []  # (k, env, t_min, ready, bound, start)
            for k, env in enumerate(envs):
                if windows[k] is None:
                    continue
                window = next(windows[k], None)
                if window is None:
                    windows[k] = None
                    continue
                t_min, ready, bound = window
                start = env._open_window(ready, bound)
                env._publish_window(ready)
                open_.append((k, env, t_min, ready, bound, start))
            if not open_:
                break
            self._run_windows(open_)
            for k, env, t_min, ready, _bound, _start in open_:
                env.windows_run += 1
                if env._interrupted:
                    raise KeyboardInterrupt
                if env.events_run > limits[k]:
                    env._mark_failed()
                    raise env._step_limit_error(int(ready[0]), None,
                                                f"window at t={t_min!r} with {len(ready)} "
                                                "ready entities")
        return [env._end_step() for env in envs]

    def _run_windows(self, open_: list) -> None:
        """One pool task for the open windows of every model; then each model settles
        and closes its window (its handler failure, if any, raised)."""
        envs = [env for _k, env, *_ in open_]
        tasks: list[Callable[[int], None]] = [env._window_task for env in envs]
        count = len(tasks)

        def task(index: int) -> None:
            for j in range(count):
                tasks[(index + j) % count](index)

        try:
            self.pool.run(task, self._stop, give_up_after=2)
        except BaseException as exc:
            for env in envs:
                env._collect()
            envs[0]._raise_failure(exc)
        finally:
            for _k, env, _t, ready, bound, start in open_:
                env._settle_window(start, len(ready), bound)
        for env in envs:
            env._close_window()

    def _stop(self) -> None:
        for env in self.envs:
            env._interrupted = True
            env._stop_threads()

    def _mark_failed(self) -> None:
        for env in self.envs:
            env._mark_failed()

    def _which(self, envs: Sequence[int] | None) -> list[int]:
        """The models an operation applies to: ``envs`` (distinct indices), or all."""
        k = len(self.envs)
        if envs is None:
            return list(range(k))
        which = [int(e) for e in envs]
        if len(set(which)) != len(which) or not all(0 <= e < k for e in which):
            raise ModelError(f"envs must be distinct indices in range({k}), got {list(envs)}")
        return which

    def _seeds(self, seed: Any, k: int) -> list:
        if seed is None:
            return [None] * k
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            return [int(seed) + i for i in range(k)]
        seeds = list(seed)
        if len(seeds) != k:
            raise ModelError(f"reset() needs an int or {k} seeds, got {len(seeds)}")
        return seeds

    @contextmanager
    def _operation(self, name: str) -> Iterator[None]:
        """One operation at a time, refused (never blocked) while another runs."""
        if self._closed:
            raise RuntimeStateError("VectorRuntime is closed")
        if not self._lock.acquire(blocking=False):
            raise RuntimeStateError(f"{name}() refused: another operation is running on "
                                    "this VectorRuntime in another thread")
        try:
            yield
        finally:
            self._lock.release()
