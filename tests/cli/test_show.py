"""``tfr head`` and ``tfr cat``: text, JSON, bytes modes, ranges, raw output."""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tests.cli.helpers import invoke, mnist_like, write_examples
from tfrecord_engine.cli.show import parse_range
from tfrecord_engine.testing.tables import slice_bounds


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_head_text_golden(cwd: Path) -> None:
    write_examples(
        "a.tfrecord",
        [
            {
                "image": b"\x00\x01\xff",
                "label": 7,
                "name": "cat",
                "x": np.array([0.1, 2], np.float32),
            }
        ],
    )
    result = invoke("head", "a.tfrecord")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "a.tfrecord[0]: Example, 4 features",
        "  image: bytes[1] b64:AAH/",
        "  label: int64[1] 7",
        '  name: bytes[1] "cat"',
        "  x: float[2] 0.1 2.0",
    ]
    hexed = invoke("head", "--bytes", "hex", "a.tfrecord").stdout.splitlines()
    assert hexed[1] == "  image: bytes[1] hex:0001ff"
    assert hexed[3] == "  name: bytes[1] hex:636174"


def test_head_shortens_long_values_visibly_unless_full(cwd: Path) -> None:
    write_examples("a.tfrecord", [{"v": np.arange(40)}])
    line = invoke("head", "a.tfrecord").stdout.splitlines()[1]
    assert line == "  v: int64[40] " + " ".join(map(str, range(16))) + " ... (40 values)"
    full = invoke("head", "--full", "a.tfrecord").stdout.splitlines()[1]
    assert full == "  v: int64[40] " + " ".join(map(str, range(40)))


def test_json_bytes_modes(cwd: Path) -> None:
    write_examples("a.tfrecord", [{"b": [b"ok", b"\xff\x00", b""], "f": [np.inf, -1.5]}])
    auto = json.loads(invoke("head", "--json", "a.tfrecord").stdout)
    assert auto == {
        "file": "a.tfrecord",
        "index": 0,
        "features": {
            "b": {"bytes": ["ok", {"base64": "/wA="}, ""]},
            "f": {"float": ["Infinity", -1.5]},
        },
    }
    b64 = json.loads(invoke("head", "--json", "--bytes", "base64", "a.tfrecord").stdout)
    assert b64["features"]["b"] == {"bytes": ["b2s=", "/wA=", ""]}
    hexed = json.loads(invoke("head", "--json", "--bytes", "hex", "a.tfrecord").stdout)
    assert hexed["features"]["b"] == {"bytes": ["6f6b", "ff00", ""]}


@given(values=st.lists(st.binary(max_size=8), max_size=4))
def test_json_bytes_round_trip(values: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp, "a.tfrecord"))
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        write_examples(path, [{"b": arr}])
        got = json.loads(invoke("head", "--json", path).stdout)["features"]["b"]["bytes"]
    back = [base64.b64decode(v["base64"]) if isinstance(v, dict) else v.encode() for v in got]
    assert back == values


def test_sequence_examples_are_detected(cwd: Path) -> None:
    records = [tfe.encode_sequence_example({"n": 2}, {"tok": [[1, 2], [3]], "w": [[0.5]]})]
    with tfe.TFRecordWriter("s.tfrecord") as w:
        w.write_many(records)
    assert invoke("head", "s.tfrecord").stdout.splitlines() == [
        "s.tfrecord[0]: SequenceExample, 1 context features, 2 feature lists",
        "  context n: int64[1] 2",
        "  list tok: 2 steps",
        "    [0] int64[2] 1 2",
        "    [1] int64[1] 3",
        "  list w: 1 steps",
        "    [0] float[1] 0.5",
    ]
    obj = json.loads(invoke("head", "--json", "s.tfrecord").stdout)
    assert obj["context"] == {"n": {"int64": [2]}}
    assert obj["feature_lists"]["tok"] == [{"int64": [1, 2]}, {"int64": [3]}]
    # --example reads the same bytes as an Example: the context only.
    forced = json.loads(invoke("head", "--json", "--example", "s.tfrecord").stdout)
    assert forced["features"] == {"n": {"int64": [2]}}


def test_not_an_example_exits_1_and_raw_still_works(cwd: Path) -> None:
    with tfe.TFRecordWriter("r.tfrecord") as w:
        w.write_many([b"\xff\xff\xff", b"plain"])
    result = invoke("head", "r.tfrecord")
    assert result.exit_code == 1
    assert "r.tfrecord: record 0: not a tf.train.Example" in result.stderr
    assert "--raw" in result.stderr
    payload = invoke("cat", "--payload", "r.tfrecord")
    assert payload.stdout_bytes == b"\xff\xff\xffplain"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2:5", (2, 5)),
        (":3", (None, 3)),
        ("4:", (4, None)),
        ("-2:", (-2, None)),
        ("-1", (-1, None)),
    ],
)
def test_parse_range(text: str, expected: tuple[int | None, int | None]) -> None:
    assert parse_range(text) == expected


