"""Which sidecars serve ``on_damage="stop"``/``"skip"``: were the data CRCs checked?

Under ``"raise"`` an index is built from the record headers only, so a record whose data
CRC fails is counted (``"raise"`` finds it when the record is read). ``"stop"``/``"skip"``
promise exact epochs (``len(ds)`` equals the records delivered), so they must not use
such a sidecar (version 1); they index the file again, checking every data CRC, and save
a version-3 sidecar (version 2 if they found damage) that later opens use as it is.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.index import building
from tfrecord_engine.index.placement import cache_index_path
from tfrecord_engine.index.scan import fingerprint
from tfrecord_engine.index.sidecar import (
    CONTENT_CHECK_VERSION_OFFSET,
    DAMAGE_FORMAT_VERSION,
    FORMAT_VERSION,
    VERIFIED_FORMAT_VERSION,
    index_path_for,
)
from tfrecord_engine.records import framing
from tfrecord_engine.records.recovery import DamagePolicy
from tfrecord_engine.testing.damage import Damage, damages, record_spans
from tfrecord_engine.testing.index_damage import write_framed

RECORDS = [b"rec%d" % i * (i + 2) for i in range(6)]
SPANS = record_spans(RECORDS)
_SCANS = ("walk_headers", "walk_stream", "tolerant_scan")


def _bad_data_crc(which: int) -> bytes:
    """The framed records with the last byte of record ``which``'s data CRC flipped."""
    return Damage("flip", SPANS[which][1] - 1, b"\x01").apply(framing.frame_many(RECORDS))


def _version(path: str) -> int:
    """The base version (content-check flag left out) of the index saved last: an
    open's (in the cache, for the file as it is now), else the writer's (hidden folder),
    else an old one beside the data."""
    for where in (cache_index_path(path), index_path_for(path), index_path_for(path, "beside")):
        if Path(where).exists():
            version = int(struct.unpack_from("<I", Path(where).read_bytes(), 8)[0])
            return version & ~CONTENT_CHECK_VERSION_OFFSET
    raise AssertionError(f"no index saved for {path}")


