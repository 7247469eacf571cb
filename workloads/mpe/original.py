"""mpe2's own simple spread, imported for comparison with the port.

``mpe2`` 1.1.1 imports pygame (``pygame-ce``, which has no free-threaded 3.14 wheel) at
module load and builds a surface and a font in every environment's constructor, but draws
only to render. It is installed with ``pip install --no-deps mpe2==1.1.1`` (its other
requirements, pettingzoo and scipy, are in the ``marl`` extra; ``scripts/bootstrap.sh`` does
this) and imported inside :func:`workloads._compat.without_pygame`.
"""

from __future__ import annotations

import warnings
from typing import Any

from workloads._compat import without_pygame

__all__ = ["import_mpe2_spread"]


def import_mpe2_spread() -> Any:
    """``mpe2.simple_spread_v3``, imported without pygame. Raises ModuleNotFoundError
    (saying how to install it) when mpe2 is missing."""
    try:
        with without_pygame(), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            from mpe2 import simple_spread_v3
    except ModuleNotFoundError as exc:
        if exc.name != "mpe2":
            raise
        raise ModuleNotFoundError("mpe2 is not installed; install it without its pygame-ce "
                                  "requirement: pip install --no-deps mpe2==1.1.1 (or run "
                                  "scripts/bootstrap.sh)", name="mpe2") from exc
    return simple_spread_v3
