"""Hypothesis strategies for record payloads, record lists, compressions and files."""

from __future__ import annotations

import os

from hypothesis import strategies as st

from ..writing.writer import TFRecordWriter

__all__ = ["compressions", "payloads", "record_lists", "write_file"]

#: Every compression spelling the public API accepts, including mixed case.
COMPRESSION_SPELLINGS = (None, "", "GZIP", "gzip", "ZLIB", "zlib", "Gzip")


def compressions() -> st.SearchStrategy[str]:
    """The three canonical compression types: ``""``, ``"GZIP"``, ``"ZLIB"``."""
    return st.sampled_from(["", "GZIP", "ZLIB"])


def payloads(max_size: int = 4096) -> st.SearchStrategy[bytes]:
    """Record payloads: empty, tiny, text-like, random, and repetitive (compressible)."""
    return st.one_of(
        st.just(b""),
        st.binary(min_size=1, max_size=16),
        st.binary(max_size=max_size),
        st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=8), st.integers(1, 512)),
    )


def large_payloads(max_size: int = 1 << 20) -> st.SearchStrategy[bytes]:
    """Payloads up to ``max_size`` (default 1 MiB), built cheaply from a seed byte string."""
    return st.builds(
        lambda seed, n: (seed * (n // max(1, len(seed)) + 1))[:n],
        st.binary(min_size=1, max_size=64),
        st.integers(0, max_size),
    )


def record_lists(max_records: int = 20, max_size: int = 4096) -> st.SearchStrategy[list[bytes]]:
    """Lists of payloads, mostly small, occasionally with one large (up to ~1 MiB) record."""
    small = st.lists(payloads(max_size), max_size=max_records)
    with_large = st.builds(
        lambda a, big, b: [*a, big, *b],
        st.lists(payloads(max_size), max_size=3),
        large_payloads(),
        st.lists(payloads(max_size), max_size=3),
    )
    return st.one_of(small, small, small, with_large)


def write_file(path: str | os.PathLike[str], records: list[bytes], compression: str = "") -> None:
    """Writes ``records`` with :class:`TFRecordWriter` (a convenience for tests)."""
    with TFRecordWriter(path, compression) as w:
        for r in records:
            w.write(r)
