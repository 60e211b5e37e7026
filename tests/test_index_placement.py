"""Where indexes go: never where a shard glob finds them, never into the data's folder on read.

The writer's indexes live in a hidden ``.tfeidx/`` sub-folder; indexes built while
reading go to the user's index cache (``$TFE_INDEX_CACHE``, set per test by conftest);
old ``<file>.tfeidx`` sidecars beside the data still load.
"""

from __future__ import annotations

import builtins
import errno
import glob
import json
import os
import pathlib
import subprocess
import sys

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.index import opening, sidecar
from tfrecord_engine.index.placement import (
    CACHE_ENV,
    cache_dir,
    cache_entries,
    cache_index_path,
    index_path_for,
)
from tfrecord_engine.records.framing import frame

SHARDS = [f"train-{i:05d}-of-00003.tfrecord" for i in range(3)]


def _records(shard: int) -> list[bytes]:
    return [b"s%d-r%d" % (shard, i) for i in range(5 + shard)]


def _write_shards(folder: pathlib.Path, *, index: bool | str = False, kind: str = "") -> None:
    for i, name in enumerate(SHARDS):
        with tfe.TFRecordWriter(folder / name, kind, index=index) as w:
            w.write_many(_records(i))


def _everything() -> list[bytes]:
    return [r for i in range(len(SHARDS)) for r in _records(i)]


def _shard_paths(folder: pathlib.Path) -> list[str]:
    return [str(folder / name) for name in SHARDS]


