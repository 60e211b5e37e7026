"""``tfr`` as users run it: a subprocess, real exit codes, stdout/stderr, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import tfrecord_engine as tfe
from tests.cli.helpers import ROOT, mnist_like, run, write_examples


@pytest.fixture
def data(tmp_path: Path) -> Path:
    write_examples(tmp_path / "a.tfrecord", mnist_like(3))
    write_examples(tmp_path / "b.tfrecord.gz", mnist_like(2, 3), "GZIP", index=True)
    return tmp_path


def test_help_documents_exit_codes(data: Path) -> None:
    done = run("--help", cwd=data)
    assert done.returncode == 0
    out = done.stdout.decode()
    for line in ("0  success", "1  damage found", "2  usage error"):
        assert line in out
    for command in ("cat", "convert", "count", "head", "index", "repair", "reshard", "schema"):
        assert f"  {command} " in out


def test_count_table_with_globs(data: Path) -> None:
    done = run("count", "a.tfrecord", "b*", cwd=data)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines() == [
        "       3  a.tfrecord",
        "       2  b.tfrecord.gz",
        "       5  total",
    ]


def test_verify_damaged_file_lists_each_damage_and_exits_1(data: Path) -> None:
    blob = bytearray((data / "a.tfrecord").read_bytes())
    size = len(blob) // 3  # three records of one size
    blob[size + 20] ^= 1  # data of record 1
    (data / "bad.tfrecord").write_bytes(bytes(blob))
    done = run("verify", "a.tfrecord", "bad.tfrecord", cwd=data)
    assert done.returncode == 1
    lines = done.stdout.decode().splitlines()
    assert lines[0].startswith(f"bad.tfrecord: record 1 at offset {size}: data CRC mismatch")
    assert lines[0].endswith(f"; {size} byte(s) not read")
    assert lines[1] == "2 files, 5 records read, 1 damaged region in 1 file"
    assert done.stderr == b""


@pytest.mark.parametrize(
    "args",
    [
        ("count", "missing.tfrecord"),
        ("verify", "nothing-*.tfrecord"),
        ("head", "missing.tfrecord"),
        ("count", "."),
    ],
)
def test_missing_paths_exit_2_with_one_line(data: Path, args: tuple[str, ...]) -> None:
    done = run(*args, cwd=data)
    assert done.returncode == 2
    err = done.stderr.decode()
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("Error: ")


def test_bad_option_is_a_usage_error(data: Path) -> None:
    done = run("head", "-n", "many", "a.tfrecord", cwd=data)
    assert done.returncode == 2
    assert b"Invalid value for '-n'" in done.stderr


def test_damaged_file_in_head_exits_1_without_traceback(data: Path) -> None:
    blob = bytearray((data / "a.tfrecord").read_bytes())
    blob[20] ^= 0x40
    (data / "bad.tfrecord").write_bytes(bytes(blob))
    done = run("head", "bad.tfrecord", cwd=data)
    assert done.returncode == 1
    err = done.stderr.decode()
    assert err.startswith("Error: damaged file: bad.tfrecord: record 0 at offset 0:")
    assert "Traceback" not in err


def test_json_lines_and_raw_stream(data: Path) -> None:
    done = run("cat", "--json", "a.tfrecord", "b.tfrecord.gz", cwd=data)
    assert done.returncode == 0
    objs = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [o["features"]["label"]["int64"] for o in objs] == [[0], [1], [2], [3], [4]]
    assert objs[3]["file"] == "b.tfrecord.gz"
    assert objs[3]["index"] == 0
    raw = run("cat", "--raw", "--range", "1:4", "a.tfrecord", "b.tfrecord.gz", cwd=data)
    assert raw.returncode == 0
    (data / "cut.tfrecord").write_bytes(raw.stdout)
    expected = list(tfe.read_records(data / "a.tfrecord"))[1:]
    expected += list(tfe.read_records(data / "b.tfrecord.gz", "GZIP"))[:1]
    assert list(tfe.read_records(data / "cut.tfrecord")) == expected


def test_closed_pipe_stops_quietly(data: Path) -> None:
    write_examples(data / "big.tfrecord", mnist_like(20000))
    cmd = [sys.executable, "-m", "tfrecord_engine.cli", "cat", "--json", "big.tfrecord"]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    with subprocess.Popen(
        cmd, cwd=data, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read()
        code = proc.wait(timeout=60)
    assert code == 141
    assert b"Traceback" not in err


def test_importing_the_package_does_not_import_click() -> None:
    code = "import sys, tfrecord_engine; print('click' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(ROOT)},
        capture_output=True,
        check=True,
    )
    assert done.stdout.strip() == b"False"


def test_convert_then_schema_round_trip(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("id,score,name\n1,0.5,cat\n2,1.5,dog\n3,,\n")
    done = run("convert", "t.csv", "-o", "out/t", "--shards", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines() == [
        "out/t-00000-of-00002.tfrecord: 1 records",
        "out/t-00001-of-00002.tfrecord: 2 records",
        "# The feature spec of these records (tfe.parse_example), shapes included:",
        "features = {",
        '    "id": tfe.FixedLenFeature([], "int64"),',
        '    "score": tfe.FixedLenFeature([], "float32", default_value=0.0),',
        '    "name": tfe.FixedLenFeature([], "string"),',
        "}",
    ]
    schema = run("schema", "out/t-*", cwd=tmp_path)
    assert schema.returncode == 0
    assert schema.stdout.decode().splitlines()[3:] == [
        "features = {",
        '    "id": tfe.FixedLenFeature([], "int64"),  # always 1 value',
        '    "name": tfe.FixedLenFeature([], "string"),  # always 1 value',
        '    "score": tfe.FixedLenFeature([], "float32", default_value=0.0),'
        "  # 1 value; in 66.7% of records; the default fills the rest",
        "}",
    ]
