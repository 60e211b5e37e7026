"""The compiled one-record walk of ``ds[i]`` (``kernels.single``): what it reads, and its
table of keys, which takes the compiled key hash and so is made once the kernels load."""

from __future__ import annotations

import pytest

import tfrecord_engine as tfe
from tfrecord_engine import kernels
from tfrecord_engine.kernels import single


@pytest.fixture(autouse=True)
def _loaded() -> None:
    kernels.wait()
    if not kernels.enabled():
        pytest.skip("the compiled kernels are off here")


def test_the_walk_reads_every_scalar_and_spans_the_rest() -> None:
    record = tfe.encode_example({"e": [1, 2, 3], "a": [7], "c": [b"xy"], "b": [2.5]})
    table = single.one_table([b"a", b"b", b"c", b"e"], [1, 2, 3, 0])
    out = single.walk_one(record, table, 4)
    assert out is not None
    assert out[2, 0] == 7
    assert out[3, 1] == 0x40200000  # 2.5's float32 bits
    assert record[out[0, 2] : out[1, 2]] == b"xy"
    assert out[0, 3] < out[1, 3]  # the list's Feature
    missing = single.one_table([b"a", b"zz"], [1, 1])
    assert single.walk_one(record, missing, 2) is None  # the Python path decides


def test_a_table_made_before_the_kernels_load_is_filled_at_its_first_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    record = tfe.encode_example({"a": [5]})
    monkeypatch.setattr(single, "key_hashes", lambda keys: None)  # (not loaded yet)
    table = single.one_table([b"a"], [1])
    assert single.walk_one(record, table, 1) is None
    monkeypatch.undo()
    out = single.walk_one(record, table, 1)
    assert out is not None
    assert out[2, 0] == 5
