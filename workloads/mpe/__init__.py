"""MPE spread: mpe2's ``simple_spread_v3`` as a SEER model (see model.py), and the same step
as whole-array numpy (whole_array.py)."""

from workloads.mpe.model import Spread

__all__ = ["Spread"]
