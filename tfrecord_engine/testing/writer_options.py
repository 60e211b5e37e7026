"""Hypothesis strategies for TensorFlow's writer options (:class:`TFRecordOptions` fields)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

__all__ = ["writer_options"]


def writer_options(*, stored: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    """Keyword arguments for ``TFRecordOptions`` of a compressed file, as TF takes them.

    Each zlib field is left out (TensorFlow's default) or set to a valid value; small
    buffer sizes are favoured so that flushes and output-buffer ends land often.
    ``stored=False`` leaves out level 0 (stored blocks, whose sizes follow how each zlib
    call is handed its buffers: byte-identical to TensorFlow only through ctypes).
    """

    def build(kind: str, wbits: int | None, fields: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"compression_type": kind, **fields}
        if wbits is not None:
            out["window_bits"] = wbits + (16 if kind == "GZIP" else 0)
        if not stored and out.get("compression_level") == 0:
            out["compression_level"] = 1
        return out

    def buffers(low: int) -> st.SearchStrategy[int]:
        return st.one_of(st.integers(low, 64), st.integers(64, 4096), st.just(256 << 10))

    return st.builds(
        build,
        st.sampled_from(["GZIP", "ZLIB"]),
        st.one_of(st.none(), st.integers(9, 15)),
        st.fixed_dictionaries(
            {},
            optional={
                "compression_level": st.integers(-1, 9),
                "mem_level": st.integers(1, 9),
                "compression_strategy": st.integers(0, 4),
                "flush_mode": st.sampled_from([0, 1, 2, 3, 5]),
                "input_buffer_size": buffers(1),
                "output_buffer_size": buffers(6),  # 6: see ZlibSettings
                "compression_method": st.just(8),
            },
        ),
    )
