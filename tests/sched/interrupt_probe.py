"""Ctrl-C at chosen moments of a runtime operation, in a child process (issue 33).

The rule checked: a SIGINT may surface as KeyboardInterrupt from ``step()``, ``reset()``
or ``close()``, or not at all if the operation finished; never as another exception, never
a hang. After a KeyboardInterrupt out of ``step()``/``reset()`` the next ``step()`` refuses
with a :class:`~seer.errors.RuntimeStateError` that says reset is needed, and ``reset()``
then gives the serial runtime's episode bit for bit. ``close()`` always closes, and the
runtime's threads are gone afterwards.

Usage (each prints one ``result`` line per injection and exits 0 only if all passed)::

    python -m tests.sched.interrupt_probe KIND OPERATION K       # the K-th line event
    python -m tests.sched.interrupt_probe KIND OPERATION A-B[:S]  # K = A, A+S, ..., B
    python -m tests.sched.interrupt_probe KIND OPERATION count    # dry run: line events
    python -m tests.sched.interrupt_probe KIND OPERATION lines[:I/N]  # every distinct line
    python -m tests.sched.interrupt_probe KIND OPERATION recovery[:I/N]  # a second Ctrl-C
    ... KIND OPERATION SPEC --max-failures N                      # stop after N failures
    python -m tests.sched.interrupt_probe storm KIND              # storm child (see below)
    python -m tests.sched.interrupt_probe drop KIND error|interrupt  # drop after a failure
    python -m tests.sched.interrupt_probe --minutes M [KIND ...]  # SIGINT storm driver

KIND is a runtime name of :data:`seer.sched.RUNTIMES` or ``all``; OPERATION is ``step``,
``reset``, ``close``, ``resize`` (to 3 threads; the kinds with threads) or ``all``. A
*line event* is one ``sys.settrace`` line event on the main thread in a file of the
``seer`` package during OPERATION; at the chosen one the
tracer runs the SIGINT handler in force at that moment with the traced frame
(:func:`deliver_sigint`), so that handler decides what happens, as with a real Ctrl-C.
``lines`` injects at the first occurrence of every distinct (file, line) that a dry run
met (shard I of N: every N-th of them). ``recovery`` sends a first SIGINT at a fixed line
of the operation (:data:`ANCHORS`) and a second at every distinct line that runs after it (the
failed operation's recovery: stopping threads, replacing them, marking the runtime), as a
user pressing Ctrl-C twice. Code made at run time for a ``seer`` module (a dataclass's
``__init__``) counts as that module's.

The storm child steps a tiny model while its parent sends SIGINT every 1-20 ms; it
recovers by the rule above after each KeyboardInterrupt, compares every finished step with
serial, and stops at SIGUSR1 with one more clean episode.
"""

from __future__ import annotations

import contextlib
import faulthandler
import inspect
import os
import random
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import seer
from seer.sched import RUNTIMES
from seer.testing import RandomModel

SEER_DIR = os.path.dirname(os.path.abspath(seer.__file__)) + os.sep
ROOT = os.path.dirname(SEER_DIR.rstrip(os.sep))
#: Every runtime kind seer itself registers (a test may register more; those are not ours).
KINDS = tuple(sorted(n for n, cls in RUNTIMES.items() if cls.__module__.startswith("seer.")))
OPERATIONS = ("step", "reset", "close", "resize")
RESIZED = 3  # threads after the probed resize() (from THREADS)
THREADS = 2
SEED, OTHER_SEED = 7, 11
STEPS = 3  # steps of the episode compared with serial
#: Seconds one injection (build, warm-up, operation, recovery, close) may take before the
#: child dumps every thread's stack and exits: a hang.
INJECTION_TIMEOUT = 20.0
DROP_TIMEOUT = 20.0  # seconds the drop check may take, interpreter exit included
THREAD_WAIT = 1.0  # seconds for a closed or dropped runtime's threads to end (it joins them)


class ProbeFailure(Exception):
    """A broken promise; the message is the one-line reason."""


def make_model() -> RandomModel:
    """A tiny model: a handful of entities, cross-entity events, two windows a step."""
    return RandomModel(8, seed=3, fanout=2, ttl=2, lookahead=0.5)


def make_runtime(kind: str, model: RandomModel) -> seer.Runtime:
    return seer.make_runtime(model, kind, threads=None if kind == "serial" else THREADS)


