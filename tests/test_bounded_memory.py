"""Memory follows the data, not what a length field claims; ``max_record_bytes``.

A compressed record whose header claims 3 GiB over a decompression bomb of zeros (a
few hundred KiB of GZIP/ZLIB that inflate to 512 MiB) must end in a located
:class:`TruncatedRecordError` with memory flat. Each case runs in a child process under
an address-space limit (``RLIMIT_AS``), as the report that found it did: before the fix
the reader gathered everything the stream held and died with ``MemoryError``.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.records import framing

CLAIM = 3 << 30  # what the header says
ZEROS = 512 << 20  # what the stream really holds after it
LIMIT = 1 << 30  # the child's address space: its baseline is ~350 MB
GROWTH = 160 << 20  # peak resident memory a case may add over the child's baseline


def bomb(path: Path, wbits: int, claim: int = CLAIM, zeros: int = ZEROS) -> None:
    """A stream: one good record, then a header claiming ``claim`` bytes, then zeros."""
    comp = zlib.compressobj(9, zlib.DEFLATED, wbits)
    header = struct.pack("<Q", claim)
    with open(path, "wb") as f:
        f.write(comp.compress(framing.frame(b"first")))
        f.write(comp.compress(header + struct.pack("<I", framing.mask_crc(framing.crc32c(header)))))
        block = bytes(1 << 20)
        for _ in range(zeros >> 20):
            f.write(comp.compress(block))
        f.write(comp.flush())


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bombs")
    out = {"GZIP": d / "bomb.tfrecord.gz", "ZLIB": d / "bomb.tfrecord.zz"}
    bomb(out["GZIP"], 31)
    bomb(out["ZLIB"], 15)
    return out


_CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
import tfrecord_engine as tfe
path, kind = sys.argv[1], sys.argv[2]
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10
result = {{}}
try:
{body}
except MemoryError:
    result["error"] = "MemoryError"
except tfe.DataLossError as exc:
    result["error"] = type(exc).__name__
    result["where"] = [exc.record_index, exc.offset]
    result["message"] = str(exc)
result["growth"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10) - base
print(json.dumps(result))
"""


def run_child(body: str, path: Path, kind: str) -> dict[str, object]:
    code = _CHILD.format(limit=LIMIT, body=textwrap.indent(textwrap.dedent(body), "    "))
    done = subprocess.run(
        [sys.executable, "-c", code, str(path), kind],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("kind", ["GZIP", "ZLIB"])
@pytest.mark.parametrize(
    "api",
    [
        "result['n'] = sum(1 for _ in tfe.read_records(path, kind))",
        "tfe.Index.build(path, kind)",
        "tfe.RecordDataset(path, compression=kind)[0]",
    ],
    ids=["read_records", "Index.build", "RecordDataset"],
)
def test_a_lying_compressed_length_raises_with_memory_flat(
    bombs: dict[str, Path], kind: str, api: str
) -> None:
    result = run_child(api, bombs[kind], kind)
    assert result.get("error") == "TruncatedRecordError", result
    # The second record (index 1) starts after the first one's 21 framed bytes.
    assert result["where"] == [1, 21]
    assert f"header announces {CLAIM} data bytes" in str(result["message"])
    assert f"the stream ends after {ZEROS}" in str(result["message"])
    assert int(str(result["growth"])) < GROWTH, result


@pytest.mark.parametrize("kind", ["GZIP", "ZLIB"])
def test_skip_steps_over_the_lie_and_reports_it(bombs: dict[str, Path], kind: str) -> None:
    body = """
    reports = []
    records = list(tfe.read_records(path, kind, on_damage="skip", on_damage_report=reports.append))
    result["records"] = [r.decode() for r in records]
    result["reports"] = [[r.record_index, r.offset, r.bytes_skipped] for r in reports]
    """
    result = run_child(body, bombs[kind], kind)
    assert "error" not in result, result
    assert result["records"] == ["first"]
    assert result["reports"] == [[1, 21, ZEROS + 12]]
    assert int(str(result["growth"])) < GROWTH, result


@pytest.mark.parametrize("kind", ["GZIP", "ZLIB"])
def test_the_cli_says_truncated_not_memory_error(bombs: dict[str, Path], kind: str) -> None:
    for command in (["count"], ["verify"]):
        code = (
            f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({LIMIT}, {LIMIT}));"
            "from tfrecord_engine.cli.app import main; main()"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, *command, str(bombs[kind])],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 1, done.stderr
        assert "MemoryError" not in done.stderr + done.stdout
        assert "record 1 at offset 21" in done.stderr + done.stdout
        assert f"header announces {CLAIM} data bytes" in done.stderr + done.stdout


def test_a_real_large_compressed_record_is_still_read(tmp_path: Path) -> None:
    # Above the look-ahead threshold the record is checked to be all there, then read
    # for good from a snapshot of the decompressor: same bytes, nothing lost.
    big = os.urandom(1 << 16) * (80 << 4)  # 80 MiB
    path = tmp_path / "big.tfrecord.gz"
    with tfe.TFRecordWriter(path, "GZIP") as w:
        w.write_many([b"a", big, b"z"])
    got = list(tfe.read_records(path, "GZIP"))
    assert got == [b"a", big, b"z"]


