"""The one vocabulary for runtime labels in benchmark names, tables and figures.

A runtime is written ``serial`` or ``kind(threads)``, e.g. ``seer(2)``, ``static-block(2)``.
On the command line ``kind:threads`` (``seer:2``) is accepted too, because parentheses need
quoting in a shell; older result files may hold that form, so names are normalised on load.
"""

from __future__ import annotations

import re

__all__ = ["label", "normalise_name", "parse_runtime"]

_PAREN = re.compile(r"^(?P<kind>[a-z][a-z-]*)\((?P<threads>\d+)\)$")
_COLON = re.compile(r"^(?P<kind>[a-z][a-z-]*):(?P<threads>\d+)$")
_COLON_SUFFIX = re.compile(r"-(?P<kind>[a-z][a-z-]*):(?P<threads>\d+)$")


def label(kind: str, threads: int) -> str:
    """``serial`` for the serial runtime (always one thread), else ``kind(threads)``."""
    return "serial" if kind == "serial" else f"{kind}({threads})"


def parse_runtime(text: str) -> tuple[str, int]:
    """``seer(2)``, ``seer:2`` -> ``("seer", 2)``; a bare kind (``seer``, ``serial``) means
    one thread. Raises ValueError for anything else."""
    match = _PAREN.match(text) or _COLON.match(text)
    if match:
        return match["kind"], int(match["threads"])
    if re.fullmatch(r"[a-z][a-z-]*", text):
        return text, 1
    raise ValueError(f"runtime {text!r} is not 'kind', 'kind(threads)' or 'kind:threads'")


def normalise_name(name: str) -> str:
    """A benchmark name with its trailing runtime in the ``kind(threads)`` form:
    ``step-n60-cost5us-seer:2`` -> ``step-n60-cost5us-seer(2)``; other names unchanged."""
    return _COLON_SUFFIX.sub(lambda m: f"-{m['kind']}({m['threads']})", name)
