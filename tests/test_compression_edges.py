"""Edges of the compression helpers the reliability paths lean on."""

from __future__ import annotations

import io

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.records.compression import Compression, Decompressor, make_compressor


def test_no_compressor_or_decompressor_for_none() -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="GZIP or ZLIB"):
        make_compressor(Compression.NONE)
    with pytest.raises(tfe.InvalidArgumentError, match="GZIP or ZLIB"):
        Decompressor(io.BytesIO(b""), Compression.NONE)


def test_decompressor_keeps_returning_empty_at_the_end() -> None:
    co = make_compressor(Compression.ZLIB)
    d = Decompressor(io.BytesIO(co.compress(b"abc") + co.flush()), Compression.ZLIB)
    assert d.read(10) == b"abc"
    assert d.read(10) == b""
    assert d.read(10) == b""
    assert d.complete
