"""What the runtimes give one model, measured side by side: the harness behind ``seer bench``.

    seer bench workloads.pcs:PCS width=40 height=40 --runtimes serial seer:1 seer:2
    seer bench mypackage.env:MyModel n=500 --rounds 7 --json mine.json

:func:`compare` builds every runtime once, each on a model of its own made by the same
factory, and then times them in turns, ``rounds`` times: a round resets each runtime with
the same seed, runs the warm-up steps and times ``steps`` steps with the same actions, wall
(``time.perf_counter``) and CPU of the whole process, every thread counted
(``time.process_time``). The order of the runtimes rotates from round to round, so that none
always runs right after the same one. Ratios are taken *within* a round, against serial
timed seconds before, and the median over rounds is reported with the lowest and highest
round: a shared host that slows down for a minute slows every runtime of that round alike.

Beside the runtimes, each round runs the *ceiling* for the largest thread count T: T
independent serial runs (each its own model and runtime, built and stepped on a thread of
its own) at once. They share nothing but the interpreter, numpy and the machine, so their
throughput over one run's is what T threads reach on this model with no runtime at all: a
runtime at 0.9 of it leaves 10 % on the table (one whose threads share the model's
read-only data, where independent runs keep a copy each, can exceed it). The host's
*capacity* (effective cores, from a fixed pure-Python loop on 1 and on T threads) is
measured before and after: a speed-up above it is not possible, and a low one says the
host had other work.

After the last round every runtime's state is hashed: a parallel runtime whose hash differs
from serial's did not give serial's results, and the table says so.

The project's own studies (``bench/`` in the repository) use this module too; see
``docs/design.md`` ("Measuring").
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from seer.blas import blas_cap
from seer.errors import ModelError, check_events_ran
from seer.model import Model, sample_actions_of
from seer.runtime import Runtime
from seer.sched import make_runtime
from seer.specs import add_model_arguments, non_negative_int, output_file, positive_int

__all__ = ["Ceiling", "Comparison", "RuntimeTimes", "capacity_now", "compare", "on_threads",
           "paired", "parse_runtime", "ratios", "runtime_label", "state_digest",
           "timed_steps"]

_PAREN = re.compile(r"^(?P<kind>[a-z][a-z0-9_-]*)\((?P<threads>\d+)\)$")
_COLON = re.compile(r"^(?P<kind>[a-z][a-z0-9_-]*):(?P<threads>\d+)$")
_BARE = re.compile(r"^[a-z][a-z0-9_-]*$")


# -- labels ----------------------------------------------------------------------------------
def runtime_label(kind: str, threads: int) -> str:
    """``serial`` for the serial runtime (always one thread), else ``kind(threads)``."""
    return "serial" if kind == "serial" else f"{kind}({threads})"


def parse_runtime(text: str) -> tuple[str, int]:
    """``seer(2)``, ``seer:2`` -> ``("seer", 2)``; a bare kind (``seer``, ``serial``) means
    one thread. Raises ValueError naming the text for anything else."""
    match = _PAREN.match(text) or _COLON.match(text)
    if match:
        return match["kind"], int(match["threads"])
    if _BARE.match(text):
        return text, 1
    raise ValueError(f"runtime {text!r} is not 'kind', 'kind(threads)' or 'kind:threads'")


# -- timing primitives -----------------------------------------------------------------------
def timed_steps(runtime: Runtime, actions: Sequence[Any], steps: int,
                cpu_clock: Callable[[], float] = time.process_time) -> tuple[float, float]:
    """Wall and CPU seconds per step of ``runtime`` stepping ``actions[0..steps-1]`` after
    the caller's reset and warm-up (``cpu_clock``: the process's by default,
    ``time.thread_time`` for one thread's)."""
    c0, t0 = cpu_clock(), time.perf_counter()
    for t in range(steps):
        runtime.step(actions[t])
    return (time.perf_counter() - t0) / steps, (cpu_clock() - c0) / steps


