"""TFRecordWriter options with TensorFlow's names (``TFRecordOptions``), without TensorFlow.

Byte identity with TensorFlow's writer is in ``tests/tf/test_writer_options_tf.py``; here:
the spellings, the validation, TensorFlow's object by duck typing, and that every flush
mode writes a stream that reads back, whatever chunks the writer hands it.
"""

from __future__ import annotations

import itertools
import zlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.records import framing
from tfrecord_engine.records.options import TFZlibStream, ZlibSettings, make_writer_compressor
from tfrecord_engine.testing.records import record_lists
from tfrecord_engine.testing.writer_options import writer_options

STOCK_ZLIB = zlib.ZLIB_RUNTIME_VERSION[:1] == "1" and "ng" not in zlib.ZLIB_RUNTIME_VERSION


def _tf_like(**fields: Any) -> SimpleNamespace:
    # What tf.io.TFRecordOptions looks like from outside: nine attributes, None = default.
    names = [
        "compression_type",
        "flush_mode",
        "input_buffer_size",
        "output_buffer_size",
        "window_bits",
        "compression_level",
        "compression_method",
        "mem_level",
        "compression_strategy",
    ]
    return SimpleNamespace(**{n: fields.get(n) for n in names})


def test_defaults_are_tensorflows() -> None:
    s = tfe.TFRecordOptions("GZIP").zlib_settings()
    assert (s.compression_level, s.compression_method, s.mem_level) == (-1, 8, 9)
    assert (s.compression_strategy, s.flush_mode) == (0, 0)
    assert (s.input_buffer_size, s.output_buffer_size) == (256 << 10, 256 << 10)
    assert s.wbits(tfe.Compression.GZIP) == 31
    assert s.wbits(tfe.Compression.ZLIB) == 15


@pytest.mark.skipif(not STOCK_ZLIB, reason="byte identity needs stock zlib")
def test_options_reach_deflate(tmp_path: Path) -> None:
    # TensorFlow's documented equivalent: compressobj(level, DEFLATED, wbits, mem, strategy).
    records = [b"abc" * 50, b"", b"xyz" * 1000]
    stream = b"".join(framing.frame(r) for r in records)
    path = tmp_path / "a.tfrecord"
    opts = tfe.TFRecordOptions(
        compression_type="ZLIB",
        compression_level=9,
        mem_level=3,
        window_bits=11,
        compression_strategy=1,
    )
    with tfe.TFRecordWriter(path, opts) as w:
        w.write_many(records)
    co = zlib.compressobj(9, zlib.DEFLATED, 11, 3, 1)
    assert path.read_bytes() == co.compress(stream) + co.flush()


@pytest.mark.parametrize(
    "spelling",
    [
        lambda o: {"compression": o},
        lambda o: {"options": o},
        lambda o: {"compression": _tf_like(**vars_of(o))},
        lambda o: {"options": _tf_like(**vars_of(o))},
    ],
)
def test_options_spellings_write_the_same_bytes(tmp_path: Path, spelling: Any) -> None:
    opts = tfe.TFRecordOptions("GZIP", compression_level=1, flush_mode=2, input_buffer_size=40)
    ref, got = tmp_path / "ref", tmp_path / "got"
    with tfe.TFRecordWriter(ref, opts) as w:
        w.write_many([b"a" * 30, b"b" * 50])
    with tfe.TFRecordWriter(got, **spelling(opts)) as w:
        w.write_many([b"a" * 30, b"b" * 50])
        assert w.compression is tfe.Compression.GZIP
        assert w.zlib_settings.flush_mode == 2
    assert got.read_bytes() == ref.read_bytes()
    assert ref.read_bytes() != _plain_gzip(tmp_path)  # the options did something


def vars_of(opts: tfe.TFRecordOptions) -> dict[str, Any]:
    return {n: getattr(opts, n) for n in opts.__dataclass_fields__}