def _digest(result: Any) -> bytes:
    parts = [np.ascontiguousarray(np.asarray(o)).tobytes() for o in result.observations]
    for array in (result.rewards, result.terminations, result.truncations):
        parts.append(np.ascontiguousarray(array).tobytes())
    return b"|".join(parts)


def _state(rt: seer.Runtime) -> bytes:
    return b"|".join(np.ascontiguousarray(rt.state[n]).tobytes() for n in rt.state.names)


@dataclass
class Reference:
    """Serial's episode from ``reset(SEED)``: each result's digest, and the final state."""

    actions: list
    results: list[bytes] = field(default_factory=list)
    state: bytes = b""
    other_reset: bytes = b""  # serial's reset(OTHER_SEED) outputs

    @classmethod
    def build(cls, model: RandomModel) -> Reference:
        ref = cls([model.sample_actions(t) for t in range(STEPS + 1)])
        rt = seer.SerialRuntime(model)
        ref.other_reset = _digest(rt.reset(OTHER_SEED))
        ref.results.append(_digest(rt.reset(SEED)))
        for t in range(STEPS):
            ref.results.append(_digest(rt.step(ref.actions[t])))
        ref.state = _state(rt)
        rt.close()
        return ref


def _live_threads() -> frozenset[threading.Thread]:
    return frozenset(threading.enumerate())


def wait_for_threads(baseline: frozenset[threading.Thread], what: str) -> None:
    """Raise :class:`ProbeFailure` unless every thread started since ``baseline`` has
    ended soon."""
    deadline = time.monotonic() + THREAD_WAIT
    while _live_threads() - baseline and time.monotonic() < deadline:
        time.sleep(0.005)
    new = _live_threads() - baseline
    if new:
        names = sorted(t.name for t in new)
        raise ProbeFailure(f"leaked threads {what}: {len(new)} still alive "
                           f"({', '.join(names)[:300]})")


def _check_message(exc: BaseException, during: str) -> None:
    """A RuntimeStateError that reports a wedge fails at once, with its message."""
    text = str(exc).splitlines()[0] if str(exc) else repr(exc)
    if isinstance(exc, seer.RuntimeStateError) and "already running" in text:
        raise ProbeFailure(f"wedged ({during}): {text}")
    raise ProbeFailure(f"wrong exception ({during}): {type(exc).__name__}: {text} "
                       f"at {_innermost(exc)}")


def run_episode(rt: seer.Runtime, ref: Reference, what: str) -> None:
    """``reset(SEED)`` and ``STEPS`` steps; every result and the final state must equal
    serial's."""
    try:
        got = [_digest(rt.reset(SEED))]
        for t in range(STEPS):
            got.append(_digest(rt.step(ref.actions[t])))
    except Exception as exc:
        _check_message(exc, what)
    for t, (a, b) in enumerate(zip(got, ref.results, strict=True)):
        if a != b:
            raise ProbeFailure(f"{what}: result {t} differs from serial")
    if _state(rt) != ref.state:
        raise ProbeFailure(f"{what}: final state differs from serial")


def expect_reset_needed(rt: seer.Runtime, ref: Reference, op: str,
                        storm: bool = False, untouched: tuple[Any, bytes] | None = None,
                        ) -> None:
    """After a KeyboardInterrupt out of ``op``: step() refuses, saying reset is needed --
    unless the Ctrl-C came before ``op`` began, which leaves the runtime as it was
    (``untouched``: the step index did not move; then ``(actions, digest)`` is the next
    step and the result serial gives for it, which the step must give).
    In a ``storm`` a KeyboardInterrupt of this step() is another Ctrl-C: it propagates."""
    try:
        if untouched is not None:  # refusing is right too: the runtime may not know
            actions, expected = untouched
            if _digest(rt.step(actions)) != expected:
                raise ProbeFailure(f"step() after a KeyboardInterrupt that came before "
                                   f"{op}() began differs from serial")
            return
        rt.step(ref.actions[0])
    except KeyboardInterrupt:
        if storm:
            raise
        raise ProbeFailure(f"a second KeyboardInterrupt, from the step() after the one "
                           f"from {op}(), with only one SIGINT sent") from None
    except seer.RuntimeStateError as exc:
        text = str(exc).splitlines()[0]
        if "already running" in text:
            raise ProbeFailure(f"wedged (step() after KeyboardInterrupt from {op}()): "
                               f"{text}") from None
        if "reset" not in text:
            raise ProbeFailure(f"step() after KeyboardInterrupt from {op}() refused "
                               f"without saying reset is needed: {text}") from None
        return
    except BaseException as exc:
        _check_message(exc, f"step() after KeyboardInterrupt from {op}()")
    raise ProbeFailure(f"step() after KeyboardInterrupt from {op}() ran without reset()")