def on_threads(n: int, body: Callable[[int, int], None], loops: int,
               setup: Callable[[int], None] | None = None) -> float:
    """Run ``body(thread_index, loops)`` on ``n`` threads started together; wall seconds
    from the first thread's start to the last thread's end, as the threads themselves
    read the clock (the caller may be descheduled while they run). ``setup(thread_index)``
    runs on each thread before the start, untimed. The first exception of a setup or body
    is raised here once every thread has ended (a failed setup cancels every body)."""
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []
    starts, ends = [0.0] * n, [0.0] * n

    def run(i: int) -> None:
        try:
            if setup is not None:
                setup(i)
        except BaseException as exc:
            errors.append(exc)
        barrier.wait()  # met even after a failed setup: every thread waits on it
        if errors:
            return
        starts[i] = time.perf_counter()
        try:
            body(i, loops)
        except BaseException as exc:
            errors.append(exc)
        ends[i] = time.perf_counter()

    threads = [threading.Thread(target=run, args=(i,), name=f"seer-bench-{i}")
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return max(ends) - min(starts)


def _spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i & 7
    return total


def capacity_now(threads: int = 2, repeats: int = 5, work: int = 200_000) -> float:
    """Effective cores right now: ``threads x time(1 thread) / time(threads at once)`` of a
    fixed pure-Python loop (``work`` iterations, about 10 ms), medians of ``repeats``
    interleaved calls. ``threads`` on an idle machine with that many free cores."""
    one, many = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        _spin(work)
        one.append(time.perf_counter() - t0)
        many.append(on_threads(threads, lambda _i, n: _spin(n), work))
    return threads * statistics.median(one) / statistics.median(many)


def state_digest(runtime: Runtime) -> str:
    """sha256 of every state field's name and bytes: equal for two runtimes of one model
    after the same reset and steps exactly when their states are bit-identical."""
    import numpy as np

    h = hashlib.sha256()
    for name in runtime.state.names:
        h.update(name.encode())
        h.update(np.ascontiguousarray(runtime.state[name]).view(np.uint8).tobytes())
    return h.hexdigest()


def ratios(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """``a[r] / b[r]`` for every round ``r``."""
    return [x / y for x, y in zip(a, b, strict=True)]


def paired(a: Sequence[float], b: Sequence[float]) -> float:
    """Median over rounds of ``a[r] / b[r]``."""
    return statistics.median(ratios(a, b))


# -- the comparison --------------------------------------------------------------------------
@dataclass
class RuntimeTimes:
    """One runtime's rounds: seconds per step, wall and process CPU, one entry per round."""

    label: str
    kind: str
    threads: int
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    events_per_step: float = 0.0
    identical: bool | None = None  # state equal to serial's after the last round

    def speedup(self, serial: RuntimeTimes) -> list[float]:
        """serial's wall time over this runtime's, per round."""
        return ratios(serial.wall_s, self.wall_s)

    def cpu_ratio(self, serial: RuntimeTimes) -> list[float]:
        """This runtime's process CPU over serial's, per round (1.0: no CPU added)."""
        return ratios(self.cpu_s, serial.cpu_s)


@dataclass
class Ceiling:
    """T independent serial runs at once, per round: the group's wall seconds per step and
    one run's mean thread CPU seconds per step."""

    threads: int
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)

    def speedup(self, serial: RuntimeTimes) -> list[float]:
        """T runs' throughput over one lone run's, per round."""
        return [self.threads * s / w for s, w in zip(serial.wall_s, self.wall_s, strict=True)]

    def cpu_ratio(self, serial: RuntimeTimes) -> list[float]:
        return ratios(self.cpu_s, serial.cpu_s)


@dataclass
class Comparison:
    """What :func:`compare` measured; ``runtimes["serial"]`` is the baseline."""

    model: str
    steps: int
    rounds: int
    warmup: int
    runtimes: dict[str, RuntimeTimes]
    ceiling: Ceiling | None
    capacity_before: float
    capacity_after: float
    #: Caveats on the figures, e.g. so few events a step that they time the scheduler.
    warnings: list[str] = field(default_factory=list)

    @property
    def serial(self) -> RuntimeTimes:
        return self.runtimes["serial"]

    @property
    def serial_us_per_event(self) -> float:
        """serial's wall time per step over its events per step: what one event costs when
        nothing runs in parallel, the handler's own work and the event loop's together."""
        events = self.serial.events_per_step
        return 1e6 * statistics.median(self.serial.wall_s) / events if events else float("nan")

    def speedup(self, label: str) -> float:
        return statistics.median(self.runtimes[label].speedup(self.serial))

    def cpu_ratio(self, label: str) -> float:
        return statistics.median(self.runtimes[label].cpu_ratio(self.serial))

    def of_ceiling(self, label: str) -> float:
        """The runtime's speed-up over the ceiling's, median over rounds (NaN unless the
        runtime has the ceiling's thread count): 1.0 is as fast as independent runs."""
        rt = self.runtimes[label]
        if self.ceiling is None or rt.threads != self.ceiling.threads or label == "serial":
            return float("nan")
        return paired(rt.speedup(self.serial), self.ceiling.speedup(self.serial))

    def table(self) -> list[str]:
        """The comparison as aligned text lines (what ``seer bench`` prints). The ceiling's
        ms/step is its group's wall time per step over its T runs: the time per environment
        step it delivers."""
        serial = self.serial
        rows = [("runtime", "ms/step", "speed-up (rounds)", "CPU ratio", "of ceiling",
                 "identical")]
        for label, rt in self.runtimes.items():
            up = rt.speedup(serial)
            share = self.of_ceiling(label)
            ceiling = "-" if share != share else f"{share:.2f}"
            rows.append((label, f"{1e3 * statistics.median(rt.wall_s):.2f}",
                         f"{statistics.median(up):.2f} ({min(up):.2f}-{max(up):.2f})",
                         f"{statistics.median(rt.cpu_ratio(serial)):.2f}", ceiling,
                         {True: "yes", False: "NO", None: "-"}[rt.identical]))
        if self.ceiling is not None:
            up, t = self.ceiling.speedup(serial), self.ceiling.threads
            rows.append((f"ceiling({t})",
                         f"{1e3 * statistics.median(self.ceiling.wall_s) / t:.2f}",
                         f"{statistics.median(up):.2f} ({min(up):.2f}-{max(up):.2f})",
                         f"{statistics.median(self.ceiling.cpu_ratio(serial)):.2f}", "1.00",
                         "-"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                           for i, (c, w) in enumerate(zip(r, widths, strict=True)))
                 for r in rows]
        return [
            f"{self.model}: {serial.events_per_step:.0f} events per step, "
            f"{self.serial_us_per_event:.1f} µs per event on serial",
            f"{self.rounds} rounds of {self.steps} timed steps after {self.warmup} warm-up; "
            f"host capacity {self.capacity_before:.2f} effective cores before, "
            f"{self.capacity_after:.2f} after",
            "", *lines, *(f"WARNING: {w}" for w in self.warnings)]

    def to_json(self) -> dict[str, Any]:
        """Every measured value, and the summary ratios, as plain JSON types."""
        out = asdict(self)
        out["serial_us_per_event"] = _finite(self.serial_us_per_event)
        out["summary"] = {label: {"speedup": self.speedup(label),
                                  "cpu_ratio": self.cpu_ratio(label),
                                  "of_ceiling": _finite(self.of_ceiling(label))}
                          for label in self.runtimes}
        return out

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, allow_nan=False) + "\n"


