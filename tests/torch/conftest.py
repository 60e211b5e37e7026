"""Tests with the real PyTorch (the ``torch`` extra).

They are skipped when PyTorch is not installed, except when ``TFE_REQUIRE_TORCH=1`` (set
by ``make test`` and therefore CI), where a missing PyTorch is an error.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def import_torch() -> ModuleType:
    """The torch module, or a skip (an error under ``TFE_REQUIRE_TORCH=1``)."""
    if os.environ.get("TFE_REQUIRE_TORCH") == "1":
        return importlib.import_module("torch")
    module: ModuleType = pytest.importorskip("torch")
    return module
