"""A damaged GZIP/ZLIB stream keeps every record inflated before the damage.

zlib drops the output of the call that meets damage; the decompressor inflates the
same input again in small steps, so the records before the damage (intact: their CRCs
say so) are returned, under every policy, before the error or the report.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.records import framing


def _records() -> list[bytes]:
    rng = np.random.default_rng(7)
    return [tfe.encode_example({"i": [i], "t": [rng.bytes(40) + b"abc" * 20]}) for i in range(2000)]


def _intact_prefix(blob: bytes, wbits: int, records: list[bytes]) -> int:
    """How many records an inflater fed one byte at a time recovers, CRC-checked."""
    dec = zlib.decompressobj(wbits)
    out = bytearray()
    for i in range(len(blob)):
        try:
            out += dec.decompress(blob[i : i + 1])
        except zlib.error:  # noqa: PERF203 - stops at the damage
            break
    n = pos = 0
    while pos + 12 <= len(out):
        (length,) = np.frombuffer(bytes(out[pos : pos + 8]), "<u8")
        end = pos + 12 + int(length) + 4
        if end > len(out) or bytes(out[pos:end]) != framing.frame(records[n]):
            break
        n += 1
        pos = end
    return n


@pytest.mark.parametrize(("kind", "wbits"), [("GZIP", 31), ("ZLIB", 15)])
@pytest.mark.parametrize("at", [20_000, 60_000, 90_000])
def test_records_before_deflate_damage_are_kept(
    tmp_path: Path, kind: str, wbits: int, at: int
) -> None:
    records = _records()
    path = tmp_path / "d.tfrecord"
    with tfe.TFRecordWriter(path, kind) as w:
        w.write_many(records)
    blob = bytearray(path.read_bytes())
    blob[at : at + 3] = b"\x00\x00\x00"
    path.write_bytes(blob)
    want = _intact_prefix(bytes(blob), wbits, records)
    assert want > 0

    reports: list[tfe.DamageReport] = []
    got = list(tfe.read_records(path, kind, on_damage="skip", on_damage_report=reports.append))
    assert got == records[:want]
    assert len(reports) == 1
    assert reports[0].record_index == want

    kept: list[bytes] = []
    with pytest.raises(tfe.DataLossError) as err:
        kept.extend(tfe.read_records(path, kind))
    assert kept == records[:want]
    assert err.value.record_index == want
