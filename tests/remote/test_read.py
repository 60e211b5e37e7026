"""read_records on URLs: memory:// and a loopback HTTP server, against local reads."""

from __future__ import annotations

import math
import pathlib
import secrets
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine import index as index_module
from tfrecord_engine.records import framing
from tfrecord_engine.storage import remote
from tfrecord_engine.storage.readahead import DEFAULT_BLOCK_SIZE
from tfrecord_engine.testing.damage import Damage, damages
from tfrecord_engine.testing.http_server import RangeServer
from tfrecord_engine.testing.records import compressions, record_lists, write_file
from tfrecord_engine.testing.remote import memory_dir

fsspec = pytest.importorskip("fsspec")
Served = tuple[pathlib.Path, RangeServer]


def _publish(served: Served, mem_root: str, blob: bytes) -> tuple[str, str]:
    """Puts ``blob`` on both backends; returns (memory URL, HTTP URL)."""
    root, server = served
    name = f"{secrets.token_hex(6)}.tfrecord"
    (root / name).write_bytes(blob)
    fsspec.filesystem("memory").pipe_file(f"{mem_root.removeprefix('memory://')}/{name}", blob)
    return f"{mem_root}/{name}", f"{server.url}/{name}"


def _outcome(source: str, compression: str) -> tuple[list[bytes], object]:
    got: list[bytes] = []
    try:
        for r in tfe.read_records(source, compression):
            got.append(r)
    except tfe.DataLossError as exc:
        return got, (type(exc), exc.record_index, exc.offset)
    return got, None


@given(records=record_lists(max_records=12, max_size=2000), compression=compressions())
def test_remote_reads_equal_local_reads(
    served: Served,
    mem_shared: str,
    tmp_path_factory: pytest.TempPathFactory,
    records: list[bytes],
    compression: str,
) -> None:
    local = tmp_path_factory.mktemp("r") / "a.tfrecord"
    write_file(local, records, compression)
    for url in _publish(served, mem_shared, local.read_bytes()):
        assert list(tfe.read_records(url, compression)) == records


@given(records=record_lists(max_records=8, max_size=300), data=st.data())
def test_damage_is_reported_as_for_a_local_file(
    served: Served,
    mem_shared: str,
    tmp_path_factory: pytest.TempPathFactory,
    records: list[bytes],
    data: st.DataObject,
) -> None:
    compression = data.draw(compressions())
    local = tmp_path_factory.mktemp("d") / "a.tfrecord"
    write_file(local, records, compression)
    blob = local.read_bytes()
    damage: Damage = data.draw(damages(len(blob))) if blob else Damage("truncate", 0)
    local.write_bytes(damage.apply(blob))
    expected_records, expected_error = _outcome(str(local), compression)
    for url in _publish(served, mem_shared, local.read_bytes()):
        got_records, got_error = _outcome(url, compression)
        assert got_records == expected_records
        assert got_error == expected_error


def test_damage_names_the_url_record_and_offset(mem: str, tmp_path: pathlib.Path) -> None:
    records = [bytes([i]) * 100 for i in range(10)]
    blob = bytearray(framing.frame_many(records))
    blob[4 * 116 + 50] ^= 1
    url = f"{mem}/bad.tfrecord"
    fsspec.filesystem("memory").pipe_file(url.removeprefix("memory://"), bytes(blob))
    with pytest.raises(tfe.CorruptedRecordError) as err:
        list(tfe.read_records(url))
    assert (err.value.path, err.value.record_index, err.value.offset) == (url, 4, 4 * 116)
    assert url in str(err.value)
    reports: list[tfe.DamageReport] = []
    kept = list(tfe.read_records(url, on_damage="skip", on_damage_report=reports.append))
    assert kept == records[:4] + records[5:]
    assert [(r.record_index, r.offset) for r in reports] == [(4, 4 * 116)]


def test_sequential_read_is_a_few_large_requests(served: Served, mem_shared: str) -> None:
    _root, server = served
    records = [bytes([i]) * (1 << 20) for i in range(20)]  # ~20 MiB: three 8 MiB blocks
    _, url = _publish(served, mem_shared, framing.frame_many(records))
    server.reset()
    assert list(tfe.read_records(url)) == records
    size = sum(len(r) + framing.FRAME_OVERHEAD for r in records)
    assert server.count("GET", ranged=True) == math.ceil(size / DEFAULT_BLOCK_SIZE) == 3
    assert server.count("GET", ranged=False) == 0
    assert server.count("HEAD") == 1  # the size
    assert sorted(q.range for q in server.requests if q.range) == [
        (o, min(size, o + DEFAULT_BLOCK_SIZE)) for o in range(0, size, DEFAULT_BLOCK_SIZE)
    ]


@pytest.mark.parametrize("backend", ["memory", "http"])
def test_a_missing_remote_file_raises_file_not_found(
    backend: str, served: Served, mem: str
) -> None:
    url = f"{mem}/nothing.tfrecord" if backend == "memory" else f"{served[1].url}/nothing.tfrecord"
    with pytest.raises(FileNotFoundError):
        list(tfe.read_records(url))
    with pytest.raises(FileNotFoundError):
        tfe.RecordDataset(url)[0]


def test_file_urls_are_local_paths(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "a.tfrecord"
    with tfe.TFRecordWriter(f"file://{path}", index=True) as w:
        w.write_many([b"a", b"bc"])
    assert path.exists()
    assert (path.parent / ".tfeidx" / "a.tfrecord.tfeidx").exists()
    assert pathlib.Path(index_module.index_path_for(path)).exists()
    assert list(tfe.read_records(f"file://{path}")) == [b"a", b"bc"]
    assert tfe.RecordDataset(f"file://{path}")[1] == b"bc"
    assert not remote.is_url(f"file://{path}")
    assert remote.is_url("s3://bucket/key")
    assert remote.is_url("simplecache::s3://b/k")


def test_without_fsspec_a_url_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fsspec", None)  # makes `import fsspec` fail
    with pytest.raises(tfe.MissingDependencyError, match=r"tfrecord-engine\[remote\]") as err:
        list(tfe.read_records("s3://bucket/a.tfrecord"))
    assert isinstance(err.value, ImportError)
    with pytest.raises(tfe.MissingDependencyError):
        tfe.TFRecordWriter("memory://x/a.tfrecord")


def test_importing_the_package_does_not_import_fsspec() -> None:
    code = "import sys, tfrecord_engine; print('fsspec' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_memory_dir_cleans_up() -> None:
    with memory_dir() as url:
        with tfe.TFRecordWriter(f"{url}/a.tfrecord") as w:
            w.write(b"x")
        assert fsspec.filesystem("memory").exists(url.removeprefix("memory://"))
    assert not fsspec.filesystem("memory").exists(url.removeprefix("memory://"))
