"""The compiled kernels (numba) return exactly what the numpy / crc32c paths return."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import crc32c
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine import kernels
from tfrecord_engine.data import source
from tfrecord_engine.example import lockstep
from tfrecord_engine.example.batch import BatchDecoder
from tfrecord_engine.example.parse import parse_example as parse_exact
from tfrecord_engine.records import framing
from tfrecord_engine.testing.layouts import LayoutBatch, layout_batches
from tfrecord_engine.testing.wirebytes import varint

from .test_batch_decoder import _outcome, assert_same

pytest.importorskip("numba")


def _reference_runs(data: bytes, spans: list[tuple[int, int]]) -> list[list[int] | None]:
    """Protobuf's varint reading, one run at a time; None for a torn or over-long run."""
    out: list[list[int] | None] = []
    for s, e in spans:
        values: list[int] | None = []
        i = s
        while i < e and values is not None:
            value, shift, size = 0, 0, 0
            while True:
                if i >= e or size == 10:
                    values = None
                    break
                byte = data[i]
                i += 1
                value |= (byte & 0x7F) << shift
                shift += 7
                size += 1
                if byte < 0x80:
                    break
            if values is not None:
                value &= (1 << 64) - 1
                values.append(value - (1 << 64) if value >= 1 << 63 else value)
        out.append(values)
    return out


def test_kernels_are_in_use() -> None:
    # The test extra installs numba: this suite must exercise the compiled paths.
    assert kernels.enabled()
    with kernels.switched(False):
        assert not kernels.enabled()
        assert (
            kernels.varint_runs(np.zeros(4, np.uint8), np.zeros(1, np.int64), np.ones(1, np.int64))
            is None
        )


def test_every_kernel_loads_and_the_walks_count_no_references() -> None:
    # A kernel that numba cannot compile without reference counting (one that makes an
    # array) fails its self-test and is left out silently: every name must be there.
    from tfrecord_engine.kernels import _examples, _loader, _sequence, _single
    from tfrecord_engine.kernels._intrinsics import NO_REFCOUNTS

    loaded = _loader._load()
    assert loaded is not None
    # (The CRC and the framing's fill need SSE 4.2's crc32 instruction: x86 only.)
    expected_off = [] if _loader._has_crc_instruction() else ["crc", "fill"]
    assert sorted(name for name, kernel in loaded.items() if kernel is None) == expected_off
    # The per-entry helpers of the walks are called millions of times an epoch: with
    # numba's reference counting each call pays atomic updates of every array it takes.
    assert NO_REFCOUNTS == {"_nrt": False}
    for helper in (
        _examples._span,
        _examples._record,
        _examples.walk_examples,
        _single._walk,
        _sequence._steps,
        _sequence.walk_sequences,
    ):
        assert helper.targetoptions.get("_nrt") is False, helper
    assert _examples._slot.targetoptions.get("inline") == "always"


_spans = st.lists(st.tuples(st.integers(0, 300), st.integers(0, 40)), min_size=1, max_size=40)


@given(data=st.binary(min_size=1, max_size=400), offset=st.integers(0, 7), spans=_spans)
def test_crc_spans_equal_crc32c(data: bytes, offset: int, spans: list[tuple[int, int]]) -> None:
    # Every alignment of the buffer and of each span against 8-byte words.
    raw = np.frombuffer(bytes(offset) + data, np.uint8)[offset:]
    starts = np.array([min(s, raw.size) for s, _ in spans], np.int64)
    ends = np.minimum(starts + np.array([n for _, n in spans], np.int64), raw.size)
    got = kernels.crc32c_spans(raw, starts, ends)
    assert got is not None
    want = [crc32c.crc32c(data[s:e]) for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]
    assert got.tolist() == want


