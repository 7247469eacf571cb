"""Per-thread metrics of a running runtime, sampled once per preflight step.

Each worker thread of a runtime's pool (the caller is thread 0) is observed through three
sources:

* the runtime's own counters (:class:`~seer.sched.pool.WorkerStats`): events, entities
  claimed, steals, CAS retries, busy/idle wall time, thread CPU time;
* the kernel's per-thread accounting, ``/proc/self/task/<tid>/stat`` and ``status``: user
  and system time, voluntary and involuntary context switches, minor page faults; and the
  process's resident set size;
* ``perf_event_open`` counters opened per thread through ctypes, where the kernel allows
  (``/proc/sys/kernel/perf_event_paranoid`` and a PMU the machine exposes): cycles,
  instructions, cache references and misses (hardware), CPU migrations (software).

The metric layout is fixed (:data:`METRICS`); a metric this machine cannot provide is
*missing*: its values are 0 and :attr:`MetricSampler.mask` is False for it. Nothing is
invented. Samples are deltas since the previous sample, one row per thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import struct
import threading
from collections.abc import Sequence

import numpy as np

__all__ = ["METRICS", "MetricSampler", "aggregate"]

#: The metrics, in feature order.
METRICS: tuple[str, ...] = (
    # runtime counters (WorkerStats)
    "events", "entities", "steals", "cas_retries", "busy_s", "idle_s", "cpu_s",
    # kernel accounting per thread
    "utime_s", "stime_s", "voluntary_switches", "involuntary_switches", "minor_faults",
    # process: growth of the resident set during the step (absolute RSS depends on what
    # else the process has loaded, which says nothing about the model)
    "rss_growth_mb",
    # perf_event_open
    "cycles", "instructions", "cache_references", "cache_misses", "cpu_migrations",
)
_STATS = METRICS[:7]
_PROC = METRICS[7:12]
_PERF = {  # name -> (type, config): PERF_TYPE_HARDWARE = 0, PERF_TYPE_SOFTWARE = 1
    "cycles": (0, 0), "instructions": (0, 1), "cache_references": (0, 2),
    "cache_misses": (0, 3), "cpu_migrations": (1, 4),
}
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE_MB = (os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096) / 2**20
_SYSCALL_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241, "arm64": 241}.get(platform.machine())


class _PerfAttr(ctypes.Structure):
    # struct perf_event_attr up to config2 (PERF_ATTR_SIZE_VER1 = 72 bytes), zero-padded.
    _fields_ = (("type", ctypes.c_uint32), ("size", ctypes.c_uint32),
                ("config", ctypes.c_uint64), ("sample_period", ctypes.c_uint64),
                ("sample_type", ctypes.c_uint64), ("read_format", ctypes.c_uint64),
                ("flags", ctypes.c_uint64), ("wakeup_events", ctypes.c_uint32),
                ("bp_type", ctypes.c_uint32), ("config1", ctypes.c_uint64),
                ("config2", ctypes.c_uint64), ("reserved", ctypes.c_uint8 * 56))


def _perf_open(tid: int, kind: tuple[int, int]) -> int:
    """A counting perf event for thread ``tid`` (user space only), or -1."""
    if _SYSCALL_PERF_EVENT_OPEN is None:
        return -1
    attr = _PerfAttr()
    attr.type, attr.config = kind
    attr.size = 72
    # Hardware counters: user space only (exclude_kernel, exclude_hv), which
    # perf_event_paranoid 2 allows. Software events such as CPU migrations happen in the
    # kernel: excluding it would leave them at 0 for good.
    attr.flags = (1 << 5) | (1 << 6) if kind[0] == 0 else 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.syscall(_SYSCALL_PERF_EVENT_OPEN, ctypes.byref(attr), tid, -1, -1, 0)
    except (OSError, AttributeError):
        return -1
    return int(fd) if fd >= 0 else -1


def _read_proc(tid: int) -> list[float] | None:
    """``[utime_s, stime_s, voluntary, involuntary, minor_faults]`` of thread ``tid``."""
    try:
        with open(f"/proc/self/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        switches = [0.0, 0.0]
        with open(f"/proc/self/task/{tid}/status") as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches"):
                    switches[0] = float(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches"):
                    switches[1] = float(line.split()[1])
    except OSError:
        return None
    return [int(fields[11]) / _TICK, int(fields[12]) / _TICK, *switches, float(fields[7])]


def _rss_mb() -> float | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE_MB
    except OSError:
        return None


class MetricSampler:
    """Samples :data:`METRICS` for the threads of one runtime (see the module docstring).

    ``thread_ids`` are the native ids of the runtime's threads, caller first; ``stats`` the
    matching :class:`~seer.sched.pool.WorkerStats` (or None where a runtime has none).
    Call :meth:`sample` after each step: it returns a ``(threads, len(METRICS))`` array of
    deltas. :meth:`close` releases the perf file descriptors."""

    def __init__(self, thread_ids: Sequence[int], stats: Sequence[object] | None) -> None:
        self.thread_ids = list(thread_ids)
        self.stats = list(stats) if stats is not None else None
        n = len(METRICS)
        self.mask = np.zeros(n, bool)
        if self.stats is not None:
            self.mask[[METRICS.index(m) for m in _STATS]] = True
        if all(_read_proc(t) is not None for t in self.thread_ids):
            self.mask[[METRICS.index(m) for m in _PROC]] = True
        if _rss_mb() is not None:
            self.mask[METRICS.index("rss_growth_mb")] = True
        self._fds: dict[str, list[int]] = {}
        for name, kind in _PERF.items():
            fds = [_perf_open(t, kind) for t in self.thread_ids]
            if all(fd >= 0 for fd in fds):
                self._fds[name] = fds
                self.mask[METRICS.index(name)] = True
            else:
                for fd in fds:
                    if fd >= 0:
                        os.close(fd)
        self._last = self._read()

    def _read(self) -> np.ndarray:
        rows = np.zeros((len(self.thread_ids), len(METRICS)))
        rss = _rss_mb()
        for i, tid in enumerate(self.thread_ids):
            row = rows[i]
            if self.stats is not None:
                s = self.stats[i]
                row[:7] = [getattr(s, m) for m in _STATS]
            proc = _read_proc(tid) if self.mask[7] else None
            if proc is not None:
                row[7:12] = proc
            if rss is not None:
                row[12] = rss
            for name, fds in self._fds.items():
                with contextlib.suppress(OSError):  # a counter that stopped: keep its 0
                    row[METRICS.index(name)] = struct.unpack("Q", os.read(fds[i], 8))[0]
        return rows

    def sample(self) -> np.ndarray:
        """Deltas of every metric per thread since the last call."""
        now = self._read()
        delta = now - self._last
        self._last = now
        return delta * self.mask

    def close(self) -> None:
        for fds in self._fds.values():
            for fd in fds:
                os.close(fd)
        self._fds.clear()


def aggregate(samples: Sequence[np.ndarray]) -> np.ndarray:
    """Per-step samples ``(threads, N)`` -> ``F`` of shape ``(N, steps, 3)``: the mean,
    variance and range across threads of each metric at each step. Aggregating across
    threads makes ``F``'s shape independent of the thread count."""
    stacked = np.stack(samples)  # (steps, threads, N)
    mean = stacked.mean(axis=1)
    var = stacked.var(axis=1)
    rng = stacked.max(axis=1) - stacked.min(axis=1)
    return np.stack([mean, var, rng], axis=-1).transpose(1, 0, 2)


def caller_thread_id() -> int:
    """The native id of the calling thread (thread 0 of a runtime it steps)."""
    return threading.get_native_id()