def _plain_gzip(tmp_path: Path) -> bytes:
    with tfe.TFRecordWriter(tmp_path / "plain", "GZIP") as w:
        w.write_many([b"a" * 30, b"b" * 50])
    return (tmp_path / "plain").read_bytes()


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (0, tfe.Compression.NONE),
        (1, tfe.Compression.ZLIB),
        (2, tfe.Compression.GZIP),
        (tfe.TFRecordCompressionType.GZIP, tfe.Compression.GZIP),
        ("", tfe.Compression.NONE),
        (None, tfe.Compression.NONE),
    ],
)
def test_compression_type_values(tmp_path: Path, value: Any, kind: tfe.Compression) -> None:
    with tfe.TFRecordWriter(tmp_path / "a", compression_type=value) as w:
        assert w.compression is kind
    with tfe.TFRecordWriter(tmp_path / "b", value) as w:
        assert w.compression is kind
    assert tfe.TFRecordOptions(value).compression is kind
    assert tfe.TFRecordOptions.get_compression_type_string(value) == kind.value


@pytest.mark.parametrize(
    "kwargs",
    [
        {"compression": "GZIP", "compression_type": "ZLIB"},
        {"compression": 1, "options": tfe.TFRecordOptions("GZIP")},
        {"options": tfe.TFRecordOptions("GZIP"), "compression_type": _tf_like()},
    ],
)
def test_conflicting_spellings_are_refused(tmp_path: Path, kwargs: dict[str, Any]) -> None:
    with pytest.raises(tfe.InvalidArgumentError):
        tfe.TFRecordWriter(tmp_path / "a", **kwargs)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"compression_level": 10}, "compression_level"),
        ({"compression_level": -2}, "compression_level"),
        ({"mem_level": 0}, "mem_level"),
        ({"mem_level": 10}, "mem_level"),
        ({"compression_strategy": 5}, "compression_strategy"),
        ({"compression_method": 9}, "compression_method"),
        ({"window_bits": 7}, "window_bits"),
        ({"window_bits": 20}, "window_bits"),
        ({"window_bits": 24}, "no 256-byte window with a gzip header"),
        ({"window_bits": 15}, "does not write GZIP"),
        ({"flush_mode": 4}, "drops every later record"),
        ({"flush_mode": 6}, "flush_mode"),
        ({"input_buffer_size": 0}, "input_buffer_size"),
        ({"output_buffer_size": 1}, "output_buffer_size"),
        ({"flush_mode": 2, "output_buffer_size": 5}, "markers forever"),
        ({"compression_level": True}, "compression_level"),
        ({"compression_type": "BOGUS"}, "not a valid compression type"),
        ({"compression_type": 3}, "not a valid compression type"),
        ({"compression_type": True}, "not a valid compression type"),
    ],
)
def test_invalid_values_are_refused(tmp_path: Path, fields: dict[str, Any], match: str) -> None:
    kwargs = {"compression_type": "GZIP", **fields}
    with pytest.raises(ValueError, match=match):
        tfe.TFRecordOptions(**kwargs)
    with pytest.raises(tfe.InvalidArgumentError, match=match):
        tfe.TFRecordWriter(tmp_path / "a", _tf_like(**kwargs))
    assert not list(tmp_path.iterdir())


def test_zlib_window_refused_with_zlib_type_too() -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="does not write ZLIB"):
        tfe.TFRecordOptions("ZLIB", window_bits=31)


def test_options_of_an_uncompressed_file_are_checked_and_unused(tmp_path: Path) -> None:
    path = tmp_path / "a"
    with tfe.TFRecordWriter(path, tfe.TFRecordOptions(compression_level=9, flush_mode=2)) as w:
        w.write(b"x")
    assert path.read_bytes() == framing.frame(b"x")


def test_readers_take_compression_type_and_options(tmp_path: Path) -> None:
    path = tmp_path / "a.data"  # no extension hint
    with tfe.TFRecordWriter(path, compression_type="ZLIB") as w:
        w.write_many([b"a", b"b"])
    assert list(tfe.read_records(path, compression_type="ZLIB")) == [b"a", b"b"]
    assert list(tfe.read_records(path, tfe.TFRecordOptions("ZLIB"))) == [b"a", b"b"]
    assert list(tfe.read_records(path, _tf_like(compression_type="ZLIB"))) == [b"a", b"b"]
    assert list(tfe.read_records(path, 1)) == [b"a", b"b"]
    ds = tfe.RecordDataset(str(path), compression_type="ZLIB", save_index=False)
    assert ds.compression is tfe.Compression.ZLIB
    assert ds[1] == b"b"
    with pytest.raises(tfe.InvalidArgumentError, match="conflicting"):
        list(tfe.read_records(path, "GZIP", compression_type="ZLIB"))


