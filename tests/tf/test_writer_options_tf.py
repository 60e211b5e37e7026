"""TFRecordWriter options vs ``tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(...))``.

Byte identity is checked where it is promised: stock zlib (TensorFlow bundles zlib; a
zlib-ng Python would deflate differently) for every option combination; level 0 (stored
blocks, sized by each zlib call's buffers) needs the zlib library through ctypes
(``records.zlib_buffer``), and without it only the decompressed streams must be equal.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.records import zlib_buffer
from tfrecord_engine.testing.records import record_lists
from tfrecord_engine.testing.writer_options import writer_options

STOCK_ZLIB = zlib.ZLIB_RUNTIME_VERSION[:1] == "1" and "ng" not in zlib.ZLIB_RUNTIME_VERSION


def _write_both(
    tf: ModuleType,
    folder: Path,
    records: list[bytes],
    kwargs: dict[str, Any],
    *,
    flush_at: frozenset[int] = frozenset(),
    ours_options: Any = None,
) -> tuple[bytes, bytes]:
    theirs, ours = folder / "tf.tfrecord", folder / "ours.tfrecord"
    with tf.io.TFRecordWriter(str(theirs), tf.io.TFRecordOptions(**kwargs)) as w:
        for i, r in enumerate(records):
            w.write(r)
            if i in flush_at:
                w.flush()
    options = tfe.TFRecordOptions(**kwargs) if ours_options is None else ours_options
    with tfe.TFRecordWriter(ours, options) as ours_w:
        for i, r in enumerate(records):
            ours_w.write(r)
            if i in flush_at:
                ours_w.flush()
    return theirs.read_bytes(), ours.read_bytes()


def _same(a: bytes, b: bytes, kwargs: dict[str, Any]) -> None:
    gzip = kwargs["compression_type"] == "GZIP"
    wbits = 31 if gzip else 15
    assert zlib.decompressobj(wbits).decompress(a) == zlib.decompressobj(wbits).decompress(b)
    stored = kwargs.get("compression_level") == 0 and zlib_buffer.load() is None
    if STOCK_ZLIB and not stored:
        assert a == b


@settings(max_examples=int(os.environ.get("TFE_OPTIONS_EXAMPLES", "60")))
@given(
    records=record_lists(max_records=60, max_size=3000),
    kwargs=writer_options(),
    flush_at=st.frozensets(st.integers(0, 59), max_size=4),
)
def test_every_option_combination_writes_tensorflows_bytes(
    tf: ModuleType, records: list[bytes], kwargs: dict[str, Any], flush_at: frozenset[int]
) -> None:
    with tempfile.TemporaryDirectory() as d:
        a, b = _write_both(tf, Path(d), records, kwargs, flush_at=flush_at)
    _same(a, b, kwargs)


LEVELS = [-1, 0, 1, 5, 9]
STRATEGIES = [0, 1, 2, 3, 4]
FLUSH_MODES = [0, 1, 2, 3, 5]


def _corpus() -> list[bytes]:
    # Text-like and random records, some larger than the small buffers used below.
    import numpy as np

    rng = np.random.default_rng(21)
    letters = np.frombuffer(b"the quick brown fox  \n", np.uint8)
    out = []
    for i in range(240):
        n = int(rng.integers(0, 4000))
        out.append(rng.choice(letters, n).tobytes() if i % 4 else rng.bytes(n))
    return out


@pytest.mark.parametrize("kind", ["GZIP", "ZLIB"])
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_level_and_strategy(
    tf: ModuleType, tmp_path: Path, kind: str, level: int, strategy: int
) -> None:
    kwargs = {
        "compression_type": kind,
        "compression_level": level,
        "compression_strategy": strategy,
    }
    a, b = _write_both(tf, tmp_path, _corpus(), kwargs, flush_at=frozenset({7, 8, 100}))
    _same(a, b, kwargs)


@pytest.mark.parametrize("kind", ["GZIP", "ZLIB"])
@pytest.mark.parametrize("flush_mode", FLUSH_MODES)
@pytest.mark.parametrize(
    "buffers", [(None, None), (1, 6), (100, 7), (5000, 3000), (300, 65536)], ids=str
)
def test_each_flush_mode_and_buffer_sizes(
    tf: ModuleType,
    tmp_path: Path,
    kind: str,
    flush_mode: int,
    buffers: tuple[int | None, int | None],
) -> None:
    kwargs = {
        "compression_type": kind,
        "flush_mode": flush_mode,
        "input_buffer_size": buffers[0],
        "output_buffer_size": buffers[1],
    }
    a, b = _write_both(tf, tmp_path, _corpus(), kwargs, flush_at=frozenset({0, 50, 51}))
    _same(a, b, kwargs)


@pytest.mark.parametrize("kind", ["GZIP", "ZLIB"])
@pytest.mark.parametrize("bits", [9, 12, 15])
@pytest.mark.parametrize("mem_level", [1, 8, 9])
def test_each_window_and_mem_level(
    tf: ModuleType, tmp_path: Path, kind: str, bits: int, mem_level: int
) -> None:
    kwargs = {
        "compression_type": kind,
        "window_bits": bits + (16 if kind == "GZIP" else 0),
        "mem_level": mem_level,
    }
    a, b = _write_both(tf, tmp_path, _corpus(), kwargs)
    _same(a, b, kwargs)


def test_zlib_window_of_256_bytes_as_tensorflow_writes_it(tf: ModuleType, tmp_path: Path) -> None:
    """TensorFlow's own ``testCompressionOptions`` writes ZLIB with ``window_bits=8``:
    zlib deflates with a 512-byte window then, and so do we, byte for byte."""
    extras: list[dict[str, Any]] = [{}, {"compression_level": 0}, {"flush_mode": 2, "mem_level": 3}]
    for extra in extras:
        kwargs: dict[str, Any] = {"compression_type": "ZLIB", "window_bits": 8, **extra}
        a, b = _write_both(tf, tmp_path, _corpus(), kwargs)
        _same(a, b, kwargs)
        with tfe.TFRecordWriter(
            tmp_path / "w8.tfrecord", options=tfe.TFRecordOptions(**kwargs)
        ) as w:
            w.write_many(_corpus())
        assert list(tfe.read_records(tmp_path / "w8.tfrecord")) == _corpus()


def test_tensorflows_own_options_object_is_accepted(tf: ModuleType, tmp_path: Path) -> None:
    kwargs = {
        "compression_type": "ZLIB",
        "compression_level": 9,
        "flush_mode": 2,
        "input_buffer_size": 333,
        "mem_level": 7,
    }
    tf_options = tf.io.TFRecordOptions(**kwargs)
    a, b = _write_both(tf, tmp_path, _corpus(), kwargs, ours_options=tf_options)
    _same(a, b, kwargs)
    # ... positionally, as options=, and on the read side (only the type is used)
    path = tmp_path / "x.tfrecord"
    with tfe.TFRecordWriter(path, options=tf_options) as w:
        w.write(b"abc")
    assert list(tfe.read_records(path, tf_options)) == [b"abc"]
    assert list(tf.compat.v1.io.tf_record_iterator(str(path), tf_options)) == [b"abc"]
    enum = tf.compat.v1.io.TFRecordCompressionType
    with tfe.TFRecordWriter(tmp_path / "e.tfrecord", enum.GZIP) as w:
        w.write(b"e")
    assert list(
        tf.data.TFRecordDataset(str(tmp_path / "e.tfrecord"), "GZIP").as_numpy_iterator()
    ) == [b"e"]


def test_level_zero_makes_tensorflows_zlib_calls(tf: ModuleType, tmp_path: Path) -> None:
    # Level 0 sizes its stored blocks by the input and output space of each deflate
    # call: only TensorFlow's very calls (through ctypes) give its bytes.
    for kwargs in (
        {"compression_type": "GZIP", "compression_level": 0},
        {"compression_type": "ZLIB", "compression_level": 0, "flush_mode": 1},
        {
            "compression_type": "ZLIB",
            "compression_level": 0,
            "input_buffer_size": 999,
            "output_buffer_size": 777,
        },
    ):
        a, b = _write_both(tf, tmp_path, _corpus(), kwargs, flush_at=frozenset({3, 90}))
        assert zlib.decompress(a, 31 if kwargs["compression_type"] == "GZIP" else 15) == (
            zlib.decompress(b, 31 if kwargs["compression_type"] == "GZIP" else 15)
        )
        if STOCK_ZLIB and zlib_buffer.load() is not None:
            assert a == b
