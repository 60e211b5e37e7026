"""``tfr convert``: numpy arrays, CSV files, image folders and Parquet files to sharded
TFRecords, and TFRecords to Parquet (:mod:`.tables`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from ..records.compression import normalize_compression
from .common import chunked, expand_inputs, progress
from .infer import quote_key
from .interrupt import on_interrupt
from .shards import ShardedWriter, plan_shards
from .sources import Source, Spec, open_source
from .tables import is_parquet, parquet_to_tfrecord, tfrecord_to_parquet

__all__ = ["COMMANDS", "print_shards", "shard_options", "shards_interrupted"]

_F = TypeVar("_F", bound=Callable[..., Any])


def shard_options(command: _F) -> _F:
    """Options shared by ``convert`` and ``reshard`` (output prefix, shards, index)."""
    for option in reversed(
        [
            click.option(
                "-o",
                "--output",
                "prefix",
                required=True,
                help="Output prefix: PREFIX-00000-of-00010.tfrecord[.gz|.zz].",
            ),
            click.option(
                "--shards",
                type=click.IntRange(min=1),
                help="Number of output shards (sizes differ by at most one record).",
            ),
            click.option(
                "--records-per-shard",
                type=click.IntRange(min=1),
                help="Records in every shard but the last, which holds the rest (instead "
                "of --shards) [default: one shard].",
            ),
            click.option(
                "--compression",
                "out_compression",
                type=click.Choice(["none", "gzip", "zlib"], case_sensitive=False),
                default="none",
                show_default=True,
                help="Compression of the output shards.",
            ),
            click.option(
                "--index/--no-index",
                default=True,
                show_default=True,
                help="Write an index per shard (.tfeidx/FILE.tfeidx).",
            ),
        ]
    ):
        command = option(command)
    return command


@click.command("convert")
@click.argument("paths", nargs=-1)
@shard_options
@click.option(
    "--from",
    "source_kind",
    type=click.Choice(["auto", "numpy", "csv", "images", "parquet"]),
    default="auto",
    show_default=True,
    help="Input type (auto: folder -> images, .npz/.npy -> numpy, .csv/.tsv -> csv, "
    ".parquet -> parquet).",
)
@click.option(
    "--to",
    "target",
    type=click.Choice(["tfrecord", "parquet"]),
    default="tfrecord",
    show_default=True,
    help="Output type: sharded TFRecords, or (from TFRecord inputs) one Parquet file "
    "named by -o, its schema inferred from the first --sample records.",
)
@click.option(
    "--sample",
    default=1000,
    show_default=True,
    type=click.IntRange(min=1),
    help="--to parquet: infer the columns from the first N records.",
)
@click.option("--key", help=".npy inputs: the feature name [default: the file's stem].")
@click.option("--delimiter", help="CSV inputs: the cell delimiter [default: , or tab for .tsv].")
@click.option(
    "--ext",
    "extensions",
    multiple=True,
    help="Image folders: file extensions to take (repeatable) [default: common image types].",
)
@click.option(
    "--uint8-as-bytes",
    is_flag=True,
    help="numpy inputs: store each row of a uint8 array as one bytes value (raw pixels) "
    "instead of an int64 list.",
)
@click.option(
    "--class-name/--no-class-name",
    default=True,
    show_default=True,
    help="Image folders: also store the class name as feature 'class'.",
)
def convert_command(
    *,
    paths: tuple[str, ...],
    prefix: str,
    shards: int | None,
    records_per_shard: int | None,
    out_compression: str,
    index: bool,
    source_kind: str,
    key: str | None,
    delimiter: str | None,
    extensions: tuple[str, ...],
    class_name: bool,
    uint8_as_bytes: bool,
    target: str,
    sample: int,
) -> None:
    """Convert arrays, CSV, image folders or Parquet to TFRecords, or TFRecords to Parquet.

    PATHS are .npz/.npy/.csv/.tsv/.parquet files, image folders or quoted globs.
    Records of all inputs go, in order, into the shards. .npz: one feature per array,
    split along axis 0; CSV: one feature per column, types inferred (int64, float32,
    else bytes); image folder: one sub-folder per class (sorted names -> labels 0, 1,
    ...), features image (file bytes), label and class; Parquet: one feature per
    column (a null leaves the feature out), the shards published together at the end.
    Then the feature spec that reads the records back is printed, with each array's
    shape per record (an Example stores values flat: `tfr schema` cannot see the shape).
    With --to parquet, PATHS are TFRecord files of Examples, written as one Parquet
    file (-o) with the columns inferred from the first records (needs pyarrow).

    \b
    Example:
      $ tfr convert mnist.npz -o out/mnist --shards 4 --compression gzip
      out/mnist-00000-of-00004.tfrecord.gz: 250 records
      out/mnist-00001-of-00004.tfrecord.gz: 250 records
      out/mnist-00002-of-00004.tfrecord.gz: 250 records
      out/mnist-00003-of-00004.tfrecord.gz: 250 records
      # The feature spec of these records (tfe.parse_example), shapes included:
      features = {
          "image": tfe.FixedLenFeature([28, 28], "int64"),
          "label": tfe.FixedLenFeature([], "int64"),
      }
      $ tfr convert 'train-*.tfrecord' --to parquet -o train.parquet
      train.parquet: 1272 rows
      # The columns (inferred from the first 1000 records):
      caption: string
      image: binary
      label: int64
      $ tfr convert train.parquet -o out/train --shards 2
      out/train-00000-of-00002.tfrecord: 636 records
      out/train-00001-of-00002.tfrecord: 636 records
      # The feature spec of these records (tfe.parse_example):
      features = {
          "caption": tfe.FixedLenFeature([], "string"),
          "image": tfe.FixedLenFeature([], "string"),
          "label": tfe.FixedLenFeature([], "int64"),
      }
      ...
    """
    if target == "parquet":
        if shards is not None or records_per_shard is not None:
            raise click.UsageError(
                "--to parquet writes one file: drop --shards/--records-per-shard"
            )
        tfrecord_to_parquet(expand_inputs(paths), prefix, sample=sample)
        return
    files = expand_inputs(paths, allow_dirs=True)
    if source_kind == "parquet" or (
        source_kind == "auto" and files and all(is_parquet(f) for f in files)
    ):
        kind = normalize_compression("" if out_compression == "none" else out_compression)
        parquet_to_tfrecord(
            files,
            prefix,
            shards=shards,
            records_per_shard=records_per_shard,
            compression=kind,
            index=index,
        )
        return
    exts = tuple(e.lower() if e.startswith(".") else f".{e.lower()}" for e in extensions)
    sources = [
        open_source(
            p,
            source_kind,
            key=key,
            delimiter=delimiter,
            extensions=exts,
            class_names=class_name,
            uint8_bytes=uint8_as_bytes,
        )
        for p in files
    ]
    if key is not None and len(sources) > 1:
        raise click.UsageError("--key names the feature of one .npy input")
    for source in sources:
        for note in source.notes:
            click.echo(f"note: {note}", err=True)
    total = sum(len(s) for s in sources)
    sizes = plan_shards(total, shards, records_per_shard)
    kind = normalize_compression("" if out_compression == "none" else out_compression)
    out = ShardedWriter(prefix, total, sizes, kind, index=index)
    with on_interrupt(lambda: shards_interrupted(out)), out, progress(total, "converting") as bar:
        for source in sources:
            for chunk in chunked(source.records(), 256):
                out.write_many(chunk)
                bar.update(len(chunk))
    print_shards(out)
    specs = _merged_specs(sources)
    if specs is None:
        click.echo(
            "note: the inputs hold different features, so no one spec reads every record "
            "(`tfr schema` shows what the records hold)",
            err=True,
        )
        return
    click.echo("# The feature spec of these records (tfe.parse_example), shapes included:")
    click.echo("features = {")
    for name, spec in specs.items():
        if spec is None:
            click.echo(f"    # {quote_key(name)}: an object array: each value's type decides")
        else:
            click.echo(f"    {quote_key(name)}: {spec.expression()},")
    click.echo("}")


def print_shards(out: ShardedWriter, *, published_only: bool = False) -> None:
    """One line per shard: its name and records (``published_only``: complete ones)."""
    shown = out.published if published_only else len(out.paths)
    for path, count in zip(out.paths[:shown], out.counts[:shown], strict=True):
        click.echo(f"{path}: {count} records")


def shards_interrupted(out: ShardedWriter) -> str:
    """The summary of an interrupted ``convert``/``reshard``: the shards it published."""
    print_shards(out, published_only=True)
    done = sum(out.counts[: out.published])
    return (
        f"{out.published} of {len(out.paths)} shards written ({done} of {out.total} "
        "records); the shard being written was dropped: run the command again for all"
    )


def _merged_specs(sources: Sequence[Source]) -> dict[str, Spec | None] | None:
    """One spec for the records of all sources, or ``None`` where they differ."""
    merged = dict(sources[0].specs)
    for source in sources[1:]:
        if source.specs.keys() != merged.keys():
            return None
        for key, spec in source.specs.items():
            have = merged[key]
            if have is None or spec is None:
                merged[key] = None
            elif (have.shape, have.dtype, have.raw) != (spec.shape, spec.dtype, spec.raw):
                return None
            else:  # a key missing in some rows of one input needs the default for all
                merged[key] = dataclasses.replace(have, default=have.default or spec.default)
    return merged


COMMANDS = [convert_command]