# -- the tracer ----------------------------------------------------------------------------
Target = int | tuple[str, int]


def _seer_file(frame: Any) -> str | None:
    """The ``seer`` file ``frame`` runs code of (code made at run time, such as a
    dataclass's ``__init__``, by the module whose globals it runs in), else None."""
    filename = frame.f_code.co_filename
    if filename.startswith(SEER_DIR):
        return filename
    module = frame.f_globals.get("__name__", "")
    if filename.startswith("<") and (module == "seer" or module.startswith("seer.")):
        return f"{SEER_DIR}<{module}.{frame.f_code.co_qualname}>"
    return None


class Injector:
    """A ``sys.settrace`` tracer of the main thread's line events in ``seer`` code.

    ``target`` is the K (int) or the (file, line) to raise SIGINT at; None counts only,
    recording the first K of every distinct (file, line) in ``first``. ``then`` is a
    second SIGINT's (file, line), at its first line event after the first SIGINT; None
    with ``count_then`` records the first K of every distinct line after it in
    ``after``."""

    def __init__(self, target: Target | None, then: tuple[str, int] | None = None,
                 count_then: bool = False) -> None:
        self.target = target
        self.then = then
        self.count_then = count_then
        self.count = 0
        self.first: dict[tuple[str, int], int] = {}
        self.after: dict[tuple[str, int], int] = {}
        self.fired: tuple[int, str, int] | None = None
        self.fired_then: tuple[int, str, int] | None = None

    def __enter__(self) -> Injector:
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(None)

    def _call(self, frame: Any, event: str, arg: Any) -> Any:
        return self._line if _seer_file(frame) is not None else None

    def _line(self, frame: Any, event: str, arg: Any) -> Any:
        if event != "line" or self.fired_then is not None:
            return self._line
        if self.fired is not None and self.then is None and not self.count_then:
            return self._line
        self.count += 1
        key = (_seer_file(frame), frame.f_lineno)
        target = self.target
        if self.fired is not None:  # after the first SIGINT
            if self.then is None:
                self.after.setdefault(key, self.count)
            elif self.then == key:
                self.fired_then = (self.count, *key)
                os.write(1, f"fired {self.count} {where(*key)}\n".encode())
                deliver_sigint(frame)
        elif target is None:
            self.first.setdefault(key, self.count)
        elif target == self.count or target == key:
            self.fired = (self.count, *key)
            # os.write: no Python frame, so a hang right after still shows where it fired
            os.write(1, f"fired {self.count} {where(*key)}\n".encode())
            deliver_sigint(frame)
        return self._line


def deliver_sigint(frame: Any) -> None:
    """What a Ctrl-C landing at ``frame``'s current line does: the SIGINT handler in force
    runs with that frame. (``signal.raise_signal`` would run it at once, but with the
    tracer's own frame, which lies outside ``seer``: a handler that asks where the signal
    landed would be told the wrong place.)"""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    elif handler == signal.SIG_DFL:
        signal.raise_signal(signal.SIGINT)  # the process dies of SIGINT, as it would


def where(path: str, line: int) -> str:
    """``path:line``, relative to the repository (outside it: the file's name only)."""
    inside = path.startswith(ROOT + os.sep)
    return f"{os.path.relpath(path, ROOT) if inside else os.path.basename(path)}:{line}"


# -- one injection -------------------------------------------------------------------------
def operations(kind: str) -> tuple[str, ...]:
    """The operations ``kind`` has (``resize``: the threaded runtimes')."""
    resizable = RUNTIMES[kind].parallel
    return tuple(op for op in OPERATIONS if op != "resize" or resizable)


def _operation(rt: seer.Runtime, op: str, ref: Reference) -> Any:
    if op == "step":
        return rt.step(ref.actions[1])
    if op == "reset":
        return rt.reset(OTHER_SEED)
    if op == "resize":
        return rt.resize(RESIZED)
    return rt.close()


