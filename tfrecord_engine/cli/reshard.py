"""``tfr reshard``: N input files to M output shards, optionally globally shuffled."""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Sequence
from typing import Final

import click

from ..data.dataset import RecordDataset
from ..records.compression import normalize_compression
from ..records.detect import CompressionArg
from ..records.reader import read_records
from .common import (
    BadInput,
    chunked,
    compression_option,
    detect_compression,
    expand_inputs,
    progress,
    same_file,
    settings,
)
from .convert import print_shards, shard_options, shards_interrupted
from .files import count_records
from .interrupt import on_interrupt
from .shards import ShardedWriter, plan_shards, shard_paths

__all__ = ["COMMANDS"]

# Records read (and held) at a time: memory stays bounded by this, whatever the inputs.
_CHUNK: Final = 4096


def _in_order(
    files: Sequence[str], kinds: Sequence[CompressionArg]
) -> Generator[list[bytes], None, None]:
    for path, kind in zip(files, kinds, strict=True):
        records = read_records(
            path,
            kind,
            max_record_bytes=settings().max_record_bytes,
            storage_options=settings().storage_options,
        )
        yield from chunked(records, _CHUNK)


def _shuffled(
    files: Sequence[str], kind: CompressionArg, seed: int
) -> Generator[list[bytes], None, None]:
    # The dataset's own global shuffle: a seeded permutation of all records of all
    # files, read by random access in batches (indexes are loaded, or built and cached).
    ds = RecordDataset(
        list(files),
        compression=kind,
        cache_dir=settings().cache_dir,
        cache_limit=settings().cache_limit,
        storage_options=settings().storage_options,
    )
    try:
        yield from ds.batches(_CHUNK, shuffle=True, seed=seed)
    finally:
        ds.close()


@click.command("reshard")
@click.argument("paths", nargs=-1)
@shard_options
@compression_option(
    "Compression of the inputs (auto: from each file's first bytes).", name="--input-compression"
)
@click.option(
    "--shuffle", is_flag=True, help="Write a seeded global permutation of all input records."
)
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of --shuffle.")
def reshard_command(
    *,
    paths: tuple[str, ...],
    prefix: str,
    shards: int | None,
    records_per_shard: int | None,
    out_compression: str,
    index: bool,
    input_compression: str,
    shuffle: bool,
    seed: int,
) -> None:
    """Rewrite N input files as M shards.

    PATHS are files or quoted globs. --shards M writes sizes that differ by at most
    one record; --records-per-shard R writes R records in every shard but the last,
    which holds the rest. Records keep their order unless --shuffle, which writes a uniform, seeded
    permutation of all records of all inputs (the same one for the same seed and
    inputs), read by random access through the inputs' indexes (built when missing
    and kept in the user's index cache, not beside them). --compression sets the
    output's compression, so reshard also compresses or decompresses. Memory stays
    bounded (4,096 records at a time).

    \b
    Example:
      $ tfr reshard 'train-*.tfrecord' -o shuffled/train --records-per-shard 500 \\
          --shuffle --seed 7 --compression gzip
      shuffled/train-00000-of-00003.tfrecord.gz: 500 records
      shuffled/train-00001-of-00003.tfrecord.gz: 500 records
      shuffled/train-00002-of-00003.tfrecord.gz: 272 records
    """
    files = expand_inputs(paths)
    kinds = [detect_compression(p, input_compression) for p in files]
    out_kind = normalize_compression("" if out_compression == "none" else out_compression)
    total = sum(count_records(p, k)[0] for p, k in zip(files, kinds, strict=True))
    sizes = plan_shards(total, shards, records_per_shard)
    if shuffle and len(set(kinds)) > 1:
        raise BadInput("--shuffle needs inputs of one compression (or --input-compression)")
    for planned in shard_paths(prefix, len(sizes), out_kind):
        if any(same_file(planned, p) for p in files):
            raise BadInput(f"an output shard would replace an input: {planned}")
    chunks = _shuffled(files, kinds[0], seed) if shuffle else _in_order(files, kinds)
    out = ShardedWriter(prefix, total, sizes, out_kind, index=index)
    # closing(): the shuffle's read-ahead thread stops with the command, also on Ctrl-C.
    with (
        on_interrupt(lambda: shards_interrupted(out)),
        contextlib.closing(chunks),
        out,
        progress(total, "resharding") as bar,
    ):
        for chunk in chunks:
            out.write_many(chunk)
            bar.update(len(chunk))
    print_shards(out)


COMMANDS = [reshard_command]
