"""The per-call path of ``ds[i]`` on SequenceExample datasets (``example/single_sequence.py``)
against the exact path (``parse_single_sequence_example`` and the sample's typing).

The fast path may decline a record (``None``: the exact path decides), but must never
accept one the exact path rejects, and must return the same values, types and shapes.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine import kernels
from tfrecord_engine.data.sequences import sequence_sample
from tfrecord_engine.example.seqspecs import SequenceFeatures
from tfrecord_engine.example.single_sequence import SingleSequenceDecoder
from tfrecord_engine.example.varlen import VarLenArray
from tfrecord_engine.testing.examples import (
    FeatureValues,
    SequenceCase,
    sequence_cases,
    serialize_sequence_example,
)
from tfrecord_engine.testing.sequences import SequenceBatch, sequence_batches

from .test_single import agreeing
from .test_single import same as same_value

needs_kernels = pytest.mark.skipif(not kernels.available(), reason="needs the compiled kernels")


def same(a: Any, b: Any) -> bool:
    """:func:`tests.test_single.same`, with tuples (ragged and sparse values) by field."""
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return (
            type(a) is type(b)
            and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b, strict=True))
        )
    return same_value(a, b)


def exact(record: bytes, features: SequenceFeatures) -> dict[str, Any] | None:
    try:
        return sequence_sample(features, record)
    except tfe.TFRecordError:
        return None


def served(context: dict[str, Any], sequence: dict[str, Any]) -> SequenceFeatures | None:
    """The specs restricted to what the per-call path serves (None: nothing left)."""
    lists = {
        k: s
        for k, s in sequence.items()
        if isinstance(s, tfe.FixedLenSequenceFeature)
        and s.dtype != "string"
        and all(s.shape)
        and s.default_value is None
    }
    if not lists:
        return None
    return SequenceFeatures(context, lists)


TAKEN: list[int] = []


def check(features: SequenceFeatures, records: list[bytes]) -> int:
    """Checks every record on ``features``; returns how many the fast path took."""
    decoder = SingleSequenceDecoder(features)
    assume(decoder.enabled)  # (context specs the Example per-call path does not plan)
    taken = agreeing(decoder.sample, lambda r: exact(r, features), records, same)
    for fast in taken:
        assert list(fast) == features.output_keys
    TAKEN.append(len(taken))
    return len(taken)


def check_served(case: SequenceBatch | SequenceCase, records: list[bytes]) -> None:
    """:func:`check` on the specs of ``case`` the per-call path serves (if any)."""
    features = served(case.context_features, case.sequence_features)
    assume(features is not None)
    assert features is not None
    check(features, records)


@needs_kernels
@given(sequence_batches(faults=True))
def test_agrees_with_the_exact_path_on_written_records(batch: SequenceBatch) -> None:
    check_served(batch, batch.records)


@needs_kernels
@given(sequence_cases(max_batch=3, mixed=True))
def test_agrees_on_mixed_list_encodings_and_garbage(case: SequenceCase) -> None:
    check_served(case, case.records)


@needs_kernels
@given(st.data())
def test_agrees_on_cut_and_corrupted_records(data: st.DataObject) -> None:
    batch = data.draw(sequence_batches(max_batch=1))
    record = bytearray(batch.records[0])
    assume(record)
    if data.draw(st.booleans()):
        record = record[: data.draw(st.integers(0, len(record) - 1))]
    else:
        at = data.draw(st.integers(0, len(record) - 1))
        record[at] = data.draw(st.integers(0, 255))
    check_served(batch, [bytes(record)])


FEATURES = SequenceFeatures(
    {"label": tfe.FixedLenFeature([], "int64"), "w": tfe.FixedLenFeature([2], "float32")},
    {
        "frames": tfe.FixedLenSequenceFeature([2, 3], "float32"),
        "tokens": tfe.FixedLenSequenceFeature([], "int64", allow_missing=True),
    },
)
CONTEXT: list[tuple[str, FeatureValues]] = [
    ("label", ("int64", [3])),
    ("w", ("float32", [0.5, -2.0])),
]
FRAMES: list[FeatureValues] = [("float32", [float(i + 6 * s) for i in range(6)]) for s in range(4)]
TOKENS: list[FeatureValues] = [("int64", [t]) for t in (5, -1, 1 << 40)]


@needs_kernels
def test_takes_what_writers_emit_and_declines_the_rest() -> None:
    decoder = SingleSequenceDecoder(FEATURES)
    record = serialize_sequence_example(CONTEXT, [("tokens", TOKENS), ("frames", FRAMES)])
    got = decoder.sample(record)
    assert got is not None
    assert same(got, exact(record, FEATURES))
    assert got["frames"].shape == (4, 2, 3)
    assert got["tokens"].tolist() == [5, -1, 1 << 40]
    assert type(got["frames_lengths"]) is np.int64
    assert got["tokens_lengths"] == 3
    assert isinstance(got["frames"], VarLenArray)
    # A missing list its spec allows: zero steps, taken here too.
    no_tokens = serialize_sequence_example(CONTEXT, [("frames", FRAMES)])
    got = decoder.sample(no_tokens)
    assert got is not None
    assert got["tokens"].shape == (0,)
    assert got["tokens_lengths"] == 0
    assert same(got, exact(no_tokens, FEATURES))
    lists = [("tokens", TOKENS), ("frames", FRAMES)]
    ctx_bytes = record[: record.index(b"\x12", 2)]
    declined = {
        "required list missing": serialize_sequence_example(CONTEXT, [("tokens", TOKENS)]),
        "a step of another size": serialize_sequence_example(
            CONTEXT, [("tokens", TOKENS), ("frames", [*FRAMES, ("float32", [1.0])])]
        ),
        "a step of another kind": serialize_sequence_example(
            CONTEXT, [("tokens", [*TOKENS, ("float32", [1.0])]), ("frames", FRAMES)]
        ),
        "unpacked steps": serialize_sequence_example(CONTEXT, lists, packed=False),
        "context missing a key": serialize_sequence_example(CONTEXT[:1], lists),
        "context after the lists": record[len(ctx_bytes) :] + ctx_bytes,
        "context twice": ctx_bytes + record,
        "cut short": record[:-1],
        "empty": b"",
    }
    for why, bad in declined.items():
        assert decoder.sample(bad) is None, why
    # The exact path gives the same sample (or error) for each: ds[i] falls back to it.
    path = os.path.join(tempfile.mkdtemp(), "seq.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many([record, *declined.values()])
    ds = tfe.RecordDataset(
        path, context_features=FEATURES.context, sequence_features=FEATURES.sequence
    )
    assert same(ds[0], exact(record, FEATURES))
    for i, bad in enumerate(declined.values(), start=1):
        want = exact(bad, FEATURES)
        if want is None:
            with pytest.raises(tfe.TFRecordError):
                ds[i]
        else:
            assert same(ds[i], want)


def test_specs_it_does_not_serve() -> None:
    for sequence in (
        {"s": tfe.VarLenFeature("int64")},
        {"s": tfe.RaggedFeature("float32")},
        {"s": tfe.FixedLenSequenceFeature([], "string")},
        {"s": tfe.FixedLenSequenceFeature([0], "int64")},
    ):
        assert not SingleSequenceDecoder(SequenceFeatures(None, sequence)).enabled
    ragged_context = SequenceFeatures(
        {"r": tfe.RaggedFeature("int64", partitions=[tfe.RaggedFeature.RowLengths("n")])},
        {"s": tfe.FixedLenSequenceFeature([], "int64")},
    )
    # (Every context spec the Example per-call path plans is served.)
    assert SingleSequenceDecoder(ragged_context).enabled


def test_declines_until_the_kernels_are_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TFE_KERNELS", "0")
    decoder = SingleSequenceDecoder(FEATURES)
    record = serialize_sequence_example(CONTEXT, [("tokens", TOKENS), ("frames", FRAMES)])
    assert decoder.sample(record) is None


def test_a_context_list_running_past_its_feature_takes_the_exact_path(tmp_path: Any) -> None:
    """A context Int64List whose length runs past its Feature: TensorFlow's Example parser
    reads it as empty, its SequenceExample parser refuses the record ("Data types don't
    match"). The per-record path follows the SequenceExample parser: ``ds[i]`` raises as
    ``ds[list]`` and batches do (it used to return the list empty)."""
    context = {"label": tfe.FixedLenFeature([], "int64"), "score": tfe.VarLenFeature("int64")}
    lists = {"frames": tfe.FixedLenSequenceFeature([], "int64")}
    score = b"\n\x0b\n\x05score\x12\x02\x1a\x01"  # Feature of 2 bytes; its list claims 1 more
    label = b"\n\x0e\n\x05label\x12\x05\x1a\x03\n\x01\x00"
    bad = b"\n\x1d" + score + label + b"\x12\x0c\n\n\n\x06frames\x12\x00"
    good = tfe.encode_sequence_example({"label": [1], "score": [1, 2]}, {"frames": [[1], [2]]})
    decoder = SingleSequenceDecoder(SequenceFeatures(context, lists))
    assert decoder.sample(bad) is None
    assert decoder.sample(good) is not None
    path = str(tmp_path / "s.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many([good, bad, good])
    ds = tfe.RecordDataset(path, context_features=context, sequence_features=lists)
    assert ds[0]["score"].tolist() == [1, 2]
    for key in (1, [0, 1]):
        with pytest.raises(tfe.MalformedExampleError, match=r"record 1 at offset .*score"):
            ds[key]
