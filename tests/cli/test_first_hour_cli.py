"""What a new user of ``tfr`` meets in the first hour (issue 34): hints in the CLI's own
flags, exact shard sizes, shapes kept by ``convert``, text not mistaken for arrays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tests.cli.helpers import invoke, mnist_like, write_examples


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- errors advise tfr's flags, not the Python API's arguments ---------------------------


@pytest.fixture
def gz(cwd: Path) -> str:
    write_examples("x.tfrecord.gz", mnist_like(5), "GZIP")  # no index: read from the bytes
    return "x.tfrecord.gz"


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("count", "-c", "none"), "-c gzip or -c auto"),
        (("head", "-c", "zlib"), "-c gzip or -c auto"),
        (("schema", "-c", "none"), "-c gzip or -c auto"),
        (("reshard", "-o", "out/y", "--input-compression", "none"), "--input-compression gzip"),
    ],
)
def test_a_wrong_compression_is_answered_with_the_flag(
    gz: str, args: tuple[str, ...], flag: str
) -> None:
    result = invoke(*args, gz)
    assert result.exit_code == 1
    assert "the file starts with the GZIP magic (1f 8b); pass " + flag in result.stderr
    assert "compression=" not in result.stderr


def test_verify_lines_and_json_reasons_name_the_flag(gz: str) -> None:
    text = invoke("verify", "-c", "none", gz)
    assert text.exit_code == 1
    assert "pass -c gzip or -c auto; " in text.stdout
    doc = json.loads(invoke("verify", "--json", "-c", "none", gz).stdout)
    (damage,) = doc["files"][0]["damages"]
    assert damage["reason"].endswith("pass -c gzip or -c auto")
    assert "compression=" not in json.dumps(doc)


def test_record_size_limit_names_the_global_option(cwd: Path) -> None:
    write_examples("a.tfrecord", mnist_like(3))
    result = invoke("--max-record-bytes", "3", "count", "a.tfrecord")
    assert result.exit_code == 1
    assert "more than --max-record-bytes 3" in result.stderr
    assert "max_record_bytes=" not in result.stderr


# --- --records-per-shard means it --------------------------------------------------------


def _sizes(pattern: str) -> list[int]:
    return [len(list(tfe.read_records(p))) for p in sorted(Path().glob(pattern))]


def test_reshard_records_per_shard_is_exact_with_the_rest_last(cwd: Path) -> None:
    records = write_examples("in.tfrecord", mnist_like(1461))
    result = invoke("reshard", "in.tfrecord", "-o", "r", "--records-per-shard", "500")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "r-00000-of-00003.tfrecord: 500 records",
        "r-00001-of-00003.tfrecord: 500 records",
        "r-00002-of-00003.tfrecord: 461 records",
    ]
    assert _sizes("r-*.tfrecord") == [500, 500, 461]
    assert [r for p in sorted(Path().glob("r-*")) for r in tfe.read_records(p)] == records
    # --shards still spreads the records evenly; an exact multiple has no short shard
    assert invoke("reshard", "in.tfrecord", "-o", "s", "--shards", "3").exit_code == 0
    assert _sizes("s-*.tfrecord") == [487, 487, 487]
    assert invoke("reshard", "in.tfrecord", "-o", "t", "--records-per-shard", "487").exit_code == 0
    assert _sizes("t-*.tfrecord") == [487, 487, 487]


def test_convert_records_per_shard_is_exact(cwd: Path) -> None:
    np.save("v.npy", np.arange(1461))
    result = invoke("convert", "v.npy", "-o", "v", "--records-per-shard", "500")
    assert result.exit_code == 0, result.output
    assert _sizes("v-*.tfrecord") == [500, 500, 461]


# --- convert keeps the shape of each record ----------------------------------------------


def _printed_spec(stdout: str) -> Any:
    """The ``features`` dict that ``convert`` printed, evaluated."""
    code = stdout[stdout.index("features = {") :]
    scope: dict[str, object] = {"tfe": tfe}
    exec(code, scope)
    return scope["features"]


def test_convert_prints_a_spec_that_reads_the_arrays_back_in_their_shape(cwd: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((100, 8, 8)).astype(np.float32)
    y = np.arange(100)
    np.savez("d.npz", x=x, y=y, pair=np.stack([y, y], axis=1))
    result = invoke("convert", "d.npz", "-o", "d")
    assert result.exit_code == 0, result.output
    assert '    "x": tfe.FixedLenFeature([8, 8], "float32"),' in result.stdout.splitlines()
    spec = _printed_spec(result.stdout)
    parsed = tfe.parse_example(list(tfe.read_records("d-00000-of-00001.tfrecord")), spec)
    assert parsed["x"].shape == (100, 8, 8)
    np.testing.assert_array_equal(parsed["x"], x)
    np.testing.assert_array_equal(parsed["y"], y)
    np.testing.assert_array_equal(parsed["pair"], np.stack([y, y], axis=1))


def test_convert_uint8_rows_as_bytes_print_a_raw_feature(cwd: Path) -> None:
    pixels = np.random.default_rng(1).integers(0, 256, (20, 8, 8), dtype=np.uint8)
    np.save("pix.npy", pixels)
    result = invoke("convert", "pix.npy", "-o", "p", "--uint8-as-bytes")
    assert result.exit_code == 0, result.output
    assert '    "pix": tfe.RawFeature([8, 8], "uint8"),' in result.stdout.splitlines()
    spec = _printed_spec(result.stdout)
    parsed = tfe.parse_example(list(tfe.read_records("p-00000-of-00001.tfrecord")), spec)
    np.testing.assert_array_equal(parsed["pix"], pixels)


def test_convert_says_when_inputs_hold_different_features(cwd: Path) -> None:
    np.save("a.npy", np.zeros((3, 2)))
    np.save("b.npy", np.zeros((3, 2)))
    result = invoke("convert", "a.npy", "b.npy", "-o", "ab")
    assert result.exit_code == 0, result.output
    assert "features = {" not in result.stdout
    assert "the inputs hold different features" in result.stderr


# --- text of one length is a string, not a RawFeature array ------------------------------


def _line(out: str, key: str) -> str:
    (line,) = [x for x in out.splitlines() if x.startswith(f'    "{key}"')]
    return line


def test_equal_length_captions_are_strings_not_raw_arrays(cwd: Path) -> None:
    captions = [f"a photo of a puppy #{i:02d}".encode() for i in range(30)]  # 22 bytes each
    assert {len(c) for c in captions} == {22}
    write_examples("c.tfrecord", [{"caption": c, "label": i} for i, c in enumerate(captions)])
    out = invoke("schema", "c.tfrecord").stdout
    assert _line(out, "caption") == (
        '    "caption": tfe.FixedLenFeature([], "string"),  # always 1 value of 22 bytes, text'
    )
    doc = json.loads(invoke("schema", "--json", "c.tfrecord").stdout)
    assert "RawFeature" not in doc["features"]["caption"]["note"]
    # the per-record path (a SequenceExample's context) decides the same
    with tfe.TFRecordWriter("s.tfrecord") as w:
        w.write_many([tfe.encode_sequence_example({"caption": c}, {"t": [[1]]}) for c in captions])
    assert "RawFeature" not in _line(invoke("schema", "s.tfrecord").stdout, "caption")
    # binary values of one size still get the hint
    write_examples("b.tfrecord", [{"emb": np.full(4, i, "<f4").tobytes()} for i in range(30)])
    assert 'tfe.RawFeature([16], "uint8")' in _line(invoke("schema", "b.tfrecord").stdout, "emb")