def inject(kind: str, op: str, target: Target | None, ref: Reference,
           then: tuple[str, int] | None = None,
           count_then: bool = False) -> tuple[str, Injector]:
    """One injection (two with ``then``) on a new runtime; returns ``("ok" | "miss",
    injector)`` (miss: a target was not reached) or raises :class:`ProbeFailure`."""
    baseline = _live_threads()
    model = make_model()
    rt = make_runtime(kind, model)
    try:
        rt.reset(SEED)
        expected = _digest(rt.step(ref.actions[0]))
        if expected != ref.results[1]:
            raise ProbeFailure("warm-up step differs from serial")
        interrupted = False
        before = rt.step_index
        injector = Injector(target, then, count_then)
        try:
            with injector:
                result = _operation(rt, op, ref)
        except KeyboardInterrupt:
            interrupted = True
        except BaseException as exc:
            _check_message(exc, f"{op}()")
        if interrupted and injector.fired is None:
            raise ProbeFailure(f"KeyboardInterrupt from {op}() without any SIGINT")
        if op == "close":
            _after_close(rt, ref, baseline, interrupted)
            return _status(injector), injector
        if interrupted:
            untouched = rt.step_index == before
            expect_reset_needed(rt, ref, op,
                                untouched=(ref.actions[1], ref.results[2]) if untouched
                                else None)
        elif op == "step" and _digest(result) != ref.results[2]:
            raise ProbeFailure("step() finished without KeyboardInterrupt but its result "
                               "differs from serial")
        elif op == "reset" and _digest(result) != ref.other_reset:
            raise ProbeFailure("reset() finished without KeyboardInterrupt but its result "
                               "differs from serial")
        elif op == "resize" and rt.threads != RESIZED:
            raise ProbeFailure(f"resize({RESIZED}) finished without KeyboardInterrupt but "
                               f"the runtime has {rt.threads} threads")
        run_episode(rt, ref, f"reset() and {STEPS} steps after the interrupt")
    except BaseException:
        with contextlib.suppress(BaseException):  # the first broken promise is reported
            rt.close()
        raise
    try:
        rt.close()
    except BaseException as exc:
        _check_message(exc, "close() at the end")
    wait_for_threads(baseline, "after close()")
    return _status(injector), injector


def _status(injector: Injector) -> str:
    missed = injector.fired is None or (injector.then and injector.fired_then is None)
    return "miss" if missed else "ok"


def _after_close(rt: seer.Runtime, ref: Reference, baseline: int,
                 interrupted: bool = False) -> None:
    """Whatever close() raised, the runtime is closed and its threads are gone -- after
    one more close() where the Ctrl-C came before close() began (close() always works)."""
    if interrupted:
        try:
            rt.close()
        except BaseException as exc:
            _check_message(exc, "close() again after an interrupted close()")
    wait_for_threads(baseline, "after an interrupted close()")
    try:
        rt.step(ref.actions[1])
    except seer.RuntimeStateError as exc:
        text = str(exc).splitlines()[0]
        if "closed" not in text:
            raise ProbeFailure(f"step() after close() refused without saying closed: "
                               f"{text}") from None
    except BaseException as exc:
        _check_message(exc, "step() after close()")
    else:
        raise ProbeFailure("step() ran after close()")


def dry_run(kind: str, op: str, ref: Reference) -> Injector:
    """Count the operation's line events (nothing is injected)."""
    return inject(kind, op, None, ref)[1]


def _shard(spec: str, keys: dict[tuple[str, int], int]) -> list[tuple[str, int]]:
    """Shard I of N (``name:I/N``; all without one) of ``keys`` in order of first K."""
    shard, n_shards = 0, 1
    if ":" in spec:
        shard_text, _, count_text = spec.partition(":")[2].partition("/")
        try:
            shard, n_shards = int(shard_text), int(count_text)
        except ValueError:
            shard = n_shards = -1
        if not 0 <= shard < n_shards:
            raise SystemExit(f"bad shard {spec!r}: need NAME:I/N with 0 <= I < N")
    ordered = sorted(keys.items(), key=lambda kv: kv[1])
    return [key for i, (key, _) in enumerate(ordered) if i % n_shards == shard]


#: Where the recovery sweep's first SIGINT lands: a line of the base runtime's operation
#: that every kind runs, just before its threads are put to work (the line event of a
#: fixed place, not the K-th event: how many lines the main thread runs in a parallel
#: step varies from run to run).
ANCHORS = {"step": (seer.Runtime._step, "self._run(t_end)"),
           "reset": (seer.Runtime._reset, "self._seed_generators(seed_seq)"),
           "close": (seer.Runtime._close, "if self._finalizer is not None:"),
           "resize": (seer.Runtime._resize_checked, "self._resize_threads(threads)")}


