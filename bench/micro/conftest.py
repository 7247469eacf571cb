"""The hot-path microbenchmarks (pytest-benchmark), kept out of the test run (pytest's
``testpaths`` is ``tests``); how to run them before and after a change: README.md,
"Before and after a change to the hot path"."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:  # a slow machine must not cut a benchmark short
        item.add_marker(pytest.mark.timeout(600))
