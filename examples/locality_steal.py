"""Locality-aware stealing: a work-assignment strategy of one's own, registered as runtime
``locality``. The tutorial that builds it step by step is ``docs/tutorial-scheduler.md``.

    python -m examples.locality_steal            # prove, audit, time, trace (10-30 s)
    python -m examples.locality_steal --quick    # smaller sizes (a few seconds)
    python -m examples.locality_steal --figure docs/figures/tutorial-locality-vs-seer.png

The strategy (``LocalitySteal``): every ready entity ``e`` has home thread ``e % T``, as in
SEER, and a home segment lists its entities in id order. A thread claims guided chunks of
its own segment with one ``fetch_add`` each (as SEER's ``HomeClaimer``); when that is empty
it looks at every other segment's cursor and steals from the one with the *most items
left*, a run of at least ``run`` neighbouring entities at a time. SEER's thief instead
walks the other segments in turn and takes guided chunks of any size.

Importing this module registers the runtime, so ``seer.make_runtime(model, "locality")``,
``python -m bench.bench_runtimes --import examples.locality_steal --runtimes 'locality(2)'``
and ``python -m seer.cli trace examples.locality_steal:pcs --runtime locality`` (the model
spec imports this module) all find it.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import seer
from seer.check.stress import audit_claims  # the claim audit ships in the package
from seer.queues.pel import ParallelExecutiveList, segment_word
from seer.sched import Assignment, SeerRuntime, register_runtime
from seer.testing import RandomModel, assert_equivalent
from seer.trace import Trace, plot_gantt

__all__ = ["LocalityClaimer", "LocalityRuntime", "LocalitySteal", "audit_claims", "main",
           "pcs", "plot_side_by_side", "time_runtimes", "trace_one_step"]


# -- 1. the claimer: who gets which (start, stop) range of the PEL ---------------------------
class LocalityClaimer:
    """Thread ``home``'s claim handle: guided chunks of its own home segment, then runs of
    at least ``run`` items from whichever other segment has the most items left.

    Every range comes from one ``fetch_add`` on a segment cursor, whose atomicity alone
    hands each item to exactly one thread; the ``load``s only choose a victim and a size
    (a stale value gives a worse choice, never an overlap)."""

    __slots__ = ("_acc", "_div", "_home", "_own", "_pel", "_run", "_seen", "claims",
                 "steals")

    def __init__(self, pel: ParallelExecutiveList, acc: Any, home: int, threads: int,
                 run: int) -> None:
        self._pel = pel
        self._acc = acc  # this thread's own accessor of the PEL's control words
        self._home = home
        self._div = 2 * threads  # guided self-scheduling: remaining / 2T
        self._run = run
        self._own = home
        self._seen = 0  # where this thread last saw its own cursor
        self.claims = 0
        self.steals = 0

    def reset(self, segments: int) -> None:
        """A new window with ``segments`` home segments has been published."""
        self._own = self._home % segments
        self._seen = self._pel.seg_start[self._own]

    def claim(self) -> tuple[int, int] | None:
        pel, acc = self._pel, self._acc
        own, end = self._own, pel.seg_end[self._own]
        if self._seen < end:  # 1. my own segment, in guided chunks
            got = self._take(segment_word(own), max(1, (end - self._seen) // self._div), end)
            if got is not None:
                self._seen = got[1]
                self.claims += 1
                return got
            self._seen = end  # thieves took the rest: never look here again this window
        while True:  # 2. steal a run from the segment with the most items left
            victim, left = -1, 0
            for k in range(len(pel.seg_end)):
                if k != own:
                    k_left = pel.seg_end[k] - acc.load(segment_word(k))  # an estimate
                    if k_left > left:
                        victim, left = k, k_left
            if victim < 0:
                return None  # every segment is exhausted: this thread is done
            got = self._take(segment_word(victim), max(self._run, left // self._div),
                             pel.seg_end[victim])
            if got is not None:
                self.claims += 1
                self.steals += 1
                return got
            # someone emptied the victim since our load: its cursor is now past its end,
            # so it is not chosen again; look for the next one

    def _take(self, word: int, chunk: int, end: int) -> tuple[int, int] | None:
        """The claim itself: up to ``chunk`` items of the segment whose cursor is ctl word
        ``word`` and whose items end at ``end``, or None if it has none left. One
        ``fetch_add``: the read and the advance of the cursor are one indivisible step,
        so no two threads ever get the same index."""
        start = self._acc.fetch_add(word, chunk)
        return (start, min(start + chunk, end)) if start < end else None


# -- 2. the assignment: publish + claimer ----------------------------------------------------
class LocalitySteal(Assignment):
    """Home ``e % T``, segments in id order, steals of neighbour runs from the busiest
    segment (see :class:`LocalityClaimer`)."""

    name = "locality"
    claimer_class = LocalityClaimer

    def __init__(self, run: int = 4) -> None:
        self.run = max(1, run)

    def publish(self, pel: ParallelExecutiveList, ready: np.ndarray, threads: int,
                n_entities: int) -> None:
        ready = np.sort(ready)  # the sorted-runs calendar gives first-entry order
        pel.publish_homed(ready, ready % threads, threads)

    def claimer(self, pel: ParallelExecutiveList, index: int, threads: int,
                path: str | None) -> LocalityClaimer:
        return self.claimer_class(pel, pel.ctl.accessor(path), index, threads, self.run)


# -- 3. the runtime: the shared machinery with this assignment -------------------------------
@register_runtime
class LocalityRuntime(SeerRuntime):
    """Runtime ``locality``: :class:`SeerRuntime` with :class:`LocalitySteal`."""

    name = "locality"
    default_assignment = LocalitySteal()  # stateless, so one instance can serve every runtime


# -- checking it -------------------------------------------------------------------------------
def prove_equivalent(runtime: str, structures: Sequence[int], threads: Sequence[int],
                     *, entities: int = 60, steps: int = 4) -> int:
    """``assert_equivalent`` for ``runtime`` on RandomModels of several structures (both
    lookahead > 0 and lookahead 0, heavy fan-in) and thread counts; returns the number of
    (model, thread count) pairs checked."""
    checked = 0
    for s in structures:
        model = RandomModel(entities, seed=s, fanout=2 + s % 2, p_fan_in=0.1 + 0.1 * (s % 4),
                            lookahead=0.0 if s % 3 == 2 else 0.25)
        for t in threads:
            assert_equivalent(lambda m, t=t: seer.make_runtime(m, runtime, threads=t),
                              model, seeds=[s, s + 100], steps=steps)
            checked += 1
    return checked


# -- timing and traces ---------------------------------------------------------------------------
def pcs(side: int = 40, cost_us: float = 15.0, hotspot_gain: float = 8.0) -> seer.Model:
    """PCS on a ``side x side`` torus with a strong moving hotspot: uneven load, so how
    work moves between threads matters (a model spec for ``seer trace``)."""
    from workloads.pcs import PCS

    return PCS(side, side, cost_us=cost_us, hotspot_gain=hotspot_gain)


def time_runtimes(make_model: Callable[[], seer.Model], runtimes: Sequence[tuple[str, int]],
                  *, steps: int = 5, rounds: int = 3) -> dict[str, list[float]]:
    """Seconds per step of each ``(name, threads)``: per round, a fresh runtime, reset(0),
    one warm-up step, then ``steps`` timed steps (the same steps for every runtime); the
    runtimes take turns within a round, in an order that rotates every round."""
    times: dict[str, list[float]] = {_label(k, t): [] for k, t in runtimes}
    for r in range(rounds):
        for i in range(len(runtimes)):
            kind, threads = runtimes[(i + r) % len(runtimes)]
            model = make_model()
            with seer.make_runtime(model, kind, threads=threads) as rt:
                rt.reset(0)
                rt.step(model.sample_actions(0))
                t0 = time.perf_counter()
                for t in range(steps):
                    rt.step(model.sample_actions(t + 1))
                times[_label(kind, threads)].append((time.perf_counter() - t0) / steps)
    return times


def trace_one_step(model: seer.Model, kind: str, threads: int, *, warmup: int = 1) -> Trace:
    """The trace of step ``warmup`` (after ``warmup`` untraced steps) of ``kind`` on
    ``threads`` threads: what ``seer trace --steps 1`` records."""
    rt = seer.make_runtime(model, kind, threads=threads, trace=True)
    with rt:
        rt.reset(0)
        for t in range(warmup):
            rt.step(model.sample_actions(t))
        rt.trace.clear()
        rt.step(model.sample_actions(warmup))
    return rt.trace


def plot_side_by_side(traces: dict[str, Trace], path: str | Path, *, title: str = "") -> Path:
    """One Gantt panel per trace on a shared time axis (drawn as :func:`seer.trace.plot_gantt`
    draws one), but each entity run coloured by its home thread ``e % T``: a run in another
    thread's colour was stolen. Each thread's steals are also ticks above its track."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(len(tr.threads) for tr in traces.values())
    homes = [plt.get_cmap("tab10")(i % 10) for i in range(n)]
    fig, axes = plt.subplots(len(traces), 1, figsize=(11, 0.8 + (1.0 + 0.7 * n) * len(traces)),
                             sharex=True, squeeze=False)
    for ax, (label, trace) in zip(axes[:, 0], traces.items(), strict=True):
        base, threads = trace.start_ns, len(trace.threads)
        bars: dict[tuple[Any, ...], list[tuple[float, float]]] = {}
        for t, name, s, e, args in trace.slices():
            if name == "run":  # the home under seer and locality: e % T
                colour = homes[args.get("entity", 0) % threads]
            else:
                colour = {"wait": "black", "outputs": "0.6", "window": "0.85"}.get(name)
            if colour is not None:
                y, h = (n - t - 1, 0.8) if name != "window" else (-0.9, 0.6)
                bars.setdefault((y, h, colour), []).append(((s - base) / 1e6,
                                                            max(e - s, 1) / 1e6))
        for (y, h, colour), spans in bars.items():  # one call per colour and row: fast
            ax.broken_barh(spans, (y, h), color=colour)
        for t, records in enumerate(trace.threads):
            steals = [(r[2] - base) / 1e6 for r in records if r[0] == "i" and r[1] == "steal"]
            ax.vlines(steals, n - t - 0.2, n - t - 0.05, color="black", lw=0.6)
        runs = trace.runs()
        ax.set_yticks([n - i - 1 + 0.4 for i in range(n)] + [-0.6])
        ax.set_yticklabels([f"thread {i}" for i in range(n)] + ["windows"])
        for i, label_ in enumerate(ax.get_yticklabels()[:n]):
            label_.set_color(homes[i])
        step_ms = max((e for *_, e, _ in trace.slices()), default=base) - base
        steals = sum(r[1] == "steal" for records in trace.threads for r in records)
        ax.set_title(f"{label}: {step_ms / 1e6:.1f} ms, {len(runs)} entity runs, "
                     f"{steals} steals", loc="left", fontsize=10)
    axes[-1, 0].set_xlabel("time since the step started (ms)")
    fig.suptitle(title or "entity runs in their home thread's colour (another colour: "
                 "stolen),\nsteals (ticks), barrier waits (black), outputs (grey)", fontsize=10)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def _label(kind: str, threads: int) -> str:
    return "serial" if kind == "serial" else f"{kind}({threads})"


