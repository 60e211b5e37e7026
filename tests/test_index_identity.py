"""An index is stamped with the identity of the bytes it describes, and checks them.

Issue 29, items 3 and 4a: two writers publishing one path left one writer's record layout
stamped with the other's size and fingerprint (taken from the path after the rename);
and a same-size replacement whose changes miss the fingerprint's sampled windows kept
its stale sidecar and cache entry. Either way ``verify=False`` returned wrong records.
Every "twin" file here has the size *and the sampled fingerprint* of the original, with
a different record layout: only the content check (or, for old-format sidecars, the
sampled headers) can tell them apart.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.index import identity
from tfrecord_engine.index.placement import cache_index_path, index_path_for
from tfrecord_engine.index.scan import fingerprint, fingerprint_ranges
from tfrecord_engine.records import framing
from tfrecord_engine.storage.fileops import FileOps
from tfrecord_engine.testing.faults import writer_with_ops

OVERHEAD = framing.HEADER_SIZE + framing.FOOTER_SIZE


def _twins(n: int, payload: int, *, sampled: bool = False) -> tuple[list[bytes], list[bytes]]:
    """Two record lists framing to files of one size and one fingerprint: the second
    splits two neighbouring records of the first into three, where no fingerprint
    window reads (``sampled``: at a record that a ``RECORDS`` content check samples)."""
    framed = payload + OVERHEAD
    windows = fingerprint_ranges(n * framed)
    picks = identity.sample_indices(n, identity.RECORD_SAMPLES) if sampled else np.arange(n)
    for k in picks.tolist():
        lo, hi = k * framed, (k + 2) * framed
        if k + 1 < n and all(hi <= a or lo >= b for a, b in windows):
            break
    else:  # pragma: no cover - the sizes below always leave room
        raise AssertionError("no record pair outside the fingerprint windows")
    first = [i.to_bytes(4, "little") * (payload // 4) for i in range(n)]
    rest = 2 * payload - OVERHEAD  # three records framing to the bytes of two
    split = [b"x" * (rest // 3), b"y" * (rest // 3), b"z" * (rest - 2 * (rest // 3))]
    second = [*first[:k], *split, *first[k + 2 :]]
    a, b = framing.frame_many(first), framing.frame_many(second)
    assert len(a) == len(b)
    assert a != b
    assert fingerprint(a) == fingerprint(b)
    return first, second


def _records(path: str | Path, **kwargs: object) -> list[bytes]:
    return [bytes(r) for r in tfe.RecordDataset(str(path), **kwargs)]  # type: ignore[arg-type]


def _rewrite_keeping_mtime(path: Path, blob: bytes) -> None:
    """Rewrites ``path`` in place and forges its modification time back."""
    st = path.stat()
    with open(path, "r+b") as f:
        f.write(blob)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns


# ---- item 4a: a same-size replacement outside the fingerprint's windows --------------


def test_same_size_replacement_refuses_sidecar_and_cache_entry(tmp_path: Path) -> None:
    old, new = _twins(1100, 1000)  # a 1.1 MB file: every byte is checked
    path = tmp_path / "d.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(old)
    assert os.path.getsize(path) == 1100 * 1016
    tfe.Index.build(path).save(placement="cache")
    hidden, cached = index_path_for(path), cache_index_path(path)
    assert Path(hidden).exists()
    assert Path(cached).exists()

    _rewrite_keeping_mtime(path, framing.frame_many(new))
    assert cache_index_path(path) == cached  # same size and mtime: the same entry name
    for source in (hidden, cached):
        with pytest.raises(tfe.StaleIndexError, match="content check"):
            tfe.Index.load(path, source)
    assert _records(path, verify=False) == new
    assert _records(path) == new


def test_replacement_in_a_sampled_record_of_a_large_file_is_refused(tmp_path: Path) -> None:
    old, new = _twins(5000, 1000, sampled=True)  # 5 MB: sampled records are checked
    path = tmp_path / "big.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(old)
    assert identity.plan(os.path.getsize(path), True, 5000)[0] == identity.KIND_RECORDS
    _rewrite_keeping_mtime(path, framing.frame_many(new))
    with pytest.raises(tfe.StaleIndexError, match="content check"):
        tfe.Index.load(path)
    assert _records(path, verify=False) == new


def test_old_format_sidecar_is_checked_at_sampled_record_headers(tmp_path: Path) -> None:
    """A version-1 sidecar (no content check, packed as builds before it wrote them)
    still loads, and a same-size, same-fingerprint file of another layout fails the
    headers of its sampled records."""
    old, new = _twins(1000, 100, sampled=True)
    blob = framing.frame_many(old)
    path = tmp_path / "o.tfrecord"
    path.write_bytes(blob)
    lengths = [len(r) for r in old]
    offsets = np.cumsum([0, *[n + OVERHEAD for n in lengths[:-1]]]).tolist()
    body = struct.pack("<8sIIQQQQ", b"TFEIDX\r\n", 1, 0, len(blob), fingerprint(blob), len(old), 0)
    body += struct.pack(f"<{len(old)}Q", *offsets) + struct.pack(f"<{len(old)}Q", *lengths)
    sidecar = body + struct.pack("<I", framing.mask_crc(framing.crc32c(body)))
    Path(index_path_for(path, "beside")).write_bytes(sidecar)
    assert len(tfe.Index.load(path)) == len(old)  # the old format loads as it is

    _rewrite_keeping_mtime(path, framing.frame_many(new))
    with pytest.raises(tfe.StaleIndexError, match="record headers"):
        tfe.Index.load(path)
    assert _records(path, verify=False) == new


def test_unchanged_file_is_checked_once_then_only_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check that passed is remembered for the file's (dev, ino, size, mtime, ctime),
    once the file has settled (timestamps are coarse: a file changed less than
    SETTLED_NS before its check could change again within the same tick): the next
    validation reads nothing. A rewrite with a forged mtime changes the ctime, so the
    file is read (and refused) again."""
    old, new = _twins(1000, 100)
    path = tmp_path / "m.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(old)
    reads: list[int] = []
    real = identity.DataBytes.crc_all

    def counted(self: identity.DataBytes) -> int:
        reads.append(1)
        return real(self)

    monkeypatch.setattr(identity.DataBytes, "crc_all", counted)
    idx = tfe.Index.load(path)
    idx.validate()
    assert len(reads) == 2  # written just now: checked every time
    later = identity.clock() + 2 * identity.SETTLED_NS
    monkeypatch.setattr(identity, "clock", lambda: later)
    idx.validate()
    tfe.Index.load(path)
    idx.validate()
    assert len(reads) == 3  # settled: remembered after one more check, fstat only
    assert idx.file_stat == tuple(
        getattr(path.stat(), f"st_{k}") for k in ("dev", "ino", "size", "mtime_ns", "ctime_ns")
    )
    _rewrite_keeping_mtime(path, framing.frame_many(new))
    with pytest.raises(tfe.StaleIndexError, match="content check"):
        idx.validate()
    assert len(reads) == 4


