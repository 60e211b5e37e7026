"""``tfr convert``: numpy arrays, CSV files and image folders to sharded TFRecords."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..records.compression import normalize_compression
from .common import chunked, expand_inputs, progress
from .shards import ShardedWriter, resolve_shards
from .sources import open_source

__all__ = ["COMMANDS", "shard_options"]

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
            click.option("--shards", type=click.IntRange(min=1), help="Number of output shards."),
            click.option(
                "--records-per-shard",
                type=click.IntRange(min=1),
                help="Records per shard (instead of --shards) [default: one shard].",
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
    type=click.Choice(["auto", "numpy", "csv", "images"]),
    default="auto",
    show_default=True,
    help="Input type (auto: folder -> images, .npz/.npy -> numpy, .csv/.tsv -> csv).",
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
) -> None:
    """Convert .npz/.npy arrays, CSV files or image folders to sharded TFRecords.

    Records of all inputs go, in order, into shards of sizes that differ by at most
    one record. .npz: one feature per array, split along axis 0; CSV: one feature per
    column, types inferred (int64, float32, else bytes); image folder: one sub-folder
    per class (sorted names -> labels 0, 1, ...), features image (file bytes), label
    and class.

    \b
    Example:
      $ tfr convert mnist.npz -o out/mnist --shards 4 --compression gzip
      out/mnist-00000-of-00004.tfrecord.gz: 17500 records
      ...
    """
    files = expand_inputs(paths, allow_dirs=True)
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
    n = resolve_shards(total, shards, records_per_shard)
    kind = normalize_compression("" if out_compression == "none" else out_compression)
    with (
        ShardedWriter(prefix, total, n, kind, index=index) as out,
        progress(total, "converting") as bar,
    ):
        for source in sources:
            for chunk in chunked(source.records(), 256):
                out.write_many(chunk)
                bar.update(len(chunk))
    for path, count in zip(out.paths, out.counts, strict=True):
        click.echo(f"{path}: {count} records")


COMMANDS = [convert_command]
