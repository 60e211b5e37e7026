"""Differential tests against TensorFlow.

They are skipped when TensorFlow is not installed, except when ``TFE_REQUIRE_TF=1``
(set by ``make test`` and therefore CI), where a missing TensorFlow is an error.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import cast

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _import_tf() -> ModuleType:
    if os.environ.get("TFE_REQUIRE_TF") == "1":
        import tensorflow

        return cast(ModuleType, tensorflow)
    return cast(ModuleType, pytest.importorskip("tensorflow"))


@pytest.fixture(scope="session")
def tf() -> ModuleType:
    """The TensorFlow module (imported once per session)."""
    return _import_tf()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.tf)
