"""``tfr schema``: inferred specs, checked by parsing the same records with them."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given

import tfrecord_engine as tfe
from tests.cli.helpers import invoke, write_examples
from tfrecord_engine.cli.collect import add_records
from tfrecord_engine.cli.infer import SchemaStats
from tfrecord_engine.testing.tables import Table, example_tables


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _specs(python: str, *names: str) -> list[dict[str, Any]]:
    scope: dict[str, Any] = {}
    exec(python, scope)  # the output is meant to be pasted into Python
    return [scope[n] for n in names]


def test_schema_golden(cwd: Path) -> None:
    rows: list[dict[str, Any]] = [
        {"img": np.zeros(3, np.float32), "y": 1, "tags": ["a", "b"], "w": 0.5, "v": [1, 2]},
        {"img": np.ones(3, np.float32), "y": 2, "tags": np.empty(0, object), "v": [3]},
        {"img": np.ones(3, np.float32), "y": 3, "tags": ["c"], "mixed": 1},
        {"img": np.ones(3, np.float32), "y": 4, "tags": ["c"], "mixed": 1.5, "v": [1, 2]},
    ]
    write_examples("a.tfrecord", rows)
    result = invoke("schema", "a.tfrecord")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "import tfrecord_engine as tfe",
        "",
        "# Inferred by `tfr schema` from all 4 records of 1 file.",
        "features = {",
        '    "img": tfe.FixedLenFeature([3], "float32"),  # always 3 values',
        "    # 'mixed': conflicting types (float in 1, int64 in 1): no single spec parses "
        "every record",
        '    "tags": tfe.VarLenFeature("string"),  # 0-2 values',
        '    "v": tfe.VarLenFeature("int64"),  # 1-2 values; in 75.0% of records',
        '    "w": tfe.FixedLenFeature([], "float32", default_value=0.0),'
        "  # 1 value; in 25.0% of records; the default fills the rest",
        '    "y": tfe.FixedLenFeature([], "int64"),  # always 1 value',
        "}",
    ]
    (features,) = _specs(result.stdout, "features")
    parsed = tfe.parse_example(list(tfe.read_records("a.tfrecord")), features)
    assert parsed["y"].tolist() == [1, 2, 3, 4]
    assert parsed["w"].tolist() == [0.5, 0, 0, 0]


def test_schema_sample_and_json(cwd: Path) -> None:
    write_examples("a.tfrecord", [{"v": list(range(1 + i // 3))} for i in range(6)])
    sample = invoke("schema", "--sample", "3", "a.tfrecord").stdout
    assert "from the first 3 records of 1 file" in sample
    assert '"v": tfe.FixedLenFeature([], "int64")' in sample
    every = invoke("schema", "--all", "a.tfrecord").stdout
    assert '"v": tfe.VarLenFeature("int64"),  # 1-2 values' in every
    doc = json.loads(invoke("schema", "--json", "a.tfrecord").stdout)
    assert doc["records"] == 6
    assert doc["features"]["v"] == {
        "types": {"int64": 6},
        "present": 6,
        "presence": 1.0,
        "min_length": 1,
        "max_length": 2,
        "fixed_length": False,
        "suggested": 'tfe.VarLenFeature("int64")',
        "note": "1-2 values",
    }


def test_schema_of_sequence_examples(cwd: Path) -> None:
    records = [
        tfe.encode_sequence_example({"n": 1}, {"tok": [[1], [2]], "emb": [[0.5, 1.0]]}),
        tfe.encode_sequence_example({"n": 2}, {"tok": [[3]], "emb": [[1.0], [2.0, 3.0]]}),
        tfe.encode_sequence_example({"n": 3}, {"emb": [[1.0]]}),
    ]
    with tfe.TFRecordWriter("s.tfrecord") as w:
        w.write_many(records)
    out = invoke("schema", "s.tfrecord").stdout
    assert out.splitlines()[3:] == [
        "context_features = {",
        '    "n": tfe.FixedLenFeature([], "int64"),  # always 1 value',
        "}",
        "sequence_features = {",
        '    "emb": tfe.VarLenFeature("float32"),  # 1-2 values per step, 1-2 steps',
        '    "tok": tfe.FixedLenSequenceFeature([], "int64", allow_missing=True),'
        "  # 1 value per step, 1-2 steps; in 66.7% of records",
        "}",
    ]
    context, sequence = _specs(out, "context_features", "sequence_features")
    ctx, seq, _lengths = tfe.parse_sequence_example(records, context, sequence)
    assert ctx["n"].tolist() == [1, 2, 3]
    assert seq["tok"].tolist() == [[1, 2], [3, 0], [0, 0]]


def test_tf_style_output(cwd: Path) -> None:
    write_examples("a.tfrecord", [{"y": 1, "s": "x"}])
    out = invoke("schema", "--tf", "a.tfrecord").stdout.splitlines()
    assert out[0] == "import tensorflow as tf"
    assert '    "y": tf.io.FixedLenFeature([], tf.int64),  # always 1 value' in out
    assert '    "s": tf.io.FixedLenFeature([], tf.string),  # always 1 value' in out


@given(rows=example_tables())
def test_inferred_spec_parses_every_record(rows: Table) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp, "t.tfrecord"))
        records = write_examples(path, rows)
        result = invoke("schema", "--all", path)
    assert result.exit_code == 0, result.stderr
    (features,) = _specs(result.stdout, "features")
    assert set(features) == {k for row in rows for k in row}
    parsed = tfe.parse_example(records, features)
    for key, spec in features.items():
        for i, row in enumerate(rows):
            if isinstance(spec, tfe.VarLenFeature):
                sparse = parsed[key]
                got = sparse.values[sparse.indices[:, 0] == i]
            else:
                value = parsed[key][i]
                # A bytes scalar through np.asarray becomes an "S" array, which drops
                # trailing NUL bytes: keep bytes as objects.
                got = (
                    np.array([value], dtype=object)
                    if isinstance(value, bytes)
                    else np.asarray(value).reshape(-1)
                )
            want = row.get(key)
            if want is None:
                assert isinstance(spec, tfe.VarLenFeature) or got.size == 1
                continue
            assert got.tolist() == want.tolist()


@given(rows=example_tables(max_records=20, max_keys=5))
def test_batched_statistics_equal_per_record_ones(rows: Table) -> None:
    records = [tfe.encode_example(r) for r in rows]
    batched, single = SchemaStats(), SchemaStats()
    add_records(batched, records, [f"r{i}" for i in range(len(records))], "auto")
    for record in records:
        single.add(tfe.decode_example(record), None)
    assert batched == single


def test_mixed_examples_and_sequence_examples(cwd: Path) -> None:
    with tfe.TFRecordWriter("m.tfrecord") as w:
        w.write(tfe.encode_example({"n": 1}))
        w.write(tfe.encode_sequence_example({"n": 2}, {"s": [[1]]}))
    doc = json.loads(invoke("schema", "--json", "m.tfrecord").stdout)
    assert doc["kind"] == "sequence_example"
    assert doc["features"]["n"]["present"] == 2
    assert doc["feature_lists"]["s"]["present"] == 1
    assert doc["feature_lists"]["s"]["presence"] == 0.5


def test_schema_of_a_malformed_record_names_it(cwd: Path) -> None:
    with tfe.TFRecordWriter("bad.tfrecord") as w:
        w.write_many([tfe.encode_example({"a": 1}), b"\x0a\x05\x01"])
    result = invoke("schema", "bad.tfrecord")
    assert result.exit_code == 1
    assert "bad.tfrecord: record 1: not a tf.train.Example" in result.stderr


def test_feature_list_without_values_is_commented_out(cwd: Path) -> None:
    with tfe.TFRecordWriter("e.tfrecord") as w:
        w.write(tfe.encode_sequence_example({"n": 1}, {"empty": []}))
    out = invoke("schema", "--sequence", "e.tfrecord").stdout
    assert "    # 'empty': no values seen (empty lists only): the type is unknown" in out


def test_help_examples_keep_their_lines() -> None:
    """click rewraps a help paragraph unless it starts with \\b: every line of every
    command's example (schema's has a blank line in it) is shown as written."""
    import inspect

    import click

    from tfrecord_engine.cli import cli

    assert isinstance(cli, click.Group)
    checked = 0
    for name, command in cli.commands.items():
        doc = inspect.cleandoc(command.help or "")
        if "Example:" not in doc:
            continue
        shown = {line.strip() for line in invoke(name, "--help").stdout.splitlines()}
        example = doc.split("Example:", 1)[1].splitlines()
        for line in example:
            if line.strip() and line.strip() != "\b":
                assert line.strip() in shown, (name, line)
        checked += 1
    assert checked >= 5
    schema_help = invoke("schema", "--help").stdout
    assert "\n    features = {\n" in schema_help
