"""Long variants of the differential suites (``--run-slow``): 2,000 examples each."""

from __future__ import annotations

from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.tf import (
    test_decode_differential,
    test_hostile_differential,
    test_parse_differential,
    test_sequence_differential,
)
from tfrecord_engine.testing.examples import ParseCase, SequenceCase, parse_cases, sequence_cases

LONG = settings(max_examples=2000)


@pytest.mark.slow
@LONG
@given(parse_cases())
def test_parse_long(tf: ModuleType, case: ParseCase) -> None:
    test_parse_differential.test_parse_matches_tensorflow.hypothesis.inner_test(tf, case)  # type: ignore[attr-defined]


@pytest.mark.slow
@LONG
@given(sequence_cases())
def test_sequence_long(tf: ModuleType, case: SequenceCase) -> None:
    inner = test_sequence_differential.test_parse_sequence_matches_tensorflow.hypothesis.inner_test  # type: ignore[attr-defined]
    inner(tf, case)


@pytest.mark.slow
@LONG
@given(parse_cases(), st.data())
def test_mutated_long(tf: ModuleType, case: ParseCase, data: st.DataObject) -> None:
    inner = test_hostile_differential.test_mutated_examples_match_tensorflow.hypothesis.inner_test  # type: ignore[attr-defined]
    inner(tf, case, data)


@pytest.mark.slow
@LONG
@given(parse_cases(), st.data(), st.booleans())
def test_decode_long(tf: ModuleType, case: ParseCase, data: st.DataObject, mutate: bool) -> None:
    inner = test_decode_differential.test_decode_example_matches_fromstring.hypothesis.inner_test  # type: ignore[attr-defined]
    inner(tf, case, data, mutate)