def test_a_pipe_cannot_look_ahead_but_still_ends_located(tmp_path: Path) -> None:
    # A compressed stream that cannot seek back is read for good: memory then follows
    # the bytes that really arrive (small here), and the error is the same.
    path = tmp_path / "small-bomb.gz"
    bomb(path, 31, claim=1 << 40, zeros=8 << 20)
    with open(path, "rb") as f:
        data = f.read()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child writes the pipe and exits
        os.close(r)
        os.write(w, data)
        os._exit(0)
    os.close(w)
    with open(r, "rb") as stream, pytest.raises(tfe.TruncatedRecordError) as err:
        list(tfe.read_records(stream, "GZIP"))
    os.waitpid(pid, 0)
    assert (err.value.record_index, err.value.offset) == (1, 21)


# ---- max_record_bytes ------------------------------------------------------------------

RECORDS = [b"a" * 10, b"b" * 5000, b"c" * 20, b"d" * 6000, b"e"]


@pytest.fixture(params=["", "GZIP", "ZLIB"])
def mixed(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    kind = str(request.param)
    path = tmp_path / ("mixed.tfrecord" + {"": "", "GZIP": ".gz", "ZLIB": ".zz"}[kind])
    with tfe.TFRecordWriter(path, kind) as w:
        w.write_many(RECORDS)
    return path, kind


def test_max_record_bytes_raises_at_the_first_larger_record(mixed: tuple[Path, str]) -> None:
    path, kind = mixed
    got: list[bytes] = []
    with pytest.raises(tfe.RecordTooLargeError) as err:
        got.extend(tfe.read_records(path, kind, max_record_bytes=4096))
    assert got == RECORDS[:1]
    assert (err.value.record_index, err.value.offset) == (1, 26)
    assert "header announces 5000 data bytes, more than max_record_bytes=4096" in str(err.value)
    assert isinstance(err.value, tfe.DataLossError)
    # At the limit exactly, the record is fine.
    assert list(tfe.read_records(path, kind, max_record_bytes=6000)) == RECORDS


def test_max_record_bytes_skip_steps_over_whole_records(mixed: tuple[Path, str]) -> None:
    path, kind = mixed
    reports: list[tfe.DamageReport] = []
    got = list(
        tfe.read_records(
            path, kind, max_record_bytes=4096, on_damage="skip", on_damage_report=reports.append
        )
    )
    assert got == [RECORDS[0], RECORDS[2], RECORDS[4]]
    assert [(r.record_index, r.offset, r.bytes_skipped) for r in reports] == [
        (1, 26, 5016),
        (2, 5078, 6016),
    ]
    stop: list[tfe.DamageReport] = []
    assert list(
        tfe.read_records(
            path, kind, max_record_bytes=4096, on_damage="stop", on_damage_report=stop.append
        )
    ) == [RECORDS[0]]
    assert len(stop) == 1


def test_max_record_bytes_in_index_and_dataset(mixed: tuple[Path, str]) -> None:
    path, kind = mixed
    with pytest.raises(tfe.RecordTooLargeError):
        tfe.Index.build(path, kind, max_record_bytes=4096)
    found: list[tfe.DamageReport] = []
    idx = tfe.Index.build(
        path, kind, max_record_bytes=4096, on_damage="skip", on_damage_report=found.append
    )
    assert idx.lengths.tolist() == [10, 20, 1]
    assert [r.offset for r in found] == [26, 5078]
    # A sidecar saved without a limit still holds the large records: the dataset
    # indexes the file again under its policy.
    tfe.Index.build(path, kind).save()
    with pytest.raises(tfe.RecordTooLargeError):
        len(tfe.RecordDataset(path, compression=kind, max_record_bytes=4096))
    reports: list[tfe.DamageReport] = []
    ds = tfe.RecordDataset(
        path,
        compression=kind,
        max_record_bytes=4096,
        on_damage="skip",
        on_damage_report=reports.append,
    )
    assert list(ds) == [RECORDS[0], RECORDS[2], RECORDS[4]]
    assert len(reports) == 2
    assert list(tfe.RecordDataset(path, compression=kind)) == RECORDS


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_max_record_bytes_must_be_a_count(tmp_path: Path, bad: object) -> None:
    path = tmp_path / "a.tfrecord"
    with tfe.TFRecordWriter(path) as w:
        w.write(b"x")
    with pytest.raises(tfe.InvalidArgumentError, match="max_record_bytes"):
        list(tfe.read_records(path, max_record_bytes=bad))  # type: ignore[arg-type]
    with pytest.raises(tfe.InvalidArgumentError, match="max_record_bytes"):
        tfe.RecordDataset(path, max_record_bytes=bad)  # type: ignore[arg-type]


def test_tfr_max_record_bytes(mixed: tuple[Path, str]) -> None:
    path, _ = mixed
    from click.testing import CliRunner

    from tfrecord_engine.cli.app import cli

    runner = CliRunner()
    verify = runner.invoke(cli, ["--max-record-bytes", "4096", "verify", str(path)])
    assert verify.exit_code == 1
    assert "more than --max-record-bytes 4096" in verify.output
    assert "2 damaged regions" in verify.output
    count = runner.invoke(cli, ["--max-record-bytes", "4096", "count", str(path)])
    assert count.exit_code == 1
    assert "record 1 at offset 26" in count.output
    assert runner.invoke(cli, ["count", str(path)]).output.split()[0] == "5"


def test_the_child_limit_is_below_what_the_old_reader_needed() -> None:
    # Guards the tests above: gathering the zeros (and joining them) cannot fit.
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    assert soft == resource.RLIM_INFINITY or soft > LIMIT
    assert 2 * ZEROS > LIMIT - (350 << 20)
