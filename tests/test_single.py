"""The per-call path of ``ds[i]`` (``example/single.py``) against the exact path.

The fast path may decline a record (``None``: the exact path decides), but must never
accept one the exact path rejects, and must return the same values, types and shapes.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine import kernels
from tfrecord_engine.data import access_methods, local_source, localfile, source
from tfrecord_engine.data import dataset as dataset_module
from tfrecord_engine.data.samples import sample_of
from tfrecord_engine.example.single import SingleDecoder
from tfrecord_engine.storage import safecopy
from tfrecord_engine.testing.examples import ParseCase, parse_cases, serialize_example
from tfrecord_engine.testing.raw import RawCase, raw_cases

FAST_KINDS = (tfe.FixedLenFeature, tfe.RawFeature, tfe.VarLenFeature)


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types (NaN equals NaN; arrays by dtype, shape, values)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):  # (tuples: RaggedValue and SparseValue)
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (np.ndarray, np.generic)):
        nan = a.dtype.kind in "fc"
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=nan)
    return bool(a == b)


def exact(record: bytes, features: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return sample_of(features, tfe.parse_single_example(record, features))
    except tfe.TFRecordError:
        return None


def check(case: ParseCase) -> int:
    """Checks every record of ``case`` on the fast-path specs; returns how many it took."""
    features = {k: s for k, s in case.features.items() if isinstance(s, FAST_KINDS)}
    assume(features)
    decoder = SingleDecoder(features)
    taken = agreeing(decoder.sample, lambda r: exact(r, features), case.records)
    for fast in taken:
        for value in fast.values():
            if isinstance(value, np.ndarray):
                assert value.flags.writeable
    return len(taken)


def agreeing(
    fast: Callable[[bytes], dict[str, Any] | None],
    exact: Callable[[bytes], dict[str, Any] | None],
    records: Iterable[bytes],
    equal: Callable[[Any, Any], bool] = same,
) -> list[dict[str, Any]]:
    """The samples a fast path took of ``records`` (``None``: declined), each checked
    ``equal`` to the exact path's, which must accept every record the fast path took."""
    taken = []
    for record in records:
        got = fast(record)
        if got is None:
            continue
        want = exact(record)
        assert want is not None, "the fast path accepted a record the exact path rejects"
        assert equal(got, want), (got, want)
        taken.append(got)
    return taken


@given(parse_cases(max_batch=3))
def test_fast_path_agrees_with_the_exact_path(case: ParseCase) -> None:
    check(case)


@given(parse_cases(max_batch=3, mixed=True))
def test_fast_path_agrees_on_mixed_list_encodings(case: ParseCase) -> None:
    check(case)


@given(raw_cases(min_records=1, max_records=4))
def test_fast_path_agrees_on_raw_features(case: RawCase) -> None:
    check(ParseCase({case.key: case.spec}, case.records, single=False))


def check_batch(features: dict[str, Any], records: list[bytes]) -> None:
    """``sample_batch`` (one compiled decode of the records joined) gives what
    ``sample_list`` gives record by record: the same samples, or ``None`` for both."""
    decoder = SingleDecoder(features)
    want = decoder.sample_list(records)
    got = decoder.sample_batch(records)
    if want is None:
        assert got is None
        return
    assert got is not None
    assert same(got, want), (got, want)
    for sample in got:
        for value in sample.values():
            if isinstance(value, np.ndarray):
                assert value.flags.writeable


@given(parse_cases(max_batch=6))
def test_batch_of_samples_agrees_with_the_per_record_path(case: ParseCase) -> None:
    features = {k: s for k, s in case.features.items() if isinstance(s, FAST_KINDS)}
    assume(features)
    check_batch(features, case.records)


@given(parse_cases(max_batch=6, mixed=True))
def test_batch_of_samples_agrees_on_mixed_list_encodings(case: ParseCase) -> None:
    features = {k: s for k, s in case.features.items() if isinstance(s, FAST_KINDS)}
    assume(features)
    check_batch(features, case.records)


@given(parse_cases(max_batch=6))
def test_batch_of_samples_agrees_on_ragged_features(case: ParseCase) -> None:
    # (RaggedFeature: the batch take's row splits made for all records, or its finish.)
    kinds = (*FAST_KINDS, tfe.RaggedFeature)
    features = {k: s for k, s in case.features.items() if isinstance(s, kinds)}
    assume(any(isinstance(s, tfe.RaggedFeature) for s in features.values()))
    check_batch(features, case.records)


