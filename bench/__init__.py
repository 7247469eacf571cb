"""Benchmarks (pyperf). Run a file with ``python -m bench.<name> --help``."""
