"""Beam tests run on the DirectRunner, in-process, over a few small files."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from ..optional import require


@pytest.fixture(scope="session")
def beam() -> ModuleType:
    return require("apache_beam")


@pytest.fixture
def beam_crc(beam: ModuleType) -> Iterator[None]:
    """Gives Beam's own TFRecord code a CRC32C function.

    ``beam.io.ReadFromTFRecord``/``WriteToTFRecord`` need python-snappy, google-crc32c or
    crcmod, none of which this package depends on; the ``crc32c`` package computes the
    same checksum.
    """
    import crc32c
    from apache_beam.io import tfrecordio

    before = tfrecordio._default_crc32c_fn.fn
    tfrecordio._default_crc32c_fn.fn = crc32c.crc32c
    yield
    tfrecordio._default_crc32c_fn.fn = before
