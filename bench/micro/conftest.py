"""The hot-path microbenchmarks (pytest-benchmark), kept out of the test run (pytest's
``testpaths`` is ``tests``). A contributor runs them before and after a change::

    .venv/bin/python -m pytest bench/micro --benchmark-only --benchmark-autosave
    # ... change the code ...
    .venv/bin/python -m pytest bench/micro --benchmark-only --benchmark-compare \\
        --benchmark-compare-fail=median:10%

``--benchmark-compare`` compares with the latest saved run (``.benchmarks/``, git-ignored);
``--benchmark-compare-fail`` turns a slowdown into a failure. Workload-level comparisons
stay in pyperf (``python -m bench.compare``, ``python -m bench.report``).
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:  # a slow machine must not cut a benchmark short
        item.add_marker(pytest.mark.timeout(600))
