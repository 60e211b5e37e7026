"""lockstep.varint_runs: the [m, width] rows path equals the gathered-spans path."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tfrecord_engine.example import lockstep
from tfrecord_engine.testing.wirebytes import varint as _varint

_value = st.one_of(
    st.integers(0, 127),
    st.integers(0, 1 << 40),
    st.integers(-(1 << 63), (1 << 63) - 1),
)
_run = st.one_of(
    st.lists(_value, max_size=12).map(lambda vs: b"".join(map(_varint, vs))),
    # Torn runs, over-long varints, arbitrary bytes.
    st.binary(max_size=24),
    st.integers(1, 14).map(lambda k: b"\x80" * k + b"\x01"),
)


@given(runs=st.lists(_run, min_size=1, max_size=30), gap=st.binary(max_size=3))
def test_rows_path_equals_spans_path(runs: list[bytes], gap: bytes) -> None:
    starts, ends, parts, pos = [], [], [], 0
    for r in runs:
        parts += [r, gap]
        starts.append(pos)
        ends.append(pos + len(r))
        pos += len(r) + len(gap)
    # Whatever follows a run (the next field, the next record) must not leak into it.
    buf = np.frombuffer(b"".join(parts) + b"\xff" * max(map(len, runs)), np.uint8)
    p_start, p_end = np.array(starts, np.int64), np.array(ends, np.int64)
    lengths = p_end - p_start
    width = int(lengths.max())
    if width == 0:
        return
    want_v, want_c, want_ok = lockstep._varint_spans(buf, p_start, p_end)
    got_v, got_c, got_ok = lockstep._varint_rows(buf, p_start, lengths, width)
    assert got_ok.tolist() == want_ok.tolist()
    # Values of runs that decoded cleanly must agree (others go to the exact path).
    want_at = np.concatenate([[0], np.cumsum(want_c)])
    got_at = np.concatenate([[0], np.cumsum(got_c)])
    for i in np.flatnonzero(want_ok).tolist():
        assert got_c[i] == want_c[i]
        assert (
            got_v[got_at[i] : got_at[i + 1]].tolist()
            == want_v[want_at[i] : want_at[i + 1]].tolist()
        )


def test_rows_path_is_taken_for_similar_lengths() -> None:
    runs = [b"".join(_varint((1 << 40) + k) for k in range(16)) for _ in range(50)]
    buf = np.frombuffer(b"".join(runs) + b"\0" * 8, np.uint8)
    size = len(runs[0])
    starts = np.arange(50, dtype=np.int64) * size
    values, counts, ok = lockstep.numpy_varint_runs(buf, starts, starts + size)
    assert ok.all()
    assert counts.tolist() == [16] * 50
    assert values.reshape(50, 16)[7].tolist() == [(1 << 40) + k for k in range(16)]
