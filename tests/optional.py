"""Importing the optional frameworks the host tests need (torch, grain, jax).

A missing one skips its tests, except under ``TFE_REQUIRE_FRAMEWORKS=1`` (set by
``make test`` and therefore CI), where it is an error.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def require(name: str) -> ModuleType:
    """The module ``name``, or a skip (an error under ``TFE_REQUIRE_FRAMEWORKS=1``)."""
    if os.environ.get("TFE_REQUIRE_FRAMEWORKS") == "1":
        return importlib.import_module(name)
    module: ModuleType = pytest.importorskip(name)
    return module