def _tree(folder: pathlib.Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts the index builds (each a pass over a data file)."""
    calls: list[str] = []
    real = sidecar.Index.build.__func__  # type: ignore[attr-defined]

    def counted(
        cls: type[tfe.Index], path: object, /, *args: object, **kwargs: object
    ) -> tfe.Index:
        calls.append(os.fspath(path))  # type: ignore[call-overload]
        return real(cls, path, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(sidecar.Index, "build", classmethod(counted))
    return calls


@pytest.mark.parametrize("kind", ["", "GZIP"])
def test_writer_indexes_are_not_matched_by_shard_globs(tmp_path: pathlib.Path, kind: str) -> None:
    _write_shards(tmp_path, index=True, kind=kind)
    assert sorted(glob.glob(str(tmp_path / "train-*"))) == _shard_paths(tmp_path)
    assert sorted(glob.glob(str(tmp_path / "*"))) == _shard_paths(tmp_path)
    assert _tree(tmp_path) == [".tfeidx", *(f".tfeidx/{n}.tfeidx" for n in SHARDS), *SHARDS]
    for path in _shard_paths(tmp_path):
        name = os.path.basename(path)
        assert index_path_for(path) == str(tmp_path / ".tfeidx" / f"{name}.tfeidx")
        assert tfe.Index.load(path).data_verified  # the writer's own index, not a rebuild
    ds = tfe.RecordDataset(str(tmp_path / "train-*"), compression=kind)
    assert list(ds) == _everything()
    assert list(pathlib.Path(cache_dir()).iterdir()) == []  # nothing rebuilt


def test_reading_a_folder_writes_nothing_into_it(tmp_path: pathlib.Path, builds: list[str]) -> None:
    _write_shards(tmp_path)
    before = _tree(tmp_path)
    ds = tfe.RecordDataset(str(tmp_path / "train-*"))
    assert len(ds) == len(_everything())
    assert list(ds) == _everything()
    assert builds == _shard_paths(tmp_path)
    assert _tree(tmp_path) == before == SHARDS
    assert sorted(glob.glob(str(tmp_path / "train-*"))) == _shard_paths(tmp_path)
    # One cache entry per shard, found again by the next dataset without a build.
    assert all(os.path.exists(cache_index_path(p)) for p in _shard_paths(tmp_path))
    assert len(os.listdir(cache_dir())) == len(SHARDS)
    assert list(tfe.RecordDataset(str(tmp_path / "train-*"))) == _everything()
    assert builds == _shard_paths(tmp_path)


def test_index_open_saves_to_the_cache_unless_asked(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / SHARDS[0])
    _write_shards(tmp_path)
    tfe.Index.open(path)
    assert _tree(tmp_path) == SHARDS
    assert cache_entries(path) == [cache_index_path(path)]
    tfe.Index.open(tmp_path / SHARDS[1], save="hidden")
    assert os.path.exists(index_path_for(tmp_path / SHARDS[1]))
    tfe.Index.open(tmp_path / SHARDS[2], save="beside")
    assert os.path.exists(str(tmp_path / SHARDS[2]) + ".tfeidx")
    tfe.RecordDataset(tmp_path / SHARDS[0], save_index=False)[0]
    with pytest.raises(tfe.InvalidArgumentError, match="placement"):
        tfe.RecordDataset(path, save_index="elsewhere")


def test_old_sidecars_beside_the_data_still_load(tmp_path: pathlib.Path, builds: list[str]) -> None:
    _write_shards(tmp_path)
    for path in _shard_paths(tmp_path):
        tfe.Index.build(path).save(placement="beside")
    del builds[:]
    ds = tfe.RecordDataset(str(tmp_path / "train-*"))
    assert ds.paths == _shard_paths(tmp_path)  # the old sidecars are not read as data
    assert list(ds) == _everything()
    assert builds == []
    assert list(pathlib.Path(cache_dir()).iterdir()) == []


def test_a_stale_writer_index_is_rebuilt_into_the_cache(
    tmp_path: pathlib.Path, builds: list[str]
) -> None:
    path = str(tmp_path / "a.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many([b"a", b"b"])
    with tfe.TFRecordWriter(path, append=True) as w:  # no index: the hidden one is stale
        w.write(b"c")
    with pytest.raises(tfe.StaleIndexError):
        tfe.Index.load(path)
    assert tfe.RecordDataset(path)[:] == [b"a", b"b", b"c"]
    assert tfe.RecordDataset(path)[:] == [b"a", b"b", b"c"]
    assert builds == [path]  # once; the second dataset found the cache entry
    assert len(tfe.Index.load(path)) == 3


def test_changed_file_gets_a_new_cache_entry_and_the_old_one_goes(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "a.tfrecord")
    with tfe.TFRecordWriter(path) as w:
        w.write_many([b"a", b"b"])
    tfe.Index.open(path)
    first = cache_entries(path)
    with tfe.TFRecordWriter(path, append=True) as w:
        w.write(b"c")
    with pytest.raises(tfe.StaleIndexError):  # the old entry is tried, and found stale
        tfe.Index.load(path)
    assert len(tfe.Index.open(path)) == 3
    assert cache_entries(path) == [cache_index_path(path)] != first


def test_touched_file_reuses_its_cache_entry(tmp_path: pathlib.Path, builds: list[str]) -> None:
    path = str(tmp_path / "a.tfrecord")
    with tfe.TFRecordWriter(path) as w:
        w.write_many([b"a", b"b"])
    tfe.Index.open(path)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert len(tfe.Index.open(path)) == 2
    assert builds == [path]  # the content did not change: validated, not rebuilt


def _refuse_writes_under(folder: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Makes ``folder`` read-only for this process (the tests may run as root, for whom
    permission bits do not stop a write)."""
    root = str(folder)

    def denied(path: object) -> OSError:
        return OSError(errno.EROFS, "Read-only file system", os.fspath(path))  # type: ignore[call-overload]

    real_open, real_makedirs, real_replace = builtins.open, os.makedirs, os.replace

    def guarded_open(file: object, mode: str = "r", *args: object, **kwargs: object) -> object:
        writes = any(c in mode for c in "wax+")
        if writes and isinstance(file, (str, os.PathLike)) and os.fspath(file).startswith(root):
            raise denied(file)
        return real_open(file, mode, *args, **kwargs)  # type: ignore[call-overload]

    def guarded_makedirs(name: object, *args: object, **kwargs: object) -> None:
        if os.fspath(name).startswith(root):  # type: ignore[call-overload]
            raise denied(name)
        real_makedirs(name, *args, **kwargs)  # type: ignore[arg-type]

    def guarded_replace(src: object, dst: object, *args: object, **kwargs: object) -> None:
        if os.fspath(dst).startswith(root):  # type: ignore[call-overload]
            raise denied(dst)
        real_replace(src, dst, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(os, "makedirs", guarded_makedirs)
    monkeypatch.setattr(os, "replace", guarded_replace)


def test_read_only_data_folder_works(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    _write_shards(data)
    data.chmod(0o555)  # enough when not root; the guard below makes it so for root too
    try:
        with monkeypatch.context() as mp:
            _refuse_writes_under(data, mp)
            with pytest.raises(OSError, match="Read-only"):
                tfe.Index.build(data / SHARDS[0]).save()  # the guard works
            ds = tfe.RecordDataset(str(data / "train-*"), on_damage="skip")
            assert list(ds) == _everything()
            assert len(os.listdir(cache_dir())) == len(SHARDS)
            # Even a read-only cache only costs the saving: the index stays in memory.
            _refuse_writes_under(pathlib.Path(cache_dir()), mp)
            for entry in os.listdir(cache_dir()):
                os.remove(os.path.join(cache_dir(), entry))
            assert list(tfe.RecordDataset(str(data / "train-*"))) == _everything()
            assert os.listdir(cache_dir()) == []
    finally:
        data.chmod(0o755)
    assert _tree(data) == SHARDS


_CHILD = """
import json, sys
import tfrecord_engine as tfe
from tfrecord_engine.index import sidecar
real = sidecar.Index.build.__func__
calls = []
def counted(cls, path, *a, **k):
    calls.append(str(path))
    return real(cls, path, *a, **k)
sidecar.Index.build = classmethod(counted)
ds = tfe.RecordDataset(sys.argv[1])
print(json.dumps({"records": len(list(ds)), "builds": len(calls)}))
"""


def test_cache_is_reused_across_processes(tmp_path: pathlib.Path) -> None:
    _write_shards(tmp_path)
    pattern = str(tmp_path / "train-*")
    env = {**os.environ, CACHE_ENV: cache_dir()}

    def child() -> dict[str, int]:
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, pattern],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        return json.loads(out.stdout)  # type: ignore[no-any-return]

    assert child() == {"records": len(_everything()), "builds": len(SHARDS)}
    entries = sorted(pathlib.Path(cache_dir()).iterdir())
    stamps = [e.stat().st_mtime_ns for e in entries]
    assert len(entries) == len(SHARDS)
    assert child() == {"records": len(_everything()), "builds": 0}
    assert sorted(pathlib.Path(cache_dir()).iterdir()) == entries
    assert [e.stat().st_mtime_ns for e in entries] == stamps  # not rewritten
    assert _tree(tmp_path) == SHARDS


def test_cache_folder_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, "/x/tfe")
    assert cache_dir() == "/x/tfe"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", "/y/cache")
    assert cache_dir() == "/y/cache/tfrecord-engine/index"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", "/home/u")
    assert cache_dir() == "/home/u/.cache/tfrecord-engine/index"


def test_index_path_for_placements() -> None:
    assert index_path_for("d/a.tfrecord") == os.path.join("d", ".tfeidx", "a.tfrecord.tfeidx")
    assert index_path_for("d/a.tfrecord", "beside") == "d/a.tfrecord.tfeidx"
    assert index_path_for("memory://b/d/a.tfrecord") == "memory://b/d/.tfeidx/a.tfrecord.tfeidx"
    with pytest.raises(tfe.InvalidArgumentError, match="cache_index_path"):
        index_path_for("d/a.tfrecord", "cache")
    with pytest.raises(tfe.InvalidArgumentError, match="placement"):
        index_path_for("d/a.tfrecord", "nowhere")


def test_writer_index_can_go_to_the_cache(tmp_path: pathlib.Path, builds: list[str]) -> None:
    path = str(tmp_path / "a.tfrecord.gz")
    with tfe.TFRecordWriter(path, "GZIP", index="cache", index_flush_every=2) as w:
        w.write_many([b"r%d" % i for i in range(7)])
    assert _tree(tmp_path) == ["a.tfrecord.gz"]
    idx = tfe.Index.load(path)
    assert idx.data_verified
    assert len(idx.restarts) == 3
    assert tfe.RecordDataset(path, compression="GZIP")[6] == b"r6"
    assert builds == []


def test_loading_a_current_index_does_not_list_the_cache(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Listing the cache folder costs as much as the load once it holds thousands of
    # entries: it is done only when neither the file's places nor its current entry serve.
    _write_shards(tmp_path)
    hidden, cached = _shard_paths(tmp_path)[:2]
    tfe.Index.build(hidden).save(placement="hidden")
    tfe.Index.open(cached)
    listed: list[str] = []
    real = cache_entries

    def counted(path: str) -> list[str]:
        listed.append(path)
        return real(path)

    monkeypatch.setattr(opening, "cache_entries", counted)
    assert len(tfe.Index.load(hidden)) == 5
    assert len(tfe.Index.load(cached)) == 6
    assert listed == []
    with open(cached, "ab") as f:  # a changed file: its old entry is found by listing
        f.write(frame(b"x"))
    with pytest.raises(tfe.StaleIndexError):
        tfe.Index.load(cached)
    assert listed == [cached]
