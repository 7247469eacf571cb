"""What each report mode measures: model sizes, thread counts, rounds. Benchmark names are
``bench.harness.config_name(...)``, ``-`` and the runtime label (``seer(2)``)."""

from __future__ import annotations

import seer
from bench.harness import config_name

__all__ = ["Sizes"]


class Sizes:
    """What a mode measures. ``smoke`` is the smallest configuration (correctness only)."""

    def __init__(self, mode: str) -> None:
        cores = seer.cpu_count()
        small = mode == "smoke"
        self.mode = mode
        self.rounds = {"smoke": 1, "fast": 2, "full": 6}[mode]
        self.per_round = {"smoke": ["--debug-single-value"],
                          "fast": ["--processes", "1", "--values", "1", "--warmups", "1"],
                          "full": ["--processes", "1", "--values", "2", "--warmups", "1"]}[mode]
        self.loops = [] if small else ["--loops", "4"]
        self.n_bench = 60 if small else 1600
        self.n_air = 60 if small else 800
        self.n_pcs = 64 if small else 1600
        self.air_cost = 100 if small else 200
        self.pcs_cost = 5 if small else 15
        self.costs = [0, 5] if small else [0, 10, 50, 200]
        self.gains = [0, 8] if small else [0, 2, 4, 8]
        self.scan = {"smoke": [1, 2], "fast": [1, 2, 3, 4, 8],
                     "full": [1, 2, 3, 4, 6, 8] + [t for t in (12, 16) if t <= 2 * cores]}[mode]
        self.balance_steps = 2 if small else (10 if mode == "fast" else 20)

    @property
    def air(self) -> str:
        """Configuration name of the headline Aircraft run, e.g. ``aircraft-n800-cost200us``."""
        return config_name("aircraft", self.n_air, self.air_cost, 2.0)

    @property
    def pcs(self) -> str:
        """Configuration name of the headline PCS run, e.g. ``pcs-n1600-cost15us-gain2``."""
        return config_name("pcs", self.n_pcs, self.pcs_cost, 2.0)
