"""What a handler's everyday operations cost on free-threaded CPython, alone and while a
second thread does the same, on its own objects or on the very same ones.

    .venv/bin/python -m bench.bench_sharing --fast -o sharing.json
    .venv/bin/python -m bench.bench_sharing --fast --ops attr_read rng_draw

Each operation (:data:`OPS`) is a pyperf benchmark ``<op>-<mode>``: ``1T``, ``2T-private``
(two threads, each on its own object), ``2T-shared`` (two threads, one object); wall time
per operation per thread. ``2T-private / 1T`` is what running beside another thread costs,
``2T-shared / 2T-private`` what sharing adds. Reading them: docs/performance.md.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyperf

import seer
from seer.benchmark import on_threads
from seer.model import compile_model, make_row, make_row_class

__all__ = ["MODES", "OPS", "Op", "loop_function", "run_mode"]

MODES = ("1T", "2T-private", "2T-shared")
#: statements per loop iteration (pyperf's inner_loops): the loop's own cost is spread thin
UNROLL = 10


class Holder:
    """A model-like instance: constants read as attributes, a method, a neighbour table."""

    def __init__(self) -> None:
        self.x = 1.5
        self.table = [3, 1, 4, 1]
        self.pair = (3, 1, 4, 1)
        self.floats = np.linspace(0.0, 1.0, 16)
        self.counts = np.arange(16, dtype=np.int64)
        self.matrix = np.random.default_rng(0).standard_normal((8, 8))

    def method(self) -> float:
        return self.x


class HookHolder:
    """State arrays read through a ``__getattr__`` hook (how ``StateArrays`` used to work)."""

    def __init__(self) -> None:
        object.__setattr__(self, "_arrays", {"busy": np.zeros(4)})

    def __getattr__(self, name: str) -> Any:
        try:
            return self._arrays[name]
        except KeyError:
            raise AttributeError(name) from None


class PlainHolder:
    """The same array as a plain instance attribute (how ``StateArrays`` works now)."""

    def __init__(self) -> None:
        self.busy = np.zeros(4)


#: A module-level float made at run time, as ``math.inf`` is.
RUNTIME_FLOAT = float("inf")


class _Tick(seer.Model):
    """One entity, one kind: enough to build a real :class:`seer.Context`."""

    kinds = ("tick",)
    fields = {"busy": ((), np.int64)}  # noqa: RUF012

    def on_tick(self, ctx: seer.Context, event: Any) -> None:
        pass

    def outputs(self, entity: int, state: seer.StateArrays,
                start: seer.StateArrays) -> tuple[Any, float, bool, bool, dict]:
        return None, 0.0, False, False, {}


def _row(spec: Any = None) -> Any:
    spec = spec or compile_model(_Tick(1))
    return make_row(make_row_class(spec.fields), {"busy": np.zeros(1, np.int64)}, 0)


def _context() -> seer.Context:
    spec = compile_model(_Tick(1))
    # A push that keeps nothing: the emit's own cost, not a growing heap's.
    return seer.Context(spec, 0, _row(spec), collections.deque(maxlen=1).append)


@dataclass(frozen=True)
class Op:
    """One operation: ``make()`` builds the object the statement works on (bound to ``s``),
    ``prelude`` takes locals from it once per call, ``stmt`` is the timed statement, and
    ``advice`` is what its figures mean for a handler's author."""

    make: Callable[[], Any]
    prelude: str
    stmt: str
    advice: str


