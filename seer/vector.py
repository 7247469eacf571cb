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

__all__ = ["AUTORESET_MODES", "SeerVectorEnv", "VectorRuntime"]


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
                env._window_done(limits[k], int(ready[0]), t_min, len(ready))
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


#: gymnasium 1.x's autoreset modes, by their values (``gymnasium.vector.AutoresetMode``).
AUTORESET_MODES = ("NextStep", "SameStep", "Disabled")


def _autoreset_mode(mode: Any) -> Any:
    """``mode`` (a name of :data:`AUTORESET_MODES` or gymnasium's enum) as gymnasium's
    ``AutoresetMode`` where gymnasium is installed, else as its name."""
    value = getattr(mode, "value", mode)
    if value not in AUTORESET_MODES:
        raise ModelError(f"autoreset_mode must be one of {AUTORESET_MODES} (or "
                         f"gymnasium.vector.AutoresetMode), got {mode!r}")
    try:
        from gymnasium.vector import AutoresetMode
    except ImportError:
        return value
    return AutoresetMode(value)


def _episode_seed(base: Any, episode: int) -> np.random.SeedSequence | None:
    """The seed of episode ``episode`` (1, 2, ... after a ``reset``) of an environment
    reset with ``base``: that seed's child ``episode`` (None stays None: fresh entropy)."""
    if base is None:
        return None
    if isinstance(base, np.random.SeedSequence):
        return np.random.SeedSequence(base.entropy, spawn_key=(*base.spawn_key, episode),
                                      pool_size=base.pool_size)
    return np.random.SeedSequence(int(base), spawn_key=(episode,))