def _finite(x: float) -> float | None:
    return None if x != x else x


def _actions_for(model: Model, count: int) -> list[Any]:
    """The model's own sample actions for steps 0..count-1 (None where it has none), made
    once so that every runtime and round steps with the very same objects."""
    sample = sample_actions_of(model)
    return [sample(t) for t in range(count)]


def _ceiling_round(make_model: Callable[[], Model], threads: int, seed: int, warmup: int,
                   actions: list[Any], steps: int) -> tuple[float, float]:
    runs: list[Runtime | None] = [None] * threads
    cpu = [0.0] * threads

    def setup(i: int) -> None:
        rt = runs[i] = make_runtime(make_model(), "serial")
        rt.reset(seed)
        for t in range(warmup):
            rt.step(actions[t])

    def body(i: int, n: int) -> None:
        rt = runs[i]
        assert rt is not None
        cpu[i] = timed_steps(rt, actions[warmup:], n, time.thread_time)[1]

    try:
        # BLAS held at one thread, as the parallel runtimes hold it while they step
        with blas_cap(1):
            wall = on_threads(threads, body, steps, setup=setup)
    finally:
        for rt in runs:
            if rt is not None:
                rt.close()
    return wall / steps, statistics.fmean(cpu)


def compare(make_model: Callable[[], Model], runtimes: Sequence[str], *, steps: int = 10,
            rounds: int = 5, warmup: int = 1, seed: int = 0, ceiling: bool = True,
            name: str = "", progress: bool = False) -> Comparison:
    """Time ``serial`` and each of ``runtimes`` (labels such as ``seer:2``, ``static(2)``)
    on models made by ``make_model``, in turns (module docstring). ``serial`` is added first
    when missing. ``ceiling`` adds T independent serial runs for the largest T of
    ``runtimes`` (when it is at least 2). Every runtime is closed before this returns, also
    when one fails. ``progress`` shows a bar (tqdm) where tqdm is installed.

    Timing steps in which nothing happens measures nothing: when serial's first timed round
    runs no event, :class:`~seer.NoEventsError` is raised before the other runtimes are
    timed (give the model ``sample_actions(step)``); fewer than two events a step puts a
    caveat in ``warnings`` (and under the table)."""
    if steps < 1 or rounds < 1 or warmup < 0:
        raise ModelError(f"steps ({steps}) and rounds ({rounds}) must be at least 1, warmup "
                         f"({warmup}) at least 0")
    specs = [parse_runtime(r) for r in runtimes]
    labels = [runtime_label(kind, threads) for kind, threads in specs]
    if len(set(labels)) != len(labels):
        raise ModelError(f"runtimes {list(runtimes)} name one runtime twice")
    from seer.sched import RUNTIMES

    unknown = sorted({kind for kind, _threads in specs if kind not in RUNTIMES})
    if unknown:
        raise ModelError(f"unknown runtime(s) {', '.join(unknown)}; registered: "
                         f"{', '.join(sorted(RUNTIMES))}")
    if "serial" not in labels:
        specs.insert(0, ("serial", 1))
        labels.insert(0, "serial")
    first = make_model()
    model_name = getattr(first, "name", type(first).__name__)
    actions = _actions_for(first, warmup + steps)
    top = max(threads for _kind, threads in specs)
    times = {label: RuntimeTimes(label, kind, threads)
             for label, (kind, threads) in zip(labels, specs, strict=True)}
    built: dict[str, Runtime] = {}
    bar = _progress(rounds * (len(labels) + (ceiling and top > 1)), progress, name)
    capacity_before = capacity_now(max(2, top))
    result_ceiling = Ceiling(top) if ceiling and top > 1 else None
    caveat = ""
    try:
        for i, (label, (kind, threads)) in enumerate(zip(labels, specs, strict=True)):
            built[label] = make_runtime(first if i == 0 else make_model(), kind,
                                        threads=threads)
        for r in range(rounds):
            order = labels[r % len(labels):] + labels[:r % len(labels)]
            for label in order:
                rt = built[label]
                rt.reset(seed)
                for t in range(warmup):
                    rt.step(actions[t])
                before = rt.events_run
                wall, cpu = timed_steps(rt, actions[warmup:], steps)
                times[label].wall_s.append(wall)
                times[label].cpu_s.append(cpu)
                times[label].events_per_step = (rt.events_run - before) / steps
                if r == 0 and label == "serial":  # before the other runtimes' rounds
                    caveat = check_events_ran(rt.events_run - before, steps,
                                              f"the benchmark timed {steps} step(s)",
                                              model_name, warn=False)
                bar.update()
            if result_ceiling is not None:
                wall, cpu = _ceiling_round(make_model, top, seed, warmup, actions, steps)
                result_ceiling.wall_s.append(wall)
                result_ceiling.cpu_s.append(cpu)
                bar.update()
        reference = state_digest(built["serial"])
        for label, rt in built.items():
            if label != "serial":
                times[label].identical = state_digest(rt) == reference
    finally:
        bar.close()
        for rt in built.values():
            rt.close()
    return Comparison(name or model_name, steps, rounds, warmup, times, result_ceiling,
                      capacity_before, capacity_now(max(2, top)), [caveat] if caveat else [])


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, show: bool, name: str) -> Any:
    if show:
        try:
            from tqdm import tqdm
        except ImportError:
            return _NoBar()
        return tqdm(total=total, desc=name or "seer bench", unit="run", leave=False)
    return _NoBar()


