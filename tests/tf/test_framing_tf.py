"""Framing differential tests: we write -> TensorFlow reads, TensorFlow writes -> we read.

Byte identity is asserted where the compat spec says it holds: always for uncompressed
files and for the decompressed GZIP/ZLIB stream; for compressed bytes on stock zlib.
Damage is compared too: wherever TensorFlow reports data loss we do, after the same
records; where we are stricter (a torn header at the end), the test says so.
"""

from __future__ import annotations

import re
import tempfile
import zlib
from pathlib import Path
from types import ModuleType

from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tests.test_golden import STOCK_ZLIB
from tfrecord_engine import kernels
from tfrecord_engine.records import framing
from tfrecord_engine.testing.records import compressions, record_lists, write_file


def _tf_read(tf: ModuleType, path: Path, compression: str) -> tuple[list[bytes], str | None]:
    out: list[bytes] = []
    try:
        for r in tf.data.TFRecordDataset(str(path), compression_type=compression):
            out.append(r.numpy())
    except tf.errors.DataLossError as exc:
        return out, str(exc)
    return out, None


def _ours(path: Path, compression: str) -> tuple[list[bytes], tfe.DataLossError | None]:
    out: list[bytes] = []
    try:
        for r in tfe.read_records(path, compression):
            out.append(r)
    except tfe.DataLossError as exc:
        return out, exc
    return out, None


@given(records=record_lists(), compression=compressions())
def test_we_write_tensorflow_reads(tf: ModuleType, records: list[bytes], compression: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        ours = Path(d) / "ours"
        theirs = Path(d) / "theirs"
        write_file(ours, records, compression)
        with tf.io.TFRecordWriter(str(theirs), compression) as w:
            for r in records:
                w.write(r)
        got, err = _tf_read(tf, ours, compression)
        assert err is None
        assert got == records
        a, b = ours.read_bytes(), theirs.read_bytes()
        if compression:
            wbits = 31 if compression == "GZIP" else 15
            assert zlib.decompress(a, wbits) == zlib.decompress(b, wbits)
            if STOCK_ZLIB:
                assert a == b
        else:
            assert a == b


@settings(max_examples=15, deadline=None)
@given(
    sizes=st.lists(
        st.one_of(st.sampled_from([0, 856, (1 << 16) - 1, 1 << 16, 150_000]), st.integers(0, 2000)),
        min_size=60,
        max_size=700,
    ),
    compression=compressions(),
    compiled=st.booleans(),
)
def test_per_record_writes_are_byte_identical_to_tensorflows(
    tf: ModuleType, sizes: list[int], compression: str, compiled: bool
) -> None:
    # write() holds records and frames them in bulk: enough records to cross several
    # drains (the first after 64), empty ones and ones on the direct path (>= 64 KiB).
    records = [bytes([i % 251]) * n for i, n in enumerate(sizes)]
    with tempfile.TemporaryDirectory() as d, kernels.switched(compiled):
        ours = Path(d) / "ours"
        theirs = Path(d) / "theirs"
        with tfe.TFRecordWriter(ours, compression) as w:
            for r in records:
                w.write(r)
        with tf.io.TFRecordWriter(str(theirs), compression) as t:
            for r in records:
                t.write(r)
        a, b = ours.read_bytes(), theirs.read_bytes()
    if compression:
        wbits = 31 if compression == "GZIP" else 15
        assert zlib.decompress(a, wbits) == zlib.decompress(b, wbits)
        if STOCK_ZLIB:
            assert a == b
    else:
        assert a == b


@given(records=record_lists(), compression=compressions())
def test_tensorflow_writes_we_read(tf: ModuleType, records: list[bytes], compression: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "theirs"
        with tf.io.TFRecordWriter(str(path), compression) as w:
            for r in records:
                w.write(r)
        assert list(tfe.read_records(path, compression)) == records


def test_tf_record_iterator_agrees(tf: ModuleType, tmp_path: Path) -> None:
    recs = [b"", b"a", b"b" * 1000]
    path = tmp_path / "x"
    write_file(path, recs)
    assert list(tf.compat.v1.io.tf_record_iterator(str(path))) == recs


_TF_OFFSET = re.compile(r"(?:corrupted|truncated) record at (\d+)")


@given(
    records=st.lists(st.binary(max_size=64), min_size=1, max_size=6),
    damage=st.sampled_from(["flip", "truncate"]),
    where=st.floats(0, 1, exclude_max=True),
    bit=st.integers(0, 7),
)
def test_damage_agrees_with_tensorflow(
    tf: ModuleType, records: list[bytes], damage: str, where: float, bit: int
) -> None:
    framed = framing.frame_many(records)
    pos = int(where * len(framed))
    if damage == "flip":
        raw = bytearray(framed)
        raw[pos] ^= 1 << bit
        data = bytes(raw)
    else:
        data = framed[:pos]
    starts = [0]
    for r in records:
        starts.append(starts[-1] + len(r) + 16)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "damaged"
        path.write_bytes(data)
        theirs, tf_err = _tf_read(tf, path, "")
        ours, our_err = _ours(path, "")
    # We never return a record TensorFlow would not, and never fewer before damage.
    assert ours == theirs
    if tf_err is not None:
        assert our_err is not None
        match = _TF_OFFSET.search(tf_err)
        assert match is not None, tf_err
        tf_offset = int(match.group(1))
        # TF names the record start, or the data start (+12) for a data-CRC mismatch.
        assert tf_offset in (our_err.offset, our_err.offset + 12)
        assert our_err.offset == starts[our_err.record_index]
    elif our_err is not None:
        # Deliberately stricter: TF ignores a torn header (1-11 stray bytes) at the end.
        assert isinstance(our_err, tfe.TruncatedRecordError)
        assert 0 < len(data) - our_err.offset < framing.HEADER_SIZE
        assert "truncated header" in str(our_err)


def test_write_after_close_raises_in_both(tf: ModuleType, tmp_path: Path) -> None:
    """What the writer's docstring says of TensorFlow: write/flush after close raise."""
    import pytest

    theirs = tf.io.TFRecordWriter(str(tmp_path / "tf.tfrecord"))
    theirs.close()
    with pytest.raises(tf.errors.FailedPreconditionError, match="Writer is closed"):
        theirs.write(b"late")
    ours = tfe.TFRecordWriter(tmp_path / "ours.tfrecord")
    ours.close()
    with pytest.raises(tfe.WriterClosedError):
        ours.write(b"late")
    with pytest.raises(tfe.WriterClosedError):
        ours.flush()
    # and no document of ours says TensorFlow accepts them silently any more
    root = Path(__file__).resolve().parents[2]
    texts = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    texts += sorted((root / "tfrecord_engine" / "writing").glob("*.py"))
    for text in texts:
        assert "silently accepts" not in text.read_text(), text