def _anchor(op: str) -> tuple[str, int]:
    func, text = ANCHORS[op]
    lines, first = inspect.getsourcelines(func)
    return func.__code__.co_filename, first + next(
        i for i, line in enumerate(lines) if line.strip() == text)


def _recovery(spec: str, kind: str, op: str,
              ref: Reference) -> tuple[tuple[str, int], list[tuple[str, int]]]:
    """The first SIGINT's (file, line) and the second's lines (every distinct line that
    ran after the first in a run with the first alone)."""
    anchor = _anchor(op)
    return anchor, _shard(spec, inject(kind, op, anchor, ref, count_then=True)[1].after)


def _targets(spec: str, kind: str, op: str, ref: Reference) -> list[Target]:
    if spec.startswith("lines"):
        return list(_shard(spec, dry_run(kind, op, ref).first))
    first, _, stride = spec.partition(":")
    low, _, high = first.partition("-")
    try:
        a, b, s = int(low), int(high or low), int(stride or 1)
    except ValueError:
        raise SystemExit(f"bad K {spec!r}: need K, A-B, A-B:S, count, lines[:I/N] or "
                         "recovery[:I/N]") from None
    if a < 1 or b < a or s < 1:
        raise SystemExit(f"bad K {spec!r}: need 1 <= A <= B and S >= 1")
    return list(range(a, b + 1, s))


def _label(target: int | tuple[str, int] | None) -> str:
    return f"K={target}" if isinstance(target, int) else f"line={where(*target)}"


def sweep(kind: str, op: str, spec: str, max_failures: int | None = None) -> int:
    """Run the injections ``spec`` names; print one ``result`` line each; the exit code.
    With ``max_failures``, stop after that many failed injections."""
    ref = Reference.build(make_model())
    if spec == "count":
        injector = dry_run(kind, op, ref)
        print(f"count {kind} {op} {injector.count} events {len(injector.first)} lines",
              flush=True)
        return 0
    failures = 0
    if spec.startswith("recovery"):
        first, seconds = _recovery(spec, kind, op, ref)
        runs = [(first, second) for second in seconds]
    else:
        runs = [(target, None) for target in _targets(spec, kind, op, ref)]
    for target, then in runs:
        label = _label(target) + (f" then {_label(then)}" if then else "")
        print(f"begin {kind} {op} {label}", flush=True)
        faulthandler.dump_traceback_later(INJECTION_TIMEOUT, exit=True)
        try:
            status, injector = inject(kind, op, target, ref, then)
        except ProbeFailure as exc:
            failures += 1
            print(f"result {kind} {op} {label} FAIL {exc}", flush=True)
        else:
            at = where(*injector.fired[1:]) if injector.fired else "-"
            k = injector.fired[0] if injector.fired else injector.count
            print(f"result {kind} {op} {label} {status.upper()} K={k} at {at}", flush=True)
        finally:
            faulthandler.cancel_dump_traceback_later()
        if max_failures is not None and failures >= max_failures:
            print(f"stopped {kind} {op} after {failures} failures", flush=True)
            break
    print(f"done {kind} {op} failures={failures}", flush=True)
    return 1 if failures else 0


# -- dropping a failed runtime -----------------------------------------------------------
class FailsAtStep1(RandomModel):
    """At step 1 the handlers on worker threads fail: with ``ValueError``
    (``how="error"``), or by a Ctrl-C (``how="interrupt"``: SIGINT simulated on the main
    thread, once)."""

    def __init__(self, how: str) -> None:
        super().__init__(20, seed=2)
        self.how = how
        self.interrupted = False
        self.serial = False  # set for the serial runtime: everything runs on the caller

    def on_act(self, ctx: Any, event: Any) -> None:
        # On a worker thread where there is one (the main thread can finish a window
        # alone): what a dropped runtime's threads must not hold on to.
        on_main = threading.current_thread() is threading.main_thread()
        if int(ctx.now) == 1 and on_main and not self.serial:
            time.sleep(0.002)  # a slow caller: the workers get entities to run
        if int(ctx.now) == 1 and (not on_main or self.serial):
            if self.how == "error":
                raise ValueError("handler bug")
            if not self.interrupted:
                self.interrupted = True
                import _thread

                _thread.interrupt_main()
        super().on_act(ctx, event)


