"""``tfr`` against TensorFlow: ``schema --tf`` specs parse in tf.io; TF reads our outputs."""

from __future__ import annotations

import pathlib
import tempfile
from types import ModuleType
from typing import Any

import numpy as np
from hypothesis import given, settings

import tfrecord_engine as tfe
from tests.cli.helpers import invoke, write_examples
from tfrecord_engine.testing.tables import Table, example_tables


@settings(max_examples=15)
@given(rows=example_tables(max_records=6))
def test_tf_style_schema_parses_in_tensorflow(tf: ModuleType, rows: Table) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(pathlib.Path(tmp, "t.tfrecord"))
        records = write_examples(path, rows)
        result = invoke("schema", "--all", "--tf", path)
    assert result.exit_code == 0, result.stderr
    scope: dict[str, Any] = {}
    exec(result.stdout, scope)  # imports tensorflow as the output says
    features = scope["features"]
    theirs = tf.io.parse_example(tf.constant(records), features)
    ours = tfe.parse_example(records, scope_to_tfe(result.stdout))
    for key, spec in features.items():
        if isinstance(spec, tf.io.VarLenFeature):
            assert theirs[key].values.numpy().tolist() == ours[key].values.tolist()
            assert theirs[key].indices.numpy().tolist() == ours[key].indices.tolist()
        else:
            assert theirs[key].numpy().tolist() == ours[key].tolist()


def scope_to_tfe(python: str) -> dict[str, Any]:
    """The ``tfe`` spelling of the same spec (``tfr schema`` without ``--tf``)."""
    text = python.replace("import tensorflow as tf", "import tfrecord_engine as tfe")
    text = text.replace("tf.io.", "tfe.")
    for name in ("int64", "float32", "string"):
        text = text.replace(f"tf.{name}", f'"{name}"')
    scope: dict[str, Any] = {}
    exec(text, scope)
    return dict(scope["features"])


def test_tensorflow_reads_converted_and_resharded_shards(tf: ModuleType, tmp_path: Any) -> None:
    np.savez(tmp_path / "d.npz", x=np.arange(30, dtype=np.float32).reshape(10, 3), y=np.arange(10))
    assert (
        invoke(
            "convert",
            str(tmp_path / "d.npz"),
            "-o",
            str(tmp_path / "c"),
            "--shards",
            "3",
            "--compression",
            "gzip",
        ).exit_code
        == 0
    )
    out = str(tmp_path / "r")
    assert (
        invoke(
            "reshard",
            str(tmp_path / "c-*"),
            "-o",
            out,
            "--shards",
            "2",
            "--shuffle",
            "--compression",
            "zlib",
        ).exit_code
        == 0
    )
    files = sorted(str(p) for p in tmp_path.glob("r-*.tfrecord.zz"))
    got = tf.data.TFRecordDataset(files, compression_type="ZLIB")
    spec = {"x": tf.io.FixedLenFeature([3], tf.float32), "y": tf.io.FixedLenFeature([], tf.int64)}
    ys = sorted(int(tf.io.parse_single_example(r, spec)["y"]) for r in got)
    assert ys == list(range(10))
    raw = invoke("cat", "--raw", str(tmp_path / "c-*"))
    (tmp_path / "all.tfrecord").write_bytes(raw.stdout_bytes)
    theirs = [r.numpy() for r in tf.data.TFRecordDataset(str(tmp_path / "all.tfrecord"))]
    assert theirs == [
        r for p in sorted(tmp_path.glob("c-*.gz")) for r in tfe.read_records(p, "GZIP")
    ]
