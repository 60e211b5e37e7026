"""Remote storage vs TensorFlow: files TensorFlow writes, read back through URLs.

TensorFlow writes each file locally; we read it through ``memory://`` and a loopback
HTTP server (sequentially and by random access) and must see exactly the records
TensorFlow's own reader sees. In the other direction, a file we write to ``memory://``
is copied out byte for byte and read by TensorFlow.
"""

from __future__ import annotations

import pathlib
import secrets
import tempfile
from collections.abc import Iterator
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given

import tfrecord_engine as tfe
from tfrecord_engine.testing.http_server import RangeServer, serve_directory
from tfrecord_engine.testing.records import compressions, record_lists
from tfrecord_engine.testing.remote import memory_dir

fsspec = pytest.importorskip("fsspec")


@pytest.fixture(scope="module")
def server_root() -> Iterator[tuple[pathlib.Path, RangeServer]]:
    with tempfile.TemporaryDirectory() as d, serve_directory(d) as server:
        yield pathlib.Path(d), server


@pytest.fixture(scope="module")
def mem_root() -> Iterator[str]:
    with memory_dir() as url:
        yield url


@given(records=record_lists(max_records=12, max_size=2000), compression=compressions())
def test_tensorflow_writes_we_read_through_urls(
    tf: ModuleType,
    server_root: tuple[pathlib.Path, RangeServer],
    mem_root: str,
    records: list[bytes],
    compression: str,
) -> None:
    root, server = server_root
    name = f"{secrets.token_hex(6)}.tfrecord"
    options = tf.io.TFRecordOptions(compression_type=compression)
    with tf.io.TFRecordWriter(str(root / name), options) as w:
        for r in records:
            w.write(r)
    fsspec.filesystem("memory").pipe_file(
        f"{mem_root.removeprefix('memory://')}/{name}", (root / name).read_bytes()
    )
    expected = [r.numpy() for r in tf.data.TFRecordDataset(str(root / name), compression)]
    assert expected == records
    for url in (f"{mem_root}/{name}", f"{server.url}/{name}"):
        assert list(tfe.read_records(url, compression)) == expected
        if records:
            ds = tfe.RecordDataset(url, compression=compression)
            order = np.random.default_rng(len(records)).permutation(len(records))
            assert ds[order] == [expected[i] for i in order.tolist()]


@given(records=record_lists(max_records=12, max_size=2000), compression=compressions())
def test_we_write_to_a_url_tensorflow_reads(
    tf: ModuleType, mem_root: str, records: list[bytes], compression: str
) -> None:
    url = f"{mem_root}/{secrets.token_hex(6)}.tfrecord"
    with tfe.TFRecordWriter(url, compression, index=True) as w:
        w.write_many(records)
    blob = fsspec.filesystem("memory").cat_file(url.removeprefix("memory://"))
    with tempfile.TemporaryDirectory() as d:
        local = pathlib.Path(d) / "copy.tfrecord"
        local.write_bytes(blob)
        got = [r.numpy() for r in tf.data.TFRecordDataset(str(local), compression)]
    assert got == records
