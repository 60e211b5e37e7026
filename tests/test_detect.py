"""``compression="auto"``: the bytes decide (a valid header, then GZIP, then zlib), the
extension only breaks ties, an explicit value wins and a mismatch says what the bytes are."""

from __future__ import annotations

import gzip
import io
import os
import pathlib
import shutil
import threading
import zlib
from collections.abc import Iterator
from typing import BinaryIO

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.records import framing
from tfrecord_engine.records.detect import (
    describe,
    detect,
    detect_file,
    extension_hint,
    peek_stream,
    requested,
    sniff,
)
from tfrecord_engine.testing.records import record_lists

KINDS = {"": tfe.Compression.NONE, "GZIP": tfe.Compression.GZIP, "ZLIB": tfe.Compression.ZLIB}
EXTENSIONS = ["", ".tfrecord", ".gz", ".gzip", ".zz", ".zlib", ".deflate", ".tfrecord.GZ"]
CONTENTS = {
    "records": [b"alpha", b"", b"x" * 3000, bytes(range(256))],
    "no records": [],
    "one empty record": [b""],
}
GOLDEN = pathlib.Path(__file__).parent / "golden"


def _write(path: pathlib.Path, records: list[bytes], kind: str) -> pathlib.Path:
    with tfe.TFRecordWriter(path, kind) as w:
        w.write_many(records)
    return path


class _OneWay:
    """A non-seekable stream with ``read`` only (no ``read1``, ``seek`` or ``tell``)."""

    def __init__(self, data: bytes, chunk: int = 5) -> None:
        self._data = data
        self._pos = 0
        self._chunk = chunk  # short reads, as a pipe gives them

    def read(self, n: int = -1) -> bytes:
        n = self._chunk if n < 0 else min(n, self._chunk)
        out = self._data[self._pos : self._pos + n]
        self._pos += len(out)
        return out


@pytest.mark.parametrize("content", list(CONTENTS))
@pytest.mark.parametrize("ext", EXTENSIONS)
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_compression_extension_and_content(
    tmp_path: pathlib.Path, kind: str, ext: str, content: str
) -> None:
    records = CONTENTS[content]
    path = _write(tmp_path / f"data{ext}", records, kind)
    blob = path.read_bytes()
    # The bytes decide; an empty file (uncompressed, no records) has none, and the
    # extension's hint then decides, which reads it as the nothing it is.
    want = KINDS[kind] if blob else (extension_hint(str(path)) or tfe.Compression.NONE)
    assert detect_file(str(path)) is want
    assert list(tfe.read_records(path)) == records
    assert list(tfe.read_records(str(path), "auto")) == records
    assert list(tfe.read_records(io.BytesIO(blob))) == records
    assert list(tfe.read_records(_OneWay(blob))) == records  # type: ignore[arg-type]
    idx = tfe.Index.build(path)
    assert (len(idx), idx.compression) == (len(records), want)
    ds = tfe.RecordDataset(path)
    assert ds[:] == records
    assert ds.indexes[0].compression is want
    # The explicit right value reads it too.
    assert list(tfe.read_records(path, kind or None)) == records


@pytest.mark.parametrize("given_kind", list(KINDS))
@pytest.mark.parametrize("kind", list(KINDS))
def test_explicit_value_wins_and_a_mismatch_says_what_the_bytes_are(
    tmp_path: pathlib.Path, kind: str, given_kind: str
) -> None:
    if kind == given_kind:
        return
    path = _write(tmp_path / "data.tfrecord", [b"r" * 40, b"s" * 7], kind)
    expected = {
        "": "a valid uncompressed TFRecord header; pass compression=None or 'auto'",
        "GZIP": "the GZIP magic (1f 8b); pass compression='GZIP' or 'auto'",
        "ZLIB": "a zlib header (78 9c); pass compression='ZLIB' or 'auto'",
    }[kind]
    with pytest.raises(tfe.DataLossError, match=r"record 0 at offset 0") as got:
        list(tfe.read_records(path, given_kind or None))
    assert expected in str(got.value)
    assert got.value.record_index == 0
    with pytest.raises(tfe.DataLossError) as pipe_got:  # a stream: peeked for the note
        list(tfe.read_records(_OneWay(path.read_bytes()), given_kind or None))  # type: ignore[arg-type]
    assert expected in str(pipe_got.value)
    with pytest.raises(tfe.DataLossError) as built:
        tfe.Index.build(path, given_kind or None)
    assert expected in str(built.value)
    reports: list[tfe.DamageReport] = []
    list(
        tfe.read_records(
            path, given_kind or None, on_damage="skip", on_damage_report=reports.append
        )
    )
    assert expected in reports[0].reason