OPS: dict[str, Op] = {
    "attr_read": Op(Holder, "o = s", "o.x",
                    "model constants as attributes of `self`: cheap, shared or not"),
    "list_index": Op(Holder, "t = s.table", "t[1]",
                     "neighbour tables as lists: cheap, shared or not"),
    "tuple_index": Op(Holder, "t = s.pair", "t[1]", "tuples: as lists"),
    "method_call": Op(Holder, "o = s", "o.method()", "calling a method of `self`"),
    "bound_method_call": Op(Holder, "m = s.method", "m()",
                            "calling one bound-method object kept in a variable"),
    "float_arith": Op(Holder, "y = s.x", "y * 1.5", "arithmetic creating floats"),
    "np_scalar_read": Op(Holder, "a = s.floats", "a[3]",
                         "indexing a numpy array makes a numpy scalar (an allocation)"),
    "np_scalar_to_int": Op(Holder, "a = s.counts", "int(a[3])",
                           "`int(array[i])`: the scalar plus a conversion"),
    "np_exp_scalar": Op(Holder, "y = s.x; f = np.exp", "f(y)",
                        "a numpy ufunc on one number (use `math` for scalars)"),
    "math_exp_scalar": Op(Holder, "y = s.x; f = math.exp", "f(y)", "`math.exp` on one number"),
    "small_matmul": Op(Holder, "a = s.matrix", "a @ a",
                       "numpy on a tiny (8x8) array: the call's fixed cost dominates"),
    "rng_draw": Op(lambda: np.random.default_rng(1), "r = s", "r.exponential(2.0)",
                   "one draw from a numpy Generator (per entity: `ctx.rng`)"),
    "row_read": Op(_row, "row = s", "row.busy", "reading a scalar field through `ctx.row`"),
    "row_write": Op(_row, "row = s", "row.busy += 1",
                    "`ctx.row.field += 1`: a read, a numpy add and a write"),
    "ctx_emit": Op(_context, "c = s", "c.emit(0, 1.0, 0)",
                   "`ctx.emit` to the entity itself, the push not counted"),
    "module_float": Op(Holder, "", "RUNTIME_FLOAT",
                       "a module-level float made at run time (`math.inf`): every thread "
                       "counts references to the one object"),
    "np_func_load": Op(Holder, "", "np.sin",
                       "`np.sin` looked up on the module (a ufunc is not immortal); a "
                       "default argument `_sin=np.sin` is a local load"),
    "array_slice": Op(Holder, "a = s.floats", "a[:8]",
                      "a view of an array counts a reference to its base: slice arrays "
                      "your thread made, not one module-level array"),
    "getattr_hook": Op(HookHolder, "o = s", "o.busy",
                       "an attribute served by `__getattr__` (every load calls the hook)"),
    "plain_attr": Op(PlainHolder, "o = s", "o.busy",
                     "the same attribute stored on the instance (`StateArrays` now)"),
    "row_store": Op(_row, "row = s", "row.busy = 3",
                    "a store through a property of a class two threads share (each thread "
                    "now makes its own row class)"),
}


def loop_function(op: Op) -> Callable[[Any, int], None]:
    """``run(s, loops)``: ``loops`` iterations of ``UNROLL`` copies of the statement."""
    body = "; ".join([op.stmt] * UNROLL)
    source = (f"def run(s, loops):\n    {op.prelude}\n"
              f"    for _ in range(loops):\n        {body}\n")
    namespace: dict[str, Any] = {"np": np, "math": __import__("math"),
                                 "RUNTIME_FLOAT": RUNTIME_FLOAT}
    exec(source, namespace)
    return namespace["run"]


def run_mode(op: Op, mode: str, loops: int) -> float:
    """Wall seconds for ``loops`` iterations of ``op`` in ``mode``: the threads start
    together and the time ends with the last one."""
    run = loop_function(op)
    first = op.make()
    objects = {"1T": [first], "2T-private": [first, op.make()],
               "2T-shared": [first, first]}[mode]
    run(first, 10)  # specialise the bytecode (shared by the threads) before timing
    return on_threads(len(objects), lambda i, n: run(objects[i], n), loops)


def _time(loops: int, op: Op, mode: str) -> float:
    return run_mode(op, mode, loops)


def _summary(bench: pyperf.BenchmarkSuite, names: list[str]) -> None:
    print(f"\n{'operation':<20} {'1T ns/op':>9} {'2T-private':>11} {'2T-shared':>10}")
    for name in names:
        try:
            one = bench.get_benchmark(f"{name}-1T").median()
            private = bench.get_benchmark(f"{name}-2T-private").median()
            shared = bench.get_benchmark(f"{name}-2T-shared").median()
        except KeyError:
            continue
        print(f"{name:<20} {one * 1e9:>9.1f} {private / one:>10.2f}x {shared / one:>9.2f}x")


def main() -> None:
    # workers run as ``-m bench.bench_sharing`` so that ``bench`` imports there too
    runner = pyperf.Runner(program_args=("-m", "bench.bench_sharing"),
                           add_cmdline_args=lambda cmd, args: cmd.extend(["--ops", *args.ops]))
    runner.argparser.add_argument("--ops", nargs="+", default=list(OPS), choices=list(OPS),
                                  help="operations to measure (default: all)")
    args = runner.parse_args()
    runner.metadata["description"] = "per-operation cost on 1 thread and on 2 threads"
    suite = []
    for name in args.ops:
        for mode in MODES:
            bench = runner.bench_time_func(f"{name}-{mode}", _time, OPS[name], mode,
                                           inner_loops=UNROLL)
            if bench is not None:
                suite.append(bench)
    if not runner.args.worker and suite:
        _summary(pyperf.BenchmarkSuite(suite), list(args.ops))


if __name__ == "__main__":
    main()
