"""pytest integration: ``pytest --seer-replay=SCHEDULE`` makes every
:func:`seer.check.explore` in the run replay that schedule instead of exploring.

Registered through the ``pytest11`` entry point, so it is there wherever the package is
installed. Run the one failing test with it (``pytest path::test -k ...
--seer-replay='sc:0*3,1*10,0*4'``): the test fails again the same way, and a debugger or
prints see the same interleaving every time.
"""

from __future__ import annotations

import os

from seer.check.explorer import REPLAY_ENV


def pytest_addoption(parser) -> None:
    group = parser.getgroup("seer")
    group.addoption("--seer-replay", metavar="SCHEDULE", default="",
                    help="replay this seer.check schedule in every explore() of the run")


def pytest_configure(config) -> None:
    schedule = config.getoption("--seer-replay")
    if schedule:
        os.environ[REPLAY_ENV] = schedule