def drop_child(kind: str, how: str, drops: int = 10) -> int:
    """``drops`` times: build ``kind`` on :class:`FailsAtStep1`, fail a step, drop the
    runtime. With the collector disabled, the thread count must then be back to its
    baseline within :data:`THREAD_WAIT`, and the process must exit. Prints ``drop ok`` or
    ``drop FAIL reason``."""
    import gc

    expected = {"error": seer.HandlerError, "interrupt": KeyboardInterrupt}[how]
    # A hang (here or at interpreter exit) prints every thread's stack and exits 1.
    faulthandler.dump_traceback_later(DROP_TIMEOUT, exit=True)
    baseline = _live_threads()
    gc.disable()
    try:
        for _ in range(drops):
            model = FailsAtStep1(how)
            model.serial = kind == "serial"
            rt = seer.make_runtime(model, kind, threads=None if kind == "serial" else 3)
            rt.reset(0)
            try:
                for t in range(3):
                    rt.step(model.sample_actions(t))
            except expected:
                pass
            else:
                print(f"drop FAIL no {expected.__name__} from the failing step", flush=True)
                return 1
            del rt, model
        wait_for_threads(baseline, f"after dropping {drops} failed runtimes without the "
                                   f"collector")
    except ProbeFailure as exc:
        print(f"drop FAIL {exc}", flush=True)
        return 1
    print(f"drop ok {drops} drops, {threading.active_count()} thread(s)", flush=True)
    return 0


# -- the storm -------------------------------------------------------------------------------
def _from_operation(exc: BaseException | None) -> str | None:
    """``"step"``/``"reset"`` when ``exc`` (or an exception it was raised while handling)
    came out of that runtime call, else None: it landed in the storm's own code, just
    before the call began or just after it returned."""
    while exc is not None:
        tb = exc.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            if code.co_filename.startswith(SEER_DIR):
                if code.co_name in ("step", "reset") and code.co_filename.endswith(
                        "runtime.py"):
                    return code.co_name
                break
            tb = tb.tb_next
        exc = exc.__context__
    return None


def _innermost(exc: BaseException) -> str:
    """file:line of the innermost frame of ``exc``'s traceback, and of the innermost
    ``seer`` frame when that is not the same (``signal.py:58<seer/interrupts.py:107``)."""
    tb, inner, inner_seer = exc.__traceback__, "?", ""
    while tb is not None:
        path = tb.tb_frame.f_code.co_filename
        inner = where(path, tb.tb_lineno)
        if path.startswith(SEER_DIR):
            inner_seer = inner
        tb = tb.tb_next
    return inner if inner == inner_seer or not inner_seer else f"{inner}<{inner_seer}"


