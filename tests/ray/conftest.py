"""Ray in local mode for the tests of ``tfrecord_engine.ray`` (two CPUs, no dashboard).

Skipped without Ray, except under ``TFE_REQUIRE_FRAMEWORKS=1`` (``make test``, CI).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from types import ModuleType

import pytest

from ..optional import require

HERE = os.path.dirname(__file__)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Ray warns about its own deprecated settings when a DataContext is created (2.60).
    for item in items:
        if str(item.fspath).startswith(HERE):
            item.add_marker(pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.*"))


@pytest.fixture(scope="module")
def ray_local() -> Iterator[ModuleType]:
    """Ray started once per test module, shut down at its end."""
    ray = require("ray")
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.execution_options.preserve_order = True  # file order: outputs compare as lists
    try:
        yield ray
    finally:
        ray.shutdown()