# ---- item 3: two writers publishing one path -------------------------------------------


class _RaceOps(FileOps):
    """Runs ``hook`` once, right after the ``at``-th rename onto ``path`` (the data's,
    the first), or right after creating the index's temporary file (``at=0``)."""

    def __init__(self, path: str, hook: Callable[[], None], at: int) -> None:
        self.path, self.hook, self.at, self.fired = path, hook, at, False
        self.renames = 0

    def _maybe(self) -> None:
        if not self.fired:
            self.fired = True
            self.hook()

    def open_new(self, path: str, buffering: int = -1):  # type: ignore[no-untyped-def]
        f = super().open_new(path, buffering)
        if self.at == 0 and ".tfeidx.tmp-" in os.path.basename(path):
            self._maybe()
        return f

    def replace(self, src: str, dst: str) -> None:
        super().replace(src, dst)
        if dst == self.path:
            self.renames += 1
            if self.renames == self.at:
                self._maybe()


@pytest.mark.parametrize("at", [1, 0], ids=["B renames over A's data", "A renames over B's"])
def test_two_writers_racing_never_pair_one_layout_with_the_other_data(
    tmp_path: Path, at: int
) -> None:
    a_records, b_records = _twins(1000, 100)
    path = tmp_path / "race.tfrecord"

    def writer_b() -> None:
        with tfe.TFRecordWriter(path, index=True) as w:
            w.write_many(b_records)

    ops = _RaceOps(str(path), writer_b, at)
    with writer_with_ops(ops, path, index=True) as w:
        w.write_many(a_records)
    assert ops.fired
    survivor = a_records if at == 0 else b_records
    assert [bytes(r) for r in tfe.read_records(path)] == survivor
    # The index beside the data is the survivor's, or one that is refused as stale.
    try:
        idx = tfe.Index.load(path, index_path_for(path))
    except tfe.StaleIndexError:
        assert at == 1
    else:
        assert idx.lengths.tolist() == [len(r) for r in survivor]
    assert _records(path, verify=False) == survivor
    assert _records(path, on_damage="skip") == survivor
