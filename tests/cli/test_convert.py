"""``tfr convert`` from .npz/.npy, CSV and image folders to sharded, indexed TFRecords."""

from __future__ import annotations

import csv
import io
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given

import tfrecord_engine as tfe
from tests.cli.helpers import invoke
from tfrecord_engine.cli.shards import ShardedWriter
from tfrecord_engine.records.compression import Compression
from tfrecord_engine.testing.tables import csv_tables


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _decoded(pattern: str, compression: str = "") -> list[dict[str, list[object]]]:
    ds = tfe.RecordDataset(pattern, compression=compression)
    return [{k: v.tolist() for k, v in tfe.decode_example(r).items()} for r in ds]


def test_npz_to_gzip_shards_with_indexes(cwd: Path) -> None:
    np.savez(
        "d.npz",
        x=np.arange(20, dtype=np.float64).reshape(10, 2),
        y=np.arange(10, dtype=np.uint8),
        s=np.array([f"s{i}" for i in range(10)]),
        b=np.arange(10) % 2 == 0,
    )
    result = invoke("convert", "d.npz", "-o", "out/d", "--shards", "3", "--compression", "gzip")
    assert result.exit_code == 0, result.output
    names = [f"out/d-0000{i}-of-00003.tfrecord.gz" for i in range(3)]
    assert result.stdout.splitlines() == [
        *(f"{n}: {c} records" for n, c in zip(names, [3, 3, 4], strict=True)),
        "# The feature spec of these records (tfe.parse_example), shapes included:",
        "features = {",
        '    "x": tfe.FixedLenFeature([2], "float32"),',
        '    "y": tfe.FixedLenFeature([], "int64"),',
        '    "s": tfe.FixedLenFeature([], "string"),',
        '    "b": tfe.FixedLenFeature([], "int64"),',
        "}",
    ]
    assert "float64 values stored as float32" in result.stderr
    for name in names:
        idx = tfe.Index.load(name)  # a valid sidecar for every shard
        assert idx.compression is Compression.GZIP
    rows = _decoded("out/d-*.tfrecord.gz", "GZIP")
    assert rows[7] == {"x": [14.0, 15.0], "y": [7], "s": [b"s7"], "b": [0]}


def test_npy_and_records_per_shard(cwd: Path) -> None:
    np.save("pix.npy", np.arange(24, dtype=np.int32).reshape(4, 2, 3))
    result = invoke("convert", "pix.npy", "-o", "p", "--records-per-shard", "3", "--no-index")
    # Three records per shard, the last shard holding the rest.
    assert result.stdout.splitlines()[:2] == [
        "p-00000-of-00002.tfrecord: 3 records",
        "p-00001-of-00002.tfrecord: 1 records",
    ]
    assert '    "pix": tfe.FixedLenFeature([2, 3], "int64"),' in result.stdout.splitlines()
    assert not Path(".tfeidx/p-00000-of-00002.tfrecord.tfeidx").exists()
    rows = [tfe.decode_example(r) for r in tfe.read_records("p-00001-of-00002.tfrecord")]
    assert rows[0]["pix"].tolist() == list(range(18, 24))
    keyed = invoke("convert", "pix.npy", "--key", "image", "-o", "k")
    assert keyed.exit_code == 0
    assert set(tfe.decode_example(next(tfe.read_records("k-00000-of-00001.tfrecord")))) == {"image"}


def test_npz_with_uneven_arrays_is_refused(cwd: Path) -> None:
    np.savez("bad.npz", a=np.zeros(3), b=np.zeros(4))
    result = invoke("convert", "bad.npz", "-o", "x")
    assert result.exit_code == 1
    assert "same first dimension" in result.stderr
    assert not list(cwd.glob("x-*"))


