"""Keeping BLAS's own threads out of the cores while a parallel runtime steps.

numpy's BLAS (OpenBLAS in the numpy wheels) keeps a pool of about one thread per core,
which spin for a while after a call. A parallel runtime's threads already take every core
they are given, so the two pools compete: on PCS (1600 cells, ~20 µs events, 2 cores)
seer(2) stepped about 4 % faster with ``OPENBLAS_NUM_THREADS=1`` than without, in
alternated runs (``docs/performance.md``). Handlers call BLAS on small matrices, which a
single thread does as fast.

So the parallel runtimes cap BLAS at ``blas_threads`` threads (default 1) while their
``reset`` or ``step`` runs, with threadpoolctl, and put back what was there when the call
returns: between steps (a training loop's own numpy, for instance) BLAS is as the user
left it. The cap is process-wide, as BLAS's setting is (see :func:`blas_cap` for several
runtimes stepping at once).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["blas_cap", "blas_threads_now"]

_lock = threading.Lock()
_controller: Any = None
_capped = False  # a cap is in force (set by the thread inside the outermost blas_cap)


def _get_controller() -> Any:
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()  # finds the loaded BLAS libraries once
    return _controller


@contextlib.contextmanager
def blas_cap(threads: int | None) -> Iterator[None]:
    """Hold BLAS at ``threads`` threads inside the block (``None``: leave it alone).

    Only the first of overlapping caps (several runtimes stepping at once, from several
    threads) sets and restores the limit; the others find it set and leave it. The cap
    therefore ends when that first block ends: OpenBLAS lets only the thread that set
    its limit change it again (threadpoolctl's "controlling thread"), so a restore from
    another thread would be ignored and leave BLAS capped for good."""
    global _capped
    if threads is None:
        yield
        return
    with _lock:
        mine = not _capped
        if mine:
            stack = contextlib.ExitStack()
            stack.enter_context(_get_controller().limit(limits=threads, user_api="blas"))
            _capped = True
    try:
        yield
    finally:
        if mine:
            with _lock:
                _capped = False
                stack.close()  # restores the limits and frees the controlling thread


def blas_threads_now() -> list[int]:
    """The thread count of every BLAS library loaded in this process (for tests and
    diagnostics; empty when numpy's BLAS cannot be found)."""
    return [lib["num_threads"] for lib in _get_controller().select(user_api="blas").info()]
