# mypy: ignore-errors
# (numba types these functions itself, from the arrays they are called with; the typed
# entry points are in kernels/__init__.py.)
"""The numba-compiled loops behind :mod:`tfrecord_engine.kernels` (imported only there).

Kept apart so that importing the package never imports numba. Nothing compiles at
import: numba compiles each kernel on its first call, or loads it from its on-disk
cache (``cache=True``). ``crc_spans`` uses SSE 4.2's CRC32C instruction, so
:mod:`~tfrecord_engine.kernels` calls it only on CPUs that have it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import MissingDependencyError, install_hint

try:
    from llvmlite import ir
    from numba import njit
    from numba.core import cgutils, types
    from numba.core.errors import NumbaError
    from numba.extending import intrinsic
except ImportError as exc:
    raise MissingDependencyError(
        f"the compiled kernels need numba ({exc}): {install_hint('fast')}"
    ) from exc

from ._dense import dense_examples, key_hash
from ._intrinsics import LOW_BYTES, NO_REFCOUNTS
from ._intrinsics import copy as _copy
from ._intrinsics import ctz as _ctz
from ._intrinsics import load8 as _load8
from ._intrinsics import prefetch as _prefetch

__all__ = [
    "CompileErrors",
    "crc_spans",
    "crc_spans_folded",
    "dense_examples",
    "fill_frames",
    "frame_records",
    "gather_spans",
    "key_hash",
    "match_lengths",
    "match_words",
    "match_words_loaded",
    "varint_runs",
    "walk_records",
]

#: What compiling a kernel can raise (numba's own errors; LLVM's come as RuntimeError).
CompileErrors = (NumbaError, RuntimeError, OSError)


@intrinsic
def _crc64(typingctx: Any, crc: Any, data: Any) -> Any:
    """SSE 4.2 ``crc32 r64, r64``: the CRC32C state advanced by 8 little-endian bytes."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        fnty = ir.FunctionType(ir.IntType(64), [ir.IntType(64), ir.IntType(64)])
        fn = builder.module.declare_intrinsic("llvm.x86.sse42.crc32.64.64", fnty=fnty)
        return builder.call(fn, args)

    return types.uint64(types.uint64, types.uint64), codegen


