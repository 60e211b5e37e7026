"""Batches of serialized Examples (or raw records) as Arrow record batches.

:class:`ExampleBatches` decodes a chunk given as one buffer and record spans: the keys
of every column are walked once in lockstep (:mod:`.walk`), each column is built from
its key's values (:mod:`.build`), and only the columns asked for are decoded (a
projection walks fewer keys). Columns the walk cannot serve (``SparseFeature``,
``RawFeature``, partitioned ``RaggedFeature``) come from the numpy batch decoder.

Errors: for ``tfe`` specs, a batch that breaks them is parsed again by the exact
per-record path, which raises TensorFlow's own error; for an Arrow schema, the error
names the column and what is wrong with the record. Either way the error's ``index``
is the record's position in the batch: the reader turns it into the file and record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...errors import ExampleParseError
from ...example.batch import parse_example
from ...example.parse import parse_example as parse_example_exact
from ...example.records import TF_NAME
from .build import Violation, build, numpy_column
from .plan import ColumnPlan, NullPlan, NumpyPlan, Plan
from .spans import Spans, binary_array
from .templated import TemplateWalker
from .walk import Role, TypeMismatch, requests_for

__all__ = ["RAW_COLUMN", "ExampleBatches", "raw_batch", "records_of"]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
#: The column of raw records.
RAW_COLUMN: Final = "record"


def records_of(buf: U8, starts: I64, ends: I64) -> list[bytes]:
    """The records as ``bytes`` (for the exact path and the numpy decoder only)."""
    mv = buf.data
    return [mv[a:b].tobytes() for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]


def raw_batch(buf: U8, starts: I64, ends: I64, name: str = RAW_COLUMN) -> pa.RecordBatch:
    """One binary column holding each record's bytes (one gather, no object per record)."""
    lengths = ends - starts
    large = int(lengths.sum()) > 2**31 - 1
    column = binary_array(Spans(buf, starts, ends), pa.large_binary() if large else pa.binary())
    return pa.RecordBatch.from_arrays([column], [name])


class ExampleBatches:
    """Decodes batches of Examples into record batches of ``plans``' columns.

    Attributes:
        schema: the Arrow schema of every batch.
    """

    def __init__(self, plans: Sequence[Plan], fields: dict[str, Any] | None = None) -> None:
        """``fields``: the Arrow fields of an Arrow schema's columns (their nullability
        and metadata are kept); other columns are not nullable."""
        self.plans = list(plans)
        self._walked = [p for p in self.plans if isinstance(p, ColumnPlan)]
        keys: dict[str, tuple[int, Role]] = {}
        for p in self._walked:
            keys.setdefault(p.key, (p.kind, p.role))
        self._walker = TemplateWalker(requests_for(keys))
        self._numpy = {p.name: p.spec for p in self.plans if isinstance(p, NumpyPlan)}
        self._tf_specs = {p.name: p.spec for p in self._walked if p.spec is not None} | self._numpy
        if self._tf_specs:
            parse_example_exact([], self._tf_specs)  # TensorFlow's checks of the specs
        given = fields or {}
        empty = (
            {name: numpy_column(v, 0) for name, v in parse_example([], self._numpy).items()}
            if self._numpy
            else {}
        )
        self.schema = pa.schema(
            [
                given.get(p.name)
                or pa.field(
                    p.name,
                    p.arrow_type if isinstance(p, ColumnPlan) else _null_or(empty, p.name),
                    nullable=False,
                )
                for p in self.plans
            ]
        )

    def decode(self, buf: U8, starts: I64, ends: I64) -> pa.RecordBatch:
        """The record batch of the Examples ``buf[starts[i]:ends[i]]`` (half-open).

        Raises:
            ExampleParseError / MalformedExampleError: a record breaks the specs or the
                schema (``index``: its position in the batch).
        """
        n = int(starts.shape[0])
        try:
            columns = self._columns(buf, starts, ends)
        except TypeMismatch as exc:
            self._exact(buf, starts, ends)
            plan = next(p for p in self._walked if p.key == exc.key)
            raise ExampleParseError(
                f"feature {exc.key!r} holds {TF_NAME[exc.found]} values, column "
                f"{plan.name!r} reads {TF_NAME[plan.kind]} (read it with another type, or "
                "leave it out with columns=)",
                key=exc.key,
                index=exc.record,
            ) from None
        except Violation as exc:
            self._exact(buf, starts, ends)
            raise ExampleParseError(
                f"column {exc.column!r}: the feature {exc.reason}", key=exc.column, index=exc.record
            ) from None
        if self._numpy:
            parsed = parse_example(records_of(buf, starts, ends), self._numpy)
            for name, value in parsed.items():
                columns[name] = numpy_column(value, n)
        arrays = [pa.nulls(n) if isinstance(p, NullPlan) else columns[p.name] for p in self.plans]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _columns(self, buf: U8, starts: I64, ends: I64) -> dict[str, Any]:
        if not self._walked:
            return {}
        values = self._walker.walk(buf, starts, ends)
        return {p.name: build(p, values[p.key]) for p in self._walked}

    def _exact(self, buf: U8, starts: I64, ends: I64) -> None:
        """For ``tfe`` specs: raises TensorFlow's error for the batch (the exact path)."""
        if self._tf_specs:
            parse_example_exact(records_of(buf, starts, ends), self._tf_specs)


def _null_or(empty: dict[str, Any], name: str) -> Any:
    """The type of a numpy-decoded column, or ``null`` for a column of nulls."""
    return empty[name].type if name in empty else pa.null()
