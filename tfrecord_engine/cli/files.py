"""``tfr count``, ``tfr verify`` and ``tfr index``: whole-file commands."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import click

from ..errors import IndexFormatError, InvalidArgumentError
from ..index.placement import index_candidates, index_path_for
from ..index.sidecar import Index
from ..records import framing
from ..records.compression import Compression
from ..records.detect import CompressionArg
from ..records.reader import read_records
from ..records.recovery import DamageReport
from ..storage.filekind import stream_kind
from .common import (
    DALI_SUFFIX,
    EXIT_DAMAGE,
    BadInput,
    cli_hints,
    compression_option,
    damage_json,
    detect_compression,
    echo_json,
    expand_inputs,
    is_remote,
    progress,
    settings,
)
from .interrupt import on_interrupt, whole

__all__ = ["COMMANDS", "Tally", "count_records", "dali_index_path"]

_READ_HELP = "Compression of the inputs (auto: from each file's first bytes)."


@dataclasses.dataclass
class Tally:
    """How far a command got in the file it is reading (for an interrupted summary)."""

    path: str | None = None
    records: int | None = None
    damage: list[DamageReport] = dataclasses.field(default_factory=list)

    def start(self, path: str | None, records: int | None) -> None:
        """A new file: ``records`` is ``None`` while its progress cannot be counted."""
        self.path, self.records, self.damage = path, records, []


def count_records(path: str, kind: CompressionArg, tally: Tally | None = None) -> tuple[int, bool]:
    """Records in ``path`` and whether a valid sidecar index gave the count.

    Without a valid index the file's headers are walked (GZIP/ZLIB: decompressed); no
    index is written. A pipe is read through once (length CRCs checked, as a walk does),
    its records counted in ``tally`` as they come.
    """
    limit = settings().max_record_bytes
    if stream_kind(path) is not None:
        tally = Tally() if tally is None else tally
        tally.start(path, 0)
        n = 0
        for _ in read_records(path, kind, verify=False, max_record_bytes=limit):
            n += 1
            tally.records = n
        return n, False
    try:
        idx = Index.load(path, storage_options=settings().storage_options)
        if limit is None or len(idx) == 0 or int(idx.lengths.max()) <= limit:
            return len(idx), True
    except (FileNotFoundError, IndexFormatError):
        pass  # no sidecar, or a stale/damaged one: count from the data itself
    built = Index.build(
        path, kind, max_record_bytes=limit, storage_options=settings().storage_options
    )
    return len(built), False


def _unfinished(tally: Tally) -> dict[str, object] | None:
    if tally.path is None:
        return None
    return {
        "path": tally.path,
        "records": tally.records,
        "damages": [damage_json(r) for r in tally.damage],
    }


def _stopped_in(tally: Tally) -> str:
    """The end of an interrupted summary: the file that was not finished, if any."""
    if tally.path is None:
        return ""
    so_far = "" if tally.records is None else f" ({tally.records} records read)"
    return f"; {tally.path} was not finished{so_far}"


@click.command("count")
@click.argument("paths", nargs=-1)
@compression_option(_READ_HELP)
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of a table.")
def count_command(paths: tuple[str, ...], compression: str, as_json: bool) -> None:
    """Records per file and in total.

    PATHS are files, pipes or quoted globs. A valid index (.tfeidx/FILE.tfeidx,
    FILE.tfeidx or the user's index cache) gives the count at once; otherwise the record
    headers are walked (payloads are not read, no index is written). Reads pipes and "-"
    (standard input) too.

    \b
    Example:
      $ tfr count 'train-*.tfrecord'
           761  train-00000-of-00002.tfrecord
           511  train-00001-of-00002.tfrecord
          1272  total
    """
    files = expand_inputs(paths, allow_streams=True)
    rows: list[tuple[str, int, bool]] = []
    tally = Tally()

    def table() -> dict[str, object]:
        return {
            "files": [{"path": p, "records": n, "from_index": i} for p, n, i in rows],
            "total": sum(n for _, n, _ in rows),
        }

    def interrupted() -> str:
        done = table()
        if as_json:
            unfinished = _unfinished(tally)
            if unfinished is not None:
                del unfinished["damages"]  # a count checks no data
            echo_json({**done, "interrupted": True, "unfinished": unfinished})
        else:
            _print_counts(rows, total=False)
        counted = f"counted {len(rows)} of {_plural(len(files), 'file')}"
        return f"{counted} ({done['total']} records){_stopped_in(tally)}"

    with on_interrupt(interrupted), progress(len(files), "counting") as bar:
        for path in files:
            tally.start(path, None)
            n, from_index = count_records(path, detect_compression(path, compression), tally)
            rows.append((path, n, from_index))
            tally.start(None, None)
            bar.update(1)
    if as_json:
        echo_json(table())
        return
    _print_counts(rows, total=len(rows) > 1)


def _print_counts(rows: list[tuple[str, int, bool]], *, total: bool) -> None:
    width = max(8, len(str(sum(n for _, n, _ in rows))))
    for path, n, _ in rows:
        click.echo(f"{n:>{width}}  {path}")
    if total:
        click.echo(f"{sum(n for _, n, _ in rows):>{width}}  total")


@click.command("verify")
@click.argument("paths", nargs=-1)
@compression_option(_READ_HELP)
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of lines.")
@click.option("-q", "--quiet", is_flag=True, help="Print damage only, no summary.")
def verify_command(paths: tuple[str, ...], compression: str, as_json: bool, quiet: bool) -> None:
    """Check every length and data CRC; one line per damaged region.

    PATHS are files, pipes or quoted globs. Every damage of a file is listed (the
    reader steps over each one to the next intact record), as "FILE: record I at
    offset O: REASON; N byte(s) not read". For GZIP/ZLIB files offsets are in the
    decompressed stream; damage inside the deflate stream itself ends the check of
    that file. Exits 1 when any damage is found. Reads pipes and "-" (standard
    input) too.

    \b
    Example:
      $ tfr verify data.tfrecord
      data.tfrecord: record 3 at offset 1205: data CRC mismatch ...; 402 byte(s) not read
      1 file, 9 records read, 1 damaged region in 1 file
    """
    files = expand_inputs(paths, allow_streams=True)
    kinds = [detect_compression(p, compression) for p in files]
    sizes = _plain_sizes(files, kinds)
    results: list[tuple[str, int, list[DamageReport]]] = []
    tally = Tally()

    def interrupted() -> str:
        if as_json:
            echo_json(
                {
                    **_verify_json(results, ok=False),
                    "interrupted": True,
                    "unfinished": _unfinished(tally),
                }
            )
        else:
            for r in tally.damage:  # (the finished files' damage is printed already)
                click.secho(cli_hints(str(r)), fg="red")
        read = sum(r[1] for r in results) + (tally.records or 0)
        regions = sum(len(r[2]) for r in results) + len(tally.damage)
        return (
            f"checked {len(results)} of {_plural(len(files), 'file')}, {read} records read, "
            f"{_plural(regions, 'damaged region')} found so far{_stopped_in(tally)}"
        )

    with (
        on_interrupt(interrupted),
        progress(len(files) if sizes is None else sum(sizes), "verifying") as bar,
    ):
        for k, (path, kind) in enumerate(zip(files, kinds, strict=True)):
            tally.start(path, 0)
            n = 0
            done = 0
            for record in read_records(
                path,
                kind,
                on_damage="skip",
                on_damage_report=tally.damage.append,
                max_record_bytes=settings().max_record_bytes,
                storage_options=settings().storage_options,
            ):
                n += 1
                tally.records = n
                if sizes is not None:
                    done += len(record) + framing.FRAME_OVERHEAD
                    bar.update(len(record) + framing.FRAME_OVERHEAD, flush_every=1 << 22)
            # Whatever the records did not account for (damage) completes the file.
            bar.update(1 if sizes is None else sizes[k] - done)
            results.append((path, n, tally.damage))
            tally.start(None, None)
            if not as_json:
                for r in results[-1][2]:
                    with whole():
                        bar.echo(cli_hints(str(r)), fg="red")
    damaged = [r for r in results if r[2]]
    if as_json:
        echo_json(_verify_json(results, ok=not damaged))
    elif not quiet:
        regions = sum(len(r[2]) for r in damaged)
        read = sum(r[1] for r in results)
        found = (
            f"{_plural(regions, 'damaged region')} in {_plural(len(damaged), 'file')}"
            if damaged
            else "no damage"
        )
        summary = f"{_plural(len(results), 'file')}, {read} records read, {found}"
        click.secho(summary, fg="red" if damaged else "green")
    if damaged:
        click.get_current_context().exit(EXIT_DAMAGE)


def _verify_json(
    results: list[tuple[str, int, list[DamageReport]]], *, ok: bool
) -> dict[str, object]:
    return {
        "ok": ok,
        "files": [
            {"path": path, "records": n, "damages": [damage_json(r) for r in reports]}
            for path, n, reports in results
        ],
    }


def _plain_sizes(files: list[str], kinds: Sequence[CompressionArg]) -> list[int] | None:
    """File sizes for a byte-exact bar: local, uncompressed files only (else None)."""
    if any(is_remote(p) or stream_kind(p) is not None for p in files) or any(
        k is not Compression.NONE for k in kinds
    ):
        return None
    return [os.path.getsize(p) for p in files]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def dali_index_path(data_path: str) -> str:
    """Where ``--format dali`` writes: ``x.tfrecord`` -> ``x.tfindex``, else appended.

    >>> dali_index_path("a/train-00000-of-00002.tfrecord"), dali_index_path("b.rec")
    ('a/train-00000-of-00002.tfindex', 'b.rec.tfindex')
    """
    base, ext = os.path.splitext(data_path)
    return (base if ext == ".tfrecord" else data_path) + DALI_SUFFIX


@click.command("index")
@click.argument("paths", nargs=-1)
@compression_option(_READ_HELP)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["tfe", "dali"]),
    default="tfe",
    show_default=True,
    help="tfe: binary index .tfeidx/FILE.tfeidx (a hidden folder beside FILE); "
    "dali: DALI/tfrecord text index (x.tfrecord -> x.tfindex; uncompressed files only).",
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False), help="Index file name (one input only)."
)
@click.option("--force", is_flag=True, help="Rebuild indexes that are valid already.")
@click.option(
    "--columns",
    default="",
    metavar="NAMES",
    help="Comma-separated scalar features (int64 or bytes) to keep in the index, e.g. "
    "label,id: ds.index_column('label') then reads them without reading the records. "
    "A valid index gets them added (its restart points are kept).",
)
def index_command(
    *,
    paths: tuple[str, ...],
    compression: str,
    fmt: str,
    output: str | None,
    force: bool,
    columns: str,
) -> None:
    """Write an index for each file.

    PATHS are files or quoted globs. The index goes to .tfeidx/FILE.tfeidx, a hidden
    folder beside FILE that shard globs (train-*) do not match. A valid index there,
    or an old FILE.tfeidx, is kept unless --force: one written with the data
    (TFRecordWriter(..., index=True), `tfr convert`, `tfr reshard`) holds the
    full-flush restart points of a GZIP/ZLIB stream, which a rebuild cannot recover
    (it finds member starts only). Damaged or stale ones are replaced by a new index
    in .tfeidx/. --format dali writes the text index from the valid index when there
    is one, else from a walk of the file. --columns reads every record once more and
    keeps those features in the index (a valid index lacking them gets them added).

    \b
    Example:
      $ tfr index 'train-*.tfrecord'
      .tfeidx/train-00000-of-00002.tfrecord.tfeidx: 761 records
      .tfeidx/train-00001-of-00002.tfrecord.tfeidx: 511 records
      $ tfr index --format dali train-00000-of-00002.tfrecord
      train-00000-of-00002.tfindex: 761 records
    """
    files = expand_inputs(paths)
    if output is not None and len(files) != 1:
        raise BadInput(f"--output takes one input file, got {len(files)}")
    names = [c.strip() for c in columns.split(",") if c.strip()]
    if names and fmt == "dali":
        raise BadInput("--columns is for --format tfe (text indexes hold offsets only)")
    written: list[tuple[str, int, bool]] = []
    current: list[str] = []  # the file being indexed

    def interrupted() -> str:
        _print_indexes(written)
        rest = f"; {current[0]} was not indexed" if current else ""
        return f"indexed {len(written)} of {_plural(len(files), 'file')}{rest}"

    with on_interrupt(interrupted), progress(len(files), "indexing") as bar:
        for path in files:
            current[:] = [path]
            kind = detect_compression(path, compression)
            if fmt == "dali" and kind in (Compression.GZIP, Compression.ZLIB):
                # Refused before indexing the whole file, and before any file is made.
                raise InvalidArgumentError(
                    f"{path}: text (DALI) indexes describe uncompressed files only"
                )
            found = None if force else _valid_index(path, kind)
            lacking = [n for n in names if found is None or n not in found[1].columns]
            kept = found is not None and fmt == "tfe" and output is None and not lacking
            if found is not None:
                idx = found[1].with_columns(lacking) if lacking else found[1]
            else:
                idx = Index.build(
                    path,
                    kind,
                    max_record_bytes=settings().max_record_bytes,
                    columns=names or None,
                    storage_options=settings().storage_options,
                )
            if fmt == "dali":
                target = output or dali_index_path(path)
                idx.save_text(target)
            elif kept and found is not None:
                target = found[0]
            elif found is not None and output is None:
                target = idx.save(found[0])  # (columns added in place)
            else:
                target = idx.save(output or index_path_for(path))
            written.append((target, len(idx), kept))
            current.clear()
            bar.update(1)
    _print_indexes(written)


def _print_indexes(written: list[tuple[str, int, bool]]) -> None:
    for target, n, kept in written:
        click.echo(f"{target}: {n} records{' (valid, kept)' if kept else ''}")


def _valid_index(path: str, kind: CompressionArg) -> tuple[str, Index] | None:
    """A valid index that travels with the data (hidden sub-folder, or an old sidecar
    beside it) and where it is; the user's cache does not count: ``tfr index`` is asked
    for an index beside the data."""
    for candidate in index_candidates(path):
        try:
            idx = Index.load(path, candidate, storage_options=settings().storage_options)
        except (FileNotFoundError, IndexFormatError):
            continue  # none, damaged or stale: try the next, else build a new one
        if idx.compression is kind:
            return candidate, idx
    return None


COMMANDS = [count_command, verify_command, index_command]
