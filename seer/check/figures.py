"""The strategies' figures in docs/checking.md: schedules per exhaustive run.

    python -m seer.check.figures                 # every row (minutes: weak ring and MS)
    python -m seer.check.figures pel free-list   # some rows
    python -m seer.check.figures --cap 20000     # unbounded DPOR's cap (default 20000)

For each check (the project's own, :mod:`seer.check.queues` and
:mod:`seer.check.ms_queue`, at their own preemption bounds, and the examples of
:mod:`seer.check.examples` at 2) and each memory mode it runs DFS at the check's bound,
DPOR at the same bound (bounded partial-order reduction) and DPOR with no bound, and
prints the schedules, the seconds and the verdict of each. A failing variant (a planted
bug) stops at its first failure, so its row says after how many schedules each found it.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from seer.check.explorer import Report, explore

__all__ = ["ROWS", "main", "measure"]


def _example(make: Callable[[], tuple]) -> Callable[..., Report]:
    def run(**options: Any) -> Report:
        setup, *workers, invariant = make()
        return explore(setup, *workers, invariant=invariant, raises=False, **options)
    return run


def _rows() -> dict[str, tuple[Callable[..., Report], int, tuple[str, ...]]]:
    """name -> (run(**explore options), the preemption bound, the modes it is measured in)."""
    from seer.check import ms_queue, queues
    from seer.check.examples import chase_lev_check, free_list_check, spsc_check
    from seer.queues.atomic import RELAXED, RELEASE

    rows: dict[str, tuple[Callable[..., Report], int, tuple[str, ...]]] = {}
    for name, (factory, _bug) in [*queues.CHECKS.items(), *ms_queue.CHECKS.items()]:
        check = factory()
        rows[name] = ((lambda f: lambda **o: f().run(raises=False, **o))(factory),
                      check.options.get("preemptions", 2), ("sc", "weak"))
    examples = {
        "free-list": lambda: free_list_check(tagged=True),
        "free-list/aba": lambda: free_list_check(tagged=False),
        "spsc": lambda: spsc_check(publish=RELEASE),
        "spsc/relaxed": lambda: spsc_check(publish=RELAXED),
        "chase-lev": chase_lev_check,
    }
    for name, make in examples.items():
        rows[name] = (_example(make), 2, ("weak",) if name == "spsc/relaxed" else
                      ("sc", "weak"))
    return rows


ROWS = ("leq", "arena", "pel", "ring", "ms", "free-list", "free-list/aba", "spsc",
        "spsc/relaxed", "chase-lev")


def measure(name: str, weak: bool, cap: int = 20_000,
            print_: Callable[[str], None] = print) -> dict[str, Report]:
    """One row: ``{"dfs": ..., "dpor-bounded": ..., "dpor": ...}`` (reports with their
    ``seconds``), printed as it goes."""
    run, bound, _modes = _rows()[name]
    out = {}
    for label, options in (("dfs", {"strategy": "dfs", "preemptions": bound}),
                           ("dpor-bounded", {"strategy": "dpor", "preemptions": bound}),
                           ("dpor", {"strategy": "dpor", "preemptions": None})):
        started = time.perf_counter()
        report = run(weak=weak, schedules=cap if label == "dpor" else 200_000, **options)
        report.seconds = time.perf_counter() - started
        out[label] = report
    cells = "  ".join(f"{label}: {r.schedules} {r.verdict} ({r.seconds:.2f} s)"
                      for label, r in out.items())
    print_(f"{name:<14} {'weak' if weak else 'SC':<4}  bound {bound}  {cells}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m seer.check.figures",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", default=[],
                   help=f"rows to measure (default: all): {' '.join(ROWS)}")
    p.add_argument("--cap", type=int, default=20_000,
                   help="the most schedules unbounded DPOR may run (default 20000)")
    p.add_argument("--sc-only", action="store_true", help="sequentially consistent mode only")
    args = p.parse_args(argv)
    unknown = [n for n in args.names if n not in ROWS]
    if unknown:
        p.error(f"unknown row {', '.join(unknown)}; choose from {', '.join(ROWS)}")
    rows = _rows()
    for name in args.names or ROWS:
        for mode in rows[name][2]:
            if mode == "weak" and args.sc_only:
                continue
            measure(name, mode == "weak", args.cap)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
