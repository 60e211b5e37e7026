"""``TFRecordDatasink`` on an fsspec URL: staged objects published on ``on_write_complete``.

``memory://`` lives in one process, so Ray's worker processes cannot share it: these
tests drive the sink through Ray's ``Datasink`` protocol in this process (what Ray's
driver and write tasks call, in that order), which is the code a cluster runs against
``s3://`` or ``gs://``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.testing.remote import memory_dir

from ..optional import require

require("ray")
pytest.importorskip("fsspec")
import pyarrow as pa  # noqa: E402 - after the skip
from ray.data.datasource.datasink import WriteResult  # noqa: E402

from tfrecord_engine import ray as tr  # noqa: E402

RECORDS = [b"r%d" % i * (i % 5) for i in range(90)]


@dataclasses.dataclass
class _Ctx:
    task_idx: int


@pytest.fixture
def mem() -> Iterator[str]:
    with memory_dir() as url:
        yield url


def objects(url: str) -> list[str]:
    """Every object under ``url``, relative to it (hidden ones included)."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(url)
    return sorted(p[len(root.rstrip("/")) + 1 :] for p in fs.find(root))


def blocks(records: list[bytes], per_block: int) -> list[pa.Table]:
    return [
        pa.table({"record": pa.array(records[i : i + per_block], pa.binary())})
        for i in range(0, len(records), per_block)
    ]


def run_sink(sink: tr.TFRecordDatasink, tasks: list[list[pa.Table]]) -> None:
    """What Ray does: start on the driver, one ``write`` per task, complete on the driver."""
    sink.on_write_start()
    returns = [sink.write(task, _Ctx(i)) for i, task in enumerate(tasks)]
    sink.on_write_complete(WriteResult(num_rows=0, size_bytes=0, write_returns=returns))


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_shards_and_indexes_are_published_on_the_store(mem: str, compression: str | None) -> None:
    out = f"{mem}/out"
    sink = tr.TFRecordDatasink(out, num_rows_per_file=25, compression=compression)
    run_sink(sink, [blocks(RECORDS[:60], 20), blocks(RECORDS[60:], 30)])
    n = len(sink.paths)
    assert n == 5  # task 0: 60 rows -> 25 + 25 + 10; task 1: 30 rows -> 25 + 5
    suffix = ".tfrecord.gz" if compression else ".tfrecord"
    names = [f"part-{i:05d}-of-{n:05d}{suffix}" for i in range(n)]
    assert sink.paths == [f"{out}/{name}" for name in names]
    # No staging folder, no temporary object: the shards and their hidden indexes only.
    assert objects(out) == sorted([*names, *(f".tfeidx/{name}.tfeidx" for name in names)])
    got = [r for p in sink.paths for r in tfe.read_records(p, compression)]
    assert got == RECORDS
    for p in sink.paths:
        idx = tfe.Index.load(p, on_damage="skip")  # loadable, fresh, data-verified
        assert len(idx) == len(list(tfe.read_records(p, compression)))
    assert tfe.RecordDataset(sink.paths, compression=compression).__len__() == len(RECORDS)


def test_a_failed_write_publishes_nothing_on_the_store(mem: str) -> None:
    out = f"{mem}/out"
    sink = tr.TFRecordDatasink(out)
    sink.on_write_start()
    sink.write(blocks(RECORDS, 30), _Ctx(0))  # one task finished, staged

    def failing() -> Iterator[Any]:
        yield from blocks(RECORDS, 30)[:1]
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        sink.write(failing(), _Ctx(1))
    sink.on_write_failed(RuntimeError("boom"))
    assert objects(out) == []


def test_taken_names_on_the_store_stop_the_publish(mem: str) -> None:
    import fsspec

    out = f"{mem}/out"
    fs, root = fsspec.core.url_to_fs(out)
    fs.pipe_file(f"{root}/part-00000-of-00001.tfrecord", b"old")
    sink = tr.TFRecordDatasink(out)
    with pytest.raises(FileExistsError, match="already exists"):
        run_sink(sink, [blocks([b"new"], 1)])
    assert objects(out) == ["part-00000-of-00001.tfrecord"]
    assert fs.cat_file(f"{root}/part-00000-of-00001.tfrecord") == b"old"


def test_read_only_urls_are_refused_up_front() -> None:
    with pytest.raises(tfe.ReadOnlyStorageError):
        tr.TFRecordDatasink("https://example.com/out")