@settings(max_examples=60, deadline=None)
@given(
    data=st.binary(min_size=64, max_size=3000),
    spans=st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 3000)), min_size=1, max_size=12),
)
def test_folded_crc_spans_equal_crc32c(data: bytes, spans: list[tuple[int, int]]) -> None:
    # Spans of 64 bytes and more go through carry-less folding (PCLMULQDQ): four lanes
    # of 64 bytes, the fold into one, 16-byte steps, then the tail; every length and
    # alignment against the crc32c package, through the entry point and the kernel.
    from tfrecord_engine.kernels import _numba as _kernels_numba

    buf = np.frombuffer(data, np.uint8)
    starts = np.array([min(s, len(data)) for s, _ in spans], np.int64)
    ends = np.array([min(s + n, len(data)) for s, n in spans], np.int64)
    want = [crc32c.crc32c(data[s:e]) for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]
    got = kernels.crc32c_spans(buf, starts, ends)
    assert got is not None
    assert got.tolist() == want
    if not kernels._has_clmul_instruction():
        return  # (the folded kernel needs PCLMULQDQ)
    base, words = kernels._aligned_words(buf)
    out = np.zeros(len(spans), np.uint32)
    _kernels_numba.crc_spans_folded(buf, words, base, starts, ends, out)
    assert out.tolist() == want


def test_the_folded_crc_is_used_where_the_cpu_has_pclmul() -> None:
    from tfrecord_engine.kernels import _numba as _kernels_numba

    loaded = kernels._STATE["kernels"]
    assert loaded is not None
    if kernels._has_clmul_instruction():
        assert loaded["crc"] is _kernels_numba.crc_spans_folded
    else:
        assert loaded["crc"] in (None, _kernels_numba.crc_spans)


def test_crc_spans_leave_out_of_bounds_and_long_spans_to_crc32c() -> None:
    buf = np.zeros(100, np.uint8)
    one = np.zeros(1, np.int64)
    assert kernels.crc32c_spans(buf, one, np.array([101])) is None
    assert kernels.crc32c_spans(buf, np.array([-1]), np.array([5])) is None
    assert kernels.crc32c_spans(buf, np.array([9]), np.array([5])) is None
    big = np.zeros(kernels.CRC_MAX_MEAN_SPAN + 1, np.uint8)
    assert kernels.crc32c_spans(big, one, np.array([big.size])) is None
    # source.crc_spans still answers for those, through crc32c.
    masked = source.crc_spans(big, one, np.array([big.size]))
    assert masked.tolist() == [framing.mask_crc(crc32c.crc32c(bytes(big.size)))]


@given(data=st.binary(min_size=1, max_size=3000), spans=_spans, seed=st.integers(0, 2**32 - 1))
def test_gather_spans_equal_slices(data: bytes, spans: list[tuple[int, int]], seed: int) -> None:
    raw = np.frombuffer(data, np.uint8)
    starts = np.array([min(s * 10, raw.size) for s, _ in spans], np.int64)
    ends = np.minimum(starts + np.array([n * 20 for _, n in spans], np.int64), raw.size)
    order = np.random.default_rng(seed).permutation(len(starts))  # scattered, any order
    starts, ends = starts[order], ends[order]
    got = kernels.gather_spans(raw, starts, ends)
    assert got is not None
    want = b"".join(data[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True))
    assert got.tobytes() == want


def test_gather_spans_leave_out_of_bounds_spans_and_kernels_off_to_slicing() -> None:
    buf = np.arange(100, dtype=np.uint8)
    assert kernels.gather_spans(buf, np.array([0]), np.array([101])) is None
    assert kernels.gather_spans(buf, np.array([-1]), np.array([5])) is None
    assert kernels.gather_spans(buf, np.array([9]), np.array([5])) is None
    assert kernels.gather_spans(buf, np.zeros(0, np.int64), np.zeros(0, np.int64)) is None
    with kernels.switched(False):
        assert kernels.gather_spans(buf, np.array([0]), np.array([5])) is None
    got = kernels.gather_spans(buf, np.array([90, 0]), np.array([100, 0]))
    assert got is not None
    assert got.tolist() == list(range(90, 100))


