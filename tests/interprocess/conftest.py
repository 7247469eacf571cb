# The interprocess tests run on both atomics paths, like the queue tests: the `path`
# fixture (fast and public) is defined once, in tests/queues/conftest.py, and imported
# here so that pytest registers it for this directory too.
from tests.queues.conftest import path  # noqa: F401
