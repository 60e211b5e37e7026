"""Writing, reading and indexing ``s3://`` objects on a real S3 store (SeaweedFS)."""

from __future__ import annotations

import dataclasses
import pathlib

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.testing.s3_server import fsspec_s3_config, s3_filesystem

from .conftest import S3

RECORDS = [bytes([i % 256]) * (i * 37 % 700) for i in range(400)]


def _names(s3: S3, url: str) -> list[str]:
    fs = s3_filesystem(s3.endpoint)
    return sorted(p.rsplit("/", 1)[-1] for p in fs.ls(url.removeprefix("s3://"), detail=False))


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_written_objects_are_byte_identical_to_local_files(
    s3: S3, tmp_path: pathlib.Path, compression: str
) -> None:
    local, url = tmp_path / "a.tfrecord", f"{s3.url}/a.tfrecord"
    for target in (str(local), url):
        with tfe.TFRecordWriter(target, compression, index=True) as w:
            w.write_many(RECORDS)
    fs = s3_filesystem(s3.endpoint)
    assert fs.cat_file(url.removeprefix("s3://")) == local.read_bytes()
    assert _names(s3, s3.url) == [".tfeidx", "a.tfrecord"]
    assert tfe.Index.load(url).to_bytes() == tfe.Index.load(local).to_bytes()
    assert list(tfe.read_records(url)) == RECORDS


def test_a_writer_publishes_only_on_a_clean_close(s3: S3) -> None:
    url = f"{s3.url}/a.tfrecord"
    with tfe.TFRecordWriter(url) as w:
        w.write(b"old")

    def failing_write() -> None:
        with tfe.TFRecordWriter(url) as w:
            w.write_many(RECORDS)
            w.flush()
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        failing_write()
    # The old object is whole, and the hidden temporary object is gone.
    assert list(tfe.read_records(url)) == [b"old"]
    assert _names(s3, s3.url) == ["a.tfrecord"]
    with tfe.TFRecordWriter(url) as w:
        w.write_many(RECORDS)
        assert _names(s3, s3.url) == ["a.tfrecord"]  # not replaced before close()
    assert list(tfe.read_records(url)) == RECORDS


def test_index_build_save_load_and_staleness(s3: S3) -> None:
    url = f"{s3.url}/a.tfrecord"
    with tfe.TFRecordWriter(url) as w:  # no index written with the data
        w.write_many(RECORDS)
    with pytest.raises(FileNotFoundError):
        tfe.Index.load(url)
    built = tfe.Index.build(url)
    assert built.lengths.tolist() == [len(r) for r in RECORDS]
    where = built.save()  # hidden: <prefix>/.tfeidx/a.tfrecord.tfeidx on the store
    assert where == f"{s3.url}/.tfeidx/a.tfrecord.tfeidx"
    assert tfe.Index.load(url).to_bytes() == built.to_bytes()
    with tfe.TFRecordWriter(url) as w:  # replaced: the saved index no longer describes it
        w.write_many(RECORDS[:-1])
    with pytest.raises(tfe.StaleIndexError):
        tfe.Index.load(url)
    assert len(tfe.Index.open(url)) == len(RECORDS) - 1


def test_a_missing_object_and_bad_credentials_are_named(s3: S3) -> None:
    url = f"{s3.url}/a.tfrecord"
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        list(tfe.read_records(f"{s3.url}/nothing-here.tfrecord"))
    with tfe.TFRecordWriter(url) as w:
        w.write(b"r")
    wrong = dataclasses.replace(s3.endpoint, secret="not-the-secret")
    with fsspec_s3_config(wrong), pytest.raises(PermissionError) as caught:
        list(tfe.read_records(url))
    assert isinstance(caught.value, tfe.RemoteAccessDeniedError)
    assert url in str(caught.value)
