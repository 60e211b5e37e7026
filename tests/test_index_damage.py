"""Indexes of damaged files: ``Index.build/load/open(on_damage=...)`` and the v2 sidecar.

The reference is the reader: an index built under a policy must hold exactly the
records ``read_records`` returns under that policy, and its damage must be the reader's
reports. A sidecar keeps the damage list, and every later open reports it again.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.index.placement import cache_index_path
from tfrecord_engine.index.sidecar import (
    CONTENT_CHECK_VERSION_OFFSET,
    DAMAGE_FORMAT_VERSION,
    FORMAT_VERSION,
    VERIFIED_FORMAT_VERSION,
)
from tfrecord_engine.records import framing
from tfrecord_engine.records.compression import Compression
from tfrecord_engine.records.recovery import DamagePolicy
from tfrecord_engine.testing.damage import Damage, damages, record_spans
from tfrecord_engine.testing.index_damage import damaged_files, write_framed


def _ignore(report: tfe.DamageReport) -> None:
    """A report sink for tests that check the index, not the reports."""


RECORDS = [b"r%d" % i * (i + 1) for i in range(8)]
SPANS = record_spans(RECORDS)


def _damaged(tmp_path: Path, damage: Damage, compression: str = "") -> str:
    blob = damage.apply(framing.frame_many(RECORDS))
    return write_framed(tmp_path / "d.tfrecord", blob, compression)


def _records_of(idx: tfe.Index) -> list[bytes]:
    """The records an index points at (reading the framed stream, decompressed if need be)."""
    raw = Path(idx.data_path).read_bytes()
    if idx.compression is not Compression.NONE:
        wbits = 31 if idx.compression is Compression.GZIP else 15
        raw = zlib.decompressobj(wbits).decompress(raw)
    h = framing.HEADER_SIZE
    return [
        raw[o + h : o + h + n]
        for o, n in zip(idx.offsets.tolist(), idx.lengths.tolist(), strict=True)
    ]


def _reader(
    path: str, compression: str, policy: DamagePolicy
) -> tuple[list[bytes], list[tfe.DamageReport]]:
    reports: list[tfe.DamageReport] = []
    out = [
        bytes(r)
        for r in tfe.read_records(
            path, compression, on_damage=policy, on_damage_report=reports.append
        )
    ]
    return out, reports


# ---- build ------------------------------------------------------------------------------


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
@pytest.mark.parametrize("policy", ["stop", "skip"])
@given(data=st.data())
def test_build_matches_the_reader(
    tmp_path_factory: pytest.TempPathFactory,
    compression: str,
    policy: DamagePolicy,
    data: st.DataObject,
) -> None:
    tmp = tmp_path_factory.mktemp("b")
    path = _damaged(tmp, data.draw(damages(SPANS[-1][1])), compression)
    reports: list[tfe.DamageReport] = []
    idx = tfe.Index.build(path, compression, on_damage=policy, on_damage_report=reports.append)
    want, want_reports = _reader(path, compression, policy)
    assert _records_of(idx) == want
    assert list(idx.damage) == want_reports == reports
    assert idx.damage_policy == policy


@pytest.mark.parametrize("which", range(len(RECORDS)))
def test_skip_index_drops_exactly_the_damaged_record(tmp_path: Path, which: int) -> None:
    a, b = SPANS[which]
    path = _damaged(tmp_path, Damage("flip", a + framing.HEADER_SIZE - 1, b"\x01"))  # length CRC
    reports: list[tfe.DamageReport] = []
    idx = tfe.Index.build(path, on_damage="skip", on_damage_report=reports.append)
    assert _records_of(idx) == RECORDS[:which] + RECORDS[which + 1 :]
    assert [(r.record_index, r.offset, r.bytes_skipped) for r in reports] == [(which, a, b - a)]
    stop = tfe.Index.build(path, on_damage="stop", on_damage_report=reports.append)
    assert len(stop) == which
    assert stop.damage[0].bytes_skipped == SPANS[-1][1] - a


def test_raise_build_only_walks_headers(tmp_path: Path) -> None:
    # A data CRC error is found when the record is read, not by the header walk.
    a, _ = SPANS[3]
    path = _damaged(tmp_path, Damage("flip", a + framing.HEADER_SIZE, b"\x01"))
    assert len(tfe.Index.build(path)) == len(RECORDS)
    assert len(tfe.Index.build(path, on_damage="skip", on_damage_report=_ignore)) == 7
    path = _damaged(tmp_path, Damage("flip", a, b"\x01"))
    with pytest.raises(tfe.CorruptedRecordError, match="record 3 at offset"):
        tfe.Index.build(path)


def test_build_warns_without_a_callback(tmp_path: Path) -> None:
    path = _damaged(tmp_path, Damage("truncate", SPANS[-1][1] - 3))
    with pytest.warns(tfe.DamageWarning, match="record 7") as caught:
        tfe.Index.build(path, on_damage="stop")
    assert len(caught) == 1
    with pytest.raises(tfe.InvalidArgumentError, match="on_damage"):
        tfe.Index.build(path, on_damage="ignore")  # type: ignore[arg-type]


def test_clean_file_under_tolerant_policies(tmp_path: Path) -> None:
    path = write_framed(tmp_path / "c.tfrecord", framing.frame_many(RECORDS))
    reports: list[tfe.DamageReport] = []
    for policy in ("stop", "skip"):
        idx = tfe.Index.build(path, on_damage=policy, on_damage_report=reports.append)
        assert idx.damage == ()
        np.testing.assert_array_equal(idx.offsets, tfe.Index.build(path).offsets)
        # The layout of a header walk's version 1; version 3 says the data CRCs were checked.
        walked = tfe.Index.build(path).to_bytes()
        assert idx.to_bytes()[12:-4] == walked[12:-4]
        assert (_version(idx.to_bytes()), _version(walked)) == (
            VERIFIED_FORMAT_VERSION,
            FORMAT_VERSION,
        )
    assert reports == []


# ---- the sidecar ------------------------------------------------------------------------


def _version(blob: bytes) -> int:
    """The base version (content-check flag left out)."""
    return int(struct.unpack_from("<I", blob, 8)[0]) & ~CONTENT_CHECK_VERSION_OFFSET


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_damage_list_round_trips(tmp_path: Path, compression: str) -> None:
    blob = framing.frame_many(RECORDS)
    blob = blob[: SPANS[2][0] + 5] + b"garbage" + blob[SPANS[3][0] :] + blob[:9]
    path = write_framed(tmp_path / "d.tfrecord", blob, compression)
    idx = tfe.Index.build(path, compression, on_damage="skip", on_damage_report=_ignore)
    assert len(idx.damage) == 2
    raw = idx.to_bytes()
    assert _version(raw) == DAMAGE_FORMAT_VERSION
    back = tfe.Index.from_bytes(raw, path)
    assert back.damage == idx.damage
    assert back.damage_policy == "skip"
    np.testing.assert_array_equal(back.offsets, idx.offsets)
    assert back.to_bytes() == raw
    clean = tfe.Index(path, [0], [1], data_size=17, fingerprint=0)
    assert _version(clean.to_bytes()) == FORMAT_VERSION
    assert "2 damaged regions" in repr(idx)


def test_open_reports_stored_damage_every_time(tmp_path: Path) -> None:
    path = _damaged(tmp_path, Damage("overwrite", SPANS[4][0] + 2, b"\xff\xff"))
    first: list[tfe.DamageReport] = []
    idx = tfe.Index.open(path, on_damage="skip", on_damage_report=first.append)
    assert os.path.exists(cache_index_path(path))
    again: list[tfe.DamageReport] = []
    loaded = tfe.Index.open(path, on_damage="skip", on_damage_report=again.append)
    assert first == again == list(idx.damage) == list(loaded.damage)
    np.testing.assert_array_equal(loaded.offsets, idx.offsets)
    with pytest.warns(tfe.DamageWarning):
        tfe.Index.load(path, on_damage="skip")


@pytest.mark.parametrize("compression", ["", "GZIP"])
@given(data=st.data())
def test_skip_sidecar_serves_stop_as_a_stop_build(
    tmp_path_factory: pytest.TempPathFactory, compression: str, data: st.DataObject
) -> None:
    path = _damaged(tmp_path_factory.mktemp("s"), data.draw(damages(SPANS[-1][1])), compression)
    skip = tfe.Index.build(path, compression, on_damage="skip", on_damage_report=_ignore)
    stop = tfe.Index.build(path, compression, on_damage="stop", on_damage_report=_ignore)
    served = skip.for_policy("stop")
    assert served is not None
    np.testing.assert_array_equal(served.offsets, stop.offsets)
    np.testing.assert_array_equal(served.lengths, stop.lengths)
    assert served.damage == stop.damage
    assert (skip.for_policy("raise") is None) == bool(skip.damage)
    assert (stop.for_policy("skip") is None) == bool(stop.damage)


def test_policies_a_sidecar_cannot_serve(tmp_path: Path) -> None:
    a, _ = SPANS[5]
    path = _damaged(tmp_path, Damage("flip", a + 1, b"\x08"))  # a header: raise fails too
    got: list[tfe.DamageReport] = []
    tfe.Index.open(path, on_damage="stop", on_damage_report=got.append)  # saves a stop index
    with pytest.raises(
        tfe.IndexFormatError, match="on_damage='stop' and cannot serve on_damage='skip'"
    ):
        tfe.Index.load(path, on_damage="skip")
    with pytest.raises(tfe.IndexFormatError):
        tfe.Index.open(path, on_damage="skip", rebuild=False)
    # open rebuilds under "skip" and replaces the sidecar with one that serves both.
    assert len(tfe.Index.open(path, on_damage="skip", on_damage_report=got.append)) == 7
    assert (
        tfe.Index.load(path, on_damage="stop", on_damage_report=got.append).damage_policy == "stop"
    )
    with pytest.raises(tfe.IndexFormatError, match=r"lists 1 damaged region\(s\)"):
        tfe.Index.load(path)
    # Under "raise" a damaged sidecar is not used: the file is indexed again, which fails.
    with pytest.raises(tfe.CorruptedRecordError, match="record 5"):
        tfe.Index.open(path)
    assert tfe.Index.load(path, on_damage="skip", on_damage_report=got.append).damage


def test_repaired_file_gets_a_clean_index(tmp_path: Path) -> None:
    blob = framing.frame_many(RECORDS)
    path = write_framed(tmp_path / "r.tfrecord", Damage("flip", SPANS[1][0], b"\x01").apply(blob))
    tfe.Index.open(path, on_damage="skip", on_damage_report=_ignore)
    Path(path).write_bytes(blob)  # repaired: same size, new fingerprint
    idx = tfe.Index.open(path)
    assert len(idx) == len(RECORDS)
    assert idx.damage == ()
    assert _version(Path(cache_index_path(path)).read_bytes()) == FORMAT_VERSION


def test_damaged_sidecar_goes_stale(tmp_path: Path) -> None:
    path = _damaged(tmp_path, Damage("truncate", SPANS[-1][1] - 2))
    tfe.Index.open(path, on_damage="stop", on_damage_report=_ignore)
    with open(path, "ab") as f:
        f.write(b"xx")
    with pytest.raises(tfe.StaleIndexError):
        tfe.Index.load(path, on_damage="stop")


def test_foreign_damage_list_is_stale(tmp_path: Path) -> None:
    # Records plus damaged regions must cover the file exactly.
    path = _damaged(tmp_path, Damage("truncate", SPANS[-1][1] - 2))
    idx = tfe.Index.build(path, on_damage="stop", on_damage_report=_ignore)
    d = idx.damage[0]
    short = tfe.DamageReport(d.path, d.record_index, d.offset, 1, d.reason)
    bad = tfe.Index(
        path,
        idx.offsets,
        idx.lengths,
        data_size=idx.data_size,
        fingerprint=idx.fingerprint,
        damage=[short],
        damage_policy="stop",
    )
    with pytest.raises(tfe.StaleIndexError, match="records end at byte"):
        bad.validate()


def test_damage_needs_a_policy() -> None:
    report = tfe.DamageReport("x", 0, 0, 1, "bad")
    with pytest.raises(tfe.InvalidArgumentError, match="damage_policy"):
        tfe.Index("x", [], [], data_size=1, fingerprint=0, damage=[report])


def _resealed(body: bytes) -> bytes:
    return body + struct.pack("<I", framing.mask_crc(framing.crc32c(body)))


def _v2_body(section: bytes) -> bytes:
    head = struct.pack("<8sIIQQQQ", b"TFEIDX\r\n", DAMAGE_FORMAT_VERSION, 0, 17, 0, 1, 0)
    return head + struct.pack("<QQ", 0, 1) + section


@pytest.mark.parametrize(
    ("section", "match"),
    [
        (b"", "damage section cut short"),
        (struct.pack("<II", 3, 1), "bad damage section header"),
        (struct.pack("<II", 2, 0), "bad damage section header"),
        (struct.pack("<II", 2, 1) + b"\0" * 8, "damage entry cut short"),
        (struct.pack("<II", 2, 1) + struct.pack("<QQqI", 0, 0, 1, 9) + b"ab", "bad damage entry"),
        (struct.pack("<II", 2, 1) + struct.pack("<QQqI", 0, 0, -2, 0), "bad damage entry"),
        (struct.pack("<II", 2, 1) + struct.pack("<QQqI", 0, 0, -1, 1) + b"ab", "bytes after"),
    ],
)
def test_bad_damage_sections(section: bytes, match: str) -> None:
    with pytest.raises(tfe.IndexFormatError, match=match):
        tfe.Index.from_bytes(_resealed(_v2_body(section)), "x")


def test_good_damage_section_parses() -> None:
    section = struct.pack("<II", 1, 1) + struct.pack("<QQqI", 1, 17, -1, 3) + b"bad"
    idx = tfe.Index.from_bytes(_resealed(_v2_body(section)), "x")
    assert idx.damage == (tfe.DamageReport("x", 1, 17, None, "bad"),)
    assert idx.damage_policy == "stop"


def test_unknown_version_names_every_known_one() -> None:
    head = struct.pack("<8sIIQQQQ", b"TFEIDX\r\n", 4, 0, 0, 0, 0, 0)
    with pytest.raises(tfe.IndexFormatError, match="versions 1, 2 and 3"):
        tfe.Index.from_bytes(_resealed(head), "x")


@given(case=damaged_files())
def test_open_under_every_policy_agrees_with_the_reader(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[list[bytes], bytes]
) -> None:
    _, blob = case
    path = write_framed(tmp_path_factory.mktemp("o") / "o.tfrecord", blob)
    for policy in ("skip", "stop", "skip", "raise"):
        want, want_reports = _reader(path, "", policy) if policy != "raise" else ([], [])
        got: list[tfe.DamageReport] = []
        try:
            idx = tfe.Index.open(path, on_damage=policy, on_damage_report=got.append)
        except tfe.DataLossError:
            assert policy == "raise"
            continue
        if policy != "raise":
            assert _records_of(idx) == want
            assert got == want_reports
