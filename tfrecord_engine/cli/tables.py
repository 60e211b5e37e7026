"""``tfr convert`` to and from Parquet, through :mod:`tfrecord_engine.arrow`.

Parquet files (or folders of them) become sharded, indexed TFRecords of Examples, one
feature per column, encoded a column at a time; the shards appear together when all
are written (an interrupted or failed conversion publishes nothing). TFRecord files
become one Parquet file, with a schema inferred from the first records (``tfr
schema``'s statistics); the file appears whole, under its name, at the end.

pyarrow is needed (the ``arrow`` extra): it is imported when a conversion runs, so the
rest of ``tfr`` works without it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from typing import Any, Final

import click

from ..errors import MissingDependencyError
from ..records.compression import Compression
from .infer import quote_key
from .interrupt import on_interrupt, whole

__all__ = ["PARQUET_EXTENSIONS", "is_parquet", "parquet_to_tfrecord", "tfrecord_to_parquet"]

PARQUET_EXTENSIONS: Final = (".parquet", ".pq", ".parq")
_DTYPES: Final = {1: "string", 2: "float32", 3: "int64"}
_ZEROS: Final = {"int64": "0", "float32": "0.0", "string": 'b""'}


def is_parquet(path: str) -> bool:
    """Whether ``path`` names a Parquet file (by its extension)."""
    return path.lower().endswith(PARQUET_EXTENSIONS)


def _arrow() -> Any:
    """:mod:`tfrecord_engine.arrow`, or a one-line error naming the extra to install."""
    try:
        import tfrecord_engine.arrow as tfa  # noqa: PLC0415 - pyarrow is optional
    except MissingDependencyError as exc:
        raise click.ClickException(str(exc)) from None
    return tfa


def _spec_line(name: str, t: Any, nulls: int) -> str:
    """The ``tfe`` spec that reads a written column back (as a dict entry)."""
    import pyarrow as pa  # noqa: PLC0415

    from ..hosts.arrow.leaf import kind_of  # noqa: PLC0415 - pyarrow is imported by now
    from ..hosts.arrow.plan import unwrap  # noqa: PLC0415

    if pa.types.is_null(t):
        # (Written as a missing feature in every record: nothing to read back.)
        return f"    # {quote_key(name)}: null in every row, so no record holds it"
    leaf, dims, variable, _ = unwrap(t, f"column {name!r}")
    dtype = _DTYPES[kind_of(leaf, name)]
    shape = "[" + ", ".join(map(str, dims)) + "]"
    key = quote_key(name)
    if variable and dims:
        return f'    {key}: tfe.FixedLenSequenceFeature({shape}, "{dtype}", allow_missing=True),'
    if variable:
        return f'    {key}: tfe.RaggedFeature("{dtype}"),'
    if not nulls:
        return f'    {key}: tfe.FixedLenFeature({shape}, "{dtype}"),'
    if not dims:
        default = _ZEROS[dtype]
        return (
            f'    {key}: tfe.FixedLenFeature([], "{dtype}", default_value={default}),'
            f"  # null in {nulls} rows: the default fills them"
        )
    return f'    {key}: tfe.VarLenFeature("{dtype}"),  # {shape} values, none in {nulls} rows'


def parquet_to_tfrecord(
    files: Sequence[str],
    prefix: str,
    *,
    shards: int | None,
    records_per_shard: int | None,
    compression: Compression,
    index: bool,
) -> None:
    """Writes the rows of Parquet ``files`` as shards; prints them and the spec."""
    _arrow()
    from ..hosts.arrow.writer import (  # noqa: PLC0415 - after the pyarrow check
        DEFAULT_WRITE_BATCH,
        open_batches,
        write_batches,
    )

    with on_interrupt(
        lambda: "no shard was published (they appear together at the end): run the command again"
    ):
        batches = open_batches(list(files), None, DEFAULT_WRITE_BATCH)
        written = write_batches(
            batches,
            prefix,
            num_shards=shards,
            records_per_shard=records_per_shard,
            compression=compression,
            index=index,
        )
    for path, count in zip(written.paths, written.counts, strict=True):
        click.echo(f"{path}: {count} records")
    click.echo("# The feature spec of these records (tfe.parse_example):")
    click.echo("features = {")
    for field in written.schema:
        click.echo(_spec_line(field.name, field.type, written.nulls.get(field.name, 0)))
    click.echo("}")
    click.echo("# Or as a table, nulls and types as in the Parquet files:")
    click.echo("#   tfrecord_engine.arrow.read_table(paths, pyarrow.parquet.read_schema(FILE))")


def tfrecord_to_parquet(files: Sequence[str], output: str, *, sample: int) -> None:
    """Writes the Examples of ``files`` as one Parquet file (schema inferred)."""
    tfa = _arrow()
    import pyarrow.parquet as pq  # noqa: PLC0415 - pyarrow is optional

    if not is_parquet(output):
        raise click.BadParameter(
            f"{output!r}: name the Parquet file (.parquet)", param_hint="'-o' / '--output'"
        )
    reader = tfa.reader(list(files), sample=sample)
    folder = os.path.dirname(os.path.abspath(output))
    os.makedirs(folder, exist_ok=True)
    # Hidden while written: no glob picks up half a file; renamed whole at the end.
    temp = os.path.join(folder, f".{os.path.basename(output)}.tmp-{uuid.uuid4().hex[:8]}")
    rows = 0
    try:
        with (
            on_interrupt(lambda: f"{output} was not written: run the command again"),
            pq.ParquetWriter(temp, reader.schema) as out,
        ):
            for batch in reader:
                out.write_batch(batch)
                rows += batch.num_rows
        with whole():
            os.replace(temp, output)
    finally:
        if os.path.exists(temp):
            os.remove(temp)
    click.echo(f"{output}: {rows} rows")
    click.echo(f"# The columns (inferred from the first {sample} records):")
    for field in reader.schema:
        click.echo(f"{field.name}: {field.type}")
