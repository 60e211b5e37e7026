# mypy: ignore-errors
# (numba's intrinsics are typed by numba itself.)
"""LLVM intrinsics the compiled kernels share: memcpy, unaligned 8-byte loads, count of
trailing zeros, cache-line prefetch (imported only by the kernel modules)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import MissingDependencyError, install_hint

try:
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic
except ImportError as exc:
    raise MissingDependencyError(
        f"the compiled kernels need numba ({exc}): {install_hint('fast')}"
    ) from exc

__all__ = ["LOW_BYTES", "NO_REFCOUNTS", "copy", "ctz", "load8", "prefetch"]

try:
    # (The options numba checks a CPU function's decorator against.)
    from numba.core.cpu import CPUTargetOptions as _CPUTargetOptions

    _HAS_NRT_OPTION = hasattr(_CPUTargetOptions, "_nrt")
except ImportError:  # (a numba that moved it: the kernels still compile, counting)
    _HAS_NRT_OPTION = False

#: ``njit`` options for a kernel that makes no array: compiled without numba's reference
#: counting of arrays. With it, every call of a compiled helper that takes arrays (a
#: span, a key lookup, one record's walk) pays atomic increments and decrements of each
#: array's count: measured 2026-11-29, the walk of 5,000 detection records (9 keys each,
#: cache-hot) 4.5 -> 1.2 ms. The rule for such a kernel: it may read, write, slice and
#: view the arrays it is given, but must never make one (numba refuses ``np.empty`` and
#: the like there) nor return one, or a tuple holding one (numba does not refuse that:
#: the array would reach its caller without a count of its own).
NO_REFCOUNTS: dict[str, Any] = {"_nrt": False} if _HAS_NRT_OPTION else {}


@intrinsic
def copy(typingctx: Any, dst: Any, dst_at: Any, src: Any, src_at: Any, n: Any) -> Any:  # noqa: PLR0917
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


@intrinsic
def load8(typingctx: Any, buf: Any, at: Any) -> Any:
    """The 8 bytes at ``buf[at]`` as a little-endian uint64, in one unaligned load (x86 and
    ARM64 are little-endian); the caller checks that ``at + 8 <= len(buf)``.
    """

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        a = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.bitcast(builder.gep(a.data, [args[1]]), ir.IntType(64).as_pointer())
        return builder.load(ptr, align=1)

    return types.uint64(buf, types.int64), codegen


@intrinsic
def ctz(typingctx: Any, x: Any) -> Any:
    """The trailing zero bits of a uint64 (``llvm.cttz``: one instruction; 64 for 0)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        fnty = ir.FunctionType(ir.IntType(64), [ir.IntType(64), ir.IntType(1)])
        fn = builder.module.declare_intrinsic("llvm.cttz", [ir.IntType(64)], fnty)
        return builder.call(fn, [args[0], ir.Constant(ir.IntType(1), 0)])

    return types.uint64(types.uint64), codegen


LOW_BYTES = np.array([(1 << (8 * w)) - 1 for w in range(8)] + [2**64 - 1], np.uint64)


@intrinsic
def prefetch(typingctx: Any, src: Any, at: Any) -> Any:
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