class SeerVectorEnv:
    """K multi-agent environments on one pool, with gymnasium 1.x's vector conventions:
    arrays with a leading environment axis and autoreset.

    ``models``: K models, or a callable making one and ``num_envs``. ``step(actions)``
    takes one item per environment (whatever the model's ``action_events`` takes; an
    array with a leading K axis works) and returns ``(observations, rewards,
    terminations, truncations, infos)``: observations ``[K, agents, ...]`` (an object
    array when shapes differ), rewards ``[K, agents]`` float64, terminations and
    truncations ``[K, agents]`` bool, infos a list of K dicts (``"agents"``: the per-agent
    infos, ``"step"``). A model's ``max_steps`` attribute truncates every agent at that
    step, as :class:`~seer.marl.SeerParallelEnv` does. An environment's episode is over
    when every agent is terminated or truncated.

    ``autoreset_mode`` (``metadata["autoreset_mode"]``), as gymnasium defines them:
    ``NextStep`` (the default: the step after an episode's end resets that environment
    instead of stepping it, returning its first observations with zero rewards and no
    terminations), ``SameStep`` (the environment is reset in the step that ended it; the
    last observations are in its info's ``"final_obs"``), ``Disabled`` (reset with
    ``reset(options={"reset_mask": mask})``). An automatic reset seeds episode ``e`` of
    environment ``k`` from its seed at the last ``reset`` and ``e``, so results depend on
    the seeds only, not on which environments ended when."""

    def __init__(self, models: Sequence[Model] | Callable[[], Model], *,
                 num_envs: int | None = None, threads: int = 2,
                 autoreset_mode: Any = "NextStep", **options: Any) -> None:
        if callable(models):
            if not isinstance(num_envs, int) or num_envs < 1:
                raise ModelError("a model factory needs num_envs >= 1")
            models = [models() for _ in range(num_envs)]
        self.metadata = {"autoreset_mode": _autoreset_mode(autoreset_mode)}
        self._mode = getattr(self.metadata["autoreset_mode"], "value",
                             self.metadata["autoreset_mode"])
        self.runtime = VectorRuntime(models, threads=threads, **options)
        self.num_envs = self.runtime.num_envs
        self._max_steps = [getattr(env.model, "max_steps", None) for env in self.runtime.envs]
        self._base: list[Any] = [None] * self.num_envs  # seed at the last explicit reset
        self._episode = [0] * self.num_envs
        self._done = np.zeros(self.num_envs, np.bool_)
        self._last: list[tuple | None] = [None] * self.num_envs

    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, list[dict]]:
        """Reset every environment, or those of ``options["reset_mask"]`` (a K-bool
        array); ``seed``: an int (environment ``k`` gets ``seed + k``) or K seeds."""
        mask = (options or {}).get("reset_mask")
        which = (list(range(self.num_envs)) if mask is None
                 else np.flatnonzero(np.asarray(mask, np.bool_)).tolist())
        seeds = self.runtime._seeds(seed, self.num_envs)
        chosen = [seeds[k] for k in which]
        results = self.runtime.reset(chosen, envs=which)
        for k, s, r in zip(which, chosen, results, strict=True):
            self._base[k], self._episode[k] = s, 0
            self._done[k] = False
            self._last[k] = self._unpack(k, r)
        obs, _rew, _term, _trunc, infos = self._stack()
        return obs, infos

    def step(self, actions: Sequence[Any]) -> tuple:
        """One step of every environment (see the class docstring for autoreset)."""
        if len(actions) != self.num_envs:
            raise ModelError(f"step() needs {self.num_envs} actions, got {len(actions)}")
        restart = np.flatnonzero(self._done).tolist() if self._mode == "NextStep" else []
        stepped = [k for k in range(self.num_envs) if k not in restart]
        if restart:
            self._auto_reset(restart)
        if stepped:
            results = self.runtime.step([actions[k] for k in stepped], envs=stepped)
            for k, r in zip(stepped, results, strict=True):
                self._last[k] = self._unpack(k, r)
                self._done[k] = bool(np.all(self._last[k][2] | self._last[k][3]))
        obs, rew, term, trunc, infos = self._stack()
        if self._mode == "SameStep":
            ended = [k for k in stepped if self._done[k]]
            if ended:
                final = {k: (obs[k], infos[k]) for k in ended}
                self._auto_reset(ended)
                obs, _r, _t, _u, fresh = self._stack()
                for k in ended:
                    fresh[k]["final_obs"], fresh[k]["final_info"] = final[k]
                infos = fresh
        return obs, rew, term, trunc, infos

    def close(self) -> None:
        self.runtime.close()

    def __enter__(self) -> SeerVectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _auto_reset(self, which: list[int]) -> None:
        """Start the next episode of the environments ``which``, seeded from their seed
        at the last ``reset`` and the episode's number."""
        seeds = []
        for k in which:
            self._episode[k] += 1
            seeds.append(_episode_seed(self._base[k], self._episode[k]))
        for k, r in zip(which, self.runtime.reset(seeds, envs=which), strict=True):
            self._done[k] = False
            self._last[k] = self._unpack(k, r)
            self._last[k][1][:] = 0.0  # the first observations come with no reward

    def _unpack(self, k: int, r: StepResult) -> tuple:
        """``r`` as (observations, rewards, terminations, truncations, info), with the
        model's ``max_steps`` truncating every agent."""
        trunc = np.array(r.truncations, np.bool_)
        limit = self._max_steps[k]
        if limit is not None and r.step >= limit:
            trunc[:] = True
        return (r.observations, np.array(r.rewards, np.float64),
                np.array(r.terminations, np.bool_), trunc,
                {"agents": r.infos, "step": r.step})

    def _stack(self) -> tuple:
        last = self._last
        try:
            obs = np.stack([np.stack([np.asarray(o) for o in x[0]]) for x in last])
        except (ValueError, TypeError):
            obs = np.empty(len(last), object)
            obs[:] = [x[0] for x in last]
        return (obs, np.stack([x[1] for x in last]), np.stack([x[2] for x in last]),
                np.stack([x[3] for x in last]), [dict(x[4]) for x in last])
