"""Worked examples built on SEER's public pieces (not part of the installed package).

Run one from the repository root, e.g. ``python -m examples.locality_steal``; the tutorial
that goes with it is ``docs/tutorial-scheduler.md``.
"""