def test_valid_header_wins_over_a_gzip_magic_in_the_length(tmp_path: pathlib.Path) -> None:
    # Length 0x8b1f: the file's first bytes are 1f 8b 00; length 0x088b1f: 1f 8b 08, the
    # GZIP magic with its method byte. Even named .gz, the valid header wins.
    for length in (0x8B1F, 0x088B1F):
        record = bytes([7]) * length
        path = _write(tmp_path / f"plain-{length}.tfrecord.gz", [record, b"tail"], "")
        head = path.read_bytes()[:12]
        assert head[:2] == b"\x1f\x8b"
        assert sniff(head) == (tfe.Compression.NONE, True)
        assert list(tfe.read_records(path)) == [record, b"tail"]
        assert tfe.Index.build(path).compression is tfe.Compression.NONE
        assert list(tfe.read_records(io.BytesIO(path.read_bytes()))) == [record, b"tail"]


def test_valid_header_wins_over_a_zlib_header_in_the_length(tmp_path: pathlib.Path) -> None:
    record = b"z" * 0x9C78  # first bytes 78 9c: a zlib header (default level)
    path = _write(tmp_path / "plain.zz", [record], "")
    assert path.read_bytes()[:2] == b"\x78\x9c"
    assert list(tfe.read_records(path)) == [record]
    assert tfe.RecordDataset(path)[0] == record


def test_foreign_streams_are_recognised(tmp_path: pathlib.Path) -> None:
    records = [b"one", b"two" * 50, b""]
    framed = framing.frame_many(records)
    cases = {
        "python-gzip": gzip.compress(framed, mtime=0),  # another header than TF's
        "two-members": gzip.compress(framed[:20]) + gzip.compress(framed[20:]),
        "beam-deflate": zlib.compress(framed),  # Beam's .deflate: a zlib stream
        "zlib-best": zlib.compress(framed, 9),
        "zlib-fast": zlib.compress(framed, 1),
        "zlib-small-window": _zlib_window(framed, 9),
    }
    for name, blob in cases.items():
        path = tmp_path / name
        path.write_bytes(blob)
        assert list(tfe.read_records(path)) == records, name
        assert tfe.RecordDataset(path)[:] == records, name
    for golden in ("records.tfrecord.gz", "records.tfrecord.zz"):  # TensorFlow's own
        renamed = tmp_path / f"tf-{golden}".replace(".tfrecord", "").replace(".", "-")
        shutil.copy(GOLDEN / golden, renamed)
        assert list(tfe.read_records(renamed)) == list(tfe.read_records(GOLDEN / golden))


def _zlib_window(data: bytes, wbits: int) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, wbits)
    return c.compress(data) + c.flush()


def test_empty_files(tmp_path: pathlib.Path) -> None:
    for name in ("empty", "empty.tfrecord", "empty.gz", "empty.zz", "empty.deflate"):
        path = tmp_path / name
        path.write_bytes(b"")
        assert list(tfe.read_records(path)) == []
        assert list(tfe.read_records(io.BytesIO(b""))) == []
        idx = tfe.Index.build(path)
        assert len(idx) == 0
        assert idx.compression is (extension_hint(name) or tfe.Compression.NONE)
        assert len(tfe.RecordDataset(path)) == 0
    assert describe(b"") == "the file is empty"


def test_damaged_starts(tmp_path: pathlib.Path) -> None:
    framed = framing.frame_many([b"a" * 500, b"b"])
    # A GZIP file damaged right after its header: still recognised (the magic and the
    # method byte), and the error is about the GZIP data.
    gz = bytearray(gzip.compress(framed))
    gz[12:20] = b"\xff" * 8
    (tmp_path / "g").write_bytes(bytes(gz))
    with pytest.raises(tfe.CorruptedRecordError, match="GZIP data is damaged"):
        list(tfe.read_records(tmp_path / "g"))
    # A zlib header alone is too weak to go on: read as plain, and the error says what
    # the bytes look like; the extension settles it.
    zz = bytearray(zlib.compress(framed))
    zz[2:10] = b"\xff" * 8
    (tmp_path / "z").write_bytes(bytes(zz))
    with pytest.raises(tfe.DataLossError, match=r"zlib header \(78 9c\), but what follows"):
        list(tfe.read_records(tmp_path / "z"))
    (tmp_path / "z.deflate").write_bytes(bytes(zz))
    with pytest.raises(tfe.CorruptedRecordError, match="ZLIB data is damaged"):
        list(tfe.read_records(tmp_path / "z.deflate"))
    # Neither: read as plain, and the error shows the first bytes.
    (tmp_path / "p").write_bytes(b"not a tfrecord at all")
    with pytest.raises(tfe.DataLossError, match="no valid record header, GZIP magic or zlib"):
        list(tfe.read_records(tmp_path / "p"))


