"""The batch SequenceExample decoder (example.seqbatch) vs tf.io.parse_sequence_example.

Batches written as writers write them (varied step counts, missing and empty feature
lists, empty steps) must be decoded by the compiled walk, not the exact path, and equal
TensorFlow's outputs; batches with a fault must fail or succeed exactly as TensorFlow's.
"""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any

from hypothesis import given, settings

from tests.tf.convert import assert_same_value, ours_outcome, outcome, tf_specs
from tfrecord_engine import kernels
from tfrecord_engine.example.seqbatch import SequenceDecoder
from tfrecord_engine.testing.sequences import SequenceBatch, sequence_batches


def _tf_parse(tf: ModuleType, case: SequenceBatch) -> Any:
    ctx = tf_specs(tf, case.context_features) or None
    seq = tf_specs(tf, case.sequence_features) or None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tf.io.parse_sequence_example(tf.constant(case.records), ctx, seq)


def _same(tf: ModuleType, ours: Any, theirs: Any) -> None:
    assert len(ours) == len(theirs)
    for our_dict, tf_dict in zip(ours, theirs, strict=True):
        assert set(our_dict) == set(tf_dict)
        for key in tf_dict:
            assert_same_value(tf, our_dict[key], tf_dict[key], key)


@settings(max_examples=150)
@given(sequence_batches())
def test_writer_batches_take_the_fast_path_and_match_tensorflow(
    tf: ModuleType, case: SequenceBatch
) -> None:
    assert kernels.wait(), "the compiled kernels are needed for the fast path"
    decoder = SequenceDecoder(case.context_features, case.sequence_features)
    ok, ours = ours_outcome(lambda: decoder.decode_records(case.records))
    tf_ok, theirs = outcome(
        lambda: _tf_parse(tf, case), tf_errors=(tf.errors.InvalidArgumentError,)
    )
    assert ok, f"ours: {ours!r}"
    assert tf_ok, f"TF: {theirs!r}"
    assert decoder.stats.exact_batches == 0
    _same(tf, ours, theirs)


@settings(max_examples=150)
@given(sequence_batches(faults=True))
def test_faulty_batches_fail_or_pass_as_tensorflow(tf: ModuleType, case: SequenceBatch) -> None:
    decoder = SequenceDecoder(case.context_features, case.sequence_features)
    ok, ours = ours_outcome(lambda: decoder.decode_records(case.records))
    tf_ok, theirs = outcome(
        lambda: _tf_parse(tf, case), tf_errors=(tf.errors.InvalidArgumentError, ValueError)
    )
    assert ok == tf_ok, f"fault {case.fault}\nTF: {theirs!r}\nours: {ours!r}"
    if ok:
        _same(tf, ours, theirs)
    else:
        # The exact path raised it: the same error as the per-record parser's.
        assert decoder.stats.exact_batches == 1
        exact_ok, exact = ours_outcome(lambda: decoder.decode_exact(case.records))
        assert not exact_ok
        assert type(exact) is type(ours)
        assert str(exact) == str(ours)