@intrinsic
def _crc8(typingctx: Any, crc: Any, data: Any) -> Any:
    """SSE 4.2 ``crc32 r32, r8``: the CRC32C state advanced by one byte."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(32), ir.IntType(8)])
        fn = builder.module.declare_intrinsic("llvm.x86.sse42.crc32.32.8", fnty=fnty)
        return builder.call(fn, args)

    return types.uint32(types.uint32, types.uint8), codegen


@njit(nogil=True, cache=True, inline="always", **NO_REFCOUNTS)
def _crc_bytes(c, buf, i, e):
    """The CRC32C state ``c`` advanced by ``buf[i:e]`` a byte at a time (the unaligned
    head and the tail of a span; inlined, so as cheap as the loop written out)."""
    while i < e:
        c = _crc8(c, buf[i])
        i += 1
    return c


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _crc_span(buf, words, base, s, e):
    """CRC32C of ``buf[s:e]``, ``words`` as in :func:`crc_spans`."""
    first = (max(s - base, 0) + 7) // 8
    last = (e - base) // 8 if e >= base else 0
    stop = min(e, base + 8 * first)
    wide = np.uint64(_crc_bytes(np.uint32(0xFFFFFFFF), buf, s, stop))
    k = first
    while k < last:
        wide = _crc64(wide, words[k])
        k += 1
    c = _crc_bytes(np.uint32(wide), buf, max(s, stop, base + 8 * last), e)
    return c ^ np.uint32(0xFFFFFFFF)


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def crc_spans(buf, words, base, starts, ends, out):  # noqa: PLR0917
    """``out[j]`` = CRC32C of ``buf[starts[j]:ends[j]]``.

    ``words[k]`` holds ``buf[base + 8k : base + 8k + 8]`` (an aligned uint64 view): the
    middle of each span goes 8 bytes per instruction, its unaligned head and tail one
    byte at a time.
    """
    for j in range(starts.shape[0]):
        out[j] = _crc_span(buf, words, base, starts[j], ends[j])


def _fold_constant(n: int) -> np.uint64:
    """x^n mod the CRC32C polynomial, bit-reflected (the carry-less fold constants)."""
    r = 1
    for _ in range(n):
        r <<= 1
        if r >> 32:
            r ^= 0x11EDC6F41
    return np.uint64(int(f"{r:032b}"[::-1], 2))


# Folding 128 bits forward by D bits: the low (earlier) 64 bits times x^(D+31), the high
# 64 bits times x^(D-33) (bit-reflected constants; the product lands 128-bit aligned).
_FOLD_512 = (_fold_constant(512 + 31), _fold_constant(512 - 33))
_FOLD_128 = (_fold_constant(128 + 31), _fold_constant(128 - 33))


@intrinsic
def _fold_lanes(typingctx: Any, buf: Any, s: Any, e: Any) -> Any:
    """Carry-less folding (PCLMULQDQ) of ``buf[s:e]`` (at least 64 bytes; the caller
    checks bounds) down to one 128-bit lane: ``(low 64 bits, high 64 bits, p)``, where
    the lane stands for ``buf[s:p]`` (CRC32C's initial state folded in) and fewer than
    16 bytes are left after ``p``. Four lanes advance 64 bytes a step, in vector
    registers throughout, then fold into one.
    """
    i64 = ir.IntType(64)
    u64x2 = ir.VectorType(i64, 2)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        data = context.make_array(signature.args[0])(context, builder, args[0])
        start, end = args[1], args[2]
        pclmul = builder.module.declare_intrinsic(
            "llvm.x86.pclmulqdq", fnty=ir.FunctionType(u64x2, [u64x2, u64x2, ir.IntType(8)])
        )

        def const(lo: int, hi: int) -> Any:
            return ir.Constant(u64x2, [ir.Constant(i64, lo), ir.Constant(i64, hi)])

        def load(at: Any, offset: int) -> Any:
            ptr = builder.gep(data.data, [builder.add(at, ir.Constant(i64, offset))])
            return builder.load(builder.bitcast(ptr, u64x2.as_pointer()), align=1)

        def fold(x: Any, k: Any, d: Any) -> Any:
            low = builder.call(pclmul, [x, k, ir.Constant(ir.IntType(8), 0x00)])
            high = builder.call(pclmul, [x, k, ir.Constant(ir.IntType(8), 0x11)])
            return builder.xor(builder.xor(low, high), d)

        k512 = const(*(int(k) for k in _FOLD_512))
        k128 = const(*(int(k) for k in _FOLD_128))
        lanes = []
        for i in range(4):
            v = load(start, 16 * i)
            if i == 0:
                v = builder.xor(v, const(0xFFFFFFFF, 0))
            lanes.append(cgutils.alloca_once_value(builder, v))
        pos = cgutils.alloca_once_value(builder, builder.add(start, ir.Constant(i64, 64)))

        def loop(step: int, body: Any) -> None:
            cond = builder.append_basic_block(f"fold{step}.cond")
            work = builder.append_basic_block(f"fold{step}.body")
            done = builder.append_basic_block(f"fold{step}.end")
            builder.branch(cond)
            builder.position_at_end(cond)
            left = builder.sub(end, builder.load(pos))
            builder.cbranch(builder.icmp_signed(">=", left, ir.Constant(i64, step)), work, done)
            builder.position_at_end(work)
            at = builder.load(pos)
            body(at)
            builder.store(builder.add(at, ir.Constant(i64, step)), pos)
            builder.branch(cond)
            builder.position_at_end(done)

        def step64(at: Any) -> None:
            for i, lane in enumerate(lanes):
                builder.store(fold(builder.load(lane), k512, load(at, 16 * i)), lane)

        loop(64, step64)
        x = builder.load(lanes[0])
        for lane in lanes[1:]:
            x = fold(x, k128, builder.load(lane))
        one = cgutils.alloca_once_value(builder, x)

        def step16(at: Any) -> None:
            builder.store(fold(builder.load(one), k128, load(at, 0)), one)

        loop(16, step16)
        x = builder.load(one)
        parts = [builder.extract_element(x, ir.Constant(ir.IntType(32), i)) for i in (0, 1)]
        return context.make_tuple(builder, signature.return_type, [*parts, builder.load(pos)])

    return types.Tuple((types.uint64, types.uint64, types.int64))(
        buf, types.int64, types.int64
    ), codegen


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _crc_span_folded(buf, s, e):
    """CRC32C of ``buf[s:e]`` (at least 64 bytes) by carry-less folding
    (:func:`_fold_lanes`); the folded lane's 16 bytes then go through the CRC
    instruction from state 0, with the tail. Where the CRC instruction can start only
    one every few cycles (AMD), several times its bytes per second.
    """
    x0, x1, p = _fold_lanes(buf, s, e)
    w = _crc64(_crc64(np.uint64(0), x0), x1)
    while e - p >= 8:
        w = _crc64(w, _load8(buf, p))
        p += 8
    return _crc_bytes(np.uint32(w), buf, p, e) ^ np.uint32(0xFFFFFFFF)


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def crc_spans_folded(buf, words, base, starts, ends, out):  # noqa: PLR0917
    """:func:`crc_spans`, spans of 64 bytes or more by carry-less folding (PCLMULQDQ)."""
    for j in range(starts.shape[0]):
        s = starts[j]
        e = ends[j]
        if e - s >= 64:
            out[j] = _crc_span_folded(buf, s, e)
        else:
            out[j] = _crc_span(buf, words, base, s, e)


_CONTINUED = np.uint64(0x8080808080808080)  # every byte's continuation bit


@njit(nogil=True, cache=True, inline="always", **NO_REFCOUNTS)
def _joined(v):
    """The int64 of the varint whose bytes (up to 8, continuation bits set) are ``v``."""
    return np.int64(
        (v & np.uint64(0x7F))
        | ((v >> np.uint64(1)) & np.uint64(0x3F80))
        | ((v >> np.uint64(2)) & np.uint64(0x1FC000))
        | ((v >> np.uint64(3)) & np.uint64(0xFE00000))
        | ((v >> np.uint64(4)) & np.uint64(0x7F0000000))
        | ((v >> np.uint64(5)) & np.uint64(0x3F800000000))
        | ((v >> np.uint64(6)) & np.uint64(0x1FC0000000000))
        | ((v >> np.uint64(7)) & np.uint64(0xFE000000000000))
    )


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def varint_run(buf, i, e, values, n):
    """Decodes the varints of ``buf[i:e]`` into ``values[n:]``; returns ``n`` past the
    last, or -1 where the run is torn at its end or holds a varint over 10 bytes.

    Protobuf varints: 7-bit groups, low group first, the high bit set on every byte but
    the last; a 10th byte contributes only bit 63 (the shift drops the rest). Where 8
    bytes can be loaded at once: 8 one-byte varints are copied as they are, and the first
    two varints that end within them (and within the run) are found by their clear high
    bits (``ctz``) and their groups joined by shifts and masks, without a branch per
    byte: one load serves two varints of token ids or counts, so the next load waits on
    one chain of additions, not two. Longer ones, and the buffer's last bytes, go byte
    by byte.
    """
    size = buf.shape[0]
    while i < e:
        if i + 8 <= size:
            w = _load8(buf, i)
            if i + 8 <= e and (w & _CONTINUED) == 0:
                for t in range(8):
                    values[n + t] = np.int64((w >> np.uint64(8 * t)) & np.uint64(0xFF))
                n += 8
                i += 8
                continue
            ends = ~w & _CONTINUED
            if i + 8 > e:
                ends &= LOW_BYTES[e - i]  # (bytes past the run end nothing)
            if ends != 0:
                # The first varint, and the second where it ends in the same 8 bytes: a
                # fixed two (not a loop over every end) keeps the branches predictable.
                last = np.int64(_ctz(ends) >> np.uint64(3))
                values[n] = _joined(w & LOW_BYTES[last + 1])
                n += 1
                i += last + 1
                ends &= ends - np.uint64(1)
                if ends != 0:
                    second = np.int64(_ctz(ends) >> np.uint64(3))
                    v = (w >> np.uint64(8 * (last + 1))) & LOW_BYTES[second - last]
                    values[n] = _joined(v)
                    n += 1
                    i += second - last
                continue
            if i + 8 > e:
                return -1  # its last byte lies past the run
        value = np.uint64(0)
        shift = 0
        while True:
            if i >= e or shift == 70:
                return -1
            byte = buf[i]
            i += 1
            value |= np.uint64(byte & 0x7F) << np.uint64(shift)
            shift += 7
            if byte < 0x80:
                break
        values[n] = np.int64(value)
        n += 1
    return n


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def varint_runs(buf, p_start, p_end, values, counts, ok):  # noqa: PLR0917
    """Decodes the runs ``buf[p_start[r]:p_end[r]]`` (see :func:`varint_run`); returns
    how many values it wrote. A run torn at its end or holding a varint over 10 bytes
    gets ``ok[r] = False``, count 0 and no values.
    """
    n = 0
    for r in range(p_start.shape[0]):
        got = varint_run(buf, p_start[r], p_end[r], values, n)
        if got >= 0:
            counts[r] = got - n
            ok[r] = True
            n = got
        else:
            counts[r] = 0
            ok[r] = False
    return n


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def match_words(buf, base, at, word, mask, ok):  # noqa: PLR0917
    """``ok[j]``: for every k, the 8 bytes at ``base[j] + at[k]`` equal ``word[k]``
    where ``mask[k]`` has bits set (little-endian; bytes past the buffer's end read 0).
    """
    n = buf.shape[0]
    for j in range(base.shape[0]):
        good = True
        for k in range(at.shape[0]):
            p = base[j] + at[k]
            w = np.uint64(0)
            for b in range(8):
                if p + b < n:
                    w |= np.uint64(buf[p + b]) << np.uint64(8 * b)
            if (w ^ word[k]) & mask[k] != 0:
                good = False
                break
        ok[j] = good


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def match_words_loaded(buf, base, at, word, mask, ok):  # noqa: PLR0917
    """:func:`match_words`, each word in one unaligned 8-byte load (byte by byte only
    within 8 bytes of the buffer's end): the check of every record's structural words
    in template matching.
    """
    n = buf.shape[0]
    for j in range(base.shape[0]):
        good = True
        for k in range(at.shape[0]):
            p = base[j] + at[k]
            if p + 8 <= n:
                w = _load8(buf, p)
            else:
                w = np.uint64(0)
                for b in range(8):
                    if p + b < n:
                        w |= np.uint64(buf[p + b]) << np.uint64(8 * b)
            if (w ^ word[k]) & mask[k] != 0:
                good = False
                break
        ok[j] = good


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def match_lengths(buf, base, pos, width, value, delta, ok):  # noqa: PLR0917
    """``ok[j]`` &= for every k, the ``width[k]`` 7-bit groups at ``base[j] + pos[k]``
    read as ``value[k] + delta[j]`` (continuation bits are not looked at, as in
    ``lockstep.swar_varints``; the template's structural check covers them).
    """
    for j in range(base.shape[0]):
        if not ok[j]:
            continue
        for k in range(pos.shape[0]):
            p = base[j] + pos[k]
            got = 0
            for b in range(width[k]):
                got |= np.int64(buf[p + b] & 0x7F) << (7 * b)
            if got != value[k] + delta[j]:
                ok[j] = False
                break


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def walk_records(buf, pos, size, max_records, max_bytes, starts):  # noqa: PLR0917
    """Record starts from ``pos`` by their length fields, while each record fits in
    ``size`` (at most ``max_records``, none starting past ``pos + max_bytes``).

    Returns ``(count, stop)``: how many starts were written and where the walk ended.
    Length CRCs are not looked at here (the caller checks them in bulk).
    """
    stop = min(size - 16, pos + max_bytes)
    count = 0
    while count < max_records and pos <= stop:
        length = np.uint64(0)
        for b in range(8):
            length |= np.uint64(buf[pos + b]) << np.uint64(8 * b)
        if length > np.uint64(size):
            break  # a lying length: the one-by-one path reports it
        nxt = pos + np.int64(length) + 16
        if nxt > size:
            break
        starts[count] = pos
        count += 1
        pos = nxt
    return count, pos


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def frame_records(data, starts, lengths, length_crcs, data_crcs, out):  # noqa: PLR0917
    """Writes the framed records (header, data, footer) back to back into ``out``.

    Record j is ``data[starts[j] : starts[j] + lengths[j]]``; its header is the 8-byte
    little-endian length and the masked length CRC ``length_crcs[j]``, its footer the
    masked data CRC ``data_crcs[j]``.
    """
    p = 0
    for j in range(starts.shape[0]):
        n = lengths[j]
        for b in range(8):
            out[p + b] = (n >> (8 * b)) & 0xFF
        c = length_crcs[j]
        for b in range(4):
            out[p + 8 + b] = (c >> np.uint32(8 * b)) & np.uint32(0xFF)
        s = starts[j]
        _copy(out, p + 12, data, s, n)
        c = data_crcs[j]
        q = p + 12 + n
        for b in range(4):
            out[q + b] = (c >> np.uint32(8 * b)) & np.uint32(0xFF)
        p = q + 4


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def _masked(crc):
    """The CRC as TFRecord stores it: rotated right by 15 bits plus 0xa282ead8."""
    c = np.uint64(crc)
    rotated = ((c >> np.uint64(15)) | (c << np.uint64(17))) & np.uint64(0xFFFFFFFF)
    return np.uint32((rotated + np.uint64(0xA282EAD8)) & np.uint64(0xFFFFFFFF))


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def fill_frames(buf, words, base, lengths):
    """Fills in the headers and footers of the framed records laid out in ``buf``.

    ``buf`` holds record j's 12 header bytes, its ``lengths[j]`` data bytes and its 4
    footer bytes back to back, the data already in place; ``words`` as in
    :func:`crc_spans`. Each header gets the 8-byte little-endian length and its masked
    CRC (the CRC instruction over the length as one 8-byte word), each footer the masked
    CRC of the data.
    """
    p = 0
    for j in range(lengths.shape[0]):
        n = np.uint64(lengths[j])
        for b in range(8):
            buf[p + b] = (n >> np.uint64(8 * b)) & np.uint64(0xFF)
        c = _masked(np.uint32(_crc64(np.uint64(0xFFFFFFFF), n)) ^ np.uint32(0xFFFFFFFF))
        for b in range(4):
            buf[p + 8 + b] = (c >> np.uint32(8 * b)) & np.uint32(0xFF)
        q = p + 12 + lengths[j]
        c = _masked(_crc_span(buf, words, base, p + 12, q))
        for b in range(4):
            buf[q + b] = (c >> np.uint32(8 * b)) & np.uint32(0xFF)
        p = q + 4


#: How many spans ahead :func:`gather_spans` asks for the cache lines of.
_AHEAD = 8


@njit(nogil=True, cache=True, **NO_REFCOUNTS)
def gather_spans(buf, starts, ends, out):
    """``buf[starts[j]:ends[j]]`` for every j, back to back into ``out``.

    Spans scattered over a large buffer (a shuffled epoch's records) each begin with a
    cache miss; asking for the lines of the span ``_AHEAD`` places on while copying this
    one keeps several misses in flight instead of one at a time.
    """
    n = starts.shape[0]
    for j in range(min(_AHEAD, n)):
        for a in range(starts[j], ends[j], 64):
            _prefetch(buf, a)
    k = 0
    for j in range(n):
        if j + _AHEAD < n:
            for a in range(starts[j + _AHEAD], ends[j + _AHEAD], 64):
                _prefetch(buf, a)
        size = ends[j] - starts[j]
        _copy(out, k, buf, starts[j], size)
        k += size