_value = st.one_of(
    st.integers(0, 127), st.integers(0, 1 << 40), st.integers(-(1 << 63), (1 << 63) - 1)
)
_run = st.one_of(
    st.lists(_value, max_size=12).map(lambda vs: b"".join(varint(v) for v in vs)),
    st.binary(max_size=24),  # torn runs and arbitrary bytes
    st.integers(1, 14).map(lambda k: b"\x80" * k + b"\x01"),  # 2..15-byte varints
    st.integers(0, 8).map(lambda k: b"\xff" * 9 + bytes([k])),  # 10th-byte high bits
)


@given(runs=st.lists(_run, min_size=1, max_size=30), gap=st.binary(max_size=3))
def test_varint_runs_equal_protobuf_and_the_numpy_path(runs: list[bytes], gap: bytes) -> None:
    spans, parts, pos = [], [], 0
    for r in runs:
        parts += [r, gap]
        spans.append((pos, pos + len(r)))
        pos += len(r) + len(gap)
    data = b"".join(parts) + b"\xff" * 16  # what follows must not leak into a run
    buf = np.frombuffer(data, np.uint8)
    p_start = np.array([s for s, _ in spans], np.int64)
    p_end = np.array([e for _, e in spans], np.int64)
    got = kernels.varint_runs(buf, p_start, p_end)
    assert got is not None
    values, counts, ok = got
    want = _reference_runs(data, spans)
    assert ok.tolist() == [w is not None for w in want]
    assert counts.tolist() == [len(w) if w is not None else 0 for w in want]
    assert values.tolist() == [v for w in want if w is not None for v in w]
    # The numpy path agrees on which runs are clean and on their values.
    n_values, n_counts, n_ok = lockstep.numpy_varint_runs(buf, p_start, p_end)
    assert n_ok.tolist() == ok.tolist()
    assert n_values[np.repeat(n_ok, n_counts)].tolist() == values.tolist()
    # The kernel's Python source (what numba compiles) reads the same: a check of the
    # source itself, and coverage for lines that compiled code does not report.
    from tfrecord_engine.kernels import _numba as _kernels_numba

    py_values = np.empty(values.size + 32 * len(runs), np.int64)
    py_counts, py_ok = np.empty_like(counts), np.empty_like(ok)
    n = _kernels_numba.varint_runs.py_func(buf, p_start, p_end, py_values, py_counts, py_ok)
    assert py_values[:n].tolist() == values.tolist()
    assert py_counts.tolist() == counts.tolist()
    assert py_ok.tolist() == ok.tolist()


def test_varint_runs_leave_out_of_bounds_runs_to_numpy() -> None:
    buf = np.frombuffer(varint(300) * 4, np.uint8)
    assert kernels.varint_runs(buf, np.array([0]), np.array([buf.size + 1])) is None
    values, counts, ok = lockstep.varint_runs(buf, np.array([0]), np.array([buf.size]))
    assert values.tolist() == [300] * 4
    assert counts.tolist() == [4]
    assert ok.tolist() == [True]


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(layout_batches())
def test_decoder_without_kernels_equals_the_exact_path(batch: LayoutBatch) -> None:
    # The rest of the suite runs with the kernels: this keeps the numpy paths honest.
    exact = _outcome(lambda: parse_exact(batch.records, batch.features))
    with kernels.switched(False):
        fast = _outcome(lambda: BatchDecoder(batch.features).decode_records(batch.records))
    assert fast[0] == exact[0], (fast, exact)
    if exact[0] == "ok":
        assert_same(fast[1], exact[1])
    else:
        assert fast[1] == exact[1]


def _tabular_file(path: Path, n: int) -> dict[str, tfe.FixedLenFeature | tfe.VarLenFeature]:
    rng = np.random.default_rng(7)
    with tfe.TFRecordWriter(str(path)) as w:
        for i in range(n):
            ids = rng.integers(0, 1 << 40, int(rng.integers(0, 20)))
            w.write(
                tfe.encode_example(
                    {"x": rng.random(8, np.float32).tolist(), "ids": ids, "label": [i % 7]}
                )
            )
    return {
        "x": tfe.FixedLenFeature([8], np.float32),
        "ids": tfe.VarLenFeature(np.int64),
        "label": tfe.FixedLenFeature([], np.int64),
    }


