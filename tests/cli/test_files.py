"""``tfr count``, ``tfr verify`` and ``tfr index`` in-process."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tests.cli.helpers import invoke, mnist_like, write_examples
from tfrecord_engine.cli.common import Progress
from tfrecord_engine.index.placement import cache_dir
from tfrecord_engine.records import framing
from tfrecord_engine.testing.damage import Damage, damages, record_spans
from tfrecord_engine.testing.records import record_lists


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_count_uses_a_valid_index_and_scans_otherwise(cwd: Path) -> None:
    write_examples("a.tfrecord", mnist_like(7), index=True)
    write_examples("b.tfrecord.zz", mnist_like(4), "ZLIB")
    result = invoke("count", "--json", "*.tfrecord*")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "files": [
            {"path": "a.tfrecord", "records": 7, "from_index": True},
            {"path": "b.tfrecord.zz", "records": 4, "from_index": False},
        ],
        "total": 11,
    }
    assert not Path("b.tfrecord.zz.tfeidx").exists()  # count writes no index
    assert not Path(".tfeidx/b.tfrecord.zz.tfeidx").exists()
    assert list(Path(cache_dir()).iterdir()) == []


def test_count_ignores_a_stale_index(cwd: Path) -> None:
    write_examples("a.tfrecord", mnist_like(3), index=True)
    with tfe.TFRecordWriter("a.tfrecord", append=True) as w:
        w.write(b"one more")
    result = invoke("count", "a.tfrecord")
    assert result.stdout == "       4  a.tfrecord\n"


def test_count_of_a_damaged_header_exits_1(cwd: Path) -> None:
    write_examples("a.tfrecord", mnist_like(3))
    Path("a.tfrecord").write_bytes(Path("a.tfrecord").read_bytes()[:-3])
    result = invoke("count", "a.tfrecord")
    assert result.exit_code == 1
    assert "a.tfrecord: record 2" in result.stderr


def test_verify_lists_every_damage_in_a_file(cwd: Path) -> None:
    records = [bytes([i]) * 50 for i in range(6)]
    spans = record_spans(records)
    blob = framing.frame_many(records)
    for k in (1, 4):  # damage the data of records 1 and 4
        blob = Damage("flip", spans[k][0] + 20, b"\x01").apply(blob)
    Path("d.tfrecord").write_bytes(blob)
    result = invoke("verify", "d.tfrecord")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert [line.split(": data CRC")[0] for line in lines[:2]] == [
        f"d.tfrecord: record 1 at offset {spans[1][0]}",
        # Records are counted as returned: after one lost record, record 4 is the 3rd.
        f"d.tfrecord: record 3 at offset {spans[4][0]}",
    ]
    assert lines[2] == "1 file, 4 records read, 2 damaged regions in 1 file"
    as_json = json.loads(invoke("verify", "--json", "d.tfrecord").stdout)
    assert as_json["ok"] is False
    assert [d["offset"] for d in as_json["files"][0]["damages"]] == [spans[1][0], spans[4][0]]
    assert [d["bytes_skipped"] for d in as_json["files"][0]["damages"]] == [66, 66]


def test_verify_clean_files(cwd: Path) -> None:
    write_examples("a.tfrecord.gz", mnist_like(5), "GZIP")
    result = invoke("verify", "a.tfrecord.gz")
    assert (result.exit_code, result.stdout) == (0, "1 file, 5 records read, no damage\n")
    assert invoke("verify", "-q", "a.tfrecord.gz").stdout == ""


@given(records=record_lists(max_records=6, max_size=64), data=st.data())
def test_verify_exit_code_matches_the_reader(records: list[bytes], data: st.DataObject) -> None:
    blob = framing.frame_many(records)
    if blob:
        blob = data.draw(damages(len(blob))).apply(blob)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "x.tfrecord")
        path.write_bytes(blob)
        try:
            list(tfe.read_records(path))
            damaged = False
        except tfe.DataLossError:
            damaged = True
        result = invoke("verify", "--json", str(path))
    assert result.exit_code == (1 if damaged else 0)
    assert json.loads(result.stdout)["ok"] is not damaged


def test_index_writes_tfe_and_dali_indexes(cwd: Path) -> None:
    write_examples("a.tfrecord", mnist_like(3))
    result = invoke("index", "a.tfrecord")
    assert result.stdout == ".tfeidx/a.tfrecord.tfeidx: 3 records\n"
    idx = tfe.Index.load("a.tfrecord")
    result = invoke("index", "--format", "dali", "a.tfrecord")
    assert result.stdout == "a.tfindex: 3 records\n"
    text = Path("a.tfindex").read_text()
    size = int(idx.lengths[0]) + 16
    assert text == f"0 {size}\n{size} {size}\n{2 * size} {size}\n"
    back = tfe.Index.from_text("a.tfindex", "a.tfrecord")
    assert np.array_equal(back.offsets, idx.offsets)
    # The text index is not mistaken for data by a glob.
    assert invoke("count", "a.*").stdout == "       3  a.tfrecord\n"


def test_index_output_and_errors(cwd: Path) -> None:
    write_examples("a.tfrecord", mnist_like(2))
    write_examples("b.tfrecord.gz", mnist_like(2), "GZIP")
    assert invoke("index", "-o", "x.idx", "a.tfrecord").exit_code == 0
    assert len(tfe.Index.load("a.tfrecord", "x.idx")) == 2
    assert invoke("index", "-o", "x.idx", "a.tfrecord", "b.tfrecord.gz").exit_code == 2
    result = invoke("index", "--format", "dali", "b.tfrecord.gz")
    assert result.exit_code == 2
    assert "uncompressed files only" in result.stderr
    assert not Path("b.tfrecord.gz.tfindex").exists()  # no empty index left behind


def test_colour_only_when_asked_and_never_with_no_color(cwd: Path) -> None:
    write_examples("a.tfrecord", mnist_like(2))
    assert "\x1b[" in invoke("--color", "verify", "a.tfrecord", color=True).stdout
    plain = invoke("verify", "a.tfrecord", env={"NO_COLOR": "1"}, color=True).stdout
    assert "\x1b[" not in plain
    assert "\x1b[" not in invoke("verify", "a.tfrecord").stdout


def test_forced_progress_keeps_stdout_clean(cwd: Path) -> None:
    write_examples("a.tfrecord", mnist_like(3))
    quiet = invoke("--no-progress", "verify", "a.tfrecord")
    loud = invoke("--progress", "verify", "a.tfrecord")
    assert loud.exit_code == quiet.exit_code == 0
    assert loud.stdout == quiet.stdout
    assert quiet.stderr == ""


def test_progress_updates_are_batched() -> None:
    class Bar:
        def __init__(self) -> None:
            self.steps: list[int] = []

        def update(self, n: int) -> None:
            self.steps.append(n)

    bar = Bar()
    p = Progress(bar)
    for _ in range(5):
        p.update(1, flush_every=2)
    p.finish()
    assert bar.steps == [2, 2, 1]
    Progress(None).update(3)  # a disabled bar ignores updates


def test_index_keeps_a_valid_sidecar_with_restart_points(cwd: Path) -> None:
    with tfe.TFRecordWriter("z.tfrecord.gz", "GZIP", index=True, index_flush_every=2) as w:
        w.write_many([b"r%d" % i for i in range(6)])
    assert len(tfe.Index.load("z.tfrecord.gz").restarts) > 0
    result = invoke("index", "z.tfrecord.gz")
    assert result.stdout == ".tfeidx/z.tfrecord.gz.tfeidx: 6 records (valid, kept)\n"
    assert len(tfe.Index.load("z.tfrecord.gz").restarts) > 0
    forced = invoke("index", "--force", "z.tfrecord.gz")
    assert forced.stdout == ".tfeidx/z.tfrecord.gz.tfeidx: 6 records\n"
    assert len(tfe.Index.load("z.tfrecord.gz").restarts) == 0


def test_index_replaces_a_stale_sidecar(cwd: Path) -> None:
    write_examples("a.tfrecord", mnist_like(2), index=True)
    with tfe.TFRecordWriter("a.tfrecord", append=True) as w:
        w.write(b"more")
    assert invoke("index", "a.tfrecord").stdout == ".tfeidx/a.tfrecord.tfeidx: 3 records\n"
    assert len(tfe.Index.load("a.tfrecord")) == 3


def test_compression_is_recognised_from_the_bytes_not_the_name(cwd: Path) -> None:
    write_examples("gz-named-plain.tfrecord", mnist_like(3), "GZIP")
    write_examples("plain-named.gz", mnist_like(2))
    with tfe.TFRecordWriter("beam.deflate", "ZLIB") as w:
        w.write_many([b"a", b"b", b"c", b"d"])
    result = invoke("count", "--json", "gz-named-plain.tfrecord", "plain-named.gz", "beam.deflate")
    assert result.exit_code == 0, result.output
    assert [f["records"] for f in json.loads(result.stdout)["files"]] == [3, 2, 4]
    assert invoke("verify", "gz-named-plain.tfrecord").exit_code == 0
    assert invoke("index", "gz-named-plain.tfrecord").exit_code == 0
    assert tfe.Index.load("gz-named-plain.tfrecord").compression is tfe.Compression.GZIP
    write_examples("fresh.tfrecord", mnist_like(3), "GZIP")  # no index to count from
    wrong = invoke("verify", "-c", "none", "fresh.tfrecord")
    assert wrong.exit_code == 1
    assert "GZIP magic (1f 8b); pass -c gzip or -c auto" in wrong.stdout


def _screen(raw: str) -> list[str]:
    """The lines a terminal shows for ``raw`` (carriage returns overwrite, escape
    sequences are dropped)."""
    import re

    lines: list[str] = []
    for text in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw).replace("\r\n", "\n").split("\n"):
        row: list[str] = []
        col = 0
        for ch in text:
            if ch == "\r":
                col = 0
                continue
            row[col : col + 1] = [ch]
            col += 1
        lines.append("".join(row).rstrip())
    return lines


@pytest.mark.skipif(not hasattr(__import__("os"), "openpty"), reason="needs a pseudo-terminal")
def test_verify_on_a_terminal_prints_damage_on_its_own_line(cwd: Path) -> None:
    import os
    import subprocess
    import sys

    from tests.cli.helpers import ROOT

    with tfe.TFRecordWriter("a.tfrecord") as w:
        w.write_many([b"x" * 100] * 5)
    with open("a.tfrecord", "r+b") as f:
        f.seek(20)
        f.write(b"\0\0\0")
    master, slave = os.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "100"}
    proc = subprocess.Popen(  # stdout and stderr on one terminal, as a user sees them
        [sys.executable, "-m", "tfrecord_engine.cli", "verify", "a.tfrecord"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal (EIO on Linux)
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=60) == 1
    raw = b"".join(chunks).decode()
    assert "verifying" in raw  # the bar was drawn: this is the terminal path
    damage = "a.tfrecord: record 0 at offset 0: data CRC mismatch"
    shown = _screen(raw)
    starts = [line for line in shown if damage in line]
    assert len(starts) == 1, shown
    assert starts[0].startswith(damage), shown
    assert any(line.startswith("1 file, 4 records read") for line in shown), shown
