"""decode_example / decode_sequence_example vs protobuf's FromString: values and errors."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tests.example.test_hostile import _mutated
from tests.tf.convert import ours_outcome, outcome
from tfrecord_engine.testing.examples import ParseCase, SequenceCase, parse_cases, sequence_cases

_KIND = {"int64_list": np.int64, "float_list": np.float32, "bytes_list": object}


def _feature_values(feature: Any) -> tuple[Any, list[Any]] | None:
    kind = feature.WhichOneof("kind")
    if kind is None:
        return None
    return _KIND[kind], list(getattr(feature, kind).value)


def _same(ours: Any, theirs: tuple[Any, list[Any]] | None, what: str) -> None:
    if theirs is None:
        assert ours is None or (ours.dtype == object and ours.size == 0), what
        return
    dtype, values = theirs
    assert ours is not None, what
    assert ours.dtype == dtype, f"{what}: {ours.dtype} != {dtype}"
    np.testing.assert_array_equal(ours, np.array(values, dtype=dtype), err_msg=what)


@given(parse_cases(), st.data(), st.booleans())
def test_decode_example_matches_fromstring(
    tf: ModuleType, case: ParseCase, data: st.DataObject, mutate: bool
) -> None:
    record = data.draw(_mutated(case.records[0])) if mutate else case.records[0]
    tf_ok, msg = outcome(lambda: tf.train.Example.FromString(record), tf_errors=(Exception,))
    ok, ours = ours_outcome(lambda: tfe.decode_example(record))
    assert ok == tf_ok, f"TF: {msg!r}\nours: {ours!r}"
    if ok:
        theirs = {k: _feature_values(f) for k, f in msg.features.feature.items()}
        assert set(ours) == {k for k, v in theirs.items() if v is not None}
        for key, value in theirs.items():
            _same(ours.get(key), value, key)


@given(sequence_cases(), st.data(), st.booleans())
def test_decode_sequence_example_matches_fromstring(
    tf: ModuleType, case: SequenceCase, data: st.DataObject, mutate: bool
) -> None:
    record = data.draw(_mutated(case.records[0])) if mutate else case.records[0]
    tf_ok, msg = outcome(
        lambda: tf.train.SequenceExample.FromString(record), tf_errors=(Exception,)
    )
    ok, ours = ours_outcome(lambda: tfe.decode_sequence_example(record))
    assert ok == tf_ok, f"TF: {msg!r}\nours: {ours!r}"
    if ok:
        context, lists = ours
        theirs = {k: _feature_values(f) for k, f in msg.context.feature.items()}
        assert set(context) == {k for k, v in theirs.items() if v is not None}
        for key, value in theirs.items():
            _same(context.get(key), value, key)
        assert set(lists) == set(msg.feature_lists.feature_list)
        for key, flist in msg.feature_lists.feature_list.items():
            assert len(lists[key]) == len(flist.feature)
            for j, step in enumerate(flist.feature):
                _same(lists[key][j], _feature_values(step), f"{key}[{j}]")
