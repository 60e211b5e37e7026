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

__all__ = [
    "CompileErrors",
    "crc_spans",
    "crc_spans_folded",
    "fill_frames",
    "frame_records",
    "gather_spans",
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


@njit(nogil=True, cache=True, inline="always")
def _crc_bytes(c, buf, i, e):
    """The CRC32C state ``c`` advanced by ``buf[i:e]`` a byte at a time (the unaligned
    head and the tail of a span; inlined, so as cheap as the loop written out)."""
    while i < e:
        c = _crc8(c, buf[i])
        i += 1
    return c


@njit(nogil=True, cache=True)
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


@njit(nogil=True, cache=True)
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


@njit(nogil=True, cache=True)
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


@njit(nogil=True, cache=True)
def crc_spans_folded(buf, words, base, starts, ends, out):  # noqa: PLR0917
    """:func:`crc_spans`, spans of 64 bytes or more by carry-less folding (PCLMULQDQ)."""
    for j in range(starts.shape[0]):
        s = starts[j]
        e = ends[j]
        if e - s >= 64:
            out[j] = _crc_span_folded(buf, s, e)
        else:
            out[j] = _crc_span(buf, words, base, s, e)


@njit(nogil=True, cache=True)
def varint_runs(buf, p_start, p_end, values, counts, ok):  # noqa: PLR0917
    """Decodes the runs ``buf[p_start[r]:p_end[r]]``; returns how many values it wrote.

    Protobuf varints: 7-bit groups, low group first, the high bit set on every byte but
    the last; a 10th byte contributes only bit 63 (the shift drops the rest). A run
    torn at its end or holding a varint over 10 bytes gets ``ok[r] = False``, count 0
    and no values.
    """
    n = 0
    for r in range(p_start.shape[0]):
        i = p_start[r]
        e = p_end[r]
        first = n
        good = True
        while i < e:
            value = np.uint64(0)
            size = 0
            while True:
                if i >= e or size == 10:
                    good = False
                    break
                byte = buf[i]
                i += 1
                value |= np.uint64(byte & 0x7F) << np.uint64(7 * size)
                size += 1
                if byte < 0x80:
                    break
            if not good:
                break
            values[n] = np.int64(value)
            n += 1
        if good:
            counts[r] = n - first
            ok[r] = True
        else:
            n = first
            counts[r] = 0
            ok[r] = False
    return n


@njit(nogil=True, cache=True)
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


@njit(nogil=True, cache=True)
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


@njit(nogil=True, cache=True)
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


@njit(nogil=True, cache=True)
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


@intrinsic
def _copy(typingctx: Any, dst: Any, dst_at: Any, src: Any, src_at: Any, n: Any) -> Any:  # noqa: PLR0917
    """``memcpy(&dst[dst_at], &src[src_at], n)``: positions in elements of each array,
    ``n`` in bytes (uint8 arrays, or a uint32 ``dst`` for float32 bits); the caller
    checks bounds.

    numba's own slice assignment copies byte by byte (~0.6 ns a byte); this is LLVM's
    memcpy.
    """

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        d = context.make_array(signature.args[0])(context, builder, args[0])
        s = context.make_array(signature.args[2])(context, builder, args[2])
        target = builder.gep(d.data, [args[1]])
        source = builder.gep(s.data, [args[3]])
        cgutils.raw_memcpy(builder, target, source, args[4], 1)
        return context.get_dummy_value()

    return types.void(dst, types.int64, src, types.int64, types.int64), codegen


@njit(nogil=True, cache=True)
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


@njit(nogil=True, cache=True)
def _masked(crc):
    """The CRC as TFRecord stores it: rotated right by 15 bits plus 0xa282ead8."""
    c = np.uint64(crc)
    rotated = ((c >> np.uint64(15)) | (c << np.uint64(17))) & np.uint64(0xFFFFFFFF)
    return np.uint32((rotated + np.uint64(0xA282EAD8)) & np.uint64(0xFFFFFFFF))


@njit(nogil=True, cache=True)
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


_HASH_MUL1 = np.uint64(0x9E3779B97F4A7C15)
_HASH_MUL2 = np.uint64(0xC2B2AE3D27D4EB4F)


@intrinsic
def _load8(typingctx: Any, buf: Any, at: Any) -> Any:
    """The 8 bytes at ``buf[at]`` as a little-endian uint64, in one unaligned load (x86 and
    ARM64 are little-endian); the caller checks that ``at + 8 <= len(buf)``.
    """

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        a = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.bitcast(builder.gep(a.data, [args[1]]), ir.IntType(64).as_pointer())
        return builder.load(ptr, align=1)

    return types.uint64(buf, types.int64), codegen


@intrinsic
def _ctz(typingctx: Any, x: Any) -> Any:
    """The trailing zero bits of a uint64 (``llvm.cttz``: one instruction; 64 for 0)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        fnty = ir.FunctionType(ir.IntType(64), [ir.IntType(64), ir.IntType(1)])
        fn = builder.module.declare_intrinsic("llvm.cttz", [ir.IntType(64)], fnty)
        return builder.call(fn, [args[0], ir.Constant(ir.IntType(1), 0)])

    return types.uint64(types.uint64), codegen


_LOW_BYTES = np.array([(1 << (8 * w)) - 1 for w in range(8)] + [2**64 - 1], np.uint64)


@njit(nogil=True, cache=True)
def _key_words(buf, p, n):
    """The key ``buf[p:p + n]`` as two little-endian words: its first (up to) 8 bytes,
    bytes past the key read as 0, and, if it is longer than 8, its last 8 (else 0).
    """
    if p + 8 <= buf.shape[0]:
        w1 = _load8(buf, p) & _LOW_BYTES[min(n, 8)]
    else:
        w1 = np.uint64(0)
        for b in range(min(n, 8)):
            w1 |= np.uint64(buf[p + b]) << np.uint64(8 * b)
    w2 = np.uint64(0)
    if n > 8:
        w2 = _load8(buf, p + n - 8)
    return w1, w2


@njit(nogil=True, cache=True)
def _mix(w1, w2, n):
    """A key's hash from its :func:`_key_words` and its length."""
    h = (w1 ^ (w2 * _HASH_MUL2) ^ np.uint64(n)) * _HASH_MUL1
    return h ^ (h >> np.uint64(32))


@njit(nogil=True, cache=True)
def key_hash(buf, p, n):
    """A feature key's hash from its length and its first and last 8 bytes (bytes past
    the key read as 0). ``example.dense`` builds its table with this same function; its
    top 12 bits are the key's filter mark (see :func:`dense_examples`).
    """
    w1, w2 = _key_words(buf, p, n)
    return _mix(w1, w2, n)


@njit(nogil=True, cache=True)
def _varint(buf, i, e):
    """``(value, position after it)`` of the varint at ``buf[i:e]``; position -1 when it
    is torn or longer than 10 bytes.
    """
    value = np.uint64(0)
    shift = 0
    while i < e and shift < 70:
        byte = buf[i]
        i += 1
        value |= np.uint64(byte & 0x7F) << np.uint64(shift)
        if byte < 0x80:
            return value, i
        shift += 7
    return value, -1


@njit(nogil=True, cache=True)
def _length(buf, i, e):
    """A length prefix at ``buf[i:e]`` that fits in what is left: ``(end, start)`` of the
    payload, or ``(-1, -1)``.
    """
    if i < e and buf[i] < 0x80:  # the common one-byte length
        end = i + 1 + np.int64(buf[i])
        if end > e:
            return -1, -1
        return end, i + 1
    n, j = _varint(buf, i, e)
    if j < 0 or n > np.uint64(e - j):
        return -1, -1
    return j + np.int64(n), j


@njit(nogil=True, cache=True)
def dense_examples(  # noqa: PLR0917
    buf, starts, ends, first, total, plan, table_hash, keys, defaults, ints, floats, fallback
):
    """Decodes fixed-size int64 / float32 features of Examples ``buf[starts[r]:ends[r]]``.

    ``plan`` is ``(table, key_at, kinds, counts, cols, marks, key_words)``: an
    open-addressing table of slots by :func:`key_hash` (``table_hash`` holds each
    entry's hash, -1 marks empty), the selected keys' bytes ``keys[key_at[s]:key_at[s +
    1]]``, each slot's kind (2 float, 3 int64), values per record and first column,
    which hash marks (its top 12 bits, 4096) selected keys have, and each key's two
    :func:`_key_words` (``key_words[2s]``, ``key_words[2s + 1]``). Slot ``s`` of record
    ``r`` goes to ``out[cols[s] * n + r * counts[s]:][:counts[s]]`` of ``ints`` or
    ``floats`` (the float32 bits as uint32). ``defaults[s]`` is the start of slot s's
    default in the same array's tail region, or -1 for none (a missing feature is then
    the record's fallback). ``fallback[r]`` is set for every record this loop did not
    take whole: anything but one packed list per selected key, a duplicate selected
    key, a malformed entry, a wrong kind or count, a missing feature with no default.
    The records are records ``first``.. of a batch of ``total`` (the ``n`` above), so a
    batch can be decoded in chunks that stay in the CPU's cache.

    An unselected entry costs a few nanoseconds: its head (entry tag and length, key
    tag and length, all one byte) is checked as one word, its key hashed from two word
    loads, and a key whose mark no selected key has (nearly all) is skipped by the
    entry's length, its value never decoded.
    """
    table, key_at, kinds, counts, cols, marks, key_words = plan
    n = total
    size = buf.shape[0]
    slots = kinds.shape[0]
    mask = table.shape[0] - 1
    seen = np.zeros(slots, np.uint8)
    for j in range(starts.shape[0]):
        seen[:] = 0
        r = first + j
        i = starts[j]
        e = ends[j]
        ok = True
        if i < e:  # else an empty Example: every feature missing
            ok = buf[i] == 0x0A
            if ok:
                fe, i = _length(buf, i + 1, e)
                ok = fe == e
        while ok and i < e:
            ok = False
            # The usual entry: 0x0A, its length, 0x0A, the key's length (both under
            # 128), the key, 0x12 and the value's length, which ends the entry.
            ee = np.int64(-1)
            if i + 8 <= size:
                w = _load8(buf, i)
                if (w & np.uint64(0x80FF80FF)) == np.uint64(0x000A000A):
                    ee = i + 2 + np.int64((w >> np.uint64(8)) & np.uint64(0xFF))
                    kp = i + 4
                    ke = kp + np.int64((w >> np.uint64(24)) & np.uint64(0xFF))
                    # (A value length byte of 0x80 or more cannot end at ee: ee <= ke + 127.)
                    if ke + 2 <= ee <= e and buf[ke] == 0x12 and ke + 2 + buf[ke + 1] == ee:
                        i = ke + 2
                    else:
                        ee = -1
            if ee < 0:  # any other layout the exact way, or the exact path
                if buf[i] != 0x0A:
                    break
                ee, i = _length(buf, i + 1, e)
                if ee < 0 or i >= ee or buf[i] != 0x0A:
                    break
                ke, kp = _length(buf, i + 1, ee)
                if ke < 0 or ke >= ee or buf[ke] != 0x12:
                    break
                ve, i = _length(buf, ke + 1, ee)
                if ve != ee:
                    break
            # The key's hash, as key_hash computes it (written inline: numba's call of a
            # helper taking arrays costs more than the rest of the entry).
            kl = ke - kp
            if kp + 8 <= size:
                w1 = _load8(buf, kp) & _LOW_BYTES[min(kl, 8)]
                w2 = _load8(buf, kp + kl - 8) if kl > 8 else np.uint64(0)
            else:
                w1, w2 = _key_words(buf, kp, kl)
            h = (w1 ^ (w2 * _HASH_MUL2) ^ np.uint64(kl)) * _HASH_MUL1
            h ^= h >> np.uint64(32)
            ok = True
            if marks[np.int64(h >> np.uint64(52))] == 0:
                i = ee  # not asked for: skipped by its length, never decoded
                continue
            # The key's slot: the table entry of equal hash, length and bytes (the two
            # words are the whole key up to 16 bytes; the middle of a longer one is
            # compared byte by byte).
            idx = np.int64(h & np.uint64(mask))
            s = table[idx]
            while s >= 0:
                a = key_at[s]
                if (
                    table_hash[idx] == h
                    and key_at[s + 1] - a == kl
                    and key_words[2 * s] == w1
                    and key_words[2 * s + 1] == w2
                ):
                    q = 8
                    while q < kl - 8 and keys[a + q] == buf[kp + q]:
                        q += 1
                    if q >= kl - 8:
                        break
                idx = (idx + 1) & mask
                s = table[idx]
            if s < 0:
                i = ee  # not asked for
                continue
            ok = False
            if seen[s] != 0:
                break  # a duplicate key: the exact path applies TensorFlow's rules
            if i == ee:
                seen[s] = 2  # an empty Feature counts as missing
                ok = True
                continue
            kind = kinds[s]
            tag = 0x12 if kind == 2 else 0x1A
            k = counts[s]
            base = cols[s] * n + r * k
            # The usual value: its kind's tag and length, the packed list's tag and
            # length (both lengths under 128), checked as one word; then the values.
            pe = np.int64(-1)
            if i + 8 <= size:
                w = _load8(buf, i)
                if (
                    (w & np.uint64(0x80FF80FF)) == np.uint64(0x000A0000 | tag)
                    and i + 2 + np.int64((w >> np.uint64(8)) & np.uint64(0xFF)) == ee
                    and i + 4 + np.int64(w >> np.uint64(24) & np.uint64(0xFF)) == ee
                ):
                    pe = ee
                    i += 4
            if pe < 0:  # any other layout
                if buf[i] != tag:
                    break  # another kind (an error) or an unknown tag: the exact path
                le, i = _length(buf, i + 1, ee)
                if le != ee:
                    break
                if i < ee:
                    if buf[i] != 0x0A:
                        break  # unpacked values: the exact path
                    pe, i = _length(buf, i + 1, ee)
                    if pe != ee:
                        break
            got = 0
            if kind == 3:
                # Varints, as _varint reads them (inline: see above). A 10th byte
                # contributes only bit 63; one torn or longer than 10 bytes is an error.
                while i < ee:
                    w = _load8(buf, i) if i + 8 <= size else np.uint64(0x8080808080808080)
                    stop = ~w & np.uint64(0x8080808080808080)
                    width = np.int64(_ctz(stop) >> np.uint64(3)) + 1
                    if stop != 0 and i + width <= ee:
                        # Up to 8 bytes at once: keep the varint's bytes, drop their high
                        # bits, and close the gaps (7-bit groups into 14, 28, 56 bits).
                        v = w & _LOW_BYTES[width] & np.uint64(0x7F7F7F7F7F7F7F7F)
                        v = ((v & np.uint64(0x7F007F007F007F00)) >> np.uint64(1)) | (
                            v & np.uint64(0x007F007F007F007F)
                        )
                        v = ((v & np.uint64(0x3FFF00003FFF0000)) >> np.uint64(2)) | (
                            v & np.uint64(0x00003FFF00003FFF)
                        )
                        v = ((v & np.uint64(0x0FFFFFFF00000000)) >> np.uint64(4)) | (
                            v & np.uint64(0x000000000FFFFFFF)
                        )
                        i += width
                    else:
                        v = np.uint64(0)
                        shift = np.uint64(0)
                        while True:
                            byte = buf[i]
                            i += 1
                            v |= np.uint64(byte & 0x7F) << shift
                            if byte < 0x80:
                                break
                            shift += np.uint64(7)
                            if i >= ee or shift >= np.uint64(70):
                                i = -1
                                break
                        if i < 0:
                            break
                    if got < k:
                        ints[base + got] = np.int64(v)
                    got += 1
                if i < 0:
                    break
            else:
                size4 = ee - i
                if size4 % 4:
                    break
                got = size4 // 4
                _copy(floats, base, buf, i, 4 * min(got, k))  # the float32 bits: one memcpy
                i = ee
            if got != k:
                break  # a wrong count (an error): the exact path raises it
            seen[s] = 1
            ok = True
        if ok:
            for s in range(slots):
                if seen[s] == 1:
                    continue
                d = defaults[s]
                if d < 0:
                    ok = False
                    break
                k = counts[s]
                base = cols[s] * n + r * k
                if kinds[s] == 3:
                    for v in range(k):
                        ints[base + v] = ints[d + v]
                else:
                    for v in range(k):
                        floats[base + v] = floats[d + v]
        fallback[j] = not ok


@intrinsic
def _prefetch(typingctx: Any, src: Any, at: Any) -> Any:
    """Asks the CPU to bring the cache line of ``src[at]`` in (a hint: no fault, no effect
    on results)."""
    sig = types.void(src, types.int64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        arr = context.make_array(signature.args[0])(context, builder, args[0])
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer(), i32, i32, i32])
        fn = builder.module.declare_intrinsic("llvm.prefetch", fnty=fnty)
        # read, high locality, data cache
        where = builder.bitcast(builder.gep(arr.data, [args[1]]), ir.IntType(8).as_pointer())
        builder.call(fn, [where, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


#: How many spans ahead :func:`gather_spans` asks for the cache lines of.
_AHEAD = 8


@njit(nogil=True, cache=True)
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