def _interruptible(call: Any, *args: Any) -> Any:
    """``call(*args)`` with SIGINT's default handler; outside such calls the storm child
    ignores SIGINT, so that its own bookkeeping is never interrupted and every
    KeyboardInterrupt it sees came out of a runtime call or from right beside one."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return call(*args)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def storm_child(kind: str) -> int:
    """Step until SIGUSR1; recover after every KeyboardInterrupt. Exit code 0: no broken
    promise; prints ``storm ok interrupts=N ...`` (or ``storm FAIL reason ...``).

    A KeyboardInterrupt out of step()/reset() after which step() runs without a reset is
    counted (``unrefused``) and fails the storm at the end; a wedge, another exception or a
    result that differs from serial fails it at once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: stop.set())
    model = make_model()
    ref = Reference.build(model)
    baseline = _live_threads()
    rt = make_runtime(kind, model)
    counts = {"interrupts": 0, "from_step": 0, "from_reset": 0, "outside": 0,
              "unrefused": 0, "episodes": 0, "steps": 0}
    needs_check: str | None = None
    index_before = 0  # the step index before the runtime call now running
    origin = ""
    unrefused_at: set[str] = set()  # where those KeyboardInterrupts were raised
    print("storm ready", flush=True)

    def summary() -> str:
        where_from = f" unrefused_at={','.join(sorted(unrefused_at))}" if unrefused_at else ""
        return " ".join(f"{k}={v}" for k, v in counts.items()) + where_from

    try:
        while not stop.is_set():
            try:
                if needs_check is not None:
                    op, needs_check = needs_check, None
                    untouched = None
                    if rt.step_index == index_before and op == "step":
                        # the Ctrl-C came before the call began: the episode goes on
                        untouched = (ref.actions[index_before], ref.results[index_before + 1])
                    try:
                        if rt.step_index == index_before and op == "reset":
                            pass  # reset() before it began (or barely): the next one checks
                        else:
                            _interruptible(expect_reset_needed, rt, ref, op, True, untouched)
                    except ProbeFailure as exc:
                        if "ran without reset()" not in str(exc):
                            raise
                        counts["unrefused"] += 1
                        unrefused_at.add(origin)
                index_before = rt.step_index
                got = _digest(_interruptible(rt.reset, SEED))
                if got != ref.results[0]:
                    raise ProbeFailure("reset() result differs from serial")
                for t in range(STEPS):
                    index_before = t
                    got = _digest(_interruptible(rt.step, ref.actions[t]))
                    if got != ref.results[t + 1]:
                        raise ProbeFailure(f"step {t} result differs from serial")
                    counts["steps"] += 1
                if _state(rt) != ref.state:
                    raise ProbeFailure("final state differs from serial")
                counts["episodes"] += 1
            except KeyboardInterrupt as exc:
                counts["interrupts"] += 1
                op = _from_operation(exc)
                counts[f"from_{op}" if op else "outside"] += 1
                needs_check, origin = op, _innermost(exc)
            except Exception as exc:
                if isinstance(exc, ProbeFailure):
                    raise
                traceback.print_exception(exc, file=sys.stderr)
                _check_message(exc, "storm")
        # The parent has stopped signalling: one clean episode, then close.
        if needs_check is not None:
            expect_reset_needed(rt, ref, needs_check)
        run_episode(rt, ref, "the episode after the storm")
        rt.close()
        wait_for_threads(baseline, "after the storm")
        if counts["unrefused"]:
            raise ProbeFailure(f"{counts['unrefused']} time(s) step() ran without reset() "
                               "after a KeyboardInterrupt out of step() or reset()")
    except ProbeFailure as exc:
        print(f"storm FAIL {exc} {summary()}", flush=True)
        return 1
    print(f"storm ok {summary()}", flush=True)
    return 0


@dataclass
class StormResult:
    kind: str
    sent: int
    returncode: int | None  # None: it hung (killed)
    report: str  # the child's last line, or what the hang looked like


def storm(kind: str, seconds: float, min_ms: float = 1.0, max_ms: float = 20.0,
          rng: random.Random | None = None, hang_after: float = 30.0) -> StormResult:
    """Run a storm child for ``kind``, sending SIGINT every ``min_ms``..``max_ms`` for
    ``seconds``; a child that does not finish ``hang_after`` seconds after SIGUSR1 hung
    (its stacks, from faulthandler, are in the report)."""
    rng = rng or random.Random(0)
    child = subprocess.Popen([sys.executable, "-m", "tests.sched.interrupt_probe", "storm",
                              kind], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    sent = 0
    try:
        ready = child.stdout.readline()
        if not ready.startswith("storm ready"):
            child.wait(hang_after)
            return StormResult(kind, 0, child.returncode,
                               f"did not start: {ready.strip()} {child.stderr.read()[-500:]}")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and child.poll() is None:
            child.send_signal(signal.SIGINT)
            sent += 1
            time.sleep(rng.uniform(min_ms, max_ms) / 1000)
        if child.poll() is None:
            child.send_signal(signal.SIGUSR1)
        try:
            out, err = child.communicate(timeout=hang_after)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGUSR2)  # faulthandler: every thread's stack
            time.sleep(0.5)
            child.kill()
            out, err = child.communicate()
            stacks = " | ".join(line.strip() for line in err.splitlines()
                                if line.strip().startswith(("File", "Thread", "Current")))
            return StormResult(kind, sent, None, f"hang: {stacks[-1500:]}")
        lines = out.strip().splitlines()
        report = lines[-1] if lines else f"no output; stderr: {err.strip()[-500:]}"
        # "Signal 2 ignored due to race condition": a SIGINT that arrived as the child put
        # its own SIG_IGN back between runtime calls (the child's doing, not the runtime's:
        # the runtime puts Python's default handler back, which is callable).
        err = "\n".join(line for line in _unraisable_blocks(err)
                         if "Signal 2 ignored due to race condition" not in line)
        if "Exception ignored" in err:
            ignored = next(line for line in err.splitlines() if "Exception ignored" in line)
            report += f" | stderr: {ignored.strip()}"
        if child.returncode and "Traceback" in err:  # the wrong exception's, in full
            report += " | " + " | ".join(line.strip() for line in
                                         err[err.rindex("Traceback"):].splitlines())
        return StormResult(kind, sent, child.returncode, report)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def _unraisable_blocks(err: str) -> list[str]:
    """``err`` as one string per unraisable report ("Exception ignored ..." and the lines
    up to the next one), so that a report can be dropped whole by its message."""
    blocks: list[str] = []
    for line in err.splitlines():
        if line.startswith("Exception ignored") or not blocks:
            blocks.append(line)
        else:
            blocks[-1] += "\n" + line
    return blocks


