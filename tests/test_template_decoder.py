"""Template decoding (records sharing a layout) returns exactly what the exact path returns."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.example import batch as batch_module
from tfrecord_engine.example import template
from tfrecord_engine.example.batch import BatchDecoder, join_records
from tfrecord_engine.example.parse import parse_example as parse_exact
from tfrecord_engine.example.specs import FeatureSpec
from tfrecord_engine.kernels.words import read_rows
from tfrecord_engine.testing.layouts import LayoutBatch, layout_batches

from .test_batch_decoder import _outcome, assert_same

_SLOW_DATA = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=120, suppress_health_check=_SLOW_DATA, deadline=None)
@given(layout_batches())
def test_template_groups_equal_the_exact_path(batch: LayoutBatch) -> None:
    exact = _outcome(lambda: parse_exact(batch.records, batch.features))
    dec = BatchDecoder(batch.features)
    fast = _outcome(lambda: dec.decode_records(batch.records))
    assert fast[0] == exact[0], (fast, exact)
    if exact[0] == "ok":
        assert_same(fast[1], exact[1])
    else:
        assert fast[1] == exact[1]
    # A second chunk through the same decoder reuses the layouts it learnt.
    again = _outcome(lambda: dec.decode_records(batch.records[::-1]))
    exact_rev = _outcome(lambda: parse_exact(batch.records[::-1], batch.features))
    assert again[0] == exact_rev[0]
    if again[0] == "ok":
        assert_same(again[1], exact_rev[1])


def _mnist_like(n: int, start: int = 0) -> list[bytes]:
    rng = np.random.default_rng(3)
    return [
        tfe.encode_example(
            {
                "image": rng.integers(0, 256, 784, dtype=np.uint8).tobytes(),
                "label": int(rng.integers(0, 10)),
                "index": start + i,
            }
        )
        for i in range(n)
    ]


MNIST = {
    "index": tfe.FixedLenFeature([], "int64"),
    "label": tfe.FixedLenFeature([], "int64"),
    "image": tfe.FixedLenFeature([], "string"),
}
#: MNIST with one list feature: no compiled dense plan takes it, so datasets and
#: ``parse_example`` decode it with templates (``MNIST`` itself goes to the dense plan).
MNIST_LIST: dict[str, FeatureSpec] = {**MNIST, "label": tfe.VarLenFeature("int64")}


def test_uniform_records_are_decoded_by_template() -> None:
    # Indices 100..299 have 1- and 2-byte varints: two layouts, both templated.
    records = _mnist_like(200, start=100)
    dec = BatchDecoder(MNIST, compiled_plan=False)
    out = dec.decode_records(records)
    assert dec.stats.template_records == 200
    assert dec.stats.fallback_records == 0
    assert_same(out, parse_exact(records, MNIST))


def test_template_keeps_trailing_nul_bytes_and_empty_values() -> None:
    feats: dict[str, FeatureSpec] = {
        "b": tfe.VarLenFeature("string"),
        "x": tfe.FixedLenFeature([2], "float32"),
    }
    records = [
        tfe.encode_example({"b": [b"ab\x00\x00", b""], "x": np.array([i, -i], np.float32)})
        for i in range(100)
    ]
    dec = BatchDecoder(feats)
    out = dec.decode_records(records)
    assert dec.stats.template_records == 100
    assert out["b"].values.tolist() == [b"ab\x00\x00", b""] * 100
    assert_same(out, parse_exact(records, feats))


def test_a_record_with_a_changed_structural_byte_is_not_matched() -> None:
    records = _mnist_like(100)
    layout = records[50]
    # Same length, one key byte changed: "label" -> "lAbel" is a key not asked for.
    at = layout.index(b"label")
    records[50] = layout[:at] + b"lA" + layout[at + 2 :]
    dec = BatchDecoder(MNIST, compiled_plan=False)
    exact = _outcome(lambda: parse_exact(records, MNIST))
    fast = _outcome(lambda: dec.decode_records(records))
    assert exact[0] == "error"  # record 50 lacks the required "label" now
    assert fast == exact
    # The first layout did not take record 50: it needed a layout of its own.
    assert len(dec._templates) == 2


def test_int64_widths_one_to_eight_and_negative(tmp_path: Path) -> None:
    values = [0, 1, 127, 128, 2**14, 2**21, 2**28, 2**35, 2**42, 2**49, 2**56 - 1, 2**56, -1]
    feats = {"v": tfe.FixedLenFeature([len(values)], "int64")}
    records = [
        tfe.encode_example({"v": [v + (i % 2 if v >= 0 else 0) for v in values]}) for i in range(80)
    ]
    # The compiled plan would take these int64-only records: test the templates.
    dec = BatchDecoder(feats, compiled_plan=False)
    assert_same(dec.decode_records(records), parse_exact(records, feats))
    # 2**56 needs 9 bytes and -1 ten: such layouts are walked, not templated.
    assert dec.stats.template_records == 0
    records = [tfe.encode_example({"v": [v + i % 2 for v in values[:-3]]}) for i in range(80)]
    feats = {"v": tfe.FixedLenFeature([len(values) - 3], "int64")}
    dec = BatchDecoder(feats, compiled_plan=False)
    assert_same(dec.decode_records(records), parse_exact(records, feats))
    assert dec.stats.template_records == 80


def test_dataset_chunks_from_the_mapped_file_use_templates(tmp_path: Path) -> None:
    path = os.fspath(tmp_path / "m.tfrecord")
    records = _mnist_like(300, start=16000)  # 2- and 3-byte indices
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(records)
    ds = tfe.RecordDataset(path, features=MNIST_LIST)
    # (One batch, one chunk: the decoder's cost model walks its second chunk to time
    # the walk.)
    got = list(ds.batches(300))
    assert ds.decoder.stats.template_records == 300
    want = [parse_exact(records, MNIST_LIST)]
    assert len(got) == len(want)
    for g, w_ in zip(got, want, strict=True):
        assert_same(g, w_)
    # The last record's varints sit at the very end of the mapped file's data.
    last = ds[[299]]
    assert last["index"].tolist() == [16299]


def test_build_template_refuses_what_it_cannot_hold() -> None:
    feats = {"a": tfe.FixedLenFeature([], "int64")}
    dec = BatchDecoder(feats)
    buf, starts, ends = join_records([tfe.encode_example({"a": 1.5})])  # type mismatch
    assert template.build_template(buf, int(starts[0]), int(ends[0]), dec._keys, dec._kinds) is None
    buf, starts, ends = join_records([b""])  # too short for word checks
    assert template.build_template(buf, 0, 0, dec._keys, dec._kinds) is None


def _tabular(n: int, seed: int = 0, *, high: int = 2**40) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [
        tfe.encode_example(
            {
                "tag": b"t%d" % (i % 7),
                "ids": rng.integers(0, high, 16),
                "label": int(rng.integers(0, 2)),
                "x": rng.standard_normal(4).astype(np.float32),
            }
        )
        for i in range(n)
    ]


TABULAR = {
    "tag": tfe.FixedLenFeature([], "string"),
    "ids": tfe.FixedLenFeature([16], "int64"),
    "label": tfe.FixedLenFeature([], "int64"),
    "x": tfe.FixedLenFeature([4], "float32"),
}


def test_flexible_template_takes_lists_of_varying_widths() -> None:
    # ids up to 2**40 have 5- and 6-byte varints in any mix: records differ in length,
    # with fields both before ("tag") and after ("label", "x") the varying list.
    records = _tabular(400)
    assert len({len(r) for r in records}) > 1
    dec = BatchDecoder(TABULAR, compiled_plan=False)
    out = dec.decode_records(records)
    assert_same(out, parse_exact(records, TABULAR))
    assert dec.stats.template_records == 400
    assert any(t.flexible for t in dec._templates)


def test_flexible_template_rejects_a_changed_enclosing_length_width() -> None:
    # ids below 2**7 make the entry 1 byte of length shorter: still templated; a list of
    # 16 ten-byte varints (negative ids) crosses 128 bytes, so its length fields need
    # one byte more: such records must not match the small-id layout.
    records = _tabular(200, high=2**40)
    odd = tfe.encode_example(
        {"tag": b"t0", "ids": np.full(16, -5, np.int64), "label": 1, "x": np.ones(4, np.float32)}
    )
    records[100] = odd
    dec = BatchDecoder(TABULAR, compiled_plan=False)
    assert_same(dec.decode_records(records), parse_exact(records, TABULAR))
    # Record 100's longer list needs wider length fields: no template took it.
    assert dec.stats.template_records == 199


def test_flexible_template_drops_a_torn_list_to_the_walk() -> None:
    # Same layout bytes, but the varying list's last byte has its continuation bit set:
    # the record is malformed, and the exact path's error must be the result.
    records = _tabular(100)
    bad = bytearray(records[60])
    at = bytes(bad).index(b"ids") + 3 + 2 + 2 + 2  # key, value tag/len, list tag/len
    payload_len = bad[at - 1]
    bad[at + payload_len - 1] |= 0x80
    records[60] = bytes(bad)
    dec = BatchDecoder(TABULAR, compiled_plan=False)
    assert _outcome(lambda: dec.decode_records(records)) == _outcome(
        lambda: parse_exact(records, TABULAR)
    )


def _two_varying_lists(seed: int) -> tuple[dict[str, FeatureSpec], list[bytes]]:
    """256 records of two lists of varying length (a flexible template allows one):
    templates take almost none of them."""
    rng = np.random.default_rng(seed)
    feats: dict[str, FeatureSpec] = {
        "tokens": tfe.VarLenFeature("int64"),
        "tags": tfe.VarLenFeature("string"),
    }
    records = [
        tfe.encode_example(
            {
                "tokens": rng.integers(0, 30_000, int(rng.integers(1, 65))),
                "tags": [b"t%d" % k for k in rng.integers(0, 100, int(rng.integers(1, 5)))],
            }
        )
        for _ in range(256)
    ]
    return feats, records


def test_chunks_where_templates_barely_help_walk_without_trying() -> None:
    feats, records = _two_varying_lists(seed=5)
    dec = BatchDecoder(feats)
    assert_same(dec.decode_records(records), parse_exact(records, feats))
    # Two lists of varying length (a flexible template allows one): templates took
    # almost nothing, so the next chunk does not try them.
    assert dec._skip_templates > 0
    before = dec.stats.template_records
    assert_same(dec.decode_records(records[::-1]), parse_exact(records[::-1], feats))
    assert dec.stats.template_records == before


@settings(max_examples=60, suppress_health_check=_SLOW_DATA, deadline=None)
@given(layout_batches())
def test_parse_example_mid_size_batches_equal_the_exact_path(batch: LayoutBatch) -> None:
    # 64-1023 records: parse_example uses this thread's cached decoder when its learnt
    # layouts take the batch. Twice: the second call starts from the first's templates.
    for records in (batch.records, batch.records[::-1]):
        exact = _outcome(lambda r=records: parse_exact(r, batch.features))
        fast = _outcome(lambda r=records: tfe.parse_example(r, batch.features))
        assert fast[0] == exact[0], (fast, exact)
        if exact[0] == "ok":
            assert_same(fast[1], exact[1])
        else:
            assert fast[1] == exact[1]


def test_parse_example_caches_a_decoder_per_thread_and_spec() -> None:
    records = _mnist_like(300)
    want = parse_exact(records, MNIST_LIST)
    for _ in range(3):
        assert_same(tfe.parse_example(records, MNIST_LIST), want)
    cached = batch_module._cached_decoder(MNIST_LIST)
    assert cached is not None
    # One decoder served the three calls: the first tried templates, the second walked
    # (each way is measured once), the third took the cheaper of the two.
    assert cached.stats.records == 900
    assert cached.stats.template_records >= 300
    # Equal specs share the decoder; another spec gets its own.
    assert batch_module._cached_decoder(dict(MNIST_LIST)) is cached
    other = {"label": tfe.FixedLenFeature([], "int64")}
    assert batch_module._cached_decoder(other) is not cached
    # Each thread has its own (decoders keep state between calls).
    seen: list[object] = []
    results: list[dict[str, object]] = []

    def work() -> None:
        seen.append(batch_module._cached_decoder(MNIST_LIST))
        results.append(tfe.parse_example(records, MNIST_LIST))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(d) for d in seen} | {id(cached)}) == 4
    for got in results:
        assert_same(got, want)


@given(
    data=st.binary(min_size=1, max_size=200),
    first=st.integers(-3, 60),
    step=st.integers(-2, 40),
    n=st.integers(0, 12),
    size=st.integers(0, 20),
    bump=st.none() | st.integers(0, 11),
)
def test_row_view_equals_read_rows(  # noqa: PLR0917 - Hypothesis arguments
    data: bytes, first: int, step: int, n: int, size: int, bump: int | None
) -> None:
    # Rows at equal steps are a strided view; anything else (a step that varies, rows
    # past the buffer's ends) is read_rows' copy, or its error.
    buf = np.frombuffer(data, np.uint8)
    at = first + step * np.arange(n, dtype=np.int64)
    if bump is not None and bump < n:
        at[bump] += 1
    inside = n == 0 or (int(at.min()) >= 0 and int(at.max()) + size <= buf.size)
    if not inside:
        return  # read_rows' own contract: every span inside the buffer
    want = read_rows(buf, at, size)
    got = template._row_view(buf, at, size)
    assert got.shape == want.shape
    assert got.tolist() == want.tolist()
    if size:
        as_bytes = f"V{size}"
        assert got.view(as_bytes).reshape(-1).tolist() == want.view(as_bytes).reshape(-1).tolist()


def test_string_values_of_records_at_equal_steps_are_one_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A sequential chunk of one file's same-size records: the bytes values come from a
    # strided view of the read buffer (the records and their 16 framing bytes apart),
    # equal to the exact path's, trailing NUL bytes kept.
    records = _mnist_like(300, start=20_000)  # index varints of one width: one size
    records[7] = tfe.encode_example({"image": bytes(783) + b"\x01", "label": 3, "index": 20_007})
    records[8] = tfe.encode_example({"image": b"\x01" + bytes(783), "label": 4, "index": 20_008})
    path = str(tmp_path / "m.tfrecord")
    with tfe.TFRecordWriter(path) as w:
        for r in records:
            w.write(r)
    views: list[bool] = []
    real = template._row_view

    def spy(buf: npt.NDArray[np.uint8], at: npt.NDArray[np.int64], size: int) -> Any:
        out = real(buf, at, size)
        views.append(not out.flags.owndata and not out.flags.writeable)
        return out

    monkeypatch.setattr(template, "_row_view", spy)
    with tfe.RecordDataset(path, features=MNIST_LIST) as ds:
        got = list(ds.batches(64, readahead=0))
    assert views
    assert all(views)
    exact = parse_exact(records, MNIST_LIST)
    assert [v for b in got for v in b["image"].tolist()] == exact["image"].tolist()
    assert np.concatenate([b["index"] for b in got]).tolist() == list(range(20_000, 20_300))


def test_templates_give_way_to_the_walk_where_they_cost_more() -> None:
    """Each way is measured once (templates first); the cheaper one serves later chunks,
    and the other is tried again every ``probe_every`` chunks. The values are the same."""
    records = _mnist_like(256)
    want = parse_exact(records, MNIST)
    dec = BatchDecoder(MNIST, compiled_plan=False)
    assert_same(dec.decode_records(records), want)
    assert dec.stats.template_records == 256  # the first chunk tries templates
    assert_same(dec.decode_records(records), want)
    assert dec.stats.template_records == 256  # the second walks
    # Suppose templates had cost ten times the walk per record on these files (and
    # chunks of 256 were full ones):
    dec._costs = template.TemplateCosts(probe_every=4, chunk_records=256)
    dec._costs.record(True, 10.0, 1)
    dec._costs.record(False, 1.0, 1)
    for _ in range(3):
        assert_same(dec.decode_records(records), want)
    assert dec.stats.template_records == 256  # walked
    assert_same(dec.decode_records(records), want)
    assert dec.stats.template_records == 512  # the fourth chunk tried templates again


def test_small_chunks_try_templates_as_rarely_per_record_as_full_ones() -> None:
    """A try of templates costs milliseconds whatever the chunk: a chunk of a quarter of
    ``chunk_records`` counts as a quarter of one, so the cheaper way serves four times
    as many of them between two tries of the other, and a skip after templates barely
    helped lasts as many records. The values are the same either way."""
    costs = template.TemplateCosts(probe_every=4, chunk_records=1000)
    assert [costs.choose(250), costs.choose(250)] == [True, False]
    costs.record(True, 10.0, 250)
    costs.record(False, 1.0, 250)
    chosen = [costs.choose(250) for _ in range(32)]
    assert [k for k, way in enumerate(chosen) if way] == [15, 31]
    assert [costs.choose(1000) for _ in range(4)] == [False, False, False, True]
    # A decoder's skip after a chunk templates barely took: 16 full chunks' worth.
    feats, records = _two_varying_lists(seed=3)
    dec = BatchDecoder(feats)
    dec._costs = template.TemplateCosts(chunk_records=4 * len(records))
    assert_same(dec.decode_records(records), parse_exact(records, feats))
    assert dec._skip_templates == batch_module.TEMPLATE_RETRY_CHUNKS
    for _ in range(8):
        dec.decode_records(records)
    assert dec._skip_templates == batch_module.TEMPLATE_RETRY_CHUNKS - 2
