"""PettingZoo's own pursuit, imported for comparison with the port.

PettingZoo's ``pursuit_base`` imports pygame at module load but uses it only to render.
:func:`import_pettingzoo_pursuit` puts an empty module in pygame's place while importing
when pygame is missing, and takes it out again, so the comparison needs only the ``marl``
extra (pettingzoo, gymnasium, scipy).
"""

from __future__ import annotations

import contextlib
import sys
import types
import warnings
from collections.abc import Iterator
from typing import Any

__all__ = ["import_pettingzoo_pursuit", "without_pygame"]


@contextlib.contextmanager
def without_pygame() -> Iterator[None]:
    """Within the block, ``import pygame`` works (an empty stub) if pygame is missing."""
    added = False
    if "pygame" not in sys.modules:
        try:
            import pygame  # noqa: F401
        except ModuleNotFoundError:
            sys.modules["pygame"] = types.ModuleType("pygame")
            added = True
    try:
        yield
    finally:
        if added:
            sys.modules.pop("pygame", None)


def import_pettingzoo_pursuit() -> tuple[Any, Any]:
    """``(pettingzoo.sisl.pursuit_v5, PursuitPolicy)``, imported without pygame."""
    with without_pygame(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from pettingzoo.sisl import pursuit_v5
        from pettingzoo.sisl.pursuit.utils.controllers import PursuitPolicy
    return pursuit_v5, PursuitPolicy