def _feed(fd: int, blob: bytes) -> threading.Thread:
    def run() -> None:
        with os.fdopen(fd, "wb") as w:
            for i in range(0, len(blob), 7):  # dribbled, as a slow producer
                w.write(blob[i : i + 7])
                w.flush()

    t = threading.Thread(target=run)
    t.start()
    return t


@pytest.mark.parametrize("kind", list(KINDS))
def test_pipes_are_peeked_without_losing_bytes(tmp_path: pathlib.Path, kind: str) -> None:
    records = [b"p%d" % i * (i + 1) for i in range(40)]
    blob = _write(tmp_path / "src", records, kind).read_bytes()
    r, w = os.pipe()
    feeder = _feed(w, blob)
    with os.fdopen(r, "rb") as f:
        assert list(tfe.read_records(f)) == records
    feeder.join()
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        writer = threading.Thread(target=lambda: fifo.write_bytes(blob))
        writer.start()
        assert list(tfe.read_records(fifo)) == records
        writer.join()


def test_peek_stream_hands_every_byte_back() -> None:
    data = bytes(range(200))
    for chunk in (1, 3, 12, 500):
        head, stream = peek_stream(_OneWay(data, chunk))  # type: ignore[arg-type]
        assert data.startswith(head)
        assert len(head) >= min(12, len(data))
        got = b""
        while part := stream.read(17):
            got += part
        assert got == data
    head, stream = peek_stream(io.BufferedReader(io.BytesIO(data)))
    assert stream.read1(5) == data[:5]
    assert stream.read() == data[5 : len(head)]  # the rest of what was peeked
    assert stream.read() == data[len(head) :]


def test_requested_values(tmp_path: pathlib.Path) -> None:
    assert requested("AUTO") is None
    assert requested("") is tfe.Compression.NONE
    assert requested(tfe.Compression.ZLIB) is tfe.Compression.ZLIB
    with pytest.raises(tfe.InvalidArgumentError, match="'auto'"):
        requested("bzip2")
    (tmp_path / "x.tfrecord").write_bytes(b"")
    with pytest.raises(tfe.InvalidArgumentError, match="'auto'"):
        tfe.RecordDataset(tmp_path / "x.tfrecord", compression="lz4")
    with pytest.raises(tfe.InvalidArgumentError, match="when reading"):  # a writer is told
        tfe.TFRecordWriter("never-written", "auto")


def test_detect_ties_and_hints() -> None:
    gz = gzip.compress(framing.frame(b"x"))
    assert detect(gz, "a.zz") is tfe.Compression.GZIP  # strong bytes beat the name
    assert detect(b"\x1f\x8b\x08\xff\xff\xff\xff", "a.zz") is tfe.Compression.ZLIB
    assert detect(b"\x1f\x8b\x08\xff\xff\xff\xff") is tfe.Compression.GZIP
    assert detect(b"\x78\x9c\xff\xff\xff\xff\xff") is tfe.Compression.NONE
    assert detect(b"\x78\x9c\xff\xff\xff\xff\xff", "a.deflate") is tfe.Compression.ZLIB


def _sources(blob: bytes, path: pathlib.Path) -> Iterator[object]:
    yield path
    yield io.BytesIO(blob)
    yield _OneWay(blob, 11)


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    records=record_lists(max_records=12, max_size=600),
    kind=st.sampled_from(list(KINDS)),
    ext=st.sampled_from(EXTENSIONS),
)
def test_auto_reads_whatever_was_written(
    tmp_path: pathlib.Path, records: list[bytes], kind: str, ext: str
) -> None:
    path = _write(tmp_path / f"h{ext}", records, kind)
    blob = path.read_bytes()
    for source in _sources(blob, path):
        assert list(tfe.read_records(source)) == records  # type: ignore[arg-type]
    assert tfe.Index.build(path).offsets.tolist() == tfe.Index.build(path, kind).offsets.tolist()


def test_read_only_binary_io(tmp_path: pathlib.Path) -> None:
    path = _write(tmp_path / "a", [b"q"] * 3, "GZIP")
    with open(path, "rb") as f:
        stream: BinaryIO = f
        assert list(tfe.read_records(stream)) == [b"q"] * 3
