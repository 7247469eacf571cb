"""The model sizes of a report mode's studies (``smoke``: the smallest, correctness only)."""

from __future__ import annotations

__all__ = ["Sizes"]


class Sizes:
    """The sizes of ``mode`` (smoke, fast, full)."""

    def __init__(self, mode: str) -> None:
        small = mode == "smoke"
        self.mode = mode
        self.n_bench = 60 if small else 1600
        self.n_air = 60 if small else 800
        self.n_pcs = 64 if small else 1600
        self.air_cost = 100 if small else 200
        self.pcs_cost = 5 if small else 15
