"""A handler-cost knob: :class:`BusyWork` does a calibrated number of µs of numpy work.

Models call it inside their handlers to give every event a chosen cost (the test kit's
:class:`~seer.testing.RandomModel`, the synthetic benchmark workloads). The work never
touches model state, so it changes timing only, never results.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np

from seer.errors import ModelError

__all__ = ["BusyWork", "busy_ns_per_element"]

_calibration_lock = threading.Lock()
_ns_per_element: float | None = None
_local = threading.local()
_SOURCE = np.linspace(0.0, 1.0, 1 << 20)


def busy_ns_per_element() -> float:
    """Measured cost of one element of the busy kernel (``np.sin``), in ns; measured once
    per process (median of several runs on 64 Ki elements)."""
    global _ns_per_element
    with _calibration_lock:
        if _ns_per_element is None:
            n = 1 << 16
            out = np.empty(n)
            np.sin(_SOURCE[:n], out=out)  # warm-up
            samples = []
            for _ in range(9):
                t = time.perf_counter_ns()
                np.sin(_SOURCE[:n], out=out)
                samples.append((time.perf_counter_ns() - t) / n)
            _ns_per_element = max(sorted(samples)[len(samples) // 2], 1e-3)
        return _ns_per_element


class BusyWork:
    """Calling the instance does about ``us`` microseconds of numpy work (``np.sin`` over a
    calibrated number of elements into a per-thread buffer). ``us == 0`` does nothing.

    The work does not touch model state, so it changes timing only, never results.
    """

    __slots__ = ("elements", "us")

    def __init__(self, us: float) -> None:
        if not (isinstance(us, (int, float)) and math.isfinite(us) and us >= 0):
            raise ModelError(f"busy-work cost must be a finite number of µs >= 0, got {us!r}")
        self.us = float(us)
        self.elements = 0 if us == 0 else max(
            1, min(len(_SOURCE), round(us * 1000.0 / busy_ns_per_element())))

    def __call__(self) -> None:
        n = self.elements
        if n:
            buf = getattr(_local, "buf", None)
            if buf is None:
                buf = _local.buf = np.empty(len(_SOURCE))
            np.sin(_SOURCE[:n], out=buf[:n])