@given(raw_cases(min_records=1, max_records=6))
def test_batch_of_samples_agrees_on_raw_features(case: RawCase) -> None:
    check_batch({case.key: case.spec}, case.records)


def _counted_takes(decoder: SingleDecoder, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets one item per record the decoder's per-record take makes."""
    per_record: list[int] = []
    take_at = decoder._take_at
    assert take_at is not None

    def counted(*args: Any) -> Any:
        per_record.append(1)
        return take_at(*args)

    monkeypatch.setattr(decoder, "_take_at", counted)
    return per_record


def test_a_batch_of_samples_is_taken_all_at_once_and_record_by_record_where_one_is_declined(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A batch whose every record the compiled decode takes is made by one generated
    comprehension (no per-record take); one declined record sends the batch to the
    per-record takes; specs with a finish (``RaggedFeature``) have no such take."""
    if not kernels.ready():
        pytest.skip("the compiled kernels are not loaded")
    features: dict[str, Any] = {
        "s": tfe.FixedLenFeature([], "string"),
        "v": tfe.VarLenFeature("int64"),
        "x": tfe.FixedLenFeature([2], "float32"),
        "n": tfe.FixedLenFeature([], "int64"),
        "r": tfe.RawFeature([2], "uint16"),
        "m": tfe.FixedLenFeature([2, 2], "int64"),
    }
    records = [
        tfe.encode_example(
            {
                "s": b"a" * k,
                "v": np.arange(k, dtype=np.int64),
                "x": [k / 2, -k / 2],
                "n": [-k],
                "r": [np.array([k, 2 * k], "<u2").tobytes()],
                "m": [k, k + 1, k + 2, k + 3],
            }
        )
        for k in range(6)
    ]
    decoder = SingleDecoder(features)
    want = decoder.sample_list(records)
    per_record = _counted_takes(decoder, monkeypatch)
    got = decoder.sample_batch(records)
    assert got is not None
    assert same(got, want)
    assert [g["m"].shape for g in got] == [(2, 2)] * 6
    assert per_record == []
    unpacked = serialize_example(
        [
            ("s", ("string", [b"u"])),
            ("v", ("int64", [7])),
            ("x", ("float32", [0.5, 1.5])),
            ("n", ("int64", [3])),
            ("r", ("string", [b"\x01\x00\x02\x00"])),
            ("m", ("int64", [1, 2, 3, 4])),
        ],
        packed=False,
    )
    mixed = [*records[:3], unpacked, *records[3:]]
    got = decoder.sample_batch(mixed)
    assert got is not None
    assert same(got, decoder.sample_list(mixed))
    assert len(per_record) == 6  # (the declined one went through sample)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_ragged_samples_of_a_batch_are_taken_all_at_once(
    monkeypatch: pytest.MonkeyPatch, dtype: str
) -> None:
    """``RaggedFeature`` samples of a batch: a ``RowLengths`` partition's row splits made
    for all records at once (wrapping as the per-record sums do), other partitions
    through their finish per record, with no per-record take; a finish that declines a
    record sends the batch record by record."""
    if not kernels.ready():
        pytest.skip("the compiled kernels are not loaded")
    ragged = tfe.RaggedFeature
    features: dict[str, Any] = {
        "w": ragged("int64", partitions=[ragged.RowLengths("wl")], row_splits_dtype=dtype),
        "s": ragged("string", partitions=[ragged.RowLengths("sl")], row_splits_dtype=dtype),
        "q": ragged(
            "float32", partitions=[ragged.RowSplits("qs")], row_splits_dtype=dtype, validate=True
        ),
        "n": tfe.FixedLenFeature([], "int64"),
    }
    big = 2**31 if dtype == "int32" else 2**62

    def record(k: int) -> bytes:
        lengths = [k % 3, 0, k] if k != 4 else [big, big, 1]  # (4: sums that wrap)
        return tfe.encode_example(
            {
                "w": np.arange(k * 7 % 11, dtype=np.int64),
                "wl": np.array(lengths, np.int64),
                "s": [b"x" * j for j in range(1 + k % 4)],
                "sl": [1, k % 4],
                "q": np.arange(k, dtype=np.float32),
                "qs": np.array([0, k // 2, k], np.int64),
                "n": [k],
            }
        )

    records = [record(k) for k in range(9)]
    decoder = SingleDecoder(features)
    want = decoder.sample_list(records)
    assert want is not None
    per_record = _counted_takes(decoder, monkeypatch)
    got = decoder.sample_batch(records)
    assert got is not None
    assert same(got, want)
    assert per_record == []
    assert got[4]["w"].row_splits.tolist() == want[4]["w"].row_splits.tolist()
    # Row splits that do not end at the values' count: the finish declines that record.
    bad = tfe.encode_example(
        {"w": [1], "wl": [1], "s": [b"a"], "sl": [1], "q": [1.0], "qs": [0, 5], "n": [0]}
    )
    assert decoder.sample_list([bad]) is None
    assert decoder.sample_batch([*records, bad]) is None
    assert per_record == [1] * 10


def test_batch_of_samples_decodes_in_one_call_and_hands_declined_records_on() -> None:
    """Records the compiled decode takes come from one call over the batch (their
    numbers views of the batch's arrays, their strings sliced at the right places);
    one it declines (unpacked numbers) goes through ``sample``; a record no per-record
    path takes makes the whole batch ``None`` (the caller's exact path decides)."""
    features: dict[str, Any] = {
        "s": tfe.FixedLenFeature([], "string"),
        "v": tfe.VarLenFeature("int64"),
        "x": tfe.FixedLenFeature([2], "float32", default_value=[0.5, 1.5]),
    }
    records = [
        tfe.encode_example({"s": b"a" * k, "v": list(range(k)), "x": [k / 2, -k / 2]})
        for k in range(1, 6)
    ]
    records[2] = serialize_example(
        [("x", ("float32", [0.5, 1.5])), ("s", ("string", [b"unpacked v"])), ("v", ("int64", [7]))],
        packed=False,
    )
    decoder = SingleDecoder(features)
    got = decoder.sample_batch(records)
    assert got is not None
    assert [g["s"] for g in got] == [b"a", b"aa", b"unpacked v", b"aaaa", b"aaaaa"]
    assert [g["v"].tolist() for g in got] == [[0], [0, 1], [7], [0, 1, 2, 3], [0, 1, 2, 3, 4]]
    assert got[2]["x"].tolist() == [0.5, 1.5]
    assert got[4]["x"].tolist() == [2.5, -2.5]
    assert same(got, decoder.sample_list(records))
    if kernels.ready():

        def owner(a: np.ndarray[Any, Any]) -> Any:
            while isinstance(a.base, np.ndarray):
                a = a.base
            return a

        assert owner(got[3]["v"]) is owner(got[4]["v"])  # (one decode call for both)
    missing_x = tfe.encode_example({"s": b"", "v": [7]})  # (a default: the exact path)
    assert decoder.sample_batch([*records, missing_x]) is None
    assert decoder.sample_batch([*records, b"\x0a\x05"]) is None
    assert decoder.sample_batch([]) == []


def test_fast_path_takes_what_writers_emit_and_declines_the_rest() -> None:
    features: dict[str, Any] = {
        "i": tfe.FixedLenFeature([], "int64"),
        "f": tfe.FixedLenFeature([2], "float32"),
        "s": tfe.FixedLenFeature([], "string"),
        "t": tfe.FixedLenFeature([2, 1], "string"),
        "img": tfe.RawFeature([2, 2], "uint16"),
        "px": tfe.RawFeature([], "float32"),
        "v": tfe.VarLenFeature("int64"),
        "vs": tfe.VarLenFeature("string"),
    }
    values = {
        "i": [7],
        "f": [0.5, -1.0],
        "s": [b"x"],
        "t": [b"a", b"b"],
        "img": [np.arange(4, dtype="<u2").tobytes()],
        "px": [np.float32(2.5).tobytes()],
        "v": [1, 2, 3],
        "vs": [b"p"],
    }
    decoder = SingleDecoder(features)
    record = tfe.encode_example(values)
    got = decoder.sample(record)
    assert got is not None
    assert same(got, exact(record, features))
    assert got["img"].tolist() == [[0, 1], [2, 3]]
    assert got["t"] == [[b"a"], [b"b"]]
    assert type(got["px"]) is np.float32
    # Declined: a missing feature (defaults), a wrong count, another kind, garbage.
    for bad in (
        tfe.encode_example({k: v for k, v in values.items() if k != "v"}),
        tfe.encode_example({**values, "f": [1.0]}),
        tfe.encode_example({**values, "i": [b"7"]}),
        record[:-3],
    ):
        assert decoder.sample(bad) is None
    # Specs without a fast path decline every record.
    assert SingleDecoder({"r": tfe.RaggedFeature("int64")}).sample(record) is None


def test_ds_getitem_uses_it_and_keeps_exact_errors() -> None:
    features = {"i": tfe.FixedLenFeature([], "int64", default_value=-1)}
    path = os.path.join(tempfile.mkdtemp(), "s.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many([tfe.encode_example({"i": [5]}), tfe.encode_example({}), b"\xff\xff", b"\x0a"])
    ds = tfe.RecordDataset(path, features=features)
    assert same(ds[0], {"i": np.int64(5)})
    assert same(ds[1], {"i": np.int64(-1)})  # the default, from the exact path
    with pytest.raises(tfe.TFRecordError):
        ds[2]
    with pytest.raises(tfe.TFRecordError):
        ds[-1]
    with pytest.raises(IndexError):
        ds[4]
    with pytest.raises(IndexError):
        ds[-5]


# ---- the scalar walk, its per-length layouts, and small batches ------------------------

SCALARS = st.dictionaries(
    st.sampled_from(["a", "b", "image", "label", "k\u00e9"]),
    st.sampled_from(["int64", "float32", "string"]),
    min_size=1,
    max_size=4,
)


def _value(draw: st.DrawFn, dtype: str) -> list[Any]:
    if dtype == "int64":
        return [draw(st.integers(-(2**63), 2**63 - 1))]
    if dtype == "float32":
        return [draw(st.floats(width=32, allow_nan=False))]
    return [draw(st.binary(max_size=200))]


@st.composite
def scalar_records(draw: st.DrawFn) -> tuple[dict[str, Any], list[bytes]]:
    """Scalar specs, then records that fit them (plus extra features), some mutated."""
    dtypes = draw(SCALARS)
    features = {k: tfe.FixedLenFeature([], d) for k, d in dtypes.items()}
    records = []
    for _ in range(draw(st.integers(1, 6))):
        values = {k: _value(draw, d) for k, d in dtypes.items()}
        if draw(st.booleans()):
            values["extra"] = [b"x"]
        record = tfe.encode_example(values)
        records.append(record)
        # Same-length variants: bytes changed anywhere (tags, lengths, keys, values).
        for _ in range(draw(st.integers(0, 3))):
            mutated = bytearray(record)
            for _ in range(draw(st.integers(1, 3))):
                at = draw(st.integers(0, len(record) - 1))
                mutated[at] = draw(st.integers(0, 255))
            records.append(bytes(mutated))
    return features, records


@given(scalar_records())
def test_scalar_walk_and_layouts_agree_with_the_exact_path(
    case: tuple[dict[str, Any], list[bytes]],
) -> None:
    features, records = case
    decoder = SingleDecoder(features)
    assert decoder.scalars
    for record in records:
        fast = decoder.sample(record)
        if fast is not None:
            want = exact(record, features)
            assert want is not None, "the fast path accepted a record the exact path rejects"
            assert same(fast, want), (fast, want)
    # A batch of them: the batch parse's output exactly, or declined.
    columns = decoder.columns(records)
    if columns is not None:
        assert same(columns, dict(tfe.parse_example(records, features)))


def test_layouts_read_records_of_a_known_length_and_decline_other_bytes() -> None:
    features = {
        "index": tfe.FixedLenFeature([], "int64"),
        "label": tfe.FixedLenFeature([], "float32"),
        "image": tfe.FixedLenFeature([], "string"),
    }
    decoder = SingleDecoder(features)
    first = tfe.encode_example({"index": [300], "label": [1.5], "image": [b"abcd"]})
    assert decoder.sample(first) is not None
    assert len(decoder._layouts) == 1  # the layout of this length, kept
    second = tfe.encode_example({"index": [301], "label": [-2.0], "image": [b"wxyz"]})
    assert len(second) == len(first)
    assert same(decoder.sample(second), exact(second, features))
    layout = decoder._layouts[len(first)]
    assert layout is not None
    got = layout.values(second, 3)
    assert got == [301, np.float32(-2.0).tobytes(), b"wxyz"]
    # The varint's last byte with its continuation bit set: TensorFlow rejects it.
    at = first.index(bytes([0xAC, 0x02]))  # 300
    bad = first[: at + 1] + b"\x82" + first[at + 2 :]
    assert exact(bad, features) is None
    assert decoder.sample(bad) is None
    # A one-byte int where the layout has two (same length: the string is longer).
    other = tfe.encode_example({"index": [3], "label": [1.5], "image": [b"abcde"]})
    assert len(other) == len(first)
    assert same(decoder.sample(other), exact(other, features))
    assert decoder.columns([first, second, other]) is not None
    assert decoder.columns([first, bad]) is None


def _dataset(tmp_path: Any, records: list[bytes], features: dict[str, Any]) -> Any:
    path = str(tmp_path / "few.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(records)
    return tfe.RecordDataset(path, features=features)


@pytest.mark.parametrize("mapped", [False, True])
def test_small_batches_equal_the_batch_path(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, mapped: bool
) -> None:
    features = {"i": tfe.FixedLenFeature([], "int64"), "s": tfe.FixedLenFeature([], "string")}
    records = [tfe.encode_example({"i": [k * 1000], "s": [b"v" * k]}) for k in range(50)]
    records.append(tfe.encode_example({"s": [b"no i"]}))  # 50: declined (the exact path fails)
    ds = _dataset(tmp_path, records, features)
    if mapped:
        ds.read_spans([0, 7])  # a batch read maps the file: small batches then gather
    keys: list[Any] = [[3], [5, 1, 5, -1 + 50], np.array([49, 0, 2]), (4, np.int64(9)), [-50]]
    got = [ds[k] for k in keys]
    samples = [ds.__getitems__(k) for k in keys]
    monkeypatch.setattr(dataset_module, "SMALL_BATCH", 0)  # the batch path only
    for k, g, s in zip(keys, got, samples, strict=True):
        assert same(g, ds[k])
        assert same(s, ds.__getitems__(k))
    monkeypatch.undo()
    assert ds._single.scalars
    # Errors are the batch path's: out of range, a record that fails to parse.
    with pytest.raises(IndexError):
        ds[[0, 51]]
    with pytest.raises(IndexError):
        ds[[-52]]
    with pytest.raises(tfe.TFRecordError):
        ds[[1, 50]]
    with pytest.raises(tfe.TFRecordError):
        ds.__getitems__([50])


@pytest.mark.parametrize("mapped", [False, True])
def test_samples_of_small_batches_of_any_spec_equal_the_batch_path(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, mapped: bool
) -> None:
    # __getitems__ (what DataLoader calls) decodes a few records of any spec the
    # per-record decoder plans record by record: a batch decode's set-up costs ~0.7 ms
    # a call for VarLen / FixedLen([k]) / RawFeature specs whatever the batch size.
    features = {
        "v": tfe.VarLenFeature("int64"),
        "f": tfe.FixedLenFeature([3], "float32"),
        "r": tfe.RawFeature([4], "uint8"),
        "s": tfe.FixedLenFeature([], "string"),
    }
    records = [
        tfe.encode_example(
            {
                "v": np.arange(k % 4, dtype=np.int64),
                "f": [k, k + 0.5, -k],
                "r": [bytes([k] * 4)],
                "s": [b"x" * k],
            }
        )
        for k in range(40)
    ]
    records.append(tfe.encode_example({"v": [1], "f": [1.0, 2.0], "r": [b"abcd"], "s": [b""]}))
    ds = _dataset(tmp_path, records, features)
    if mapped:
        ds.read_spans([0, 7])
    assert ds._single_decoder().enabled
    assert not ds._single_decoder().scalars
    keys: list[Any] = [[3], [5, 1, 5, 39], np.array([39, 0, 2]), (4, np.int64(9)), [-41]]
    calls = 0
    real = dataset_module.RecordDataset._samples

    def counted(self: tfe.RecordDataset, indices: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(self, indices)

    monkeypatch.setattr(dataset_module.RecordDataset, "_samples", counted)
    got = [ds.__getitems__(k) for k in keys]
    assert calls == 0  # none took the batch decode
    monkeypatch.setattr(dataset_module, "SMALL_BATCH", 0)  # the batch path only
    for k, g in zip(keys, got, strict=True):
        assert same(g, ds.__getitems__(k))
    assert calls == len(keys)
    monkeypatch.undo()
    # A record that fails to parse (3 floats wanted, 2 written): the batch path's error.
    with pytest.raises(tfe.TFRecordError):
        ds.__getitems__([1, 40])
    with pytest.raises(IndexError):
        ds.__getitems__([0, 41])


@given(parse_cases(max_batch=6))
def test_samples_of_small_batches_agree_with_the_batch_path(case: ParseCase) -> None:
    # The same samples and errors as the batch decode gives (what __getitems__ returned
    # before), whatever records Hypothesis makes. (Not always parse_single_example's: on
    # a key repeated with an empty last Feature, TensorFlow's parse_example and
    # parse_single_example differ, and the batch decode follows parse_example. The
    # per-record decoder declines such records, so the batch decode decides them.)
    features = {k: s for k, s in case.features.items() if isinstance(s, FAST_KINDS)}
    assume(features and case.records)

    def outcome(ds: tfe.RecordDataset, indices: list[int]) -> Any:
        try:
            return ds.__getitems__(indices)
        except tfe.TFRecordError as exc:
            return type(exc)

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "d.tfrecord")
        with tfe.TFRecordWriter(path) as w:
            w.write_many(case.records)
        ds = tfe.RecordDataset(path, features=features)
        indices = list(range(len(case.records)))
        got = outcome(ds, indices)
        small, dataset_module.SMALL_BATCH = dataset_module.SMALL_BATCH, 0
        try:
            want = outcome(ds, indices)
        finally:
            dataset_module.SMALL_BATCH = small
        if isinstance(want, type):
            assert got is want
        else:
            assert same(got, want)


def test_small_batches_check_crcs(tmp_path: Any) -> None:
    features = {"i": tfe.FixedLenFeature([], "int64")}
    ds = _dataset(tmp_path, [tfe.encode_example({"i": [k]}) for k in range(4)], features)
    assert ds[[2, 1]]["i"].tolist() == [2, 1]
    path = ds.paths[0]
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        data[-6] ^= 0xFF  # record 3's payload
        f.seek(0)
        f.write(data)
    fresh = tfe.RecordDataset(path, features=features)
    assert fresh[[0, 1]]["i"].tolist() == [0, 1]
    with pytest.raises(tfe.DataLossError):
        fresh[[0, 3]]
    with pytest.raises(tfe.DataLossError):
        fresh.__getitems__([3])


@pytest.mark.parametrize(
    "value", [0, 5, 127, 128, 300, 16383, 16384, 2**20, 2**21 - 1, 2**21, 2**35, -1, -(2**63)]
)
@pytest.mark.parametrize("last", [False, True])
def test_layouts_read_varints_of_every_size(value: int, last: bool) -> None:
    features = {"i": tfe.FixedLenFeature([], "int64"), "s": tfe.FixedLenFeature([], "string")}
    values: dict[str, Any] = {"i": [value], "s": [b"abc"]}
    if last:  # the varint ends the record: a flipped last byte runs off its end
        del features["s"], values["s"]
    decoder = SingleDecoder(features)
    record = tfe.encode_example(values)
    assert same(decoder.sample(record), exact(record, features))
    layout = decoder._layouts[len(record)]
    assert layout is not None
    (start, end, _slot, _code) = next(r for r in layout.reads if r[3] == 0)
    # Every value of the same byte count, and every continuation bit flipped.
    variants = [tfe.encode_example({**values, "i": [value ^ 1]})]
    for at in range(start, end):
        flipped = bytearray(record)
        flipped[at] ^= 0x80
        variants.append(bytes(flipped))
    for variant in variants:
        got = layout.compiled(variant) if len(variant) == len(record) else None
        if len(variant) == len(record):
            assert got == layout.values(variant, len(features))
            assert decoder.columns([variant]) is None or got is not None
        fast = decoder.sample(variant)
        if fast is not None:
            assert same(fast, exact(variant, features))
        else:
            assert got is None


def test_small_batches_over_shards_equal_the_batch_path(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    features = {"i": tfe.FixedLenFeature([], "int64"), "f": tfe.FixedLenFeature([], "float32")}
    paths = []
    for shard in range(3):
        path = str(tmp_path / f"part-{shard}.tfrecord")
        with tfe.TFRecordWriter(path, index=True) as w:
            w.write_many(
                [tfe.encode_example({"i": [shard * 100 + k], "f": [k / 4]}) for k in range(5)]
            )
        paths.append(path)
    ds = tfe.RecordDataset(paths, features=features)
    keys: list[Any] = [[14, 0, 7, -1], np.array([5, 4, 10]), [3], np.array([[1, 2]]), np.array(6)]
    got = [ds[k] for k in keys]
    samples = [ds.__getitems__(k) for k in keys]
    assert got[0]["i"].tolist() == [204, 0, 102, 204]
    monkeypatch.setattr(dataset_module, "SMALL_BATCH", 0)
    for k, g, s in zip(keys, got, samples, strict=True):
        assert same(g, ds[k])
        assert same(s, ds.__getitems__(k))


def test_no_layout_for_records_with_large_unrequested_features() -> None:
    features = {"label": tfe.FixedLenFeature([], "int64")}
    decoder = SingleDecoder(features)
    records = [tfe.encode_example({"label": [k], "image": [bytes(5000)]}) for k in range(3)]
    for record in records:
        assert same(decoder.sample(record), exact(record, features))
    # Kept as None: the walk serves records of this length, no layout of 5,000 bytes.
    assert decoder._layouts == {len(records[0]): None}
    assert same(decoder.columns(records), dict(tfe.parse_example(records, features)))


def test_ds_getitem_on_a_mapped_file_reads_through_a_spare_descriptor(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not safecopy.available():
        pytest.skip("no process_vm_readv here: files are never mapped")
    records = [tfe.encode_example({"i": [k]}) for k in range(20)]
    path = str(tmp_path / "m.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(records)
    before = localfile._spares[0]
    ds = tfe.RecordDataset(path)
    assert ds.read_raw(list(range(0, 20, 2))) == records[::2]  # a gather maps the file
    reader = cast("source.LocalFileRecords", ds._open()[0])
    assert reader._base is not None
    assert (reader._fd, reader._spare_open) == (None, False)  # the map's descriptor only
    assert ds[3] == records[3]
    assert reader._fd is not None
    assert reader._spare_open
    assert localfile._spares[0] == before + 1
    ds.close()
    assert localfile._spares[0] == before
    # None left to open: the copy out of the map, the same bytes.
    monkeypatch.setattr(localfile, "SPARE_DESCRIPTORS", before)
    again = tfe.RecordDataset(path)
    assert again.read_raw([1, 5]) == [records[1], records[5]]
    assert again[7] == records[7]
    assert cast("source.LocalFileRecords", again._open()[0])._fd is None
    again.close()


def test_small_getitems_over_shards_read_each_file_once_in_the_order_asked(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few records across shards: one ``read_few`` per file touched (not per record),
    and the samples in the order asked, repeats and negative indices included; up to
    ``SAMPLES_WALK_MIN_HELD - 1`` records of a spec that is not all scalars are decoded
    record by record (``SAMPLES_WALK_MIN - 1`` where random reads go to the files), and
    equal the batch decode's samples."""
    features = {"v": tfe.VarLenFeature("int64"), "x": tfe.FixedLenFeature([2], "float32")}
    paths = []
    for shard in range(3):
        path = str(tmp_path / f"part-{shard}.tfrecord")
        with tfe.TFRecordWriter(path, index=True) as w:
            w.write_many(
                [
                    tfe.encode_example({"v": [shard * 100 + k] * k, "x": [k / 2, -k / 2]})
                    for k in range(1, 9)
                ]
            )
        paths.append(path)
    ds = tfe.RecordDataset(paths, features=features)
    calls: list[list[int]] = []
    real = local_source.LocalFileRecords.read_few

    def counted(self: Any, local: list[int], verify: bool = True) -> Any:
        calls.append(list(local))
        return real(self, local, verify)

    monkeypatch.setattr(local_source.LocalFileRecords, "read_few", counted)
    keys = [17, 0, 9, -1, 0, 3, 23, 8]
    got = ds.__getitems__(keys)
    assert sorted(map(sorted, calls)) == [[0, 0, 3], [0, 1], [1, 7, 7]]
    want = [[202], [1], [102], [208], [1], [4], [208], [101]]
    assert [s["v"].tolist()[:1] for s in got] == want
    calls.clear()
    # (A dataset this small reads its files from whole-file copies: the bound for it.)
    n = access_methods.SAMPLES_WALK_MIN_HELD - 1
    idx = [(7 * j) % len(ds) for j in range(n)]
    per_record = ds.__getitems__(idx)
    assert calls  # (the per-record path read them)
    if kernels.ready():
        off = tfe.RecordDataset(paths, features=features, random_holds=False)
        len(off)
        floor = access_methods.SAMPLES_WALK_MIN
        assert off._walk_beats_single(floor)
        assert not off._walk_beats_single(floor - 1)
        assert not ds._walk_beats_single(n)
        assert ds._walk_beats_single(n + 1)
    monkeypatch.setattr(access_methods, "SAMPLES_WALK_MIN", 1)
    monkeypatch.setattr(access_methods, "SAMPLES_WALK_MIN_HELD", 1)
    calls.clear()
    assert same(per_record, ds.__getitems__(idx))
    assert not calls or not kernels.ready()  # (the batch path: not read record by record)


def test_small_batches_of_many_keys_go_to_the_batch_decode(tmp_path: Any) -> None:
    """A spec of many scalar keys (wide records): ``columns`` walks a few records, and
    leaves ``_WIDE_COLUMNS_MAX`` or more to the batch decode (cheaper there); ``ds[list]``
    gives the same batch either way."""
    from tfrecord_engine.example import single as single_module

    keys = [f"f{k:03d}" for k in range(single_module._WALK_KEYS + 4)]
    features = {k: tfe.FixedLenFeature([], "int64") for k in keys}
    records = [
        tfe.encode_example({k: [i * 1000 + j] for j, k in enumerate(keys)}) for i in range(40)
    ]
    decoder = SingleDecoder(features)
    few = single_module._WIDE_COLUMNS_MAX - 1
    assert decoder.columns(records[:few]) is not None
    assert decoder.columns(records[: few + 1]) is None
    ds = _dataset(tmp_path, records, features)
    for n in (few, few + 1, 40):
        idx = list(range(n - 1, -1, -1))
        got = ds[idx]
        assert got["f003"].tolist() == [i * 1000 + 3 for i in idx]
        small, dataset_module.SMALL_BATCH = dataset_module.SMALL_BATCH, 0
        try:
            assert same(got, ds[idx])
        finally:
            dataset_module.SMALL_BATCH = small


def test_the_per_call_decoder_reads_varints_with_the_one_reader() -> None:
    # single_steps.read_varint is made by kernels.varint.varint_reader (the reader of
    # every pure-Python decoder): bits past 64 dropped, errors as MalformedExampleError
    # at the varint's first byte, which the per-call paths turn into "exact path".
    from tfrecord_engine.example.single_steps import read_varint

    assert read_varint(bytes([0xAC, 0x02, 0x05]), 0, 3) == (300, 2)
    assert read_varint(b"\x01" + bytes([0xFF] * 9 + [0x7F]), 1, 11) == (2**64 - 1, 11)
    with pytest.raises(tfe.MalformedExampleError, match="truncated varint") as got:
        read_varint(b"\x00\x80\x80", 1, 3)
    assert got.value.offset == 1
    with pytest.raises(tfe.MalformedExampleError, match="longer than 10 bytes"):
        read_varint(bytes([0x80] * 11), 0, 11)
    # A record whose Features length runs past its end: no sample, the exact path decides.
    spec = {"x": tfe.FixedLenFeature([], "int64")}
    record = tfe.encode_example({"x": [7]})
    decoder = SingleDecoder(spec)
    assert decoder.values(record) is not None
    assert decoder.values(record[:1] + bytes([0xFF, 0xFF])) is None


def test_the_generated_takes_docstring_examples() -> None:
    # compile_take (ds[i]) and compile_take_at (a batch decode's records, values cut at
    # their offsets in the batch's arrays) read the same values from their arguments.
    import doctest

    from tfrecord_engine.example import single_take

    result = doctest.testmod(single_take)
    assert result.attempted >= 2
    assert result.failed == 0
