"""K environments on one pool: whole steps of the small ones, the events of a large one.

:class:`VectorRuntime` steps K models (one model class with K seeds, or K instances) on
one :class:`~seer.sched.pool.WorkerPool`, each model's results those of stepping it alone,
bit for bit. Equal models are stepped whole, one per thread at a time, as each thread
finishes (environment-level parallelism costs nothing inside a step); a model too large
for that to balance gets a :class:`~seer.sched.SeerRuntime` of its own — its LEQs, PEL,
contexts, workers and seeding — built on the shared pool, and its events run across the
threads (``split``). A step runs in rounds: the coordinator opens the next window of
every such model whose step has not reached its end, then one pool task runs them all,
each thread claiming from one model's window and going on to the next model's when that
one has no work left (thread ``i`` starts at the ``i``-th, modulo their count), then
taking whole steps
while any are left; after the barrier each model closes its window. So a thread that
finishes one environment's work takes another's, within the step.

This is the core of a vector environment: ``reset`` and ``step`` take and return one item
per model, in model order, for every model or for a subset (``envs=``: the others stay
as they are, which autoreset builds on). ``send``/``recv`` let models step out of
lockstep: ``send`` starts steps, ``recv(n)`` runs window rounds of every step in flight
until ``n`` have ended and returns those; the rest wait between two windows for the next
``recv``. A model's handler error fails the whole step (or ``recv``), as in one runtime,
and every model then needs ``reset``.

:class:`SeerVectorEnv` puts gymnasium 1.x's vector conventions on top (arrays with a
leading environment axis, autoreset, ``step_async``/``step_wait``), EnvPool's
``async_reset``/``send``/``recv`` with ``batch_size``, and each environment's agent
spaces with actions checked against them. Design notes: docs/design.md, "Several models
in one pool".
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

import seer.interrupts as interrupts
from seer.actions import action_batch
from seer.blas import blas_cap
from seer.errors import ModelError, RuntimeStateError
from seer.model import Model
from seer.runtime import Runtime, StepResult, _seed_sequence, validate_threads
from seer.sched import RUNTIMES, make_runtime
from seer.sched.dual_queue import SeerRuntime
from seer.sched.pool import WorkerPool
from seer.serial import SerialRuntime

__all__ = ["AUTORESET_MODES", "SPLITS", "SeerVectorEnv", "VectorRuntime"]

#: How a VectorRuntime spreads its models over the pool (see :class:`VectorRuntime`).
SPLITS = ("auto", "events", "whole")
#: The options a SerialRuntime takes (the others are SeerRuntime's own).
_SERIAL_OPTIONS = frozenset({"debug", "max_events_per_step", "trace"})


class _Flight:
    """One model's step in progress: its windows, its event limit, the next window (None:
    the step has no events left) and, once ended, its result."""

    __slots__ = ("env", "k", "limit", "result", "window", "windows")

    def __init__(self, k: int, env: SeerRuntime, windows: Iterator, limit: int,
                 window: tuple | None) -> None:
        self.k, self.env, self.windows, self.limit, self.window = k, env, windows, limit, window
        self.result: StepResult | None = None


class VectorRuntime:
    """``models`` (K of them) stepped on one pool of ``threads`` threads; ``options`` go to
    each model's runtime (``assignment``, ``copies``, ``max_events_per_step``...; a
    :class:`~seer.serial.SerialRuntime` takes those it knows).

    ``kind``: ``"seer"`` (the default) or a runtime sharing its machinery (``static``,
    ``static-block``, ``seer-ms``) runs as ``split`` says; ``"serial"`` steps every model
    whole; any other kind (``global``, ``executor``, ``optimistic``) gives each model a
    runtime with threads of its own, stepped one after another.

    ``split`` says how the models share the pool's threads; results are bit-identical
    whichever it is (each model's are those of stepping it alone):

    - ``"events"``: every model has a :class:`~seer.sched.SeerRuntime` on the pool, and a
      step runs their windows side by side (the module docstring);
    - ``"whole"``: every model has a :class:`~seer.serial.SerialRuntime`, and a step hands
      whole model steps to the threads as each finishes (environment-level parallelism,
      no scheduling inside a step);
    - ``"auto"`` (the default): whole steps for the models a whole-step schedule balances,
      events across the pool for a model too large for that (more entities than the
      rest's share of the threads; :func:`_split`), both in the same rounds: a thread runs its
      share of the windows, then takes whole steps while any are left.

    ``reset(seed)``: ``seed`` an int (model ``k`` gets ``seed + k``, as gymnasium's vector
    environments seed), K seeds, or None. ``step(actions)``: K actions (None for a model
    without). Both return K :class:`~seer.runtime.StepResult`.

    ``threads="auto"``: STPA chooses the thread count from a preflight of all K models
    stepped together on one pool (:func:`seer.stpa.choose_threads`; a few steps with STPA's
    own seed, the K models' entities and events added up, the rounds counted as windows);
    :attr:`stpa` then holds what it measured and predicted (None otherwise)."""

    def __init__(self, models: Sequence[Model], *, threads: int | str = 2,
                 kind: str = "seer", split: str = "auto", spin_us: float = 50.0,
                 hot_spin_us: float = 1000.0, **options: Any) -> None:
        models = list(models)
        if not models:
            raise ModelError("VectorRuntime needs at least one model")
        if split not in SPLITS:
            raise ModelError(f"split must be one of {SPLITS}, got {split!r}")
        try:
            cls = RUNTIMES[kind]
        except (KeyError, TypeError):
            raise ModelError(f"unknown runtime kind {kind!r}; choose one of "
                             f"{sorted(RUNTIMES)}") from None
        #: The runtime kind: ``seer`` (or a SeerRuntime subclass: ``static``...) shares
        #: the pool; ``serial`` steps every model whole; any other parallel kind gives
        #: each model a runtime with its own threads, stepped one after another.
        self.kind = kind
        if not cls.parallel:
            split = "whole"
        self.stpa: dict[str, Any] | None = None
        if isinstance(threads, str) and threads == "auto":
            threads, self.stpa = _choose_threads(models, kind, split, spin_us, hot_spin_us,
                                                 options)
        threads = validate_threads(threads)
        #: Per model: True when its steps run whole on one thread (a SerialRuntime), False
        #: when its events run across the pool's threads (a SeerRuntime); see ``split``.
        self.whole: list[bool] = _split(models, threads, split)
        self.split = split
        shares = issubclass(cls, SeerRuntime)
        #: Per model: True when it has a runtime of its own kind and threads (a kind that
        #: cannot share the pool), stepped by the caller one after another.
        self.alone: list[bool] = [cls.parallel and not shares] * len(models)
        self._threads = threads
        # Models alone bring their own threads: the pool then needs only the caller's.
        self.pool = WorkerPool(1 if cls.parallel and not shares else threads,
                               name="seer-vector", spin_us=spin_us, hot_spin_us=hot_spin_us)
        self.envs: list[Runtime] = []
        serial_options = {k: v for k, v in options.items() if k in _SERIAL_OPTIONS}
        try:
            for m, whole in zip(models, self.whole, strict=True):
                if not shares and cls.parallel:
                    self.envs.append(make_runtime(m, kind, threads=threads, **options))
                elif whole:
                    self.envs.append(SerialRuntime(m, **serial_options))
                else:
                    self.envs.append(cls(m, threads=threads, pool=self.pool, **options))
        except BaseException:
            self.close()
            raise
        self._lock = threading.Lock()
        self._closed = False
        # send()/recv(): steps sent and not yet begun, steps begun (events across the
        # pool; whole on one thread), steps ended and not yet received (in the order they
        # ended), and every model in any of these.
        self._sent: list[tuple[int, Any]] = []
        self._flights: list[_Flight] = []
        self._wholes: list[tuple[int, Any]] = []
        self._arrived: deque[tuple[int, StepResult]] = deque()
        self._busy: set[int] = set()
        self._halt = False  # set by a Ctrl-C: take no more whole steps this round
        self.rounds_run = 0  # pool tasks run (a barrier each)

    @property
    def num_envs(self) -> int:
        return len(self.envs)

    @property
    def stats(self) -> dict[str, Any]:
        """The models' counters added up (``events_run``, ``emitted``, ``cross_entity``),
        ``windows``: the rounds run (one pool task and barrier each: a window of every
        model whose events run across the pool, and the whole steps begun), and
        ``per_env``: each model's own :attr:`~seer.runtime.Runtime.stats`."""
        per_env = [env.stats for env in self.envs]
        out: dict[str, Any] = {key: sum(s.get(key, 0) for s in per_env)
                               for key in ("events_run", "emitted", "cross_entity")}
        out["windows"] = self.rounds_run
        out["per_env"] = per_env
        return out

    @property
    def threads(self) -> int:
        """The thread count each model is stepped with."""
        return self._threads

    def reset(self, seed: int | Sequence[int | None] | None = None, *,
              envs: Sequence[int] | None = None) -> list[StepResult]:
        """Start an episode of every model (model ``k`` seeded as the class docstring
        says), or of the models ``envs`` only (``seed``: an int for model ``envs[0]``,
        ``+ 1`` for the next, or one seed each); their initial outputs, in that order."""
        which = self._which(envs)
        seeds = self._seeds(seed, len(which))
        for s in seeds:
            _seed_sequence(s)  # every seed checked before any model is reset
        with self._operation("reset"):
            for k in which:
                if k in self._busy:
                    raise RuntimeStateError(f"environment {k} is in flight (sent, not yet "
                                            "received): recv() it first")
            return [self.envs[k].reset(s) for k, s in zip(which, seeds, strict=True)]

    def step(self, actions: Sequence[Any] | None = None, *,
             envs: Sequence[int] | None = None) -> list[StepResult]:
        """One step of every model, or of the models ``envs`` only (the others stay as
        they are), their events run side by side on the pool; the outputs, in that order.
        ``actions``: one item per model stepped. Every model's actions are checked before
        anything changes."""
        which = self._which(envs)
        with self._operation("step"):
            batches = self._batches(actions, which, "step")
            return self._interruptible(self._step, which, batches)

    def send(self, actions: Sequence[Any] | None, envs: Sequence[int]) -> None:
        """Start a step of each model of ``envs`` (none of them in flight), with one item of
        ``actions`` each; :meth:`recv` runs them. Returns at once: the actions are checked,
        nothing is run. A model sent stays in flight until ``recv`` returns it."""
        which = self._which(envs)
        with self._operation("send"):
            batches = self._batches(actions, which, "send")
            self._sent += zip(which, batches, strict=True)
            self._busy.update(which)

    def recv(self, count: int = 1) -> list[tuple[int, StepResult]]:
        """The first ``count`` models to end the step :meth:`send` started, as ``(model,
        result)`` pairs in the order they ended (models ending in the same round in model
        order). Runs rounds of every step in flight, side by side on the pool, until
        ``count`` have ended; the others stay in flight, between two windows, for the
        next ``recv``. A round runs one window of each step whose events run across the
        pool and every whole step begun, so which models end first depends on how many
        windows their steps take and on the split (so on the thread count), never on
        timing; each model's results are those of stepping it alone."""
        with self._operation("recv"):
            if (isinstance(count, bool) or not isinstance(count, (int, np.integer))
                    or count < 1):
                raise ModelError(f"recv() takes a count >= 1, got {count!r}")
            count = int(count)
            waiting = (len(self._arrived) + len(self._flights) + len(self._wholes)
                       + len(self._sent))
            if count > waiting:
                raise ModelError(f"recv({count}) would wait forever: {waiting} "
                                 f"environment(s) in flight; send() more first")
            if len(self._arrived) < count:
                self._interruptible(self._fly, count)
            out = [self._arrived.popleft() for _ in range(count)]
            self._busy.difference_update(k for k, _r in out)
            return out

    @property
    def in_flight(self) -> list[int]:
        """The models sent and not yet received, in model order."""
        return sorted(self._busy)

    def close(self) -> None:
        """Close every model's runtime and the pool. Idempotent; refused
        (:class:`~seer.errors.RuntimeStateError`) while another thread is inside an
        operation of this runtime."""
        lock = getattr(self, "_lock", None)  # None: the constructor failed
        if lock is not None and not lock.acquire(blocking=False):
            raise RuntimeStateError("close() refused: another operation is running on this "
                                    "VectorRuntime in another thread; close it after that "
                                    "call returns")
        try:
            for env in self.envs:
                env.close()
            self.pool.close()
            self._closed = True
        finally:
            if lock is not None:
                lock.release()

    def __enter__(self) -> VectorRuntime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the step ---------------------------------------------------------------------------
    def _batches(self, actions: Sequence[Any] | None, which: list[int], name: str) -> list:
        """The action batches of the models ``which``, every one checked before anything
        changes; each model must be ready and not in flight."""
        if actions is None:
            actions = [None] * len(which)
        if len(actions) != len(which):
            raise ModelError(f"{name}() needs {len(which)} actions (one per environment "
                             f"stepped), got {len(actions)}")
        for k in which:
            if k in self._busy:
                raise RuntimeStateError(f"environment {k} is in flight (sent, not yet "
                                        "received): recv() it first")
            env = self.envs[k]
            if env._status != "ready":
                env._check_open()
                raise RuntimeStateError(f"environment {k} needs reset() first")
        batches = []
        for k, a in zip(which, actions, strict=True):
            env = self.envs[k]
            try:
                batches.append(action_batch(env.model, env.spec, a, env.time,
                                            env._external_counters, env._action_marks))
            except ModelError as exc:  # the same error, saying which environment
                if exc.args and isinstance(exc.args[0], str):
                    exc.args = (f"environment {k}: {exc.args[0]}", *exc.args[1:])
                raise
        return batches

    def _interruptible(self, run: Callable[..., Any], *args: Any) -> Any:
        """``run(*args)`` with Ctrl-C taken as one runtime's operation takes it
        (seer.interrupts: recorded in SEER's own code, raised when the step ends; every
        model then needs a reset), BLAS capped and the pool hot. After a failure every
        model needs ``reset``, nothing stays in flight, and the pool gets new threads
        (unless some never came back)."""
        self._halt = False
        for env in self.envs:
            env._interrupted = False  # a Ctrl-C of an earlier operation is spent
        guard = interrupts.enter(self._stop, self._mark_failed)
        try:
            try:
                with blas_cap(1):
                    self.pool.hot = True
                    try:
                        results = run(*args)
                    finally:
                        self.pool.hot = False
            except BaseException:
                self._mark_failed()
                if not self.pool.stuck:
                    self.pool.restart()
                raise
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                guard.pending = 0  # this is the Ctrl-C: raise it once
                self._mark_failed()
            interrupts.leave(guard)
            raise
        return interrupts.leave(guard, results)

    def _fly(self, count: int) -> None:
        """Begin the steps sent, then run rounds of the steps in flight until ``count``
        have ended (into ``_arrived``)."""
        for k, batch in self._sent:
            self._start(k, batch, self._flights, self._wholes)
        self._sent.clear()
        self._flights.sort(key=lambda f: f.k)
        self._wholes.sort(key=lambda w: w[0])
        self._rounds(self._flights, self._wholes, self._arrived, count)

    def _step(self, which: list[int], batches: list) -> list[StepResult]:
        flights: list[_Flight] = []
        wholes: list[tuple[int, Any]] = []
        for k, batch in zip(which, batches, strict=True):
            self._start(k, batch, flights, wholes)
        arrived: list[tuple[int, StepResult]] = []
        self._rounds(flights, wholes, arrived, len(which))
        results = dict(arrived)
        return [results[k] for k in which]

    def _start(self, k: int, batch: Any, flights: list[_Flight], wholes: list) -> None:
        """Model ``k``'s step: queued whole, or begun up to its events with its first
        window found."""
        env = self.envs[k]
        if self.whole[k] or self.alone[k]:
            wholes.append((k, batch))
            return
        t_end = env._begin_step(batch)
        windows = env._events.windows(t_end, env.spec.lookahead)
        flights.append(_Flight(k, env, windows, env.events_run + env._event_limit,
                               next(windows, None)))

    def _rounds(self, flights: list[_Flight], wholes: list, arrived: Any, count: int) -> None:
        """Rounds until ``arrived`` holds ``count`` results: each round runs one window
        of every step in ``flights`` and every step in ``wholes`` (removing them), side
        by side on the pool; what ended in it goes to ``arrived`` in model order."""
        arrived.extend((f.k, f.result) for f in self._landed(flights))
        while len(arrived) < count and (flights or wholes):
            ended = self._round(flights, wholes)
            ended += ((f.k, f.result) for f in self._landed(flights))
            arrived.extend(sorted(ended, key=lambda item: item[0]))
            if any(env._interrupted for env in self.envs):
                raise KeyboardInterrupt

    @staticmethod
    def _landed(flights: list[_Flight]) -> list[_Flight]:
        """Remove from ``flights`` (in place) the steps with no window left, ended, in
        model order."""
        landed = [f for f in flights if f.window is None]
        if landed:
            flights[:] = [f for f in flights if f.window is not None]
            for f in landed:
                f.result = f.env._end_step()
        return landed

    def _round(self, flights: list[_Flight], wholes: list) -> list[tuple[int, StepResult]]:
        """One window of each step in ``flights`` (none of them landed) and every step of
        ``wholes`` (emptied), side by side on the pool: a thread runs its share of the
        windows, then takes whole steps while any are left (the steps of models with
        threads of their own run first, on the caller's thread, one after another). Then
        each flight's next window is found. Returns the whole steps' results. A window's
        failure is raised first, then the first whole step's (by model); after one, no
        more whole steps begin."""
        envs = self.envs
        todo = list(wholes)
        wholes.clear()
        done: list[tuple[int, StepResult]] = []
        failed: list[tuple[int, BaseException]] = []
        claim = threading.Lock()

        def run_wholes(index: int) -> None:
            while True:
                with claim:  # after a failure or a Ctrl-C, everything needs a reset
                    if not todo or failed or self._halt:
                        return
                    k, batch = todo.pop(0)
                try:
                    done.append((k, envs[k]._step(batch)))
                except BaseException as exc:  # reported after the round, by model
                    failed.append((k, exc))

        alone = [item for item in todo if self.alone[item[0]]]
        todo[:] = [item for item in todo if not self.alone[item[0]]]
        for k, batch in alone:  # runtimes with threads of their own: one after another
            if not failed and not self._halt:
                try:
                    done.append((k, envs[k]._guarded(envs[k]._step, batch)))
                except BaseException as exc:
                    failed.append((k, exc))
        open_ = []  # (flight, start)
        for f in flights:
            _t_min, ready, bound = f.window
            start = f.env._open_window(ready, bound)
            f.env._publish_window(ready)
            open_.append((f, start))
        if open_ or todo:
            self._run_windows(open_, run_wholes)
            self.rounds_run += 1
        if failed:
            k, exc = min(failed, key=lambda item: item[0])
            envs[k]._mark_failed()
            raise exc
        for f, _start in open_:
            t_min, ready, _bound = f.window
            f.env._window_done(f.limit, int(ready[0]), t_min, len(ready))
            f.window = next(f.windows, None)
        return done

    def _run_windows(self, open_: list, then: Callable[[int], None]) -> None:
        """One pool task for the open windows of every model, each thread calling
        ``then(index)`` after its share; then each model settles and closes its window
        (its handler failure, if any, raised)."""
        envs = [f.env for f, _start in open_]
        tasks: list[Callable[[int], None]] = [env._window_task for env in envs]
        count = len(tasks)

        def task(index: int) -> None:
            for j in range(count):
                tasks[(index + j) % count](index)
            then(index)

        try:
            self.pool.run(task, self._stop, give_up_after=2)
        except BaseException as exc:
            if not envs:
                raise
            for env in envs:
                env._collect()
            envs[0]._raise_failure(exc)
        finally:
            for f, start in open_:
                _t_min, ready, bound = f.window
                f.env._settle_window(start, len(ready), bound)
        for env in envs:
            env._close_window()

    def _stop(self) -> None:
        self._halt = True
        for env in self.envs:
            env._interrupted = True
            env._stop_threads()

    def _mark_failed(self) -> None:
        for env in self.envs:
            env._mark_failed()
        self._sent.clear()
        self._flights.clear()
        self._wholes.clear()
        self._arrived.clear()
        self._busy.clear()

    def _which(self, envs: Sequence[int] | None) -> list[int]:
        """The models an operation applies to: ``envs`` (distinct indices), or all."""
        k = len(self.envs)
        if envs is None:
            return list(range(k))
        if any(isinstance(e, (bool, np.bool_)) or not isinstance(e, (int, np.integer))
               for e in envs):
            raise ModelError(f"envs must be distinct indices in range({k}), got {list(envs)}")
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


def _split(models: list[Model], threads: int, split: str) -> list[bool]:
    """Which models step whole on one thread (True) rather than with their events across
    the pool. ``auto``: with one thread every model steps whole; otherwise the model with
    most entities (the measure of its work: no model code runs to decide) runs its
    events across the pool while it has more than the others' share of the threads
    (``entities_k > remaining / threads``, taken largest first): the models no whole-step
    schedule could balance. So K >= ``threads`` equal models all step whole, one model
    alone runs its events across the pool, and the split is deterministic."""
    if split != "auto":
        return [split == "whole"] * len(models)
    if threads == 1:
        return [True] * len(models)
    size = [m.n_entities for m in models]
    whole = [True] * len(models)
    remaining = sum(size)
    for k in sorted(range(len(models)), key=lambda i: -size[i]):
        if size[k] * threads <= remaining:
            break
        whole[k] = False
        remaining -= size[k]
    return whole


def _choose_threads(models: list[Model], kind: str, split: str, spin_us: float,
                    hot_spin_us: float, options: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """STPA's thread count for ``models`` on one pool, from a preflight of all of them."""
    from seer.model import sample_actions_of
    from seer.stpa import choose_threads
    from seer.stpa.preflight import observe

    steppers = [sample_actions_of(m) for m in models]

    def preflight(steps: int) -> Any:
        return observe(lambda t: VectorRuntime(models, threads=t, kind=kind, split=split,
                                               spin_us=spin_us, hot_spin_us=hot_spin_us,
                                               **options),
                       lambda step: [a(step) for a in steppers],
                       entities=sum(m.n_entities for m in models),
                       name=f"{len(models)} models on one pool", steps=steps)

    return choose_threads(None, kind, preflight=preflight)


#: gymnasium 1.x's autoreset modes, by their values (``gymnasium.vector.AutoresetMode``).
AUTORESET_MODES = ("NextStep", "SameStep", "Disabled")


def _stacked(rows: list) -> np.ndarray:
    """``rows`` (one per environment) as one array with a leading environment axis, or an
    object array of each row stacked where their shapes differ."""
    try:
        return np.stack([np.stack(r) if isinstance(r, list) else r for r in rows])
    except (ValueError, TypeError):
        out = np.empty(len(rows), object)
        for i, r in enumerate(rows):
            try:
                out[i] = np.stack(r) if isinstance(r, list) else r
            except (ValueError, TypeError):
                out[i] = r
        return out


def _agent_spaces(model: Model, agents: Sequence[Any]) -> Any:
    """``model``'s :class:`~seer.spaces.AgentSpaces`, or None when it defines no spaces."""
    if not all(callable(getattr(model, m, None)) for m in ("observation_space", "action_space")):
        return None
    from seer.spaces import AgentSpaces

    return AgentSpaces(model, agents)


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

    ``models``: K models, or a callable making one and ``num_envs``; ``threads``: an int
    or ``"auto"`` (STPA, from a preflight of all K: :class:`VectorRuntime`). ``step(actions)``
    takes one item per environment (whatever the model's ``action_events`` takes: None, one
    action per agent in agent order, or a mapping entity -> action; an array with a
    leading K axis works) and returns ``(observations, rewards,
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
    the seeds only, not on which environments ended when.

    Spaces per environment, as :class:`~seer.marl.SeerParallelEnv` gives them:
    ``possible_agents[k]``, ``observation_space(agent, env=k)``, ``action_space(agent,
    env=k)`` (for models that define ``observation_space``/``action_space``). Every
    action is checked against its agent's space before anything runs
    (:class:`~seer.spaces.ActionError` naming the environment and the agent) unless
    ``check_actions`` is False.

    Out of lockstep, as EnvPool does it: ``batch_size`` (default ``num_envs``),
    :meth:`async_reset`, :meth:`send` and :meth:`recv`, which returns the first
    ``batch_size`` environments to finish with their ids. Not a ``gymnasium.vector.VectorEnv``
    subclass: gymnasium's vector contract is single-agent (a reward and a termination per
    environment, infos as a dict of arrays, batched spaces), and its wrappers
    (``RecordEpisodeStatistics``, ``NormalizeReward``...) would misread the agent axis."""

    def __init__(self, models: Sequence[Model] | Callable[[], Model], *,
                 num_envs: int | None = None, threads: int | str = 2,
                 autoreset_mode: Any = "NextStep", batch_size: int | None = None,
                 check_actions: bool = True, **options: Any) -> None:
        if callable(models):
            if not isinstance(num_envs, int) or num_envs < 1:
                raise ModelError("a model factory needs num_envs >= 1")
            models = [models() for _ in range(num_envs)]
        models = list(models)
        if batch_size is None:
            batch_size = len(models)
        if (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
                or not 1 <= batch_size <= len(models)):
            raise ModelError(f"batch_size must be an int in 1..num_envs={len(models)}, "
                             f"got {batch_size!r}")
        self.batch_size = int(batch_size)
        self.metadata = {"autoreset_mode": _autoreset_mode(autoreset_mode)}
        self._mode = getattr(self.metadata["autoreset_mode"], "value",
                             self.metadata["autoreset_mode"])
        self.runtime = VectorRuntime(models, threads=threads, **options)
        try:
            self._init_spaces(check_actions)
        except BaseException:
            self.runtime.close()  # its threads, not left to the garbage collector
            raise

    def _init_spaces(self, check_actions: bool) -> None:
        self.num_envs = self.runtime.num_envs
        #: Per environment: its agents' names and spaces (:class:`seer.spaces.AgentSpaces`),
        #: or None for a model without ``observation_space``/``action_space``.
        self.spaces = [_agent_spaces(env.model, env.spec.agents) for env in self.runtime.envs]
        #: Check every action against its agent's space before a step (the default).
        self.check_actions = bool(check_actions)
        self._max_steps = [getattr(env.model, "max_steps", None) for env in self.runtime.envs]
        self._base: list[Any] = [None] * self.num_envs  # seed at the last explicit reset
        self._episode = [0] * self.num_envs
        self._done = np.zeros(self.num_envs, np.bool_)
        self._last: list[tuple | None] = [None] * self.num_envs
        self._ready: list[int] = []  # sent environments whose outputs recv() has not given
        self._received: list[int] = []  # the environments of the last recv()
        self._actions: Sequence[Any] | None = None  # step_async()'s

    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, list[dict]]:
        """Reset every environment, or those of ``options["reset_mask"]`` (a K-bool
        array); ``seed``: an int (environment ``k`` gets ``seed + k``) or K seeds."""
        mask = (options or {}).get("reset_mask")
        if mask is not None:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ModelError(f"reset_mask must be a bool array of shape "
                                 f"({self.num_envs},), got {mask.dtype} {mask.shape}")
        elif self.runtime.in_flight or self._ready:
            self.runtime._mark_failed()  # a full reset drops the steps sent and not received
        which = (list(range(self.num_envs)) if mask is None
                 else np.flatnonzero(mask).tolist())
        seeds = self.runtime._seeds(seed, self.num_envs)
        chosen = [seeds[k] for k in which]
        for s in chosen:
            _seed_sequence(s)  # all checked before anything is dropped or reset
        results = self.runtime.reset(chosen, envs=which)
        self._ready = [k for k in self._ready if k not in which]
        for k, s, r in zip(which, chosen, results, strict=True):
            self._base[k], self._episode[k] = s, 0
            self._done[k] = False
            self._last[k] = self._unpack(k, r)
        obs, _rew, _term, _trunc, infos = self._stack()
        return obs, infos

    def step(self, actions: Sequence[Any]) -> tuple:
        """One step of every environment (see the class docstring for autoreset)."""
        if self._ready or self.runtime.in_flight:
            raise RuntimeStateError("step() refused: environments sent with send() are not "
                                    "yet received; recv() them first")
        if len(actions) != self.num_envs:
            raise ModelError(f"step() needs {self.num_envs} actions, got {len(actions)}")
        restart = np.flatnonzero(self._done).tolist() if self._mode == "NextStep" else []
        stepped = [k for k in range(self.num_envs) if k not in restart]
        self._check(stepped, [actions[k] for k in stepped])
        if stepped:  # first: a refused step leaves every environment as it was
            results = self.runtime.step([actions[k] for k in stepped], envs=stepped)
            for k, r in zip(stepped, results, strict=True):
                self._take(k, r)
        if restart:
            self._auto_reset(restart)
        return self._outputs(list(range(self.num_envs)))

    # -- spaces -------------------------------------------------------------------------------
    @property
    def possible_agents(self) -> list[list[str]]:
        """Per environment, its agents' names as :class:`~seer.marl.SeerParallelEnv` gives
        them (``f"{prefix}_{entity}"``)."""
        return [list(self._spaces_of(k).possible_agents) for k in range(self.num_envs)]

    def observation_space(self, agent: str, env: int = 0) -> Any:
        """The observation space of ``agent`` in environment ``env``."""
        return self._spaces_of(env).observation_spaces[agent]

    def action_space(self, agent: str, env: int = 0) -> Any:
        """The action space of ``agent`` in environment ``env``."""
        return self._spaces_of(env).action_spaces[agent]

    def _spaces_of(self, k: int) -> Any:
        spaces = self.spaces[k]
        if spaces is None:
            from seer.spaces import _check_model

            _check_model(self.runtime.envs[k].model)  # raises, saying what to define
        return spaces

    def _check(self, which: Sequence[int], actions: Sequence[Any]) -> None:
        """Refuse (:class:`~seer.spaces.ActionError`, naming the environment and agent) an
        action outside its agent's space; ``actions[i]`` is environment ``which[i]``'s:
        None, one action per agent in agent order, or a mapping entity -> action."""
        if not self.check_actions:
            return
        for k, action in zip(which, actions, strict=True):
            spaces = self.spaces[k]
            if spaces is None or action is None:
                continue
            if isinstance(action, Mapping):
                names = {e: a for a, e in spaces.entity_of.items()}
                stray = [e for e in action if e not in names]
                if stray:
                    from seer.spaces import ActionError

                    raise ActionError(f"environment {k}: action for {stray[0]!r}, which is not "
                                      f"one of its agent entities ({len(names)})",
                                      value=action)
                agents = [names[e] for e in action]
                values = list(action.values())
            else:
                agents, values = spaces.possible_agents, action
            try:
                if not isinstance(action, Mapping):
                    count = len(values) if hasattr(values, "__len__") else None
                    if count != len(agents):
                        from seer.spaces import ActionError

                        raise ActionError(f"needs one action per agent ({len(agents)}), got "
                                          f"{'one value' if count is None else count}",
                                          value=action)
                spaces.check(agents, values)
            except ModelError as exc:
                exc.args = (f"environment {k}: {exc.args[0]}", *exc.args[1:])
                raise

    # -- gymnasium's step_async / step_wait ---------------------------------------------------
    def step_async(self, actions: Sequence[Any]) -> None:
        """Keep ``actions`` for :meth:`step_wait` (gymnasium's split ``step``)."""
        if len(actions) != self.num_envs:
            raise ModelError(f"step_async() needs {self.num_envs} actions, got {len(actions)}")
        self._actions = actions

    def step_wait(self) -> tuple:
        """``step`` with the actions of the last :meth:`step_async`."""
        if self._actions is None:
            raise RuntimeStateError("step_wait() needs step_async(actions) first")
        actions, self._actions = self._actions, None
        return self.step(actions)

    # -- EnvPool's send / recv -----------------------------------------------------------------
    def async_reset(self, *, seed: int | Sequence[int | None] | None = None) -> None:
        """Reset every environment (``seed`` as in :meth:`reset`) and make each one's first
        observations ready for :meth:`recv`, ``batch_size`` at a time in environment
        order. Anything still in flight is dropped."""
        self.reset(seed=seed)  # drops the steps in flight
        self._ready = list(range(self.num_envs))

    def send(self, actions: Sequence[Any], env_ids: Sequence[int] | None = None) -> None:
        """Start a step of each environment of ``env_ids`` (default: those the last
        :meth:`recv` returned) with one item of ``actions`` each, and return at once;
        :meth:`recv` runs them. With ``NextStep`` autoreset an environment whose episode
        ended is reset instead (its action ignored)."""
        ids = list(self._received if env_ids is None else
                   np.asarray(env_ids, np.int64).reshape(-1).tolist())
        if len(actions) != len(ids):
            raise ModelError(f"send() needs one action per environment in env_ids "
                             f"({len(ids)}), got {len(actions)}")
        which = self.runtime._which(ids)
        pending = set(self._ready) | set(self.runtime.in_flight)
        for k in which:
            if k in pending:
                raise RuntimeStateError(f"environment {k} was sent and not yet received: "
                                        "recv() it first")
        restart = [k for k in which if self._mode == "NextStep" and self._done[k]]
        stepped = [(k, a) for k, a in zip(which, actions, strict=True) if k not in restart]
        self._check([k for k, _a in stepped], [a for _k, a in stepped])
        if stepped:
            self.runtime.send([a for _k, a in stepped], [k for k, _a in stepped])
        if restart:
            self._auto_reset(restart)
            self._ready += restart
        self._received = []

    def recv(self) -> tuple:
        """The first ``batch_size`` environments sent to have their outputs: ``(obs,
        rewards, terminations, truncations, infos, env_ids)``, each with a leading axis of
        ``batch_size`` (``env_ids``: which environment each row is; also in each info as
        ``"env_id"``). Environments whose steps take fewer windows come first; an
        environment's outputs are those of stepping it alone, whatever the order."""
        need = self.batch_size - len(self._ready)
        if need > 0:
            for k, r in self.runtime.recv(need):
                self._take(k, r)
                self._ready.append(k)
        ids, self._ready = self._ready[:self.batch_size], self._ready[self.batch_size:]
        obs, rew, term, trunc, infos = self._outputs(ids)
        for i, k in enumerate(ids):
            infos[i]["env_id"] = k
        self._received = ids
        return obs, rew, term, trunc, infos, np.array(ids, np.int64)

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

    def _take(self, k: int, r: StepResult) -> None:
        """Environment ``k``'s step result ``r`` as its latest outputs; its episode is
        over when every agent is terminated or truncated."""
        self._last[k] = last = self._unpack(k, r)
        self._done[k] = bool(np.all(last[2] | last[3]))

    def _outputs(self, ids: list[int]) -> tuple:
        """The outputs of the environments ``ids``, stacked. With ``SameStep`` an
        environment whose episode is over is reset now: its row is the new episode's
        first, with the last observations and info in its info's ``"final_obs"`` and
        ``"final_info"``."""
        obs, rew, term, trunc, infos = self._stack(ids)
        ended = [i for i, k in enumerate(ids) if self._done[k]]
        if self._mode == "SameStep" and ended:
            final = {i: (obs[i], infos[i]) for i in ended}
            self._auto_reset([ids[i] for i in ended])
            obs, _r, _t, _u, infos = self._stack(ids)
            for i, (o, info) in final.items():
                infos[i]["final_obs"], infos[i]["final_info"] = o, info
        return obs, rew, term, trunc, infos

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

    def _stack(self, ids: Sequence[int] | None = None) -> tuple:
        """The outputs of the environments ``ids`` (default: all), stacked (an object
        array of per-environment arrays where environments differ in agents or shapes)."""
        last = self._last if ids is None else [self._last[k] for k in ids]
        return (_stacked([[np.asarray(o) for o in x[0]] for x in last]),
                *(_stacked([x[i] for x in last]) for i in (1, 2, 3)),
                [dict(x[4]) for x in last])
