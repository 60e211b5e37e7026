"""Hypothesis strategies for packed varint runs and Examples holding long int64 lists.

The runs are built byte by byte, independently of the engine's encoder, so they hold
what a canonical writer never emits: non-canonical (zero-padded) varints, 10-byte
varints whose last byte carries bits past 64, and, on request, damage (a varint longer
than 10 bytes, a run cut inside its last varint).
"""

from __future__ import annotations

from hypothesis import strategies as st

from .wirebytes import field as _ld
from .wirebytes import varint as _canonical

__all__ = ["int64_examples", "packed_runs", "varint_bytes"]


@st.composite
def varint_bytes(draw: st.DrawFn) -> bytes:
    """One well-formed varint (1-10 bytes): canonical, or free 7-bit groups.

    Free groups give non-canonical encodings (trailing zero groups) and 10th bytes
    with any of their 7 bits set (only the lowest lands in the 64-bit value).
    """
    if draw(st.booleans()):
        value = draw(
            st.one_of(
                st.integers(0, 0x7F),
                st.integers(0x80, 0x3FFF),
                st.integers(-(2**63), 2**63 - 1),
                st.integers(-1000, -1),
                st.integers(2**55, 2**64 - 1),
            )
        )
        return _canonical(value)
    width = draw(st.integers(1, 10))
    groups = draw(st.lists(st.integers(0, 0x7F), min_size=width, max_size=width))
    return bytes([g | 0x80 for g in groups[:-1]] + [groups[-1]])


@st.composite
def packed_runs(draw: st.DrawFn, *, damaged: bool = True, max_values: int = 80) -> bytes:
    """The payload of a packed ``Int64List`` run: varints back to back.

    Args:
        damaged: may add damage (an over-long varint somewhere, or a cut last varint).
        max_values: at most this many well-formed varints.
    """
    parts = draw(st.lists(varint_bytes(), max_size=max_values))
    if damaged and draw(st.booleans()):
        kind = draw(st.sampled_from(["over-long", "over-long-tail", "truncated"]))
        if kind == "over-long":
            bad = b"\xff" * draw(st.integers(10, 12)) + b"\x01"
            parts.insert(draw(st.integers(0, len(parts))), bad)
        elif kind == "over-long-tail":
            parts.append(b"\x80" * draw(st.integers(10, 12)))
        else:
            cut = draw(st.lists(st.integers(0x80, 0xFF), min_size=1, max_size=9))
            parts.append(bytes(cut))
    return b"".join(parts)


@st.composite
def int64_examples(draw: st.DrawFn, *, damaged: bool = True, mixed: bool = True) -> bytes:
    """A serialized ``Example`` whose feature ``"x"`` is an Int64List of packed runs.

    With ``mixed`` the list sometimes holds several packed runs or unpacked values
    between them (protobuf concatenates them; TensorFlow's parsing kernels read only a
    first packed run, so compare those with ``mixed=False``: one packed run). A second
    feature (``"y"``: a short, intact int64 list) comes before or after it.
    """
    chunks: list[bytes] = []
    for _ in range(draw(st.integers(1, 3)) if mixed else 1):
        if mixed and draw(st.integers(0, 4)) == 0:
            chunks.append(b"\x08" + draw(varint_bytes()))
        else:
            chunks.append(_ld(0x0A, draw(packed_runs(damaged=damaged))))
    x = _ld(0x0A, b"x") + _ld(0x12, _ld(0x1A, b"".join(chunks)))
    y = _ld(0x0A, b"y") + _ld(
        0x12, _ld(0x1A, _ld(0x0A, draw(packed_runs(damaged=False, max_values=3))))
    )
    entries = [_ld(0x0A, x), _ld(0x0A, y)]
    if draw(st.booleans()):
        entries.reverse()
    return _ld(0x0A, b"".join(entries))