def storm_driver(argv: list[str]) -> int:
    """``--minutes M [KIND ...]``: storm every kind (default: all) at once for M minutes;
    one line per kind with the signals sent; exit 0 if no kind broke a promise."""
    i = argv.index("--minutes")
    try:
        minutes = float(argv[i + 1])
    except (IndexError, ValueError):
        raise SystemExit("--minutes needs a number of minutes") from None
    kinds = argv[:i] + argv[i + 2:] or list(KINDS)
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise SystemExit(f"unknown runtime kind(s) {bad}; choose from {list(KINDS)}")
    results: dict[str, StormResult] = {}

    def one(index: int, kind: str) -> None:
        results[kind] = storm(kind, minutes * 60, rng=random.Random(index))

    threads = [threading.Thread(target=one, args=(i, k)) for i, k in enumerate(kinds)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = 0
    for kind in kinds:
        r = results[kind]
        ok = r.returncode == 0 and "Exception ignored" not in r.report
        failed += not ok
        print(f"{kind}: {'ok' if ok else 'FAIL'} sent={r.sent} rc={r.returncode} {r.report}",
              flush=True)
    print(f"storm {minutes} min: {sum(r.sent for r in results.values())} SIGINTs sent, "
          f"{failed} of {len(kinds)} kinds failed", flush=True)
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    faulthandler.register(signal.SIGUSR2, all_threads=True)
    if os.environ.get("SEER_PROBE_UNGUARDED") == "1":  # the self-check's broken runtime
        import seer.interrupts

        seer.interrupts.enter = lambda on_interrupt=None, on_raise=None: (
            seer.interrupts.Guard(on_interrupt, on_raise))
    if os.environ.get("SEER_PROBE_BY_FILE_NAME") == "1":  # the self-check's second rule
        import seer.interrupts

        judged = seer.interrupts._whose
        seer.interrupts._whose = lambda frame: (
            "model" if frame.f_code.co_filename.startswith("<")
            and not frame.f_code.co_filename.startswith("<frozen") else judged(frame))
    if "--minutes" in argv:
        return storm_driver(argv)
    if len(argv) == 3 and argv[0] == "drop":
        if argv[1] not in KINDS or argv[2] not in ("error", "interrupt"):
            raise SystemExit(f"usage: drop KIND error|interrupt; kinds: {list(KINDS)}")
        return drop_child(argv[1], argv[2])
    if len(argv) == 2 and argv[0] == "storm":
        if argv[1] not in KINDS:
            raise SystemExit(f"unknown runtime kind {argv[1]!r}; choose from {list(KINDS)}")
        return storm_child(argv[1])
    max_failures = None
    if "--max-failures" in argv:
        i = argv.index("--max-failures")
        try:
            max_failures = int(argv[i + 1])
        except (IndexError, ValueError):
            raise SystemExit("--max-failures needs a count") from None
        if max_failures < 1:
            raise SystemExit(f"--max-failures must be >= 1, got {max_failures}")
        argv = argv[:i] + argv[i + 2:]
    if len(argv) != 3:
        raise SystemExit(__doc__.split("Usage")[1].split("KIND is")[0].strip())
    kind, op, spec = argv
    kinds = [k for k in KINDS if op == "all" or op in operations(k)] if kind == "all" \
        else [kind]
    if kind != "all" and kind not in KINDS:
        raise SystemExit(f"unknown runtime kind {kind!r}; choose from {list(KINDS)} or all")
    if op != "all" and op not in OPERATIONS:
        raise SystemExit(f"unknown operation {op!r}; choose from {list(OPERATIONS)} or all")
    if op != "all" and op not in operations(kinds[0]):
        raise SystemExit(f"{kind!r} has no {op}()")
    rc = 0
    for k in kinds:
        for o in operations(k) if op == "all" else [op]:
            rc |= sweep(k, o, spec, max_failures)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
