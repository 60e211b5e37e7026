"""``tfr reshard`` (order, global shuffle, compression) and ``tfr repair``."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tests.cli.helpers import invoke, mnist_like, write_examples
from tfrecord_engine.records import framing
from tfrecord_engine.testing.damage import Damage, damages, record_spans
from tfrecord_engine.testing.records import record_lists


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def inputs(cwd: Path) -> list[bytes]:
    records = write_examples("in-0.tfrecord", mnist_like(50))
    records += write_examples("in-1.tfrecord.gz", mnist_like(30, 50), "GZIP", index=True)
    return records


def _all(pattern: str, compression: str = "") -> list[bytes]:
    return [r for p in sorted(Path().glob(pattern)) for r in tfe.read_records(p, compression)]


def test_reshard_keeps_order_and_recompresses(inputs: list[bytes]) -> None:
    result = invoke("reshard", "in-*", "-o", "out/r", "--shards", "3", "--compression", "zlib")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "out/r-00000-of-00003.tfrecord.zz: 26 records",
        "out/r-00001-of-00003.tfrecord.zz: 27 records",
        "out/r-00002-of-00003.tfrecord.zz: 27 records",
    ]
    assert _all("out/r-*.zz", "ZLIB") == inputs
    assert len(tfe.RecordDataset("out/r-*.zz", compression="ZLIB")) == 80  # indexes are valid


def test_reshard_shuffle_is_a_seeded_permutation(inputs: list[bytes]) -> None:
    # Shuffling needs one input compression: decompress the GZIP input first.
    assert invoke("reshard", "in-1.tfrecord.gz", "-o", "plain", "--shards", "1").exit_code == 0
    paths = ["in-0.tfrecord", "plain-00000-of-00001.tfrecord"]
    for name, seed in (("a", "1"), ("b", "1"), ("c", "2")):
        result = invoke("reshard", *paths, "-o", name, "--shards", "2", "--shuffle", "--seed", seed)
        assert result.exit_code == 0, result.output
    a, b, c = _all("a-*.tfrecord"), _all("b-*.tfrecord"), _all("c-*.tfrecord")
    assert sorted(a) == sorted(inputs)
    assert a == b
    assert a != c
    assert a != inputs


def test_reshard_refuses_mixed_compression_shuffle_and_overwrites(inputs: list[bytes]) -> None:
    mixed = invoke("reshard", "in-*", "-o", "x", "--shuffle")
    assert mixed.exit_code == 2
    assert "one compression" in mixed.stderr
    write_examples("same-00000-of-00001.tfrecord", mnist_like(2))
    clash = invoke("reshard", "same-00000-of-00001.tfrecord", "-o", "./same")
    assert clash.exit_code == 2
    assert "would replace an input" in clash.stderr


def test_repair_keeps_every_intact_record(cwd: Path) -> None:
    records = [bytes([i]) * 40 for i in range(5)]
    spans = record_spans(records)
    blob = Damage("flip", spans[2][0] + 30, b"\x04").apply(framing.frame_many(records))
    Path("d.tfrecord").write_bytes(blob)
    result = invoke("repair", "d.tfrecord")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"d.tfrecord: record 2 at offset {spans[2][0]}: data CRC mismatch")
    assert lines[1] == "d.repaired.tfrecord: 4 records kept, 1 damaged region(s), 56 bytes lost"
    assert list(tfe.read_records("d.repaired.tfrecord")) == records[:2] + records[3:]
    doc = json.loads(invoke("repair", "--json", "d.tfrecord", "-o", "e.tfrecord").stdout)
    assert doc["files"][0]["records_kept"] == 4
    assert doc["files"][0]["damages"][0]["offset"] == spans[2][0]


def test_repair_of_a_damaged_gzip_file_keeps_the_records_before_the_damage(cwd: Path) -> None:
    # (Mostly random bytes: the stream spans several 256 KiB reads, and the records
    # of the reads before the damaged one are kept.)
    records = [bytes([i % 251]) * 60 + os.urandom(300) for i in range(2000)]
    with tfe.TFRecordWriter("g.tfrecord.gz", "GZIP") as w:
        w.write_many(records)
    blob = bytearray(Path("g.tfrecord.gz").read_bytes())
    blob[len(blob) // 2 : len(blob) // 2 + 3] = b"\x00\x00\x00"
    Path("g.tfrecord.gz").write_bytes(bytes(blob))
    result = invoke("repair", "g.tfrecord.gz")
    assert result.exit_code == 0
    summary = result.stdout.splitlines()[-1]
    kept = int(summary.split(": ")[1].split()[0])
    assert 0 < kept < len(records)
    assert summary.endswith("an unknown number of bytes lost")
    assert list(tfe.read_records("g.repaired.tfrecord.gz")) == records[:kept]
    doc = json.loads(invoke("repair", "--json", "g.tfrecord.gz", "-o", "h.tfrecord.gz").stdout)
    assert doc["files"][0]["records_kept"] == kept
    assert doc["files"][0]["bytes_lost"] is None


def test_repair_of_a_clean_gzip_file_and_output_dir(cwd: Path) -> None:
    write_examples("c.tfrecord.gz", mnist_like(3), "GZIP")
    result = invoke("repair", "--output-dir", "fixed", "--index", "c.tfrecord.gz")
    assert result.stdout == "fixed/c.tfrecord.gz: 3 records kept, no damage\n"
    assert len(tfe.Index.load("fixed/c.tfrecord.gz")) == 3


def test_repair_never_overwrites_its_input(cwd: Path) -> None:
    write_examples("c.tfrecord", mnist_like(1))
    result = invoke("repair", "c.tfrecord", "-o", "./c.tfrecord")
    assert result.exit_code == 2
    assert "refusing to overwrite" in result.stderr


@given(records=record_lists(max_records=6, max_size=64), data=st.data())
def test_repair_equals_the_skipping_reader(records: list[bytes], data: st.DataObject) -> None:
    blob = framing.frame_many(records)
    if blob:
        blob = data.draw(damages(len(blob))).apply(blob)
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp, "x.tfrecord"), Path(tmp, "y.tfrecord")
        src.write_bytes(blob)
        result = invoke("repair", str(src), "-o", str(dst), "--json")
        assert result.exit_code == 0, result.output
        reports: list[tfe.DamageReport] = []
        expected = list(tfe.read_records(src, on_damage="skip", on_damage_report=reports.append))
        assert list(tfe.read_records(dst)) == expected
    doc = json.loads(result.stdout)["files"][0]
    assert [d["offset"] for d in doc["damages"]] == [r.offset for r in reports]
