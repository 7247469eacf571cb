"""Importing third-party environments without their rendering dependency.

PettingZoo's ``sisl`` environments and ``mpe2`` import pygame at module load but need it
only to render, and pygame (``pygame-ce`` for mpe2) has no free-threaded 3.14 wheel.
:func:`without_pygame` lets such a module import, and be constructed, without it.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from typing import Any

__all__ = ["without_pygame"]


class _NoRender:
    """Stands in for pygame objects an environment builds in its constructor (a surface, a
    font); any use of it beyond that says that rendering is unavailable."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"pygame is not installed (stubbed by workloads._compat): "
                           f"rendering is unavailable (used .{name})")


def _noop(*args: Any, **kwargs: Any) -> None:
    return None


def _stub_modules() -> dict[str, types.ModuleType]:
    """``pygame`` and ``pygame.freetype`` with only what constructors call: ``init``,
    ``quit``, ``Surface``, ``freetype.init``, ``freetype.Font`` (mpe2's ``SimpleEnv``).
    Any other attribute is missing, so drawing fails with AttributeError."""
    pygame = types.ModuleType("pygame")
    pygame.__doc__ = "an empty stand-in for pygame (workloads._compat): no rendering"
    freetype = types.ModuleType("pygame.freetype")
    freetype.init = _noop  # type: ignore[attr-defined]
    freetype.Font = _NoRender  # type: ignore[attr-defined]
    pygame.freetype = freetype  # type: ignore[attr-defined]
    pygame.init = _noop  # type: ignore[attr-defined]
    pygame.quit = _noop  # type: ignore[attr-defined]
    pygame.Surface = _NoRender  # type: ignore[attr-defined]
    return {"pygame": pygame, "pygame.freetype": freetype}


@contextlib.contextmanager
def without_pygame() -> Iterator[None]:
    """Within the block, ``import pygame`` and ``import pygame.freetype`` work (stubs, see
    :func:`_stub_modules`) if pygame is missing; the stubs are taken out of
    ``sys.modules`` again afterwards (modules imported inside keep their references)."""
    added: list[str] = []
    if "pygame" not in sys.modules:
        try:
            import pygame  # noqa: F401
        except ModuleNotFoundError:
            for name, module in _stub_modules().items():
                sys.modules[name] = module
                added.append(name)
    try:
        yield
    finally:
        for name in added:
            sys.modules.pop(name, None)