def _epoch(path: Path, features: dict[str, tfe.FixedLenFeature | tfe.VarLenFeature]) -> list[str]:
    ds = tfe.RecordDataset(str(path), features=features)
    it = ds.batches(100)
    try:
        out = []
        for batch in it:
            ids = batch["ids"]
            out.append(
                repr(
                    (
                        batch["x"].tolist(),
                        ids.values.tolist(),
                        ids.indices.tolist(),
                        batch["label"].tolist(),
                    )
                )
            )
        return out
    finally:
        it.close()  # its read-ahead thread, which a raised error's traceback would keep
        ds.close()


def test_epoch_and_damage_are_the_same_with_and_without_kernels(tmp_path: Path) -> None:
    path = tmp_path / "tab.tfrecord"
    features = _tabular_file(path, 1500)
    with_kernels = _epoch(path, features)
    with kernels.switched(False):
        assert _epoch(path, features) == with_kernels
    # One flipped payload byte: the same error, naming the same record, either way.
    index = tfe.Index.build(str(path))
    raw = bytearray(path.read_bytes())
    raw[int(index.offsets[1234]) + 12 + 3] ^= 0x10
    path.write_bytes(bytes(raw))
    errors = []
    for off in (False, True):
        ctx: AbstractContextManager[None] = kernels.switched(False) if off else nullcontext()
        with ctx, pytest.raises(tfe.CorruptedRecordError) as info:
            _epoch(path, features)
        errors.append((info.value.record_index, info.value.offset, info.value.reason))
    assert errors[0] == errors[1]
    assert errors[0][0] == 1234


def test_without_numba_every_entry_point_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    # What a machine without numba (or where its LLVM library fails to load) sees.
    monkeypatch.setitem(kernels._STATE, "kernels", None)
    assert not kernels.available()
    assert not kernels.enabled()
    buf = np.frombuffer(b"123456789" + varint(300), np.uint8)
    assert kernels.crc32c_spans(buf, np.array([0]), np.array([9])) is None
    assert kernels.varint_runs(buf, np.array([9]), np.array([11])) is None
    assert source.crc_spans(buf, np.array([0]), np.array([9])).tolist() == [
        framing.mask_crc(0xE3069283)
    ]
    values, counts, ok = lockstep.varint_runs(buf, np.array([9]), np.array([11]))
    assert (values.tolist(), counts.tolist(), ok.tolist()) == ([300], [1], [True])


def test_a_kernel_that_fails_its_self_test_is_not_used() -> None:
    def wrong_crc(buf, words, base, starts, ends, out):  # type: ignore[no-untyped-def]  # noqa: PLR0917
        out[:] = 0

    def broken(*args):  # type: ignore[no-untyped-def]
        raise RuntimeError("LLVM ERROR: cannot select")

    from tfrecord_engine.kernels import _numba as _kernels_numba

    good = kernels._load()
    assert good is not None
    assert kernels._self_test(good, _kernels_numba.CompileErrors)
    assert not kernels._self_test({**good, "crc": wrong_crc}, _kernels_numba.CompileErrors)
    assert not kernels._self_test({**good, "varints": broken}, _kernels_numba.CompileErrors)
    for name in ("match", "lengths", "walk", "frame", "dense", "hash", "gather"):
        assert not kernels._self_test({**good, name: broken}, _kernels_numba.CompileErrors)


