"""The examples in the CLI modules' docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "tfrecord_engine.cli.app",
    "tfrecord_engine.cli.common",
    "tfrecord_engine.cli.files",
    "tfrecord_engine.cli.infer",
    "tfrecord_engine.cli.repair",
    "tfrecord_engine.cli.shards",
    "tfrecord_engine.cli.show",
    "tfrecord_engine.cli.sources",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
