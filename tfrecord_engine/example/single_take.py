"""``ds[i]``'s sample from the compiled decode of one record, as straight-line code.

:func:`~..kernels.single.decode_one` leaves every requested key's values in one int64
and one float32 array (keys of an expected count at fixed places) and the spans of the
rest. :func:`compile_take` writes, once per spec, the function that makes the sample
from them: for a spec of fixed counts, constant slices (``floats[0:64]``,
``ints[16]``), no loop and no lookup; ``bytes`` values and the keys the caller's
readers take (string lists, ``RawFeature`` values) by their spans; ``RaggedFeature``
values through their finish. A reader's ``None`` (a record the exact path must decide)
makes the whole function return ``None``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ..kernels import gather_inside
from ..kernels.single import FLOATS, fixed_places
from .columns import object_array
from .single_steps import (
    TAKE_ARRAY,
    TAKE_BYTES,
    TAKE_SCALAR,
    TAKE_VALUE,
    TAKE_VARLEN,
    KeyStep,
    Output,
    RawLayout,
    RowLengthsTake,
)
from .values import RaggedValue
from .varlen import VarLenArray

__all__ = [
    "Take",
    "TakeAll",
    "TakeAt",
    "compile_take",
    "compile_take_all",
    "compile_take_at",
    "varlen_views",
]

#: The sample from the record and the decode's ``(out, ints, floats)``, or ``None``.
Take = Callable[
    [bytes, npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]],
    "dict[str, Any] | None",
]
#: The sample of record ``j`` of a batch decode (``decode_many``): the buffer, the
#: record's ``out`` rows as lists (``out[j].tolist()``), the batch's ``ints`` and
#: ``floats``, where the record's values start in them, and the two arrays viewed as
#: :class:`~.varlen.VarLenArray` (see :func:`varlen_views`); or ``None``.
TakeAt = Callable[
    [
        bytes,
        list[list[int]],
        npt.NDArray[np.int64],
        npt.NDArray[np.float32],
        int,
        int,
        VarLenArray,
        VarLenArray,
    ],
    "dict[str, Any] | None",
]


#: The samples of every record of a batch decode (``decode_many``): the buffer (and as
#: ``uint8``), the batch's ``out`` and ``places``, its ``ints`` and ``floats`` and their
#: :class:`~.varlen.VarLenArray` views; ``None`` where a record is not taken (the
#: caller then takes record by record, which decides each).
TakeAll = Callable[
    [
        bytes,
        npt.NDArray[np.uint8],
        npt.NDArray[np.int64],
        npt.NDArray[np.int64],
        npt.NDArray[np.int64],
        npt.NDArray[np.float32],
        VarLenArray,
        VarLenArray,
    ],
    "list[dict[str, Any]] | None",
]


def compile_take(steps: list[KeyStep], outputs: list[Output]) -> Take:
    """The function making the sample of ``outputs`` from the decode of ``steps``' keys.

    Only integers and names go into its source; shapes, readers and finishes are passed
    in by name.

    >>> from tfrecord_engine.example.single_steps import plan
    >>> from tfrecord_engine.example.specs import FixedLenFeature
    >>> steps, outputs = plan({"x": FixedLenFeature([2], "float32")})
    >>> take = compile_take(steps, outputs)
    >>> out = np.zeros((4, 1), np.int64)
    >>> take(b"", out, np.zeros(0, np.int64), np.array([1.5, 2.5], np.float32))["x"].tolist()
    [1.5, 2.5]
    """
    take: Take = _compile(steps, outputs, batch=False)
    return take


def compile_take_at(steps: list[KeyStep], outputs: list[Output]) -> TakeAt:
    """:func:`compile_take` for the records of one batch decode (``decode_many``): it
    takes the record's ``out`` rows as lists (one ``tolist`` for the whole batch) and
    the batch's value arrays with the record's offsets in them, so no view is made per
    record before its values are cut.

    >>> from tfrecord_engine.example.single_steps import plan
    >>> from tfrecord_engine.example.specs import FixedLenFeature
    >>> steps, outputs = plan({"x": FixedLenFeature([2], "float32")})
    >>> take_at = compile_take_at(steps, outputs)
    >>> ints, floats = np.zeros(0, np.int64), np.array([9.0, 1.5, 2.5], np.float32)
    >>> take_at(b"", [[0], [0], [0], [2]], ints, floats, 0, 1, *varlen_views(ints, floats))[
    ...     "x"
    ... ].tolist()
    [1.5, 2.5]
    """
    take_at: TakeAt = _compile(steps, outputs, batch=True)
    return take_at


def compile_take_all(steps: list[KeyStep], outputs: list[Output]) -> TakeAll | None:
    """:func:`compile_take_at` for all the records of a batch decode at once: each key's
    positions are made for the whole batch with a few array operations (one ``tolist``
    a column, scalars gathered in one index), then one comprehension builds the
    samples, with no call per record (a ``RaggedFeature``'s finish is called per record
    there, but one of a single ``RowLengths`` partition has its row splits made for
    all at once). ``None`` for a spec with no key to take.

    >>> from tfrecord_engine.example.single_steps import plan
    >>> from tfrecord_engine.example.specs import FixedLenFeature
    >>> steps, outputs = plan({"n": FixedLenFeature([], "int64")})
    >>> take_all = compile_take_all(steps, outputs)
    >>> out, places = np.zeros((2, 4, 1), np.int64), np.array([[0, 0, 1, 0], [1, 0, 1, 0]])
    >>> ints, floats = np.array([7, 9]), np.zeros(0, np.float32)
    >>> no_bytes = np.zeros(0, np.uint8)
    >>> got = take_all(b"", no_bytes, out, places, ints, floats, *varlen_views(ints, floats))
    >>> [(int(s["n"]), type(s["n"]).__name__) for s in got]
    [(7, 'int64'), (9, 'int64')]
    """
    compiled = [s.compiled for s in steps]
    places = fixed_places([c.code for c in compiled], [c.count for c in compiled])
    names: dict[str, Any] = {"np": np, "gather": gather_inside}
    body = [
        "i0 = places[:, 0]",
        "if len(i0) == 0: return []",
        "if int(i0.min()) < 0: return None",
        "f0 = places[:, 1]",
    ]
    columns: list[str] = []  # each a list (or array) with one item per record
    values: list[str] = []  # each step's value in the comprehension, by its columns
    for j, (step, c, place) in enumerate(zip(steps, compiled, places, strict=True)):
        array, start = ("floats", "f0") if c.code == FLOATS else ("ints", "i0")
        if c.take == TAKE_SCALAR:
            body.append(f"c{j} = {array}[{start} + {place}]")
            columns.append(f"c{j}")
            values.append(f"x{j}")
        elif c.take in (TAKE_ARRAY, TAKE_VARLEN):
            if place >= 0:
                body.append(f"a{j} = ({start} + {place}).tolist()")
                columns.append(f"a{j}")
                end = f"a{j}x + {c.count}"
            else:
                body += [
                    f"a{j} = ({start} + out[:, 2, {j}]).tolist()",
                    f"n{j} = out[:, 3, {j}].tolist()",
                ]
                columns += [f"a{j}", f"n{j}"]
                end = f"a{j}x + n{j}x"
            got = f"{'v' if c.take == TAKE_VARLEN else ''}{array}[a{j}x:{end}]"
            if c.take == TAKE_ARRAY and c.shape is not None:
                names[f"S{j}"] = c.shape
                got += f".reshape(S{j})"
            values.append(got)
        elif c.take == TAKE_VALUE and c.raw is not None:
            body += _raw_column(j, c.raw, names)  # (a RawFeature: one gather for all)
            columns.append(f"c{j}")
            values.append(f"x{j}")
        else:
            body += [f"s{j} = out[:, 0, {j}].tolist()", f"e{j} = out[:, 1, {j}].tolist()"]
            if c.take == TAKE_BYTES:
                columns += [f"s{j}", f"e{j}"]
                values.append(f"record[s{j}x:e{j}x]")
            else:  # a reader on the value or the Feature: its None sends all back
                names[f"R{j}"] = c.value if c.take == TAKE_VALUE else step.read
                body += [
                    f"r{j} = [R{j}(record, a, b) for a, b in zip(s{j}, e{j})]",
                    f"if any(v is None for v in r{j}): return None",
                ]
                columns.append(f"r{j}")
                values.append(f"x{j}")
    items = []
    checks = []  # the finishes that may decline a record (which sends all back)
    for i, output in enumerate(outputs):
        names[f"K{i}"] = output.name
        if output.finish is None:
            items.append(f"K{i}: {values[output.slot]}")
            continue
        ragged = output.lengths
        lengths = None if ragged is None else compiled[ragged.lengths]
        if (
            ragged is not None
            and lengths is not None
            and lengths.code != FLOATS
            and lengths.take == TAKE_ARRAY
            and places[ragged.lengths] < 0
        ):
            body += _splits_column(i, ragged, names)
            columns += [f"z{i}", f"w{i}"]
            given = values[ragged.values]
            if ragged.strings:
                names["object_array"] = object_array
                given = f"object_array({given})"
            names["RaggedValue"] = RaggedValue
            items.append(f"K{i}: RaggedValue({given}, p{i}[z{i}x:w{i}x])")
        else:
            names[f"F{i}"] = output.finish
            items.append(f"K{i}: F{i}([{', '.join(values)}])")
            checks.append(f"if any(s[K{i}] is None for s in got): return None")
    if not columns:
        return None
    loop = ", ".join(f"x{col[1:]}" if col[0] in "cr" else f"{col}x" for col in columns)
    zipped = f"zip({', '.join(columns)})" if len(columns) > 1 else f"zip({columns[0]})"
    target = loop if len(columns) > 1 else f"{loop},"
    body.append(f"got = [{{{', '.join(items)}}} for {target} in {zipped}]")
    body += [*checks, "return got"]
    source = "def take_all(record, array, out, places, ints, floats, vints, vfloats):\n" + "".join(
        f"    {b}\n" for b in body
    )
    exec(source, names)  # (generated from integers and names)
    take_all: TakeAll = names["take_all"]
    return take_all


def _splits_column(i: int, ragged: RowLengthsTake, names: dict[str, Any]) -> list[str]:
    """The lines of :func:`compile_take_all` making output ``i``'s row splits for every
    record at once (a ``RaggedFeature`` of one ``RowLengths`` partition): all the
    records' lengths gathered, cast to the splits' dtype and summed in int64 in one
    pass, each record's sums less those before it (equal, modulo the dtype's width, to
    summing its own: the casts and sums wrap alike), into one array where record ``j``'s
    splits are ``p[z[j]:w[j]]`` (its leading 0 included)."""
    names[f"T{i}"] = ragged.dtype
    k = ragged.lengths
    return [
        f"la{i} = i0 + out[:, 2, {k}]",  # where each record's lengths start in ints
        f"ln{i} = out[:, 3, {k}]",
        f"rk{i} = np.repeat(np.arange(len(ln{i})), ln{i})",  # each length's record
        f"ex{i} = np.cumsum(ln{i}) - ln{i}",  # each record's first among all lengths
        f"at{i} = np.arange(len(rk{i}))",
        f"ll{i} = ints[la{i}[rk{i}] + at{i} - ex{i}[rk{i}]]",  # every length, in order
        f"cs{i} = np.cumsum(ll{i}.astype(T{i}), dtype=np.int64)",
        f"bs{i} = np.concatenate((np.zeros(1, np.int64), cs{i}))[ex{i}]",
        f"sp{i} = np.zeros(len(rk{i}) + len(ln{i}), np.int64)",
        f"sp{i}[at{i} + rk{i} + 1] = cs{i} - bs{i}[rk{i}]",
        f"p{i} = sp{i}.astype(T{i}, copy=False)",
        f"zz{i} = ex{i} + np.arange(len(ln{i}))",
        f"z{i} = zz{i}.tolist()",
        f"w{i} = (zz{i} + ln{i} + 1).tolist()",
    ]


def _raw_column(j: int, raw: RawLayout, names: dict[str, Any]) -> list[str]:
    """The lines of :func:`compile_take_all` making step ``j``'s column of ``RawFeature``
    values: the values' bytes of every record gathered into one new array (one compiled
    copy), viewed in their stored order, converted where the dtype differs, one row a
    record (a scalar where the shape is ``[]``); any other size sends all back."""
    names[f"W{j}"], names[f"D{j}"] = raw.wire, raw.dtype
    names[f"S{j}"] = (-1, *raw.shape)
    return [
        f"b{j} = out[:, 0, {j}].copy()",
        f"e{j} = b{j} + {raw.nbytes}",
        f"if not (out[:, 1, {j}] == e{j}).all(): return None",
        f"g{j} = gather(array, b{j}, e{j}, len(e{j}) * {raw.nbytes})",
        f"if g{j} is None: return None",
        f"c{j} = g{j}.view(W{j}).astype(D{j}, copy=False).reshape(S{j})",
    ]


def varlen_views(
    ints: npt.NDArray[np.int64], floats: npt.NDArray[np.float32]
) -> tuple[VarLenArray, VarLenArray]:
    """A batch decode's value arrays viewed once as :class:`~.varlen.VarLenArray`: a
    variable-length value is then one slice of them (a slice keeps the type) rather than
    a slice and a view per record."""
    return ints.view(VarLenArray), floats.view(VarLenArray)


def _compile(steps: list[KeyStep], outputs: list[Output], *, batch: bool) -> Any:
    """The source of :func:`compile_take`'s function (``batch``: :func:`compile_take_at`'s,
    whose value positions count from the record's offsets ``i0`` and ``f0``), compiled."""
    compiled = [s.compiled for s in steps]
    places = fixed_places([c.code for c in compiled], [c.count for c in compiled])
    names: dict[str, Any] = {"VarLenArray": VarLenArray}
    body: list[str] = []
    spans = False
    for j, (step, c, place) in enumerate(zip(steps, compiled, places, strict=True)):
        array = "floats" if c.code == FLOATS else "ints"
        base = ("f0 + " if c.code == FLOATS else "i0 + ") if batch else ""
        v = f"v{j}"
        if c.take == TAKE_SCALAR:
            body.append(f"{v} = {array}[{base}{place}]")  # (a count of 1: always placed)
        elif c.take in (TAKE_ARRAY, TAKE_VARLEN):
            if place >= 0:
                got = f"{array}[{base}{place}:{base}{place + c.count}]"
            else:
                spans = True
                got = f"{array}[{base}at[{j}]:{base}at[{j}] + cnt[{j}]]"
            if c.take == TAKE_VARLEN:
                # (A batch's arrays come viewed as VarLenArray already: slices keep it.)
                got = f"v{got}" if batch else f"{got}.view(VarLenArray)"
            elif c.shape is not None:
                names[f"S{j}"] = c.shape
                got += f".reshape(S{j})"
            body.append(f"{v} = {got}")
        elif c.take == TAKE_BYTES:
            spans = True
            body.append(f"{v} = record[st[{j}]:en[{j}]]")
        else:  # a reader on the value (TAKE_VALUE) or on the Feature (TAKE_READ)
            spans = True
            names[f"R{j}"] = c.value if c.take == TAKE_VALUE else step.read
            body += [f"{v} = R{j}(record, st[{j}], en[{j}])", f"if {v} is None: return None"]
    items = []
    for i, output in enumerate(outputs):
        if output.finish is None:
            names[f"K{i}"] = output.name
            items.append(f"K{i}: v{output.slot}")
            continue
        if not any(line.startswith("vals = ") for line in body):
            body.append(f"vals = [{', '.join(f'v{j}' for j in range(len(steps)))}]")
        names[f"F{i}"] = output.finish
        body += [f"o{i} = F{i}(vals)", f"if o{i} is None: return None"]
        names[f"K{i}"] = output.name
        items.append(f"K{i}: o{i}")
    if spans:
        body.insert(0, "st, en, at, cnt = rows" if batch else "st, en, at, cnt = out.tolist()")
    body.append(f"return {{{', '.join(items)}}}")
    args = (
        "record, rows, ints, floats, i0, f0, vints, vfloats"
        if batch
        else "record, out, ints, floats"
    )
    head = f"take({args})"
    source = f"def {head}:\n" + "".join(f"    {b}\n" for b in body)
    exec(source, names)  # (generated from integers and names)
    return names["take"]
