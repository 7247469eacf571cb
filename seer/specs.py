"""Model specs: build a model from a registered name or an importable factory, and keyword
arguments.

A spec is either the short name of a registered model (``"pcs"``) or a callable named as
``"module:qualname"`` (``"mypackage.models:MyModel"``); arguments are keyword arguments.
On the command line they are ``key=value`` words whose values are Python literals
(``width=20 cost_us=7.5 hotspot=False``). Specs are how a model crosses a process boundary
(a child process, a cluster worker) without pickling the model itself.

Models are registered through Python packaging entry points of the group ``seer.models``
(:data:`ENTRY_POINT_GROUP`): a distribution declares, in its ``pyproject.toml``::

    [project.entry-points."seer.models"]
    mymodel = "mypackage.models:MyModel"

and after it is installed ``"mymodel"`` names ``"mypackage.models:MyModel"``. This project
registers its workloads that way (``aircraft``, ``pcs``, ``pursuit``, ``bench``, ``empty``),
so that ``seer`` itself never names the ``workloads`` package.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.metadata
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from seer.errors import ModelError
from seer.model import Model

__all__ = ["ENTRY_POINT_GROUP", "load_model", "model_factory", "model_from_args",
           "non_negative_int", "output_file",
           "parse_kwargs", "positive_int", "registered_models", "resolve_spec"]

#: The entry-point group that names models: ``name = "module:qualname"``.
ENTRY_POINT_GROUP = "seer.models"


def registered_models() -> dict[str, str]:
    """Every registered model name and the ``"module:qualname"`` it stands for, sorted by
    name. A name that two distributions register is an error (it would be ambiguous)."""
    found: dict[str, list[str]] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        spec = f"{ep.module}:{ep.attr}" if ep.attr else ep.value
        if spec not in found.setdefault(ep.name, []):  # one distribution seen twice
            found[ep.name].append(spec)
    twice = {name: specs for name, specs in found.items() if len(specs) > 1}
    if twice:
        raise ModelError(f"model names registered more than once in entry-point group "
                         f"{ENTRY_POINT_GROUP!r}: {twice}")
    return {name: specs[0] for name, specs in sorted(found.items())}


def resolve_spec(spec: str) -> str:
    """``spec`` as ``"module:qualname"``: a registered name is looked up
    (:func:`registered_models`), a ``"module:qualname"`` is returned as it is. Anything
    else is a :class:`~seer.ModelError` that names it and lists the registered names."""
    if not isinstance(spec, str):
        raise ModelError(f"model spec must be a string, got {type(spec).__name__}")
    if ":" in spec:
        module_name, _sep, qualname = spec.partition(":")
        if not module_name or not qualname:
            raise ModelError(f"model spec {spec!r} must be a registered model name or "
                             "'module:callable', e.g. 'mypackage.models:MyModel'")
        return spec
    registered = registered_models()
    if spec in registered:
        target = registered[spec]
        if ":" not in target:
            raise ModelError(f"registered model {spec!r} = {target!r} names a module, not "
                             "'module:callable'")
        return target
    known = ", ".join(registered) or f"none (no installed distribution has entry points "\
                                     f"in group {ENTRY_POINT_GROUP!r})"
    raise ModelError(f"unknown model {spec!r}: not a registered model name (registered: "
                     f"{known}), and not 'module:callable' such as "
                     "'mypackage.models:MyModel'")


def load_model(spec: str, kwargs: Mapping[str, Any] | None = None) -> Model:
    """Resolve ``spec`` (:func:`resolve_spec`), import its callable and call it with
    ``kwargs``; it must return a Model."""
    target_spec = resolve_spec(spec)
    what = f"model spec {spec!r}" + ("" if target_spec == spec else f" (= {target_spec!r})")
    module_name, _sep, qualname = target_spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ModelError(f"{what}: cannot import {module_name!r} ({exc})") \
            from exc
    for part in qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ModelError(f"{what}: {module_name!r} has no "
                             f"{qualname!r}") from None
    kwargs = dict(kwargs or {})
    if not callable(target):
        raise ModelError(f"{what}: {qualname!r} is a {type(target).__name__}, not a callable "
                         "that makes a seer.Model")
    try:  # name the model with a wrong argument, before the call (whose own errors pass)
        signature = inspect.signature(target)
    except (TypeError, ValueError):  # no signature to check (some builtins): the call tells
        signature = None
    if signature is not None:
        params = signature.parameters.values()
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            takes = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                          p.KEYWORD_ONLY)]
            unknown = [k for k in kwargs if k not in takes]
            if unknown:  # a misspelt name first: "missing 'n_entities'" would hide it
                raise ModelError(f"{what}: no argument named {', '.join(map(repr, unknown))}; "
                                 f"it takes {', '.join(takes) or 'none'}")
        try:
            signature.bind(**kwargs)
        except TypeError as exc:
            raise ModelError(f"{what}: {exc}") from None
    model = target(**kwargs)
    if not isinstance(model, Model):
        raise ModelError(f"{what} made a {type(model).__name__}, not a "
                         "seer.Model")
    return model


def parse_kwargs(words: Sequence[str]) -> dict[str, Any]:
    """``["width=20", "hotspot=False"]`` -> ``{"width": 20, "hotspot": False}``; a value
    that is not a Python literal stays a string. A word that is not ``key=value`` or a key
    given twice is a :class:`~seer.ModelError`."""
    out: dict[str, Any] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key.isidentifier():
            raise ModelError(f"model argument {word!r} must be key=value")
        if key in out:  # a typo, most likely: neither value would be right to drop
            raise ModelError(f"model argument {key!r} is given twice ({word!r})")
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
    return out


def model_factory(spec: str, words: Sequence[str], imports: Sequence[str] = (), *,
                  extra: Mapping[str, Any] | None = None) -> Callable[[], Model]:
    """What a command line's ``SPEC k=v ... --import MODULE`` means, the same for every
    ``seer`` command that takes a model: the current directory on ``sys.path`` (as
    ``python -m`` does, so a user's own modules are found), each of ``imports`` imported,
    ``words`` parsed (:func:`parse_kwargs`) and ``extra`` added (a command's own options
    for model arguments); returns a callable that builds a fresh model each time.
    Raises ImportError or :class:`ModelError`."""
    import os
    import sys

    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for module in imports:
        importlib.import_module(module)
    kwargs = parse_kwargs(words)
    for key, value in (extra or {}).items():
        if key in kwargs:
            raise ModelError(f"model argument {key!r} is given twice ({key}={kwargs[key]!r} "
                             f"and by an option, {value!r})")
        kwargs[key] = value
    return lambda: load_model(spec, kwargs)


def model_from_args(args: Any, *, spec: str | None = None,
                    extra: Mapping[str, Any] | None = None) -> Callable[[], Model]:
    """:func:`model_factory` of the arguments :func:`add_model_arguments` declared
    (``args.spec``, ``args.kwargs``, ``args.imports``)."""
    return model_factory(args.spec if spec is None else spec, args.kwargs,
                         getattr(args, "imports", ()), extra=extra)


def _count(text: str, minimum: int) -> int:
    try:
        value = int(text, 10)
    except (TypeError, ValueError):
        value = None
    if value is None or value < minimum:
        raise argparse.ArgumentTypeError(f"must be a whole number >= {minimum}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An argparse ``type=`` for a count of at least 1 (``--steps``, ``--threads``): the
    decimal integer ``text``, or :class:`argparse.ArgumentTypeError` naming what it got."""
    return _count(text, 1)


def non_negative_int(text: str) -> int:
    """An argparse ``type=`` for a count that may be 0 (``--warmup``, ``--seed``): the
    decimal integer ``text``, or :class:`argparse.ArgumentTypeError` naming what it got."""
    return _count(text, 0)


def output_file(text: str) -> str:
    """An argparse ``type=`` for a file a command will write (``-o trace.json``): ``text``
    itself if its directory exists and it is not a directory, so that a bad path is refused
    before the work rather than after it; ``""`` (no file) passes."""
    import os

    if text:
        folder = os.path.dirname(text) or "."
        if not os.path.isdir(folder):
            raise argparse.ArgumentTypeError(f"cannot write {text!r}: no directory {folder!r}")
        if os.path.isdir(text):
            raise argparse.ArgumentTypeError(f"cannot write {text!r}: it is a directory")
    return text


def add_model_arguments(parser: Any, *, spec: bool = True) -> None:
    """The model a command takes, as :func:`model_from_args` reads it: ``spec`` (unless the
    command names it with an option of its own), its ``key=value`` words, and the
    repeatable ``--import MODULE``. Every ``seer`` command that takes a model declares it
    with this, so all of them name a model the same way."""
    if spec:
        parser.add_argument("spec", help="the model: module:callable (mypackage.env:MyModel, "
                            "found from the current directory) or a registered name (pcs, "
                            "aircraft, ...; seer list)")
    parser.add_argument("kwargs", nargs="*", help="key=value arguments of the callable")
    parser.add_argument("--import", dest="imports", action="append", default=[],
                        metavar="MODULE", help="import MODULE first (repeatable): your "
                        "model's, or one that registers a runtime of your own with "
                        "seer.register_runtime")