# -- the script ----------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.locality_steal",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (seconds)")
    parser.add_argument("--threads", type=int, default=2, help="threads for timing/traces")
    parser.add_argument("--out-dir", default="build/tutorial",
                        help="where the traces (JSON for Perfetto, Gantt PNGs) go")
    parser.add_argument("--figure", default="",
                        help="the side-by-side PNG (default: OUT_DIR/locality-vs-seer.png)")
    parser.add_argument("--gantt", action="store_true",
                        help="also draw each trace alone with seer.trace.plot_gantt, as "
                        "`seer trace --png` does (slow for big traces: it draws slice by slice)")
    args = parser.parse_args(argv)
    quick = args.quick
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    thread_counts = [1, 2, 4] if quick else [1, 2, 3, 4]
    checked = prove_equivalent("locality", range(2 if quick else 6), thread_counts)
    print(f"1. serial-equivalent: {checked} (RandomModel, thread count) pairs, 2 seeds x 4 "
          f"steps each, bit-identical state, outputs and event counts "
          f"({time.perf_counter() - t0:.1f} s)")

    for threads in (2, 3, 4):
        claims, steals = audit_claims(LocalitySteal(), threads, windows=10 if quick else 40)
        print(f"2. claims audited on {threads} threads: every item handed out exactly once "
              f"({claims} claims, {steals} of them steals)")

    side, steps, rounds = (16, 2, 1) if quick else (40, 4, 3)
    runtimes = [("serial", 1), ("seer", args.threads), ("static", args.threads),
                ("locality", args.threads)]
    times = time_runtimes(lambda: pcs(side), runtimes, steps=steps, rounds=rounds)
    base = statistics.median(times["serial"])
    print(f"3. PCS {side}x{side}, cost 15 us, hotspot gain 8: median ms per step over "
          f"{rounds} round(s) of {steps} steps (speed-up over serial)")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"   {name:>12}: {1e3 * med:8.2f} ms  ({base / med:4.2f}x)  "
              f"rounds: {', '.join(f'{1e3 * v:.2f}' for v in values)}")

    traces = {}
    for kind in ("seer", "locality"):
        trace = traces[f"{kind}({args.threads})"] = trace_one_step(pcs(side), kind,
                                                                     args.threads)
        trace.save(out / f"trace-{kind}.json")  # Chrome Trace Event JSON, for Perfetto
        if args.gantt:
            plot_gantt(trace, out / f"trace-{kind}.png",
                       title=f"PCS {side}x{side} on {kind}({args.threads}), one step")
    figure = plot_side_by_side(traces, args.figure or out / "locality-vs-seer.png",
                               title=f"one step of PCS {side}x{side} (hotspot gain 8) on "
                               f"{args.threads} threads\nentity runs in their home thread's "
                               "colour (another colour: stolen), steals (ticks), barrier "
                               "waits (black), outputs (grey)")
    print(f"4. traces of one step: {out}/trace-seer.json and {out}/trace-locality.json "
          f"(open in https://ui.perfetto.dev){' with Gantt charts' if args.gantt else ''}; "
          f"side by side: {figure}")
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