def _counted(name: str, real: Callable[..., object], calls: list[str]) -> Callable[..., object]:
    def spy(*args: object, **kwargs: object) -> object:
        calls.append(name)
        return real(*args, **kwargs)

    return spy


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the file scans ``Index.build`` runs from now on, in order."""
    calls: list[str] = []
    for name in _SCANS:
        monkeypatch.setattr(building, name, _counted(name, getattr(building, name), calls))
    return calls


def _fresh(path: str, compression: str, policy: DamagePolicy) -> tuple[int, list[tfe.DamageReport]]:
    """``len()`` and reports of a first ``policy`` open of ``path`` (what it would index)."""
    reports: list[tfe.DamageReport] = []
    idx = tfe.Index.build(path, compression, on_damage=policy, on_damage_report=reports.append)
    return len(idx), reports


# ---- the bug: a "raise" sidecar served to "stop"/"skip" ---------------------------------


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
@pytest.mark.parametrize("policy", ["stop", "skip"])
def test_one_record_with_a_bad_data_crc(
    tmp_path: Path, compression: str, policy: DamagePolicy
) -> None:
    # The reproduction: one record (as TFRecordWriter frames it), its data CRC broken,
    # opened under "raise" first.
    frame = framing.frame(b"payload")
    path = write_framed(tmp_path / "one.tfrecord", frame[:-1] + bytes([frame[-1] ^ 1]), compression)
    assert len(tfe.RecordDataset(path, compression=compression)) == 1  # a header walk
    assert _version(path) == FORMAT_VERSION
    reports: list[tfe.DamageReport] = []
    ds = tfe.RecordDataset(
        path, compression=compression, on_damage=policy, on_damage_report=reports.append
    )
    assert len(ds) == len(list(ds)) == 0
    assert reports == _fresh(path, compression, policy)[1]
    assert len(reports) == 1
    assert "data CRC" in reports[0].reason
    assert _version(path) == DAMAGE_FORMAT_VERSION


@pytest.mark.parametrize("compression", ["", "GZIP"])
@pytest.mark.parametrize("policy", ["stop", "skip"])
@pytest.mark.parametrize("which", [0, 3, len(RECORDS) - 1])
def test_stop_and_skip_after_a_raise_open_are_exact(
    tmp_path: Path, compression: str, policy: DamagePolicy, which: int, scans: list[str]
) -> None:
    path = write_framed(tmp_path / "d.tfrecord", _bad_data_crc(which), compression)
    assert len(tfe.RecordDataset(path, compression=compression)) == len(RECORDS)
    assert _version(path) == FORMAT_VERSION
    want_len, want_reports = _fresh(path, compression, policy)
    del scans[:]
    reports: list[tfe.DamageReport] = []
    ds = tfe.RecordDataset(
        path, compression=compression, on_damage=policy, on_damage_report=reports.append
    )
    got = list(ds)
    assert len(ds) == len(got) == want_len
    assert got == [r for i, r in enumerate(RECORDS) if i != which][:want_len]
    assert reports == want_reports
    assert scans == ["tolerant_scan"]  # indexed again once, checking every data CRC
    assert _version(path) == DAMAGE_FORMAT_VERSION
    # The new sidecar serves the same policy again without a scan, reporting again.
    again: list[tfe.DamageReport] = []
    ds = tfe.RecordDataset(
        path, compression=compression, on_damage=policy, on_damage_report=again.append
    )
    assert len(ds) == want_len
    assert again == want_reports
    assert scans == ["tolerant_scan"]


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_clean_file_is_verified_once_then_serves_every_policy(
    tmp_path: Path, compression: str, scans: list[str]
) -> None:
    path = write_framed(tmp_path / "c.tfrecord", framing.frame_many(RECORDS), compression)
    assert len(tfe.RecordDataset(path, compression=compression)) == len(RECORDS)
    assert _version(path) == FORMAT_VERSION
    assert not tfe.Index.load(path).data_verified
    assert len(scans) == 1  # the header (or stream) walk
    assert len(tfe.Index.open(path, compression, on_damage="stop")) == len(RECORDS)
    assert scans[1:] == ["tolerant_scan"]
    assert _version(path) == VERIFIED_FORMAT_VERSION
    for policy in ("raise", "skip", "stop", "raise"):
        idx = tfe.Index.open(path, compression, on_damage=policy, rebuild=False)
        assert idx.data_verified
        assert tfe.RecordDataset(path, compression=compression, on_damage=policy)[:] == RECORDS
    assert len(scans) == 2  # no scan after the verifying one
    assert _version(path) == VERIFIED_FORMAT_VERSION


def test_load_names_why_an_unverified_sidecar_cannot_serve(tmp_path: Path) -> None:
    path = write_framed(tmp_path / "u.tfrecord", _bad_data_crc(2))
    tfe.Index.open(path)
    for policy in ("stop", "skip"):
        with pytest.raises(
            tfe.IndexFormatError,
            match=rf"built without checking data CRCs .*cannot serve on_damage='{policy}'",
        ):
            tfe.Index.load(path, on_damage=policy)
        with pytest.raises(tfe.IndexFormatError, match="without checking data CRCs"):
            tfe.Index.open(path, on_damage=policy, rebuild=False)
    assert _version(path) == FORMAT_VERSION  # nothing rebuilt, nothing saved
    assert len(tfe.Index.load(path)) == len(RECORDS)  # still serves "raise"


# ---- indexes written with the data ------------------------------------------------------


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_writer_index_is_verified_and_serves_every_policy(
    tmp_path: Path, compression: str, scans: list[str]
) -> None:
    path = str(tmp_path / "w.tfrecord")
    with tfe.TFRecordWriter(path, compression, index=True, index_flush_every=2) as w:
        w.write_many(RECORDS)
    assert _version(path) == VERIFIED_FORMAT_VERSION
    for policy in ("stop", "skip", "raise"):
        reports: list[tfe.DamageReport] = []
        ds = tfe.RecordDataset(
            path, compression=compression, on_damage=policy, on_damage_report=reports.append
        )
        assert len(ds) == len(RECORDS)
        assert list(ds) == RECORDS
        assert reports == []
        assert ds.indexes[0].data_verified
    assert scans == []
    assert _version(path) == VERIFIED_FORMAT_VERSION


# ---- appends ------------------------------------------------------------------------------


def _append(path: str, records: list[bytes], reports: list[tfe.DamageReport]) -> None:
    with tfe.TFRecordWriter(path, append=True, index=True, on_damage_report=reports.append) as w:
        w.write_many(records)


def test_append_to_a_verified_file_stays_verified(tmp_path: Path, scans: list[str]) -> None:
    path = str(tmp_path / "a.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(RECORDS[:3])
    reports: list[tfe.DamageReport] = []
    _append(path, RECORDS[3:], reports)
    assert reports == []
    assert _version(path) == VERIFIED_FORMAT_VERSION
    del scans[:]
    ds = tfe.RecordDataset(path, on_damage="skip", on_damage_report=reports.append)
    assert list(ds) == RECORDS
    assert scans == []


def test_append_checks_the_data_crcs_an_unverified_sidecar_did_not(
    tmp_path: Path, scans: list[str]
) -> None:
    # The append reads every earlier record with its data CRC checked before it writes
    # (cutting a torn tail), so its sidecar is verified whatever the old one was.
    path = write_framed(tmp_path / "u.tfrecord", _bad_data_crc(len(RECORDS) - 1))
    tfe.Index.open(path)
    assert _version(path) == FORMAT_VERSION
    reports: list[tfe.DamageReport] = []
    _append(path, [b"new"], reports)
    assert [r.record_index for r in reports] == [len(RECORDS) - 1]  # the bad record, cut
    assert _version(path) == VERIFIED_FORMAT_VERSION
    del scans[:]
    want = [*RECORDS[:-1], b"new"]
    for policy in ("stop", "skip", "raise"):
        ds = tfe.RecordDataset(path, on_damage=policy)
        assert len(ds) == len(want)
        assert list(ds) == want
    assert scans == []


def test_append_without_an_index_leaves_a_stale_sidecar(tmp_path: Path) -> None:
    path = str(tmp_path / "s.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(RECORDS[:2])
    with tfe.TFRecordWriter(path, append=True) as w:
        w.write(b"more")
    with pytest.raises(tfe.StaleIndexError):
        tfe.Index.load(path, on_damage="stop")
    assert len(tfe.RecordDataset(path, on_damage="stop")) == 3
    assert _version(path) == VERIFIED_FORMAT_VERSION  # rebuilt under "stop"


# ---- the sidecar format ---------------------------------------------------------------------


def _v1_sidecar(path: str) -> bytes:
    """A version-1 sidecar as builds before version 3 wrote it (packed by hand)."""
    blob = Path(path).read_bytes()
    offsets = [a for a, _ in SPANS]
    lengths = [len(r) for r in RECORDS]
    fp = fingerprint(blob)
    body = struct.pack("<8sIIQQQQ", b"TFEIDX\r\n", 1, 0, len(blob), fp, len(RECORDS), 0)
    body += struct.pack(f"<{len(RECORDS)}Q", *offsets) + struct.pack(f"<{len(RECORDS)}Q", *lengths)
    return body + struct.pack("<I", framing.mask_crc(framing.crc32c(body)))


def test_old_version_1_sidecar_still_serves_raise(tmp_path: Path, scans: list[str]) -> None:
    path = write_framed(tmp_path / "old.tfrecord", framing.frame_many(RECORDS))
    old = _v1_sidecar(path)
    Path(index_path_for(path, "beside")).write_bytes(old)  # where old versions put it
    idx = tfe.Index.load(path)
    assert not idx.data_verified
    assert idx.offsets.tolist() == [a for a, _ in SPANS]
    assert idx.to_bytes() == old  # re-saved unchanged
    assert tfe.RecordDataset(path)[:] == RECORDS
    assert scans == []
    assert Path(index_path_for(path, "beside")).read_bytes() == old
    # "stop" reads the file once and caches a verified index; the old file stays.
    assert tfe.RecordDataset(path, on_damage="stop")[:] == RECORDS
    assert scans == ["tolerant_scan"]
    assert _version(path) == VERIFIED_FORMAT_VERSION
    assert Path(index_path_for(path, "beside")).read_bytes() == old
    assert tfe.RecordDataset(path, on_damage="stop")[:] == RECORDS
    assert scans == ["tolerant_scan"]  # the cached index serves from now on


def test_versions_round_trip(tmp_path: Path) -> None:
    path = write_framed(tmp_path / "v.tfrecord", _bad_data_crc(1))
    walked = tfe.Index.build(path)
    skip = tfe.Index.build(path, on_damage="skip", on_damage_report=lambda r: None)
    clean = tfe.Index(path, [0], [1], data_size=17, fingerprint=0, data_verified=True)
    for idx, version in [(walked, 1), (skip, 2), (clean, 3)]:
        blob = idx.to_bytes()
        stored = struct.unpack_from("<I", blob, 8)[0]
        assert stored & ~CONTENT_CHECK_VERSION_OFFSET == version
        back = tfe.Index.from_bytes(blob, path)
        assert back.data_verified == (version != 1)
        assert back.to_bytes() == blob
    # A damage list only comes from a scan that checked every data CRC.
    report = skip.damage[0]
    listed = tfe.Index(
        path, [], [], data_size=1, fingerprint=0, damage=[report], damage_policy="skip"
    )
    assert listed.data_verified


def test_for_policy(tmp_path: Path) -> None:
    path = write_framed(tmp_path / "p.tfrecord", _bad_data_crc(4))
    walked = tfe.Index.build(path)
    assert walked.for_policy("raise") is walked
    assert walked.for_policy("stop") is None
    assert walked.for_policy("skip") is None
    skip = tfe.Index.build(path, on_damage="skip", on_damage_report=lambda r: None)
    stop = skip.for_policy("stop")
    assert stop is not None
    assert stop.data_verified
    np.testing.assert_array_equal(stop.offsets, skip.offsets[:4])
    clean = tfe.Index(path, [0], [1], data_size=17, fingerprint=0, data_verified=True)
    assert all(clean.for_policy(p) is clean for p in ("raise", "stop", "skip"))


@given(data=st.data())
def test_any_policy_order_keeps_epochs_exact(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    blob = framing.frame_many(RECORDS)
    damage = data.draw(damages(len(blob)), label="damage")
    path = write_framed(tmp_path_factory.mktemp("o") / "o.tfrecord", damage.apply(blob))
    policies: list[DamagePolicy] = ["raise", "stop", "skip"]
    order = data.draw(st.lists(st.sampled_from(policies), min_size=2, max_size=5))
    for policy in order:
        reports: list[tfe.DamageReport] = []
        ds = tfe.RecordDataset(path, on_damage=policy, on_damage_report=reports.append)
        if policy == "raise":
            with contextlib.suppress(tfe.DataLossError):
                ds[:]
            continue
        want = list(tfe.read_records(path, on_damage=policy, on_damage_report=lambda r: None))
        assert len(ds) == len(want)
        assert list(ds) == want
