"""One buffer, many regions: how the queues share a single block of memory.

Every queue structure keeps its words in named, 64-byte-aligned regions of one buffer, so
that a single ``multiprocessing.shared_memory`` block (or one numpy allocation) holds the
whole dual-layer queue, and a second process can attach by name and find every region at
the same offset.
"""

from __future__ import annotations

from multiprocessing import shared_memory

import numpy as np

from seer.platform import attach_shared_memory, create_shared_memory

__all__ = ["BufferLayout", "Region"]

_ALIGN = 64  # a cache line: regions written by different threads do not share one


class Region:
    """``words`` int64 words at byte ``offset`` of the buffer."""

    __slots__ = ("name", "offset", "words")

    def __init__(self, name: str, offset: int, words: int) -> None:
        self.name, self.offset, self.words = name, offset, words

    def __repr__(self) -> str:
        return f"Region({self.name!r}, offset={self.offset}, words={self.words})"


class BufferLayout:
    """Plan regions, then allocate the buffer once (in-process or shared)."""

    def __init__(self) -> None:
        self.regions: dict[str, Region] = {}
        self.nbytes = 0

    def add(self, name: str, words: int) -> Region:
        if name in self.regions:
            raise ValueError(f"region {name!r} already exists")
        if words < 1:
            raise ValueError(f"region {name!r} needs at least one word, got {words}")
        region = Region(name, self.nbytes, words)
        self.regions[name] = region
        self.nbytes += -(-8 * words // _ALIGN) * _ALIGN
        return region

    def allocate(self) -> np.ndarray:
        """A zero-filled, 64-byte-aligned in-process buffer (a uint8 numpy array)."""
        raw = np.zeros(self.nbytes + _ALIGN, np.uint8)
        start = -raw.ctypes.data % _ALIGN
        return raw[start: start + self.nbytes]

    def allocate_shared(self, name: str | None = None) -> shared_memory.SharedMemory:
        """A new zero-filled shared-memory block (``name=None``: a fresh name), or attach to
        the existing block ``name``. The caller closes (and unlinks) it."""
        if name is not None:
            # Untracked: an attaching process must not unlink the block when it exits.
            shm = attach_shared_memory(name)
            if shm.size < self.nbytes:
                size = shm.size
                shm.close()
                raise ValueError(f"shared memory block {name!r} has {size} bytes; this "
                                 f"layout needs {self.nbytes}")
            return shm
        shm = create_shared_memory(self.nbytes)
        np.ndarray((self.nbytes,), np.uint8, buffer=shm.buf)[:] = 0
        return shm
