"""The compiled plan for int64/float32/string FixedLenFeature specs (example.dense) against the
exact per-record path and against the numpy paths (kernels off): identical outputs,
identical errors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine import kernels
from tfrecord_engine.errors import TFRecordError
from tfrecord_engine.example import dense
from tfrecord_engine.example.batch import BatchDecoder, join_records
from tfrecord_engine.example.dense import DensePlan, eligible
from tfrecord_engine.example.parse import parse_example as parse_exact
from tfrecord_engine.example.specs import FeatureSpec
from tfrecord_engine.kernels.threads import EPOCH_CHUNK
from tfrecord_engine.testing.examples import ParseCase, serialize_example
from tfrecord_engine.testing.wide import wide_cases

pytest.importorskip("numba")


def _outcome(fn: Callable[[], dict[str, Any]]) -> Any:
    """Outputs as (dtype, shape, bytes) per key, or the error's type, text, key and index."""
    try:
        out = fn()
    except TFRecordError as exc:
        return ("error", type(exc).__name__, str(exc), exc.key, exc.index)  # type: ignore[attr-defined]
    return ("ok", {k: (v.dtype.str, v.shape, _contents(v)) for k, v in out.items()}, list(out))


def _contents(v: np.ndarray[Any, Any]) -> Any:
    """The values' bytes (strings: the list of their ``bytes``; their exact type too)."""
    if v.dtype == object:
        return [(type(x), x) for x in v.reshape(-1).tolist()]
    return v.tobytes()


def _compiled(case: ParseCase) -> dict[str, Any]:
    decoder = BatchDecoder(case.features)
    out = decoder.decode_records(case.records)
    assert decoder._compiled_plan() is not None
    return out


def test_kernels_are_on() -> None:
    # The test extra installs numba: these tests must exercise the compiled plan.
    assert kernels.enabled()


@given(wide_cases())
def test_compiled_plan_equals_exact_path_and_kernels_off(case: ParseCase) -> None:
    compiled = _outcome(lambda: _compiled(case))
    assert compiled == _outcome(lambda: parse_exact(case.records, case.features))
    assert compiled == _outcome(lambda: tfe.parse_example(case.records, case.features))
    # Records joined a few at a time (wide records of tens of KB are, in chunks of 1 MB),
    # walked on the pool's threads and on the calling thread.
    chunk = dense.CHUNK_BYTES
    dense.CHUNK_BYTES = 40
    try:
        assert compiled == _outcome(lambda: _compiled(case))
        with dense.on_calling_thread():
            assert compiled == _outcome(lambda: _compiled(case))
    finally:
        dense.CHUNK_BYTES = chunk
    with kernels.switched(False):
        assert compiled == _outcome(lambda: tfe.parse_example(case.records, case.features))
        assert compiled == _outcome(
            lambda: BatchDecoder(case.features).decode_records(case.records)
        )


@given(wide_cases(max_batch=3))
def test_dataset_columns_equal_decode(case: ParseCase) -> None:
    # RecordDataset decodes through columns() and assemble(): the same outputs.
    decoder = BatchDecoder(case.features)
    buf, starts, ends = join_records(case.records)
    columns = decoder.columns(buf, starts, ends)
    want = _outcome(lambda: parse_exact(case.records, case.features))
    if columns is None:
        assert want[0] == "error"
        return
    got = _outcome(lambda: decoder.assemble(columns, 0, len(case.records)))
    assert got == want


def test_plain_records_take_no_fallback_and_skip_unselected() -> None:
    spec = {
        "a": tfe.FixedLenFeature([], "int64"),
        "long_feature_name_b": tfe.FixedLenFeature([2], "float32"),
        "c": tfe.FixedLenFeature([], "int64", default_value=-5),
    }
    values = [0, 1, 127, 128, 2**14, 2**35, 2**56, 2**63 - 1, -1, -(2**63)]
    records = [
        tfe.encode_example(
            {
                "noise": [b"x" * i],
                "a": v,
                "more_noise": [1.5] * (i + 1),
                "long_feature_name_b": [i, -i / 2],
                **({"c": v} if i % 2 else {}),
            }
        )
        for i, v in enumerate(values)
    ]
    decoder = BatchDecoder(spec)
    out = decoder.decode_records(records)
    assert out["a"].tolist() == values
    assert out["c"].tolist() == [v if i % 2 else -5 for i, v in enumerate(values)]
    assert out["long_feature_name_b"].tolist() == [[i, -i / 2] for i in range(len(values))]
    assert decoder.stats.fallback_records == 0
    # An unselected entry's value is never decoded: a torn varint there is no error.
    torn = serialize_example([("a", ("int64", [3])), ("x", b"\x1a\x02\x0a\xff")])
    assert tfe.parse_example([torn], {"a": spec["a"]})["a"].tolist() == [3]