# -- ``seer bench`` --------------------------------------------------------------------------
def add_subcommand(sub: Any) -> None:
    """Register ``seer bench`` on the ``seer`` command line's subparsers."""
    from seer.platform import cpu_count

    cores = max(2, cpu_count())
    p = sub.add_parser(
        "bench", help="time serial, SEER and the peers on your own model, side by side",
        description="Time serial and each runtime on one model in turns, rounds times, and "
        "print step time, speed-up and CPU ratio over serial (paired by round), the share "
        "of the ceiling (independent serial runs on as many threads), events per step and "
        "serial's time per event, and whether every runtime gave serial's state.")
    add_model_arguments(p)
    p.add_argument("--runtimes", nargs="+", type=_runtime_arg,
                   default=["serial", "seer:1", f"seer:{cores}"],
                   help=f"kind:threads labels (default: serial seer:1 seer:{cores})")
    p.add_argument("--steps", type=positive_int, default=10, help="timed steps per round")
    p.add_argument("--rounds", type=positive_int, default=5)
    p.add_argument("--warmup", type=non_negative_int, default=1,
                   help="untimed steps after each reset")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--no-ceiling", dest="ceiling", action="store_false",
                   help="skip the independent serial runs")
    p.add_argument("--json", default="", type=output_file,
                   help="also write every measured value here")
    p.set_defaults(func=_cmd_bench)


def _runtime_arg(text: str) -> str:
    import argparse

    from seer.runtime import validate_threads

    try:
        _kind, threads = parse_runtime(text)
        validate_threads(threads)
    except ValueError as exc:  # ModelError is one
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None
    return text


def _cmd_bench(args: Any) -> int:
    """Bad input (a model spec, runtimes, arguments) raises the project's input errors,
    which ``seer.cli.main`` prints as one line with exit status 2."""
    from seer.specs import model_from_args

    name = " ".join([args.spec, *args.kwargs])
    result = compare(model_from_args(args), args.runtimes,
                     steps=args.steps, rounds=args.rounds, warmup=args.warmup,
                     seed=args.seed, ceiling=args.ceiling, name=name, progress=True)
    for line in result.table():
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            f.write(result.dumps())
        print(f"\n{args.json}: every round's times")
    return 0 if all(rt.identical is not False for rt in result.runtimes.values()) else 1
