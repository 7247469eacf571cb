"""Aircraft: a compute-heavy UAV swarm workload (see model.py)."""

from workloads.aircraft.model import Aircraft, load_tracks

__all__ = ["Aircraft", "load_tracks"]
