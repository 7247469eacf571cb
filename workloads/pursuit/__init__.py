"""Pursuit: PettingZoo's ``sisl/pursuit_v5`` as a SEER model (see model.py)."""

from workloads.pursuit.model import Pursuit

__all__ = ["Pursuit"]