def test_duplicates_unpacked_and_concatenated_records_take_the_exact_path() -> None:
    spec = {"a": tfe.FixedLenFeature([], "int64"), "b": tfe.FixedLenFeature([], "float32")}
    records = [
        serialize_example(
            [("a", ("int64", [1])), ("b", ("float32", [2.0])), ("a", ("int64", [3]))]
        ),
        serialize_example([("a", ("int64", [4])), ("b", ("float32", [5.0]))], packed=False),
        serialize_example([("a", ("int64", [6])), ("b", ("float32", [7.0]))], split_at=1),
        serialize_example([("a", ("int64", [8])), ("b", ("float32", [9.0]))]),
    ]
    decoder = BatchDecoder(spec)
    out = decoder.decode_records(records)
    assert out["a"].tolist() == [3, 4, 6, 8]  # the last duplicate wins
    assert out["b"].tolist() == [2.0, 5.0, 7.0, 9.0]
    assert decoder.stats.fallback_records == 3


def test_errors_are_the_exact_paths() -> None:
    spec = {"a": tfe.FixedLenFeature([], "int64")}
    good = tfe.encode_example({"a": 1})
    for bad in (tfe.encode_example({"a": [1.0]}), tfe.encode_example({"a": [1, 2]}), b""):
        records = [good, bad, good]
        want = _outcome(lambda r=records: parse_exact(r, spec))  # type: ignore[misc]
        assert want[0] == "error"
        assert _outcome(lambda r=records: tfe.parse_example(r, spec)) == want  # type: ignore[misc]


def test_eligibility() -> None:
    assert eligible({"a": tfe.FixedLenFeature([], "float32")})
    assert not eligible({})
    assert eligible({"a": tfe.FixedLenFeature([], "string")})  # (their spans, then bytes)
    assert not eligible({"a": tfe.RawFeature([4], "uint8")})
    assert not eligible({"a": tfe.VarLenFeature("int64")})
    assert DensePlan.of({"a": tfe.VarLenFeature("int64")}) is None
    with kernels.switched(False):
        assert DensePlan.of({"a": tfe.FixedLenFeature([], "int64")}) is None


def test_outputs_are_contiguous_views_of_the_right_shape() -> None:
    spec = {
        "m": tfe.FixedLenFeature([2, 3], "float32"),
        "z": tfe.FixedLenFeature([0], "int64"),
    }
    records = [
        tfe.encode_example({"m": np.arange(6, dtype=np.float32) + i, "z": np.zeros(0, np.int64)})
        for i in range(4)
    ]
    out = tfe.parse_example(records, spec)
    assert out["m"].shape == (4, 2, 3)
    assert out["m"].flags.c_contiguous
    assert out["m"][3].tolist() == [[3, 4, 5], [6, 7, 8]]
    assert out["z"].shape == (4, 0)
    assert out["z"].dtype == np.int64


def test_keys_in_another_order_than_the_previous_record() -> None:
    spec = {k: tfe.FixedLenFeature([], "int64") for k in ("ab", "ba", "abc")}
    orders = [("ab", "ba", "abc"), ("ba", "ab", "abc"), ("abc", "zz", "ba", "ab")]
    records = [
        serialize_example([(k, ("int64", [10 * i + j])) for j, k in enumerate(order)])
        for i, order in enumerate(orders * 3)
    ]
    decoder = BatchDecoder(spec)
    assert _outcome(lambda: decoder.decode_records(records)) == _outcome(
        lambda: parse_exact(records, spec)
    )
    assert decoder.stats.fallback_records == 0


@given(wide_cases(max_batch=3), st.data())
def test_damaged_records_give_the_exact_paths_outcome(case: ParseCase, data: st.DataObject) -> None:
    # Any byte of any record changed, or a record cut short: the kernel's word-at-a-time
    # checks of entry heads, keys and values take a record only where the exact path
    # reads the same values from it; everywhere else the outcome (error included) is
    # the exact path's.
    records = list(case.records)
    j = data.draw(st.integers(0, len(records) - 1))
    rec = records[j]
    if rec and data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(rec) - 1))
        rec = rec[:at] + bytes([data.draw(st.integers(0, 255))]) + rec[at + 1 :]
    else:
        rec = rec[: data.draw(st.integers(0, len(rec)))]
    records[j] = rec
    _assert_paths_agree(case.features, records)