@given(
    data=st.binary(min_size=1, max_size=200),
    base=st.lists(st.integers(0, 220), min_size=1, max_size=20),
    at=st.lists(st.integers(-8, 40), min_size=1, max_size=6),
    seed=st.integers(0, 2**32 - 1),
)
def test_match_words_equals_the_numpy_check(
    data: bytes, base: list[int], at: list[int], seed: int
) -> None:
    from tfrecord_engine.example import template

    buf = np.frombuffer(data, np.uint8)
    a = np.array(at, np.int64)
    # Positions inside the buffer (as the template's are), near its end included.
    b = np.minimum(np.array(base, np.int64) + 8, buf.size - 1 - int(a.max()))
    if int(b.min()) + int(a.min()) < 0:
        return
    rng = np.random.default_rng(seed)
    # Words taken from the buffer itself (so some records match), masks random bytes.
    words = lockstep.read_words(buf, b[0] + a)
    masks = rng.integers(0, 256, (a.size, 8), dtype=np.uint8).view(np.uint64).reshape(-1)
    got = kernels.match_words(buf, b, a, words, masks)
    assert got is not None
    with kernels.switched(False):
        want = template._check(buf, b, a, words, masks)
    assert got.tolist() == want.tolist()
    # The entry point's one-load kernel and the byte-by-byte one agree.
    from tfrecord_engine.kernels import _numba as _kernels_numba

    assert kernels._STATE["kernels"]["match"] is _kernels_numba.match_words_loaded
    by_bytes = np.empty(b.size, np.bool_)
    _kernels_numba.match_words(buf, b, a, words, masks, by_bytes)
    assert by_bytes.tolist() == got.tolist()


@given(
    fields=st.lists(
        st.tuples(st.integers(0, 20), st.integers(1, 4), st.integers(0, 300)),
        min_size=1,
        max_size=4,
    ),
    records=st.lists(
        st.tuples(st.binary(min_size=30, max_size=30), st.integers(-3, 3)), min_size=1, max_size=10
    ),
)
def test_match_lengths_equals_the_numpy_check(
    fields: list[tuple[int, int, int]], records: list[tuple[bytes, int]]
) -> None:
    # Some records carry the expected lengths (value + delta) at the fields' places.
    raw = bytearray(b"".join(r for r, _ in records))
    for j, (_, d) in enumerate(records):
        if j % 2 == 0:
            for pos, width, value in fields:
                v = max(0, value + d)
                for b in range(width):
                    raw[30 * j + pos + b] = ((v >> (7 * b)) & 0x7F) | (0x80 if b < width - 1 else 0)
    buf = np.frombuffer(bytes(raw), np.uint8)
    base = np.arange(len(records), dtype=np.int64) * 30
    delta = np.array([d for _, d in records], np.int64)
    ok = np.ones(len(records), np.bool_)
    ok[-1] = False  # an already rejected record stays rejected
    want = ok.copy()
    for pos, width, value in fields:
        got_v = lockstep.swar_varints(
            lockstep.read_words(buf, base + pos), np.full(base.shape[0], width, np.int64)
        )
        want &= got_v.view(np.int64) == value + delta
    assert kernels.match_lengths(buf, base, ok, tuple(fields), delta)
    assert ok.tolist() == want.tolist()
    # A field reaching past the buffer: left to numpy, ``ok`` untouched.
    before = ok.copy()
    assert not kernels.match_lengths(buf, base, ok, ((29, 4, 0),), delta)
    assert ok.tolist() == before.tolist()


@given(
    records=st.lists(st.binary(max_size=40), max_size=30),
    tail=st.binary(max_size=30),
    start=st.integers(0, 3),
    max_records=st.integers(1, 40),
    max_bytes=st.integers(0, 2000),
)
def test_walk_records_equals_the_python_walk(
    records: list[bytes], tail: bytes, start: int, max_records: int, max_bytes: int
) -> None:

    from tfrecord_engine.records import reader

    # Framed records then arbitrary bytes (a torn or lying length), from any start.
    blob = framing.frame_many(records) + tail
    if len(blob) < 16:
        return
    buf = np.frombuffer(blob, np.uint8)
    pos = min(start * 16, len(blob) - 1)
    got = kernels.walk_records(buf, pos, max_records, max_bytes)
    assert got is not None
    old_records, old_bytes = reader._BLOCK_RECORDS, reader._BLOCK_BYTES
    reader._BLOCK_RECORDS, reader._BLOCK_BYTES = max_records, max_bytes
    try:
        want_starts, want_stop = reader._walk_block(blob, pos, len(blob))
    finally:
        reader._BLOCK_RECORDS, reader._BLOCK_BYTES = old_records, old_bytes
    assert got[0].tolist() == want_starts
    assert got[1] == want_stop


