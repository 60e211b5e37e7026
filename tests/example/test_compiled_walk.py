"""The compiled walk of Examples (kernels/_examples.py) decodes exactly what the exact
path decodes, and ``tfe.explain_decode`` / the DEBUG log say which path a batch takes."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tests.test_batch_decoder import _outcome, assert_same
from tfrecord_engine import kernels
from tfrecord_engine.example import batch, lists
from tfrecord_engine.example.batch import BatchDecoder
from tfrecord_engine.example.parse import parse_example as parse_exact
from tfrecord_engine.example.specs import FeatureSpec
from tfrecord_engine.testing.examples import ParseCase, parse_cases

pytestmark = pytest.mark.skipif(not kernels.enabled(), reason="needs the compiled kernels")
DOC = Path(__file__).resolve().parents[2] / "docs" / "kernels.md"


def _compare(records: list[bytes], features: Any) -> BatchDecoder:
    exact = _outcome(lambda: parse_exact(records, features))
    dec = BatchDecoder(features, compiled_plan=False)  # (never the dense plan)
    fast = _outcome(lambda: dec.decode_records(records))
    assert fast[0] == exact[0], (fast, exact)
    if exact[0] == "ok":
        assert_same(fast[1], exact[1])
    else:
        assert fast[1] == exact[1]
    return dec


@settings(max_examples=300, deadline=None)
@given(parse_cases(max_batch=8, mixed=True))
def test_compiled_walk_equals_exact_path(case: ParseCase) -> None:
    dec = _compare(case.records, case.features)
    assert dec.stats.walked_records + dec.stats.exact_batches > 0


@settings(max_examples=200, deadline=None)
@given(parse_cases(max_batch=8, canonical=True))
def test_canonical_records_in_any_key_order_are_walked_whole(case: ParseCase) -> None:
    dec = _compare(case.records, case.features)
    if dec.stats.exact_batches == 0:
        assert dec.stats.walked_records == len(case.records)
        assert dec.stats.fallback_records == 0


@settings(max_examples=300, deadline=None)
@given(parse_cases(max_batch=6, canonical=True), st.data())
def test_damaged_records_decode_or_raise_as_the_exact_path(case: ParseCase, data: Any) -> None:
    records = list(case.records)
    j = data.draw(st.integers(0, len(records) - 1))
    rec = bytearray(records[j])
    if rec:
        how = data.draw(st.sampled_from(["flip", "cut", "grow"]))
        at = data.draw(st.integers(0, len(rec) - 1))
        if how == "flip":
            rec[at] ^= data.draw(st.integers(1, 255))
        elif how == "cut":
            del rec[at:]
        else:
            rec[at:at] = data.draw(st.binary(min_size=1, max_size=3))
    records[j] = bytes(rec)
    _compare(records, case.features)


def test_the_walk_takes_varied_orders_strings_and_raw_rows() -> None:
    spec: dict[str, FeatureSpec] = {
        "id": tfe.FixedLenFeature([], "int64"),
        "emb": tfe.FixedLenFeature([4], "float32"),
        "caption": tfe.FixedLenFeature([], "string"),
        "thumb": tfe.RawFeature([6], "uint8"),
        "boxes": tfe.VarLenFeature("float32"),
        "labels": tfe.VarLenFeature("int64"),
    }
    rng = np.random.default_rng(3)
    records = []
    for i in range(100):
        values = {
            "id": int(rng.integers(0, 2**60)),
            "emb": rng.standard_normal(4).astype(np.float32),
            "caption": b"c" * int(rng.integers(0, 300)),
            "thumb": bytes(range(i % 50, i % 50 + 6)),
            "boxes": rng.random(int(rng.integers(1, 5))).astype(np.float32),
            "labels": rng.integers(-5, 2**40, size=int(rng.integers(1, 4))),
        }
        order = [list(values)[k] for k in rng.permutation(len(values))]
        records.append(tfe.encode_example({k: values[k] for k in order}))
    dec = _compare(records, spec)
    assert dec.stats.walked_records == 100
    assert dec.stats.fallback_records == 0
    with kernels.switched(False):  # the numpy lockstep walk gives the same
        assert_same(BatchDecoder(spec).decode_records(records), dec.decode_records(records))


def test_parse_example_walks_batches_from_walk_min_records() -> None:
    spec: dict[str, FeatureSpec] = {
        "x": tfe.VarLenFeature("int64"),
        "s": tfe.FixedLenFeature([], "string"),
    }
    records = [
        tfe.encode_example({"x": list(range(i % 5 + 1)), "s": b"v%d" % i})
        for i in range(batch.WALK_MIN_RECORDS)
    ]
    decoder = batch._cached_decoder(spec)
    assert decoder is not None
    before = decoder.stats.walked_records
    assert_same(tfe.parse_example(records, spec), parse_exact(records, spec))
    assert decoder.stats.walked_records == before + len(records)


def test_explain_names_paths_and_reasons(tmp_path: Path) -> None:
    dense_spec = {"a": tfe.FixedLenFeature([], "int64"), "b": tfe.FixedLenFeature([2], "float32")}
    assert tfe.explain_decode(dense_spec).tier == "dense"
    assert tfe.explain_decode({"a": dense_spec["a"]}).per_call.startswith("single (a compiled")
    assert tfe.explain_decode(dense_spec).per_call.startswith("single (one walk per record")
    spec = {"a": tfe.FixedLenFeature([], "int64"), "t": tfe.VarLenFeature("string")}
    assert tfe.explain_decode(spec, batch_size=256).tier == "template+walk"
    assert tfe.explain_decode(spec, batch_size=32).tier == "walk"
    assert tfe.explain_decode(spec, batch_size=4).tier == "exact"
    with kernels.switched(False):
        assert tfe.explain_decode(spec, batch_size=256).tier == "template+lockstep"
    assert "not in the dense plan" in tfe.explain_decode(spec).features["t"]
    path = tmp_path / "d.tfrecord"
    with tfe.TFRecordWriter(str(path)) as w:
        for i in range(300):
            w.write(tfe.encode_example({"a": i, "t": [b"x"] * (i % 3 + 1)}))
    ds = tfe.RecordDataset(str(path), features=spec)
    for _ in ds.batches(100):
        pass
    said = tfe.explain_decode(ds, batch_size=100)
    assert said.stats is not None
    assert said.stats["records"] == 300
    assert said.stats["walked_records"] + said.stats["template_records"] == 300
    assert "so far: records 300" in str(said)
    with pytest.raises(TypeError, match="explain_decode takes"):
        tfe.explain_decode(3)


def test_a_fallback_logs_a_debug_line(caplog: pytest.LogCaptureFixture) -> None:
    spec: dict[str, FeatureSpec] = {"label": tfe.FixedLenFeature([], "int64")}
    unpacked = b"\x0a\x0f\x0a\x0d\x0a\x05label\x12\x04\x1a\x02\x08\x07"
    records = [tfe.encode_example({"label": i}) for i in range(20)] + [unpacked]
    with caplog.at_level(logging.DEBUG, logger="tfrecord_engine"):
        out = BatchDecoder(spec, compiled_plan=False).decode_records(records)
    assert out["label"].tolist()[-1] == 7
    assert any("1 of 21 records" in r.getMessage() for r in caplog.records)


def test_docs_example_prints_what_the_page_says(tmp_path: Path) -> None:
    section = DOC.read_text().split("## Which decode path a spec takes", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    printed = re.search(r"It prints.*?:\n\n```\n(.*?)```", section, re.S)
    assert code is not None, "docs/kernels.md lost its example"
    assert printed is not None, "docs/kernels.md lost its example's output"
    script = tmp_path / "snippet.py"
    script.write_text(code.group(1))
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={"PYTHONPATH": str(DOC.parents[1]), "PATH": ""},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == printed.group(1).splitlines()
    assert "decode: 1 of 16 records are not in the canonical layout" in done.stderr


def test_keys_of_one_kind_are_decoded_by_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # A wide spec (here 40 int64, 30 float, 20 string keys and one RawFeature) costs one
    # decode per kind, not one per key: wide records were 4x slower than TensorFlow.
    spec: dict[str, Any] = {f"i{k}": tfe.FixedLenFeature([], "int64") for k in range(40)}
    spec |= {f"f{k}": tfe.VarLenFeature("float32") for k in range(30)}
    spec |= {f"s{k}": tfe.FixedLenFeature([], "string") for k in range(20)}
    spec["raw"] = tfe.RawFeature([2], "uint8")
    rng = np.random.default_rng(0)
    records = []
    for r in range(32):
        values: dict[str, Any] = {f"i{k}": [r * k] for k in range(40)}
        values |= {f"f{k}": rng.random(r % 4).astype(np.float32) for k in range(30)}
        values |= {f"s{k}": [b"v%d" % (r + k)] for k in range(20)}
        values["raw"] = [bytes([r, k]) for k in range(1)]
        keys = list(values)
        rng.shuffle(keys)  # (every record its own key order)
        records.append(tfe.encode_example({k: values[k] for k in keys}))
    calls: list[int] = []
    real = lists.decode_spans

    def counting(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(lists, "decode_spans", counting)
    dec = _compare(records, spec)
    assert dec.stats.walked_records == len(records)
    assert len(calls) == 4  # int64, float32, strings, the RawFeature


def test_a_dataset_explains_its_own_decode_path(tmp_path: Path) -> None:
    path = str(tmp_path / "e.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(
            tfe.encode_example({"label": [i], "boxes": np.arange(i % 5, dtype=np.float32)})
            for i in range(300)
        )
    spec = {"label": tfe.FixedLenFeature([], "int64"), "boxes": tfe.VarLenFeature("float32")}
    ds = tfe.RecordDataset(path, features=spec)
    for _ in ds.batches(100):
        pass
    path_of = ds.explain_decode(100)
    assert path_of.tier == "template+walk"
    assert path_of.features["boxes"].startswith("VarLenFeature float32")
    assert path_of.stats is not None
    assert path_of.stats["records"] == 300