def _assert_paths_agree(spec: Mapping[str, FeatureSpec], records: list[bytes]) -> None:
    """The compiled plan, the exact path and the kernels-off path: the same outcome."""
    case = ParseCase(dict(spec), records, single=False)
    want = _outcome(lambda: parse_exact(records, spec))
    assert _outcome(lambda: _compiled(case)) == want
    with kernels.switched(False):
        assert _outcome(lambda: tfe.parse_example(records, spec)) == want


def _varint_bytes(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def test_varints_of_every_width_at_the_end_of_the_buffer_and_long_keys() -> None:
    # The kernel reads varints 8 bytes at a time (9- and 10-byte ones, and those within
    # 8 bytes of the buffer's end, byte by byte) and keys as two words plus their middle.
    names = ["k", "key_0008", "key_00009", "key_of_16_bytes_", "key_of_17_bytes__", "x" * 40]
    values = [0, 1, 127, 128, 2**14 - 1, 2**21, 2**35 + 3, 2**49, 2**56 - 1, 2**56, 2**62]
    values += [2**63 - 1, -1, -(2**63), -300]
    spec: dict[str, FeatureSpec] = {name: tfe.FixedLenFeature([], "int64") for name in names}
    spec["f"] = tfe.FixedLenFeature([2], "float32")
    records = [
        serialize_example(
            [("f", ("float32", [1.5, -2.0]))]
            + [(name, ("int64", [values[(i + k) % len(values)]])) for k, name in enumerate(names)]
        )
        for i in range(len(values))
    ]
    decoder = BatchDecoder(spec)
    out = decoder.decode_records(records)
    assert decoder.stats.fallback_records == 0
    for k, name in enumerate(names):
        assert out[name].tolist() == [values[(i + k) % len(values)] for i in range(len(values))]
    for rec in records:  # alone: the last varint ends the buffer
        _assert_paths_agree(spec, [rec])


def test_torn_and_overlong_varints_are_the_exact_paths_errors() -> None:
    spec: dict[str, FeatureSpec] = {"a": tfe.FixedLenFeature([2], "int64")}
    good = serialize_example([("a", ("int64", [1, 2]))])
    ten = _varint_bytes(-1)
    for payload in (
        b"\x01\x80",  # torn at the end of the list
        b"\x01" + ten[:-1] + b"\x81\x01",  # 11 bytes
        b"\x01" + b"\xff" * 8,  # no end within 8 bytes, nor at all
        b"\x01" + ten,  # 10 bytes: valid
        b"\x80" * 9 + b"\x01\x02",  # 10 bytes of which 9 continue: valid
    ):
        feature = b"\x1a" + bytes([len(payload) + 2]) + b"\x0a" + bytes([len(payload)]) + payload
        bad = serialize_example([("a", feature)])
        _assert_paths_agree(spec, [good, bad, good])


# The chunks of a batch: on the pool's threads, or on the calling thread.


class _CountedPool:
    """``dense._pool`` that counts the batches it was asked to walk."""

    def __init__(self) -> None:
        self.calls = 0
        self._real = dense._pool

    def __call__(self) -> Any:
        self.calls += 1
        return self._real()


def _decoded(plan: DensePlan, records: list[bytes]) -> dict[str, Any]:
    out = plan.decode(*join_records(records))
    assert out is not None
    return out


def _tabular_records(n: int) -> list[bytes]:
    return [
        tfe.encode_example({"x": [float(i)] * 8, "ids": list(range(i, i + 4)), "label": i % 3})
        for i in range(n)
    ]


_TABULAR = {
    "x": tfe.FixedLenFeature([8], "float32"),
    "ids": tfe.FixedLenFeature([4], "int64"),
    "label": tfe.FixedLenFeature([], "int64"),
}


def test_the_pool_walks_chunks_until_the_kernel_proves_cheap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = _CountedPool()
    monkeypatch.setattr(dense, "_pool", pool)
    monkeypatch.setattr(dense, "CHUNK_BYTES", 2000)  # ~30 records a chunk
    records = _tabular_records(300)
    want = _outcome(lambda: parse_exact(records, _TABULAR))
    plan = DensePlan.of(_TABULAR)
    assert plan is not None
    # Not measured yet: the pool, and the kernel's cost is measured on the way.
    assert _outcome(lambda: _decoded(plan, records)) == want
    assert pool.calls == 1
    assert plan._kernel_cost is not None
    assert plan._kernel_cost > 0
    # Far below the floor (a few µs per chunk): the calling thread, same outputs.
    monkeypatch.setattr(dense, "POOL_MIN_KERNEL_S", 1.0)
    assert _outcome(lambda: _decoded(plan, records)) == want
    assert pool.calls == 1
    # A floor the kernel reaches: the pool again.
    monkeypatch.setattr(dense, "POOL_MIN_KERNEL_S", 0.0)
    assert _outcome(lambda: _decoded(plan, records)) == want
    assert pool.calls == 2
    # One chunk: never the pool.
    assert _outcome(lambda: _decoded(plan, records[:3])) == _outcome(
        lambda: parse_exact(records[:3], _TABULAR)
    )
    assert pool.calls == 2


def test_string_features_follow_the_kernels_cost_outside_epochs_and_on_calling_thread_keeps_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A spec with strings takes the pool as a string-free one does, only where its
    # kernel costs enough (image records called directly: the pool's hand-overs cost
    # more than the overlap of one chunk's walk with another's bytes objects gave);
    # in an epoch's chunk it keeps the pool (there the overlap pays).
    pool = _CountedPool()
    monkeypatch.setattr(dense, "_pool", pool)
    monkeypatch.setattr(dense, "CHUNK_BYTES", 2000)
    monkeypatch.setattr(dense, "POOL_MIN_KERNEL_S", 1.0)
    spec = {"image": tfe.FixedLenFeature([], "string"), "label": tfe.FixedLenFeature([], "int64")}
    records = [tfe.encode_example({"image": bytes([i]) * 300, "label": i}) for i in range(100)]
    want = _outcome(lambda: parse_exact(records, spec))
    plan = DensePlan.of(spec)
    assert plan is not None
    for _ in range(2):  # (not measured yet: the pool; then measured far below the floor)
        assert _outcome(lambda: _decoded(plan, records)) == want
    assert pool.calls == 1
    assert plan._kernel_cost is not None
    # In an epoch's chunk, a spec with strings keeps the pool whatever its kernel costs.
    with EPOCH_CHUNK.set():
        assert _outcome(lambda: _decoded(plan, records)) == want
    assert pool.calls == 2
    monkeypatch.setattr(dense, "POOL_MIN_KERNEL_S", 0.0)
    assert _outcome(lambda: _decoded(plan, records)) == want
    assert pool.calls == 3
    with dense.on_calling_thread():
        with dense.on_calling_thread():
            assert _outcome(lambda: _decoded(plan, records)) == want
        # (Leaving an inner block keeps the outer one's setting.)
        assert _outcome(lambda: _decoded(plan, records)) == want
    assert pool.calls == 3
    assert _outcome(lambda: _decoded(plan, records)) == want
    assert pool.calls == 4


def test_epochs_on_several_read_ahead_threads_keep_their_decodes_off_the_pool(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from tfrecord_engine.data import epochs

    path = str(tmp_path / "t.tfrecord")
    records = _tabular_records(500)
    with tfe.TFRecordWriter(path) as w:
        w.write_many(records)
    monkeypatch.setattr(dense, "CHUNK_BYTES", 2000)
    monkeypatch.setattr(dense, "POOL_MIN_KERNEL_S", 0.0)  # (the pool wherever allowed)
    want = _outcome(lambda: parse_exact(records, _TABULAR))

    def epoch(**kwargs: Any) -> Any:
        ds = tfe.RecordDataset(path, features=_TABULAR)
        batches = list(ds.batches(64, **kwargs))
        return _outcome(lambda: {k: np.concatenate([b[k] for b in batches]) for k in _TABULAR})

    # (threads, cores, pool threads): two threads whose pools outnumber the cores keep
    # off them; one thread, or cores enough for every pool, use them.
    for threads, cores, pools, used in ((2, 2, 2, False), (1, 2, 2, True), (2, 16, 4, True)):
        pool = _CountedPool()
        monkeypatch.setattr(dense, "_pool", pool)
        monkeypatch.setattr(epochs, "read_ahead_threads", lambda *a, t=threads, **k: t)
        monkeypatch.setattr(epochs, "usable_cores", lambda c=cores: c)
        monkeypatch.setattr(epochs, "pool_threads", lambda p=pools: p)
        assert epoch(readahead=2) == want
        assert (pool.calls > 0) is used, (threads, cores, pools)
    # Decoding on the caller's thread (no read-ahead): the pool.
    pool = _CountedPool()
    monkeypatch.setattr(dense, "_pool", pool)
    assert epoch(readahead=0) == want
    assert pool.calls > 0
