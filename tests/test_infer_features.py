"""``tfe.infer_features``: ``tfr schema``'s inference as spec objects, from Python."""

from __future__ import annotations

import doctest
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given

import tfrecord_engine as tfe
from tests.cli.helpers import invoke, write_examples
from tfrecord_engine.data import infer as infer_module
from tfrecord_engine.example import infer as rules
from tfrecord_engine.testing.images import encode_png
from tfrecord_engine.testing.tables import Table, example_tables


def _pasted(python: str) -> dict[str, Any]:
    scope: dict[str, Any] = {}
    exec(python, scope)  # tfr schema's output is meant to be pasted into Python
    specs: dict[str, Any] = scope["features"]
    return specs


@given(rows=example_tables())
def test_the_same_specs_as_tfr_schema_prints(rows: Table) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp, "t.tfrecord"))
        records = write_examples(path, rows)
        printed = _pasted(invoke("schema", "--all", path).stdout)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (drawn tables have no conflicting key)
            inferred = tfe.infer_features(path, sample=None)
    assert inferred == printed
    assert list(inferred) == sorted(inferred)
    tfe.parse_example(records, inferred)  # they parse every record


def test_sample_reads_the_first_records_across_files(tmp_path: Path) -> None:
    write_examples(tmp_path / "a.tfrecord", [{"v": [1]}] * 3)
    write_examples(tmp_path / "b.tfrecord", [{"v": [1, 2]}] * 3)
    glob = str(tmp_path / "*.tfrecord")
    assert tfe.infer_features(glob, sample=3) == {"v": tfe.FixedLenFeature([], "int64")}
    assert tfe.infer_features(glob, sample=4) == {"v": tfe.VarLenFeature("int64")}
    assert tfe.infer_features([str(tmp_path / "b.tfrecord")]) == {
        "v": tfe.FixedLenFeature([2], "int64")
    }
    for bad in (0, -1, 2.5, True):
        with pytest.raises(tfe.InvalidArgumentError, match="sample must be a positive int"):
            tfe.infer_features(glob, sample=bad)  # type: ignore[arg-type]


def test_missing_values_get_a_default_and_conflicts_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "c.tfrecord"
    write_examples(path, [{"w": 0.5, "mixed": 1}, {"mixed": 1.5}, {"w": 2.0, "mixed": 2}])
    with pytest.warns(tfe.UninferredFeatureWarning, match="'mixed': conflicting types"):
        features = tfe.infer_features(str(path), compression="")
    assert features == {"w": tfe.FixedLenFeature([], "float32", default_value=0.0)}
    assert tfe.parse_example(list(tfe.read_records(path)), features)["w"].tolist() == [
        0.5,
        0.0,
        2.0,
    ]


def test_sequence_examples_need_the_sequence_function(tmp_path: Path) -> None:
    path = str(tmp_path / "s.tfrecord")
    records = [
        tfe.encode_sequence_example({"n": 1}, {"tok": [[1], [2]], "emb": [[0.5, 1.0]]}),
        tfe.encode_sequence_example({"n": 2}, {"tok": [[3]], "emb": [[1.0], [2.0, 3.0]]}),
    ]
    with tfe.TFRecordWriter(path) as w:
        w.write_many(records)
    with pytest.raises(tfe.InvalidArgumentError, match="infer_sequence_features"):
        tfe.infer_features(path)
    context, sequence = tfe.infer_sequence_features(path)
    assert context == {"n": tfe.FixedLenFeature([], "int64")}
    assert sequence == {
        "emb": tfe.VarLenFeature("float32"),
        "tok": tfe.FixedLenSequenceFeature([], "int64"),
    }
    ctx, seq, _ = tfe.parse_sequence_example(records, context, sequence)
    assert ctx["n"].tolist() == [1, 2]
    assert seq["tok"].tolist() == [[1, 2], [3, 0]]


def test_png_images_get_an_image_feature_here_and_in_tfr_schema(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    sizes = [(4, 5), (6, 3), (4, 5)]  # images of different sizes and byte lengths
    pngs = [encode_png(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for h, w in sizes]
    path = tmp_path / "i.tfrecord"
    write_examples(path, [{"image": p, "label": i} for i, p in enumerate(pngs)])
    features = tfe.infer_features(str(path))
    assert features["image"] == tfe.ImageFeature()
    line = next(x for x in invoke("schema", str(path)).stdout.splitlines() if '"image"' in x)
    assert line == '    "image": tfe.ImageFeature(),  # always 1 value, encoded PNG images: ' + (
        "decoded to pixels"
    )
    parsed = tfe.parse_example(list(tfe.read_records(path)), features)
    assert [im.shape for im in parsed["image"]] == [(4, 5, 3), (6, 3, 3), (4, 5, 3)]
    # --tf has no image spec: it keeps the bytes, as before
    assert "tf.io.FixedLenFeature([], tf.string)" in invoke("schema", "--tf", str(path)).stdout


def test_image_magic_without_an_image_stays_bytes(tmp_path: Path) -> None:
    fake = [b"\x89PNG\r\n\x1a\n" + bytes([i]) * 40 for i in range(3)]
    path = tmp_path / "f.tfrecord"
    write_examples(path, [{"blob": f} for f in fake])
    assert tfe.infer_features(str(path)) == {"blob": tfe.FixedLenFeature([], "string")}


def test_docstring_examples() -> None:
    for module in (infer_module, rules):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0
        assert result.failed == 0
