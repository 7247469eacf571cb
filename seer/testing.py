"""The test kit every runtime's tests use.

* :class:`RandomModel`: a randomised model that keeps the event contract and folds every
  input (event time, kind, origin, payload, RNG draws, snapshot reads) into its state
  non-commutatively, so any change in per-entity event order changes the result.
* :func:`assert_equivalent`: run a runtime and the serial oracle side by side and demand
  bit-identical state and outputs after every step.
* :func:`random_models`: a hypothesis strategy of :class:`RandomModel`.
* :func:`verify`: a model on serial in debug mode (every contract check on), then on each
  parallel runtime side by side with it; a :class:`VerifyReport` with the first divergence
  (``seer verify`` on the command line).

The handler-cost knob lives in :mod:`seer.busywork`; the benchmark models in
:mod:`workloads.synthetic`.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from seer.busywork import BusyWork
from seer.errors import EVENTS_HINT, ModelError, NoEventsError, SeerError, check_events_ran
from seer.events import seq_origin
from seer.model import Context, Model, StateArrays, sample_actions_of
from seer.runtime import Runtime, StepResult
from seer.serial import SerialRuntime

__all__ = [
    "Divergence",
    "RandomModel",
    "VerifyReport",
    "assert_equivalent",
    "assert_outputs_identical",
    "assert_states_identical",
    "random_models",
    "verify",
]

_MASK64 = (1 << 64) - 1
_PRIME = 0x100000001B3  # FNV-1a 64-bit prime


# -- the random contract-keeping model -------------------------------------------------------
class RandomModel(Model):
    """A random model for equivalence tests; its *structure* is fixed by ``seed``.

    Every event folds ``(τ, kind, origin of seq, payload, an RNG draw, a snapshot value)``
    into the entity's 64-bit running hash ``h`` and into ``acc = acc * 0.75 + x`` (float,
    order-sensitive), so any reordering of one entity's events changes its state.

    Events carry a time-to-live; each event with ``ttl > 0`` emits up to ``fanout`` children
    to itself (some with delay 0: same-time self-events), to a ring neighbour, to a random
    active entity or to the hot entity 0 (heavy fan-in), with delays equal to the lookahead,
    slightly above it, or spanning later steps. With ``lookahead == 0`` cross-entity events
    may have delay 0 (same-timestamp rounds). A fraction of entities is ``silent``: never
    acted on and never targeted, so they have no events at all.
    """

    kinds = ("act", "ping", "self", "burst")
    action_kind = "act"

    def __init__(self, n_entities: int, seed: int = 0, *, lookahead: float = 0.25,
                 step_length: float = 1.0, fanout: int = 2, ttl: int = 3,
                 p_zero_delay: float = 0.2, p_fan_in: float = 0.1,
                 silent_fraction: float = 0.1, action_fraction: float = 0.8,
                 cost_us: float = 0.0) -> None:
        super().__init__(n_entities)
        if not 0 <= fanout <= 8 or not 0 <= ttl <= 8:
            raise ModelError(f"fanout and ttl must be in 0..8, got {fanout}, {ttl}")
        for name, p in (("p_zero_delay", p_zero_delay), ("p_fan_in", p_fan_in),
                        ("silent_fraction", silent_fraction),
                        ("action_fraction", action_fraction)):
            if not 0.0 <= p <= 1.0:
                raise ModelError(f"{name} must be a probability in [0, 1], got {p!r}")
        self.name = f"RandomModel(n={n_entities}, seed={seed}, L={lookahead})"
        self.lookahead = lookahead
        self.step_length = step_length
        self.structure_seed = seed
        self.fanout = fanout
        self.ttl = ttl
        self.p_zero_delay = p_zero_delay
        self.p_fan_in = p_fan_in
        self.busy = BusyWork(cost_us)
        rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5EE2]))
        silent = rng.random(n_entities) < silent_fraction
        silent[0] = False  # the fan-in target is always active
        self.active = tuple(int(e) for e in np.flatnonzero(~silent))
        self.silent = frozenset(int(e) for e in np.flatnonzero(silent))
        self._actors = tuple(e for e in self.active if rng.random() < action_fraction)
        # Each active entity sends to a fixed "neighbour": the next active entity.
        nxt = {}
        for i, e in enumerate(self.active):
            nxt[e] = self.active[(i + 1) % len(self.active)]
        self._neighbour = nxt
        self._weight = tuple(float(w) for w in rng.uniform(0.5, 2.0, n_entities))

    fields = {  # noqa: RUF012 - class-level declaration read by the runtime
        "h": ((), np.uint64),
        "acc": ((), np.float64),
        "count": ((), np.int64),
        "last_tau": ((), np.float64),
        "vec": ((3,), np.float64),
    }

    # -- episode ------------------------------------------------------------------
    def init_entity(self, ctx: Context) -> None:
        e = ctx.id
        ctx.row.h = (e * 0x9E3779B97F4A7C15) & _MASK64
        ctx.row.vec = ctx.rng.normal(size=3)
        ctx.row.last_tau = -1.0
        if e in self.silent:
            return
        if ctx.rng.random() < 0.5:  # some entities start with a zero-delay initial event
            ctx.emit(e, 0.0, "self", (self.ttl, float(e)))
        if ctx.rng.random() < 0.3:
            ctx.emit(self._neighbour[e], self.lookahead + self.step_length * 0.5, "ping",
                     (1, e))

    def sample_actions(self, step: int) -> dict[int, int]:
        """Deterministic joint action for ``step``: actor entities get an int action."""
        return {e: (step * 31 + e * 7) % 5 for e in self._actors if (step + e) % 4 != 3}

    # -- handlers -------------------------------------------------------------------
    def _fold(self, ctx: Context, event: Any, x: float) -> None:
        row = ctx.row
        if event.tau < float(row.last_tau):
            raise AssertionError(f"entity {ctx.id} saw time go backwards: {event.tau} after "
                                 f"{float(row.last_tau)}")
        draw = ctx.rng.random()
        other = (ctx.id * 7 + int(row.count)) % self.n_entities
        seen = int(ctx.snapshot.h[other])
        bits = struct.unpack("<Q", struct.pack("<d", event.tau + x + draw))[0]
        h = int(row.h)
        for word in (bits, event.kind, seq_origin(event.seq), seen):
            h = ((h ^ word) * _PRIME) & _MASK64
        row.h = h
        row.acc = float(row.acc) * 0.75 + x * self._weight[ctx.id] + draw
        row.count += 1
        row.last_tau = event.tau
        row.vec = np.roll(row.vec, 1) * 0.5 + x
        self.busy()

    def _children(self, ctx: Context, ttl: int, x: float) -> None:
        if ttl <= 0:
            return
        rng = ctx.rng
        e = ctx.id
        L = self.lookahead
        for _ in range(int(rng.integers(0, self.fanout + 1))):
            r = rng.random()
            value = x * 0.5 + r
            if r < 0.35:  # self event: same time, or any small delay (no lookahead needed)
                delay = 0.0 if rng.random() < self.p_zero_delay else float(rng.random()) * 0.3
                ctx.emit(e, delay, "self", (ttl - 1, value))
                continue
            if r < 0.35 + self.p_fan_in:
                target = 0
            elif r < 0.75:
                target = self._neighbour[e]
            else:
                target = self.active[int(rng.integers(len(self.active)))]
            u = rng.random()
            if L == 0.0 and u < 0.4:
                delay = 0.0
            elif u < 0.5:
                delay = L
            elif u < 0.9:
                delay = L + float(rng.exponential(0.3))
            else:
                delay = L + self.step_length * float(rng.integers(1, 3))
            kind = "ping" if rng.random() < 0.7 else "burst"
            payload = (ttl - 1, value) if kind == "ping" else (ttl - 1, np.array([value, e]))
            ctx.emit(target, delay, kind, payload)

    def on_act(self, ctx: Context, event: Any) -> None:
        x = float(event.payload)
        self._fold(ctx, event, x)
        self._children(ctx, self.ttl, x)

    def on_ping(self, ctx: Context, event: Any) -> None:
        ttl, x = event.payload
        self._fold(ctx, event, float(x))
        self._children(ctx, ttl, float(x))

    def on_self(self, ctx: Context, event: Any) -> None:
        ttl, x = event.payload
        self._fold(ctx, event, float(x) + 0.25)
        self._children(ctx, ttl, float(x))

    def on_burst(self, ctx: Context, event: Any) -> None:
        ttl, arr = event.payload
        x = float(arr[0]) - float(arr[1]) * 1e-3
        self._fold(ctx, event, x)
        self._children(ctx, ttl, x)

    # -- outputs --------------------------------------------------------------------
    def outputs(self, entity: int, state: StateArrays,
                start: StateArrays) -> tuple[Any, float, bool, bool, dict]:
        obs = np.concatenate(([state.acc[entity], float(state.count[entity])],
                              state.vec[entity]))
        reward = float(state.acc[entity] - start.acc[entity])
        return obs, reward, bool(state.count[entity] % 7 == 6), False, {
            "h": int(state.h[entity])}


def random_models(max_entities: int = 40) -> Any:
    """A hypothesis strategy of :class:`RandomModel` covering the contract's corners:
    lookahead 0 (same-time rounds), dense zero-delay self-events, heavy fan-in, silent
    entities, long chains. Needs the ``dev`` extra (hypothesis)."""
    from hypothesis import strategies as st

    return st.builds(
        RandomModel,
        n_entities=st.integers(1, max_entities),
        seed=st.integers(0, 2**31),
        lookahead=st.sampled_from([0.0, 0.1, 0.25, 1.0, 2.5]),
        step_length=st.sampled_from([0.5, 1.0, 3.0]),
        fanout=st.integers(0, 3),
        ttl=st.integers(0, 4),
        p_zero_delay=st.floats(0.0, 1.0),
        p_fan_in=st.floats(0.0, 0.8),
        silent_fraction=st.floats(0.0, 0.9),
        action_fraction=st.floats(0.0, 1.0),
    )


# -- equivalence -------------------------------------------------------------------------
def _float_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _identical(a: Any, b: Any) -> bool:
    """Bit-for-bit equality for the values models put in outputs."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
                and a.dtype == b.dtype and a.shape == b.shape
                and a.tobytes() == b.tobytes())
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return _float_bits(a) == _float_bits(b)
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, Mapping):
        return a.keys() == b.keys() and all(_identical(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def assert_outputs_identical(expected: StepResult, actual: StepResult, where: str = "") -> None:
    """Raise AssertionError naming the first output that differs (bit for bit)."""
    if expected.step != actual.step or not _identical(expected.time, actual.time):
        raise AssertionError(f"{where}step/time differ: {expected.step}@{expected.time} vs "
                             f"{actual.step}@{actual.time}")
    for name in ("rewards", "terminations", "truncations"):
        if not _identical(getattr(expected, name), getattr(actual, name)):
            e, a = getattr(expected, name), getattr(actual, name)
            bad = np.flatnonzero(e.view(np.uint8).reshape(len(e), -1).tolist()
                                 != a.view(np.uint8).reshape(len(a), -1).tolist()) \
                if e.shape == a.shape else []
            raise AssertionError(f"{where}{name} differ (first agents {list(bad[:5])}): "
                                 f"{e[:8]} vs {a[:8]}")
    for name in ("observations", "infos"):
        e, a = getattr(expected, name), getattr(actual, name)
        if len(e) != len(a):
            raise AssertionError(f"{where}{name}: {len(e)} vs {len(a)} entries")
        for i, (x, y) in enumerate(zip(e, a, strict=True)):
            if not _identical(x, y):
                raise AssertionError(f"{where}{name}[{i}] differs: {x!r} vs {y!r}")


def assert_states_identical(expected: Runtime, actual: Runtime, where: str = "") -> None:
    """Raise AssertionError naming the first field and entities whose bytes differ."""
    for name in expected.state.names:
        e, a = expected.state[name], actual.state[name]
        if e.dtype != a.dtype or e.shape != a.shape:
            raise AssertionError(f"{where}field {name!r}: {e.dtype}{e.shape} vs "
                                 f"{a.dtype}{a.shape}")
        eb = e.reshape(len(e), -1).view(np.uint8)
        ab = a.reshape(len(a), -1).view(np.uint8)
        if not np.array_equal(eb, ab):
            bad = np.flatnonzero((eb != ab).any(axis=1))
            i = int(bad[0])
            raise AssertionError(f"{where}field {name!r} differs at entities "
                                 f"{bad[:8].tolist()}: e.g. entity {i}: {e[i]!r} vs {a[i]!r}")


def assert_equivalent(runtime_factory: Callable[[Model], Runtime], model: Model,
                      seeds: Iterable[int], steps: int,
                      actions: Callable[[int], Any] | None = None, *,
                      min_events: int = 1) -> None:
    """Run ``runtime_factory(model)`` and :class:`SerialRuntime` on the same seeds and
    actions; after reset and after every step, state and outputs must be identical bit for
    bit, and so must the number of events run.

    ``actions(step)`` gives the joint action of each step; by default the model's
    ``sample_actions(step)`` when it has one, else None. Equal results of runs in which
    nothing happened prove nothing: fewer than ``min_events`` events over all seeds raise
    :class:`~seer.NoEventsError` (``min_events=0``: a model that may legitimately run no
    events, as random models at their corners do), and fewer than two a step warn
    (:class:`~seer.FewEventsWarning`).
    """
    if actions is None:
        actions = sample_actions_of(model)
    events = steps_run = 0
    for seed in seeds:
        reference = SerialRuntime(model)
        candidate = runtime_factory(model)
        try:
            label = f"{type(candidate).__name__} vs serial, seed {seed}, "
            out_ref = reference.reset(seed)
            out_new = candidate.reset(seed)
            assert_outputs_identical(out_ref, out_new, label + "after reset: ")
            assert_states_identical(reference, candidate, label + "after reset: ")
            for t in range(steps):
                joint = actions(t)
                out_ref = reference.step(joint)
                out_new = candidate.step(joint)
                where = f"{label}step {t}: "
                assert_states_identical(reference, candidate, where)
                assert_outputs_identical(out_ref, out_new, where)
                if reference.events_run != candidate.events_run:
                    raise AssertionError(f"{where}events run {reference.events_run} vs "
                                         f"{candidate.events_run}")
            events += reference.events_run
            steps_run += steps
        finally:
            reference.close()
            candidate.close()
    if min_events:
        if events < min_events:
            raise NoEventsError(f"assert_equivalent ran {steps_run} step(s) of model "
                                f"{model.name!r} and only {events} event(s) ran (min_events="
                                f"{min_events}): equal results about nothing prove nothing; "
                                f"{EVENTS_HINT}")
        check_events_ran(events, steps_run, f"assert_equivalent ran {steps_run} step(s)",
                         model.name)


# -- verify: serial in debug mode, then every parallel runtime beside it -----------------------
@dataclass
class Divergence:
    """Where a runtime first stopped giving serial's results: ``step`` (0-based index of
    the step, None: after reset), ``what`` (``"state"``, ``"outputs"``, ``"events"`` or
    ``"error"``: the runtime raised), the ``field`` and ``entity`` for state (the output
    name and agent position for outputs), and both values."""

    runtime: str
    seed: int
    step: int | None
    what: str
    field: str | None = None
    entity: int | None = None
    expected: Any = None
    actual: Any = None
    message: str = ""

    def __str__(self) -> str:
        when = "after reset" if self.step is None else f"step {self.step}"
        text = f"{self.runtime} diverged from serial at {when} (seed {self.seed}): "
        if self.what == "state":
            text += (f"field {self.field!r} of entity {self.entity}: serial {self.expected!r}, "
                     f"{self.runtime} {self.actual!r}")
        elif self.what == "outputs":
            text += (f"output {self.field!r} of agent position {self.entity}: serial "
                     f"{self.expected!r}, {self.runtime} {self.actual!r}")
        elif self.what == "events":
            text += f"events run: serial {self.expected}, {self.runtime} {self.actual}"
        else:
            text += self.message
        return text


@dataclass
class VerifyReport:
    """What :func:`verify` found. ``ok``: serial's debug run broke no contract and every
    runtime matched it. ``contract_error``: what the debug run raised (then no parallel
    runtime ran). ``results``: runtime label -> its first :class:`Divergence`, or None
    when it matched; ``skipped``: label -> why the runtime refused the model."""

    model: str
    steps: int
    seeds: tuple[int, ...]
    events: int = 0
    contract_error: BaseException | None = None
    results: dict[str, Divergence | None] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    #: Why there is no verdict: no event ran on serial (then no runtime ran either).
    no_events: str = ""
    #: Caveats on the verdict, e.g. so few events a step that it means little.
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Serial's debug run broke no contract, it ran events, at least one runtime was
        compared, and every runtime compared gave serial's results."""
        return (self.contract_error is None and not self.no_events and bool(self.results)
                and all(d is None for d in self.results.values()))

    @property
    def first(self) -> Divergence | None:
        """The earliest divergence (by seed, then step; ties: the runtimes' order)."""
        found = [d for d in self.results.values() if d is not None]
        if not found:
            return None
        return min(found, key=lambda d: (self.seeds.index(d.seed),
                                         -1 if d.step is None else d.step))

    def lines(self) -> list[str]:
        head = (f"{self.model}: {self.steps} step(s), seed(s) "
                f"{', '.join(map(str, self.seeds))}")
        if self.contract_error is not None:
            err = self.contract_error
            return [head, f"FAILED on serial with every contract check on (debug mode): "
                          f"{type(err).__name__}: {err}"]
        if self.no_events:
            return [head, f"NOT VERIFIED: {self.no_events}"]
        out = [head + f", {self.events} events on serial in debug mode: no contract broken"]
        for label, d in self.results.items():
            out.append(f"  {label:<18} " + ("identical to serial" if d is None else
                                           f"DIVERGED: {d}"))
        for label, why in self.skipped.items():
            out.append(f"  {label:<18} skipped: {why}")
        first = self.first
        if first is not None:
            out.append(f"FIRST DIVERGENCE: {first}")
        elif self.results:
            out.append(f"OK: all {len(self.results)} runtime(s) gave serial's results bit for "
                       "bit")
        else:
            out.append("NOT VERIFIED: no runtime could be compared with serial (every one "
                       "was skipped)")
        out.extend(f"WARNING: {w}" for w in self.warnings)
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _runtime_factory(label: str, **options: Any) -> tuple[str, Callable[[Model], Runtime]]:
    """``"seer(2)"``/``"seer:2"``/``"seer"`` -> (its label, a factory) through the runtime
    registry (:func:`seer.make_runtime`)."""
    import re

    match = re.fullmatch(r"\s*([A-Za-z_][\w.-]*)\s*(?:[(:]\s*(\d+)\s*\)?)?\s*", label)
    if match is None:
        raise ModelError(f"runtime {label!r} is not 'kind', 'kind(threads)' or "
                         "'kind:threads'")
    kind, threads = match[1], int(match[2] or 1)
    make_runtime, runtimes = _registry()
    if kind not in runtimes:
        raise ModelError(f"unknown runtime {kind!r} in {label!r}; registered runtimes: "
                         f"{', '.join(sorted(runtimes))}")
    if threads < 1:
        raise ModelError(f"runtime {label!r}: threads must be >= 1")
    if kind == "serial":
        if threads != 1:
            raise ModelError(f"runtime {label!r}: serial runs on one thread")
        return "serial", lambda model: make_runtime(model, kind, **options)
    name = f"{kind}({threads})"
    return name, lambda model: make_runtime(model, kind, threads=threads, **options)


def _registry() -> tuple[Callable[..., Runtime], Mapping[str, type]]:
    """``seer.make_runtime`` and ``seer.sched.RUNTIMES``. This module is in the layer the
    runtimes build on, so it does not import them: ``import seer`` (which runs before any
    of seer's modules can be imported) has loaded them already."""
    sched = sys.modules.get("seer.sched")
    if sched is None:  # pragma: no cover - import seer always loads it
        raise ModelError("no runtime registry loaded: import seer first")
    return sched.make_runtime, sched.RUNTIMES


def default_runtimes(threads: int = 3) -> list[str]:
    """Every registered runtime but serial at 2..``threads`` threads (1 when ``threads``
    is 1), as labels."""
    _make, runtimes = _registry()
    counts = range(2, threads + 1) if threads >= 2 else range(1, 2)
    return [f"{kind}({t})" for kind in runtimes if kind != "serial" for t in counts]


def _state_divergence(expected: Mapping[str, np.ndarray], actual: Runtime, label: str,
                      seed: int, step: int | None) -> Divergence | None:
    for name, e in expected.items():
        a = actual.state[name]
        if e.dtype != a.dtype or e.shape != a.shape:
            return Divergence(label, seed, step, "state", name, None, f"{e.dtype}{e.shape}",
                              f"{a.dtype}{a.shape}")
        eb = e.reshape(len(e), -1).view(np.uint8)
        ab = a.reshape(len(a), -1).view(np.uint8)
        if not np.array_equal(eb, ab):
            i = int(np.flatnonzero((eb != ab).any(axis=1))[0])
            return Divergence(label, seed, step, "state", name, i, e[i].copy(), a[i].copy())
    return None


def _outputs_divergence(expected: StepResult, actual: StepResult, label: str, seed: int,
                        step: int | None) -> Divergence | None:
    for name in ("rewards", "terminations", "truncations", "observations", "infos"):
        e, a = getattr(expected, name), getattr(actual, name)
        if len(e) != len(a):
            return Divergence(label, seed, step, "outputs", name, None, f"{len(e)} entries",
                              f"{len(a)} entries")
        for i in range(len(e)):
            if not _identical(e[i], a[i]):
                return Divergence(label, seed, step, "outputs", name, i, e[i], a[i])
    return None


def verify(model_or_factory: Model | Callable[[], Model],
           runtimes: Iterable[str | tuple[str, Callable[[Model], Runtime]]] | None = None, *,
           threads: int = 3, steps: int = 10, seeds: Sequence[int] = (0,),
           actions: Callable[[int], Any] | None = None,
           max_events_per_step: int | None = None) -> VerifyReport:
    """Check that a model keeps the event contract and gets serial's results everywhere.

    First runs the model on :class:`SerialRuntime` with ``debug=True`` (every contract
    check on, the shared-state check among them) for ``steps`` steps from each seed; a
    :class:`~seer.SeerError` there ends the check (``report.contract_error``). Then runs
    each runtime of ``runtimes`` (labels such as ``"seer(2)"``, or ``(label, factory)``
    pairs; default :func:`default_runtimes` of ``threads``) on the same seeds and actions
    and compares state, outputs and events run with serial's after reset and after every
    step, bit for bit, stopping each runtime at its first :class:`Divergence`. A runtime
    that refuses the model when built (:class:`~seer.ModelError`) is ``skipped``.

    ``model_or_factory``: a model, or a callable that makes one (each runtime then gets a
    fresh model). ``actions(step)``: the joint action of each step; by default the model's
    ``sample_actions`` when it has one. Bad arguments raise :class:`~seer.ModelError`
    before anything runs.
    """
    if isinstance(model_or_factory, Model):
        model = model_or_factory
        factory: Callable[[], Model] = lambda: model  # noqa: E731 - one shared model
    elif callable(model_or_factory):
        factory = model_or_factory
        model = factory()
        if not isinstance(model, Model):
            raise ModelError(f"verify: the factory made a {type(model).__name__}, not a "
                             "seer.Model")
    else:
        raise ModelError(f"verify needs a seer.Model or a callable that makes one, got "
                         f"{type(model_or_factory).__name__}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ModelError(f"verify: steps must be an int >= 1, got {steps!r}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ModelError(f"verify: threads must be an int >= 1, got {threads!r}")
    seeds = tuple(seeds)
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                            for s in seeds):
        raise ModelError(f"verify: seeds must be non-negative ints, got {seeds!r}")
    chosen = default_runtimes(threads) if runtimes is None else list(runtimes)
    limit = {"max_events_per_step": max_events_per_step}
    candidates = [_runtime_factory(r, **limit) if isinstance(r, str) else (str(r[0]), r[1])
                  for r in chosen]
    if actions is None:
        actions = sample_actions_of(model)
    joint = [actions(t) for t in range(steps)]
    report = VerifyReport(getattr(model, "name", type(model).__name__), steps, seeds)

    # 1. serial, every check on: the reference trajectory of each seed.
    reference: dict[int, list[tuple[StepResult, dict[str, np.ndarray], int]]] = {}
    for seed in seeds:
        rt = SerialRuntime(model, debug=True, max_events_per_step=max_events_per_step)
        try:
            out = rt.reset(seed)
            record = [(out, {k: rt.state[k].copy() for k in rt.state.names}, rt.events_run)]
            for t in range(steps):
                out = rt.step(joint[t])
                record.append((out, {k: rt.state[k].copy() for k in rt.state.names},
                               rt.events_run))
        except SeerError as exc:
            report.contract_error = exc
            return report
        finally:
            rt.close()
        reference[seed] = record
        report.events += record[-1][2]
    try:
        caveat = check_events_ran(report.events, steps * len(seeds),
                                  f"verify ran {steps * len(seeds)} step(s)",
                                  report.model, warn=False)
    except NoEventsError as exc:
        report.no_events = str(exc)
        return report
    if caveat:
        report.warnings.append(caveat)

    # 2. every runtime beside it.
    for label, make in candidates:
        report.results[label] = None
        for seed in seeds:
            try:
                candidate = make(factory())
            except ModelError as exc:
                del report.results[label]
                report.skipped[label] = f"{type(exc).__name__}: {exc}"
                break
            try:
                found = _compare_run(candidate, reference[seed], joint, label, seed)
            finally:
                candidate.close()
            if found is not None:
                report.results[label] = found
                break
    return report


def _compare_run(candidate: Runtime, record: list, joint: list, label: str,
                 seed: int) -> Divergence | None:
    step: int | None = None
    try:
        out = candidate.reset(seed)
        for t, (expected, state, events) in enumerate(record):
            step = None if t == 0 else t - 1
            if t:
                out = candidate.step(joint[t - 1])
            found = (_state_divergence(state, candidate, label, seed, step)
                     or _outputs_divergence(expected, out, label, seed, step))
            if found is None and candidate.events_run != events:
                found = Divergence(label, seed, step, "events", None, None, events,
                                   candidate.events_run)
            if found is not None:
                return found
    except Exception as exc:
        return Divergence(label, seed, step, "error",
                          message=f"raised {type(exc).__name__}: {exc}")
    return None