@given(table=csv_tables())
def test_csv_values_and_types(table: tuple[list[str], list[list[str]]]) -> None:
    header, rows = table
    text = io.StringIO()
    csv.writer(text).writerows([header, *rows])
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "t.csv").write_text(text.getvalue(), newline="")
        result = invoke("convert", str(Path(tmp, "t.csv")), "-o", str(Path(tmp, "t")))
        assert result.exit_code == 0, result.output
        got = [
            tfe.decode_example(r) for r in tfe.read_records(Path(tmp, "t-00000-of-00001.tfrecord"))
        ]
    assert len(got) == len(rows)
    for j, name in enumerate(header):
        cells = [row[j] for row in rows]
        filled = [c for c in cells if c]
        # The strategy's text cells hold no digits and no "-": numeric columns start so.
        numeric = bool(filled) and filled[0][0] in "-0123456789"
        integral = numeric and all("." not in c and "e" not in c for c in filled)
        for row_values, cell in zip(got, cells, strict=True):
            if numeric and not cell:
                assert name not in row_values  # an empty numeric cell: feature left out
            elif integral:
                assert row_values[name].tolist() == [int(cell)]
            elif numeric:
                assert row_values[name].dtype == np.float32
                assert row_values[name].tolist() == [float(np.float32(cell))]
            else:
                assert row_values[name].tolist() == [cell.encode()]


def test_csv_with_a_short_row_names_the_line(cwd: Path) -> None:
    Path("t.csv").write_text("a,b\n1,2\n3\n")
    result = invoke("convert", "t.csv", "-o", "t")
    assert result.exit_code == 1
    assert "t.csv: line 3 has 1 cells, the header has 2" in result.stderr


def test_image_folder(cwd: Path) -> None:
    for cls, files in {"dog": ["b.png", "a.JPG", "notes.txt"], "cat": ["x.png"]}.items():
        Path("imgs", cls).mkdir(parents=True)
        for f in files:
            Path("imgs", cls, f).write_bytes(f.encode())
    result = invoke("convert", "imgs", "-o", "im", "--shards", "2")
    assert result.exit_code == 0, result.output
    assert "1 file(s) without an image extension" in result.stderr
    rows = _decoded("im-*.tfrecord")
    assert rows == [
        {"image": [b"x.png"], "label": [0], "class": [b"cat"]},
        {"image": [b"a.JPG"], "label": [1], "class": [b"dog"]},
        {"image": [b"b.png"], "label": [1], "class": [b"dog"]},
    ]
    bare = invoke("convert", "imgs", "-o", "nc", "--no-class-name", "--ext", "png")
    assert bare.exit_code == 0
    assert [set(r) for r in _decoded("nc-*.tfrecord")] == [{"image", "label"}] * 2


def test_unknown_input_type_is_a_usage_error(cwd: Path) -> None:
    Path("x.bin").write_bytes(b"")
    result = invoke("convert", "x.bin", "-o", "x")
    assert result.exit_code == 2
    assert "use --from" in result.stderr


def test_sharded_writer_sizes_and_empty_shards(tmp_path: Path) -> None:
    with ShardedWriter(str(tmp_path / "s"), 2, 4, Compression.NONE) as w:
        w.write_many([b"a", b"b"])
    sizes = [len(list(tfe.read_records(p))) for p in w.paths]
    assert sizes == [0, 1, 0, 1]
    assert w.paths[3].endswith("s-00003-of-00004.tfrecord")
    short = ShardedWriter(str(tmp_path / "t"), 3, 2, Compression.NONE)
    short.write_many([b"a"])
    with pytest.raises(tfe.InvalidArgumentError, match="1 records written, 3 announced"):
        short.close()


def test_uint8_rows_as_bytes(cwd: Path) -> None:
    pixels = np.arange(24, dtype=np.uint8).reshape(3, 8)
    np.savez("img.npz", image=pixels, label=np.array([4, 5, 6]))
    result = invoke("convert", "img.npz", "-o", "u", "--uint8-as-bytes")
    assert result.exit_code == 0, result.output
    rows = _decoded("u-*.tfrecord")
    assert rows[2] == {"image": [pixels[2].tobytes()], "label": [6]}
    plain = invoke("convert", "img.npz", "-o", "v")
    assert plain.exit_code == 0
    assert _decoded("v-*.tfrecord")[2]["image"] == list(range(16, 24))