@given(
    records=record_lists(max_records=30, max_size=2000),
    kwargs=writer_options(),
    cuts=st.lists(st.integers(0, 1 << 20), max_size=6),
    flush_at=st.frozensets(st.integers(0, 29), max_size=3),
)
def test_every_flush_mode_reads_back_and_ignores_how_bytes_are_chunked(
    records: list[bytes], kwargs: dict[str, Any], cuts: list[int], flush_at: frozenset[int]
) -> None:
    opts = tfe.TFRecordOptions(**kwargs)
    kind, settings = opts.compression, opts.zlib_settings()
    stream = [framing.frame(r) for r in records]
    whole = make_writer_compressor(kind, settings)
    pieces = make_writer_compressor(kind, settings)
    a: list[bytes] = []
    b: list[bytes] = []
    for i, frame in enumerate(stream):
        a.append(whole.compress(frame))
        edges = sorted({0, len(frame), *(c % (len(frame) + 1) for c in cuts)})
        b.extend(pieces.compress(frame[x:y]) for x, y in itertools.pairwise(edges))
        if i in flush_at:
            a.append(whole.flush(zlib.Z_PARTIAL_FLUSH))
            b.append(pieces.flush(zlib.Z_PARTIAL_FLUSH))
    a.append(whole.flush(zlib.Z_FINISH))
    b.append(pieces.flush(zlib.Z_FINISH))
    assert b"".join(a) == b"".join(b)
    wbits = settings.wbits(kind)
    assert zlib.decompress(b"".join(a), wbits) == b"".join(stream)


def test_a_flush_mode_flushes_where_tensorflows_input_buffer_fills() -> None:
    settings = ZlibSettings(flush_mode=zlib.Z_SYNC_FLUSH, input_buffer_size=100)
    co = make_writer_compressor(tfe.Compression.ZLIB, settings)
    assert isinstance(co, TFZlibStream)
    # 12 + 50 + 4 = 66 bytes fit; the next header (12) still fits (78), its 50 data
    # bytes do not: the buffer is deflated with a sync flush (an empty stored block).
    out = co.compress(framing.frame(b"a" * 50)) + co.compress(framing.frame(b"b" * 50))
    assert out.endswith(b"\x00\x00\xff\xff")
    assert out.count(b"\x00\x00\xff\xff") == 1


def test_a_dataset_ported_from_tfrecorddataset_says_where_compression_goes(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    with tfe.TFRecordWriter(path, "GZIP") as w:
        w.write(b"x")
    with pytest.raises(tfe.InvalidArgumentError, match="compression_type="):
        tfe.RecordDataset(str(path), "GZIP", save_index=False)  # type: ignore[arg-type]


@pytest.mark.parametrize("flush_mode", [0, 2, 5])
def test_options_with_index_and_append(tmp_path: Path, flush_mode: int) -> None:
    opts = tfe.TFRecordOptions("GZIP", flush_mode=flush_mode, input_buffer_size=100)
    path = tmp_path / "a.tfrecord.gz"
    records = [bytes([i]) * (i * 7) for i in range(60)]
    with tfe.TFRecordWriter(path, opts, index=True, index_flush_every=7) as w:
        w.write_many(records[:30])
        w.flush()
        for r in records[30:50]:
            w.write(r)
    with tfe.TFRecordWriter(path, opts, append=True) as w:
        w.write_many(records[50:])
    assert list(tfe.read_records(path)) == records
    ds = tfe.RecordDataset(str(path), save_index=False)
    assert [ds[i] for i in (59, 3, 31)] == [records[59], records[3], records[31]]
