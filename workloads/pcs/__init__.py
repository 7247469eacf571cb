"""PCS: a communication-heavy cellular network workload (see model.py)."""

from workloads.pcs.model import PCS

__all__ = ["PCS"]
