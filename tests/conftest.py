"""Shared pytest configuration: Hypothesis profiles and the --run-slow flag."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# dev: fast local iteration; ci: derandomized (reproducible in CI logs), more examples.
settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False, help="run the long variants")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip_slow = pytest.mark.skip(reason="long variant: pass --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture(autouse=True)
def _index_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets an empty index cache of its own (never the user's ~/.cache)."""
    monkeypatch.setenv("TFE_INDEX_CACHE", str(tmp_path_factory.mktemp("index-cache")))


def pytest_sessionstart(session: pytest.Session) -> None:
    """The suite exercises the compiled kernels from its first test: wait for their
    background load (a no-op under TFE_KERNELS=0 or without numba)."""
    from tfrecord_engine import kernels

    kernels.wait()
