"""A failing interleaving as pictures: a Perfetto trace and a happens-before graph.

:func:`failure_trace` lays the interleaving out on a :class:`seer.trace.Trace`: one track
per thread (and one for the main thread's set-up and invariant), one slice per operation
in step order, 1 µs per line, with a flow arrow from every store to each load or
read-modify-write that read it. Open the saved file in https://ui.perfetto.dev.

:func:`failure_dot` draws the same lines as a Graphviz graph, as GenMC's error graphs do:
solid edges are program order within a thread, dashed ones *reads-from* (which store each
load read); the thread that failed is named in the title.
"""

from __future__ import annotations

import itertools
from typing import Any

from seer.trace import Trace

__all__ = ["failure_dot", "failure_trace"]

_US = 1000  # ns per line


def _store_lines(failure: Any) -> dict[tuple[int, int], int]:
    """(thread, step) of every store-performing line -> its position."""
    out = {}
    for k, line in enumerate(failure.steps):
        if line.kind in ("store", "plain store", "exchange", "cas", "fetch_add") and (
                line.kind != "cas" or line.detail.endswith("(ok)")):
            out[(line.thread, line.step)] = k
    return out


def _source(failure: Any, line: Any, stores: dict) -> int | None:
    if line.reads_from is None:
        return None
    thread, step = line.reads_from
    n = max((s.thread for s in failure.steps), default=0) + 1
    thread = -1 if thread >= n or thread < 0 else thread
    return stores.get((thread, step))


def failure_trace(failure: Any) -> Trace:
    trace = Trace()
    threads = sorted({s.thread for s in failure.steps if s.thread >= 0})
    tracks = {t: i for i, t in enumerate([-1, *threads])}
    trace.ensure(len(tracks), ["main (set-up, invariant)", *(f"T{t}" for t in threads)])
    base = trace.start_ns
    stores = _store_lines(failure)
    for k, line in enumerate(failure.steps):
        start = base + k * _US
        name = f"{line.kind} {line.name}".strip()
        trace.slice(tracks[line.thread], name, start, start + _US - 1, step=line.step,
                    order=line.order, value=line.detail)
        src = _source(failure, line, stores)
        if src is not None and failure.steps[src].thread != line.thread:
            origin = failure.steps[src]
            trace.flow(tracks[origin.thread], "reads-from", base + src * _US + _US // 2, k,
                       end=False)
            trace.flow(tracks[line.thread], "reads-from", start + _US // 2, k, end=True)
    trace.slice(0, f"FAILED: {failure.message[:120]}", base + len(failure.steps) * _US,
                base + (len(failure.steps) + 1) * _US)
    return trace


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def failure_dot(failure: Any) -> str:
    """The execution graph: program order (solid), reads-from (``rf``, bold green when it
    synchronises, dashed blue when not), modification order (``mo``, red, between
    consecutive stores of a word) and from-read (``fr``, dotted orange: a load to the
    store right after the one it read in ``mo``)."""
    lines = ["digraph execution {", "  rankdir=TB;", "  node [shape=box, fontname=mono];",
             f'  label="{_quote(failure.message[:200])}\\nschedule {failure.schedule}";']
    stores = _store_lines(failure)
    last: dict[int, int] = {}
    for k, line in enumerate(failure.steps):
        who = "main" if line.thread < 0 else f"T{line.thread}"
        label = f"{line.step}: {who} {line.kind} {line.order} {line.name} {line.detail}"
        lines.append(f'  n{k} [label="{_quote(" ".join(label.split()))}"];')
        if line.thread in last:
            lines.append(f"  n{last[line.thread]} -> n{k};")
        last[line.thread] = k
        src = _source(failure, line, stores)
        if src is not None and src != k:
            style = ('style=bold, color=darkgreen, label="rf (sync)"'
                     if getattr(line, "synchronises", False) else
                     'style=dashed, color=blue, label="rf"')
            lines.append(f"  n{src} -> n{k} [{style}];")
    # mo and fr from the failure's graph: (thread, step) of each store in mo, per word
    n = max((s.thread for s in failure.steps), default=0) + 1
    for _name, order in getattr(failure, "graph", {}).get("mo", {}).items():
        nodes = [stores.get((t if 0 <= t < n else -1, step)) for t, step in order]
        for a, b in itertools.pairwise(nodes):
            if a is not None and b is not None:
                lines.append(f'  n{a} -> n{b} [color=red, label="mo", constraint=false];')
        position = {node: i for i, node in enumerate(nodes) if node is not None}
        for k, line in enumerate(failure.steps):
            src = _source(failure, line, stores)
            if line.reads_from is None:
                continue
            if src is None and line.reads_from[1] == 0:  # read the initial value
                i = 0
            elif src in position:
                i = position[src]
            else:
                continue
            if nodes and (src in position or i == 0) and i + 1 < len(nodes):
                nxt = nodes[i + 1]
                if nxt is not None and nxt != k and failure.steps[k].name == _name:
                    lines.append(f'  n{k} -> n{nxt} [style=dotted, color=orange, '
                                 'label="fr", constraint=false];')
    lines.append("}")
    return "\n".join(lines) + "\n"