def test_bad_range_is_a_usage_error(cwd: Path) -> None:
    write_examples("a.tfrecord", mnist_like(1))
    for bad in ("1:2:3", "a:b", "x"):
        result = invoke("cat", "--range", bad, "a.tfrecord")
        assert result.exit_code == 2
        assert "--range" in result.stderr


@given(bounds=slice_bounds(9), indexed=st.sampled_from(["none", "first", "all"]))
def test_cat_range_is_a_slice_across_files(
    bounds: tuple[int | None, int | None], indexed: str
) -> None:
    start, stop = bounds
    with tempfile.TemporaryDirectory() as tmp:
        paths = [str(Path(tmp, f"p{k}.tfrecord")) for k in range(3)]
        records: list[bytes] = []
        for k, (path, n) in enumerate(zip(paths, [4, 0, 5], strict=True)):
            index = indexed == "all" or (indexed == "first" and k == 0)
            records += write_examples(path, mnist_like(n, len(records)), index=index)
        span = f"{'' if start is None else start}:{'' if stop is None else stop}"
        result = invoke("cat", f"--range={span}", "--raw", *paths)
        assert result.exit_code == 0, result.stderr
        out = Path(tmp, "out.tfrecord")
        out.write_bytes(result.stdout_bytes)
        assert list(tfe.read_records(out)) == records[start:stop]


def test_head_reads_across_files_in_order(cwd: Path) -> None:
    write_examples("a.tfrecord", mnist_like(2))
    write_examples("b.tfrecord", mnist_like(3, 2), index=True)
    result = invoke("head", "-n", "4", "--json", "a.tfrecord", "b.tfrecord")
    got = [(o["file"], o["index"]) for o in map(json.loads, result.stdout.splitlines())]
    assert got == [("a.tfrecord", 0), ("a.tfrecord", 1), ("b.tfrecord", 0), ("b.tfrecord", 1)]
    assert invoke("head", "-n", "0", "a.tfrecord").stdout == ""


def test_cat_range_reads_indexed_files_by_random_access(
    cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = write_examples("a.tfrecord", mnist_like(50), index=True)

    def no_scan(*args: object, **kwargs: object) -> None:
        raise AssertionError("an indexed file was read sequentially")

    monkeypatch.setattr("tfrecord_engine.cli.show.read_records", no_scan)
    result = invoke("cat", "--range", "40:42", "--payload", "a.tfrecord")
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == records[40] + records[41]


def test_cat_follow_prints_each_record_as_a_writer_appends_it(cwd: Path) -> None:
    import os
    import subprocess
    import sys

    from tests.cli.helpers import ROOT

    rows = mnist_like(3)
    writer = tfe.TFRecordWriter("live.tfrecord", atomic=False)
    writer.write(tfe.encode_example(rows[0]))
    writer.flush()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    args = ["cat", "--follow", "--json", "--poll-interval", "0.02", "--idle-timeout", "3"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfrecord_engine.cli", *args, "live.tfrecord"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    try:
        seen = [json.loads(proc.stdout.readline())["index"]]
        for row in rows[1:]:  # each line comes while the writer is still open
            writer.write(tfe.encode_example(row))
            writer.flush()
            seen.append(json.loads(proc.stdout.readline())["index"])
        writer.close()
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        proc.kill()
        proc.communicate()
    assert seen == [0, 1, 2]


def test_cat_follow_reports_a_tail_still_torn_and_refuses_what_it_cannot_follow(
    cwd: Path,
) -> None:
    records = write_examples("a.tfrecord", mnist_like(2))
    Path("torn.tfrecord").write_bytes(Path("a.tfrecord").read_bytes()[:-5])
    result = invoke("cat", "-f", "--raw", "--poll-interval", "0.01", "--idle-timeout", "0.1")
    assert result.exit_code == 2  # no file given
    result = invoke(
        "cat", "-f", "--payload", "--poll-interval", "0.01", "--idle-timeout", "0.1", "a.tfrecord"
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == b"".join(records)
    result = invoke(
        "cat", "-f", "--json", "--poll-interval", "0.01", "--idle-timeout", "0.1", "torn.tfrecord"
    )
    assert result.exit_code != 0
    assert len(result.stdout.splitlines()) == 1
    assert "truncated record" in result.stderr
    for extra in (["--range", "1:"], ["a.tfrecord"]):
        result = invoke("cat", "-f", "torn.tfrecord", *extra)
        assert result.exit_code == 2
        assert "--follow" in result.stderr
