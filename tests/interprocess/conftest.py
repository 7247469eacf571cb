import pytest

from seer.queues import fast_path_available

PATHS = ["fast", "public"]


@pytest.fixture(params=PATHS)
def path(request):
    if request.param == "fast":
        assert fast_path_available(), "the atomics fast path must work on supported builds"
    return request.param
