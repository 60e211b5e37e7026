"""Fixtures for remote-storage tests: a fresh memory:// folder and a loopback HTTP server."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from tfrecord_engine.testing.http_server import RangeServer, serve_directory
from tfrecord_engine.testing.remote import memory_dir


@pytest.fixture
def mem() -> Iterator[str]:
    """A fresh ``memory://`` folder URL, removed after the test."""
    pytest.importorskip("fsspec")
    with memory_dir() as url:
        yield url


@pytest.fixture(scope="module")
def mem_shared() -> Iterator[str]:
    """A ``memory://`` folder shared by a module's tests (Hypothesis examples reuse it)."""
    pytest.importorskip("fsspec")
    with memory_dir() as url:
        yield url


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[pathlib.Path, RangeServer]]:
    """A local folder and the HTTP server that serves it (one per test module)."""
    pytest.importorskip("fsspec")
    pytest.importorskip("aiohttp")
    root = tmp_path_factory.mktemp("served")
    with serve_directory(root) as server:
        yield root, server
