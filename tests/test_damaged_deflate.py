"""A damaged GZIP/ZLIB stream keeps the records inflated before the damage, and never
returns what the damaged stream inflated.

zlib inflates damaged input to garbage for a while before it notices; that garbage may
copy whole earlier frames, CRCs and all, through back-references (a 1-bit flip made a
record that was never written). So the output of the inflate call that meets the damage
is dropped: the records inflated by earlier calls (input read 256 KiB at a time) are
returned, under every policy, before the error or the report; the rest are lost, as in
TensorFlow, whose reader fails the whole buffered read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.records import framing
from tfrecord_engine.records.compression import READ_CHUNK


def _records() -> list[bytes]:
    rng = np.random.default_rng(7)
    # (Mostly incompressible: the compressed file spans several 256 KiB reads.)
    return [tfe.encode_example({"i": [i], "t": [rng.bytes(120) + b"abc" * 5]}) for i in range(8000)]


@pytest.mark.parametrize("kind", ["GZIP", "ZLIB"])
@pytest.mark.parametrize("at", [20_000, 300_000, 600_000])
def test_records_before_deflate_damage_are_kept(tmp_path: Path, kind: str, at: int) -> None:
    records = _records()
    path = tmp_path / "d.tfrecord"
    with tfe.TFRecordWriter(path, kind) as w:
        w.write_many(records)
    blob = bytearray(path.read_bytes())
    assert len(blob) > at + READ_CHUNK
    blob[at : at + 3] = b"\x00\x00\x00"
    path.write_bytes(blob)

    reports: list[tfe.DamageReport] = []
    got = list(tfe.read_records(path, kind, on_damage="skip", on_damage_report=reports.append))
    want = len(got)
    assert got == records[:want]  # (a prefix: nothing made up, nothing repeated)
    # Every record inflated from the reads before the damaged one is there.
    assert sum(len(framing.frame(r)) for r in got) > (at // READ_CHUNK) * READ_CHUNK
    assert len(reports) == 1
    assert reports[0].record_index == want

    kept: list[bytes] = []
    with pytest.raises(tfe.DataLossError) as err:
        kept.extend(tfe.read_records(path, kind))
    assert kept == records[:want]
    assert err.value.record_index == want
