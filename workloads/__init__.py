"""Workload models (Aircraft UAV swarm, PCS cellular network) built on seer.Model."""
