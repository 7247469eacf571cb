"""PettingZoo's own pursuit, imported for comparison with the port.

PettingZoo's ``pursuit_base`` imports pygame at module load but uses it only to render.
:func:`import_pettingzoo_pursuit` imports it inside :func:`workloads._compat.without_pygame`
(a stub in pygame's place while importing, when pygame is missing), so the comparison needs
only the ``marl`` extra (pettingzoo, gymnasium, scipy).
"""

from __future__ import annotations

import warnings
from typing import Any

from workloads._compat import without_pygame

__all__ = ["import_pettingzoo_pursuit", "without_pygame"]


def import_pettingzoo_pursuit() -> tuple[Any, Any]:
    """``(pettingzoo.sisl.pursuit_v5, PursuitPolicy)``, imported without pygame."""
    with without_pygame(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from pettingzoo.sisl import pursuit_v5
        from pettingzoo.sisl.pursuit.utils.controllers import PursuitPolicy
    return pursuit_v5, PursuitPolicy