@given(chunks=st.lists(st.lists(st.binary(max_size=300), max_size=20), min_size=1, max_size=4))
def test_chunk_framer_equals_frame_many(chunks: list[list[bytes]]) -> None:
    # One framer reused over chunks of changing sizes (its buffer grows and is reused),
    # empty records included; the same bytes with the kernels off.
    framer = framing.ChunkFramer()
    for records in chunks:
        want = framing.frame_many(records)
        assert bytes(framer.frame(records)) == want
        with kernels.switched(False):
            assert bytes(framing.ChunkFramer().frame(records)) == want


@given(records=st.lists(st.binary(max_size=300), min_size=1, max_size=30))
def test_fill_frames_equals_frame_many(records: list[bytes]) -> None:
    # Data laid out with 16-byte gaps (what ChunkFramer joins); the kernel fills the rest.
    laid = bytearray(12) + bytearray(16).join(records) + bytearray(4)
    lengths = np.array([len(r) for r in records], np.int64)
    filled = kernels.fill_frames(np.frombuffer(laid, np.uint8), lengths)
    compiled = kernels._load()
    if compiled is not None and compiled["fill"] is not None:  # a CPU with the CRC instruction
        assert filled
    if filled:
        assert bytes(laid) == framing.frame_many(records)


def test_fill_frames_checks_the_size_and_steps_aside_when_off() -> None:
    buf = np.zeros(16 + 3, np.uint8)
    with pytest.raises(ValueError, match="not the frames' size"):
        kernels.fill_frames(buf[:-1], np.array([3]))
    with kernels.switched(False):
        assert not kernels.fill_frames(buf, np.array([3]))
        assert not kernels.can_fill_frames(np.array([3]))
    assert not buf.any()  # untouched when the kernels are off
    # Long records keep the crc32c package (faster per byte): no layout to waste.
    assert not kernels.can_fill_frames(np.array([kernels.CRC_MAX_MEAN_SPAN + 1] * 2))


def test_frame_records_checks_its_spans_and_output_size() -> None:
    data = np.frombuffer(b"abcdef", np.uint8)
    starts, lengths = np.array([0, 3]), np.array([3, 3])
    crcs = np.zeros(2, np.uint32)
    out = np.empty(6 + 32, np.uint8)
    assert kernels.frame_records(data, starts, lengths, crcs, crcs, out=out)
    # A span past the data is left to the Python path.
    assert not kernels.frame_records(data, starts, np.array([3, 4]), crcs, crcs, out=out)
    with pytest.raises(ValueError, match="not the frames' size"):
        kernels.frame_records(data, starts, lengths, crcs, crcs, out=out[:-1])


def test_write_many_bytes_are_the_same_with_and_without_kernels(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    records = [rng.bytes(int(n)) for n in rng.integers(0, 3000, 2500)]  # > 1 MiB: chunks
    paths = []
    for off in (False, True):
        path = tmp_path / f"w{int(off)}.tfrecord"
        ctx: AbstractContextManager[None] = kernels.switched(False) if off else nullcontext()
        with ctx, tfe.TFRecordWriter(path, durable=False) as w:
            assert w.write_many(records) == len(records)
        paths.append(path)
    assert paths[0].read_bytes() == paths[1].read_bytes() == framing.frame_many(records)


def test_gather_spans_into_a_given_buffer() -> None:
    buf = np.arange(100, dtype=np.uint8)
    out = np.full(50, 7, np.uint8)
    got = kernels.gather_spans(buf, np.array([10, 0]), np.array([13, 2]), out)
    assert got is not None
    assert got.tolist() == [10, 11, 12, 0, 1]
    assert np.shares_memory(got, out)
    assert out[5:].tolist() == [7] * 45  # the rest untouched
    with pytest.raises(ValueError, match="holds 4 bytes"):
        kernels.gather_spans(buf, np.array([10, 0]), np.array([13, 2]), np.zeros(4, np.uint8))
    with pytest.raises(ValueError, match="contiguous 1-D uint8"):
        kernels.gather_spans(buf, np.array([0]), np.array([2]), np.zeros(8, np.int64))
