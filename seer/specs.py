"""Model specs: build a model from an importable factory and keyword arguments.

A spec names a callable as ``"module:qualname"`` (``"workloads.pcs:PCS"``); arguments
are keyword arguments. On the command line they are ``key=value`` words whose values are
Python literals (``width=20 cost_us=7.5 hotspot=False``). Specs are how a model crosses a
process boundary (a child process, a cluster worker) without pickling the model itself.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from seer.errors import ModelError
from seer.model import Model

__all__ = ["load_model", "parse_kwargs"]


def load_model(spec: str, kwargs: Mapping[str, Any] | None = None) -> Model:
    """Import ``spec``'s callable and call it with ``kwargs``; it must return a Model."""
    module_name, sep, qualname = spec.partition(":")
    if not sep or not module_name or not qualname:
        raise ModelError(f"model spec {spec!r} must be 'module:callable', e.g. "
                         "'workloads.pcs:PCS'")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ModelError(f"model spec {spec!r}: cannot import {module_name!r} ({exc})") \
            from exc
    for part in qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ModelError(f"model spec {spec!r}: {module_name!r} has no "
                             f"{qualname!r}") from None
    model = target(**dict(kwargs or {}))
    if not isinstance(model, Model):
        raise ModelError(f"model spec {spec!r} made a {type(model).__name__}, not a "
                         "seer.Model")
    return model


def parse_kwargs(words: Sequence[str]) -> dict[str, Any]:
    """``["width=20", "hotspot=False"]`` -> ``{"width": 20, "hotspot": False}``; a value
    that is not a Python literal stays a string."""
    out: dict[str, Any] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key.isidentifier():
            raise ModelError(f"model argument {word!r} must be key=value")
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
    return out
