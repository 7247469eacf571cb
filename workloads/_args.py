"""Constructor argument checks shared by the workloads.

Each function returns the value as a plain Python ``int``, ``float`` or ``bool``, or raises
:class:`seer.ModelError` (a ValueError) naming the model, the argument, the values it
takes and what it got, e.g. ``Aircraft k_neighbours must be an int in 1..16, got '3'``.
numpy integer and floating scalars are taken as what they hold; ``bool`` is never a count
or a number (``True`` is refused where an int is meant).
"""

from __future__ import annotations

import math
import reprlib
from typing import Any

import numpy as np

from seer.errors import ModelError

__all__ = ["flag", "integer", "real", "shown"]

_REPR = reprlib.Repr()  # keyword arguments only from Python 3.12 (the GIL-build stage: 3.11)
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 60, 60, 40


def shown(value: Any) -> str:
    """``repr(value)`` for an error message: on one line and at most about 60 characters
    (a 400-digit int, a long string or a masked array would flood the message)."""
    return " ".join(_REPR.repr(value).split())


def _refuse(owner: str, name: str, wanted: str, value: Any) -> ModelError:
    return ModelError(f"{owner} {name} must be {wanted}, got {shown(value)}")


def integer(owner: str, name: str, value: Any, *, minimum: int | None = None,
            maximum: int | None = None, none: bool = False) -> Any:
    """``value`` as an ``int`` in ``minimum..maximum`` (either bound may be left open);
    with ``none=True`` None is taken too (and returned)."""
    if minimum is not None and maximum is not None:
        wanted = f"an int in {minimum}..{maximum}"
    elif minimum is not None:
        wanted = f"an int >= {minimum}"
    elif maximum is not None:
        wanted = f"an int <= {maximum}"
    else:
        wanted = "an int"
    if none:
        if value is None:
            return None
        wanted += " or None"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise _refuse(owner, name, wanted, value)
    number = int(value)
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise _refuse(owner, name, wanted, value)
    return number


def real(owner: str, name: str, value: Any, *, above: float | None = None,
         at_least: float | None = None, below: float | None = None,
         at_most: float | None = None) -> float:
    """``value`` as a finite ``float`` within the bounds given: ``above``/``at_least``
    (``>`` / ``>=``) and ``below``/``at_most`` (``<`` / ``<=``), each optional."""
    low, low_open = (above, True) if above is not None else (at_least, False)
    high, high_open = (below, True) if below is not None else (at_most, False)
    if low is not None and high is not None:
        wanted = (f"a finite number in {'(' if low_open else '['}{low:g}, "
                  f"{high:g}{')' if high_open else ']'}")
    elif low is not None:
        wanted = f"a finite number {'>' if low_open else '>='} {low:g}"
    elif high is not None:
        wanted = f"a finite number {'<' if high_open else '<='} {high:g}"
    else:
        wanted = "a finite number"
    if isinstance(value, (bool, np.bool_)) \
            or not isinstance(value, (int, float, np.integer, np.floating)):
        raise _refuse(owner, name, wanted, value)
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float is not finite here either
        raise _refuse(owner, name, wanted, value) from None
    if not math.isfinite(number) \
            or (low is not None and (number <= low if low_open else number < low)) \
            or (high is not None and (number >= high if high_open else number > high)):
        raise _refuse(owner, name, wanted, value)
    return number


def flag(owner: str, name: str, value: Any) -> bool:
    """``value`` as a ``bool``: only ``True``/``False`` (numpy's too), not 0, 1 or a string."""
    if not isinstance(value, (bool, np.bool_)):
        raise _refuse(owner, name, "a bool (True or False)", value)
    return bool(value)
