"""``tfr repair``: copy every intact record of a damaged file into a new file."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator

import click

from ..records.detect import CompressionArg
from ..records.reader import read_records
from ..records.recovery import DamageReport
from ..writing.writer import TFRecordWriter
from .common import (
    BadInput,
    chunked,
    cli_hints,
    compression_option,
    damage_json,
    detect_compression,
    echo_json,
    expand_inputs,
    is_remote,
    progress,
    same_file,
    settings,
)
from .interrupt import on_interrupt, whole

__all__ = ["COMMANDS", "repaired_path"]


def repaired_path(path: str, output_dir: str | None = None) -> str:
    """``data.tfrecord.gz`` -> ``data.repaired.tfrecord.gz`` (or the same name in a dir).

    >>> repaired_path("d/train-00001-of-00004.tfrecord"), repaired_path("x", "fixed")
    ('d/train-00001-of-00004.repaired.tfrecord', 'fixed/x')
    """
    head, tail = os.path.split(path)
    if output_dir is not None:
        return os.path.join(output_dir, tail)
    stem, dot, rest = tail.partition(".")
    return os.path.join(head, f"{stem}.repaired{dot}{rest}" if dot else f"{tail}.repaired")


@click.command("repair")
@click.argument("paths", nargs=-1)
@compression_option("Compression of the inputs, kept for the outputs (auto: from the bytes).")
@click.option("-o", "--output", help="Repaired file (one input only).")
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False),
    help="Write repaired files under their own names here.",
)
@click.option(
    "--index/--no-index",
    default=False,
    show_default=True,
    help="Also write indexes (.tfeidx/FILE.tfeidx).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of lines.")
def repair_command(
    *,
    paths: tuple[str, ...],
    compression: str,
    output: str | None,
    output_dir: str | None,
    index: bool,
    as_json: bool,
) -> None:
    """Copy every intact record of each file into a new file; report what was lost.

    PATHS are files or quoted globs. The reader steps over each damaged region to the
    next intact record (both CRCs valid); every region is reported with its offset,
    the index the first lost record had and the bytes skipped (records inside a region
    cannot be counted). Outputs default to NAME.repaired.EXT next to each input; an
    input is never overwritten. A damaged GZIP/ZLIB deflate stream cannot be
    resynchronized: the records before the damage are kept. Exit status 0 when every
    repaired file was written, whether or not damage was found (use `tfr verify` to
    test for damage).

    \b
    Example:
      $ tfr repair data.tfrecord
      data.tfrecord: record 3 at offset 1205: data CRC mismatch ...; 402 byte(s) not read
      data.repaired.tfrecord: 9 records kept, 1 damaged region(s), 402 bytes lost
    """
    files = expand_inputs(paths)
    if output is not None and (len(files) != 1 or output_dir is not None):
        raise BadInput("--output takes exactly one input (and no --output-dir)")
    targets = [output or repaired_path(p, output_dir) for p in files]
    for path, target in zip(files, targets, strict=True):
        if same_file(path, target):
            raise BadInput(f"refusing to overwrite the input {path}")
    if output_dir is not None and not is_remote(output_dir):
        os.makedirs(output_dir, exist_ok=True)
    results: list[Repaired] = []
    current: list[Repaired] = []  # the file being repaired

    def interrupted() -> str:
        unfinished = current[0] if current else None
        if as_json:
            echo_json(
                {
                    **_repairs_json(results),
                    "interrupted": True,
                    "unfinished": None
                    if unfinished is None
                    else {
                        "input": unfinished.path,
                        "records_read": unfinished.read,
                        "damages": [damage_json(r) for r in unfinished.reports],
                    },
                }
            )
        else:
            _print_repairs(results)
            for r in [] if unfinished is None else unfinished.reports:
                click.secho(cli_hints(str(r)), fg="yellow")
        rest = (
            ""
            if unfinished is None
            else f"; {unfinished.path} was not finished: {unfinished.target} was not written"
        )
        return f"repaired {len(results)} of {len(files)} file(s){rest}"

    with on_interrupt(interrupted), progress(len(files), "repairing") as bar:
        for path, target in zip(files, targets, strict=True):
            kind = detect_compression(path, compression)
            state = Repaired(path, target)
            current[:] = [state]
            _repair(state, kind, index=index)
            results.append(state)
            current.clear()
            bar.update(1)
    if as_json:
        echo_json(_repairs_json(results))
        return
    _print_repairs(results)


@dataclasses.dataclass
class Repaired:
    """One input's repair: records read and copied so far, and the damage met."""

    path: str
    target: str
    read: int = 0
    kept: int = 0
    reports: list[DamageReport] = dataclasses.field(default_factory=list)


def _repair(state: Repaired, kind: CompressionArg, *, index: bool) -> None:
    """Copies the intact records of ``state.path``; the output appears whole or not at all
    (also on Ctrl-C: publishing is never cut)."""
    options = settings().storage_options
    writer = TFRecordWriter(state.target, kind, index=index, storage_options=options)
    try:
        records = read_records(
            state.path,
            kind,
            on_damage="skip",
            on_damage_report=state.reports.append,
            max_record_bytes=settings().max_record_bytes,
            storage_options=options,
        )
        for chunk in chunked(_counted(records, state), 1024):
            state.kept += writer.write_many(chunk)
    except BaseException:
        with whole():
            writer.abort()
        raise
    with whole():
        writer.close()


def _counted(records: Iterator[bytes], state: Repaired) -> Iterator[bytes]:
    for record in records:
        state.read += 1
        yield record


def _repairs_json(results: list[Repaired]) -> dict[str, object]:
    return {
        "files": [
            {
                "input": r.path,
                "output": r.target,
                "records_kept": r.kept,
                "bytes_lost": _lost(r.reports),
                "damages": [damage_json(d) for d in r.reports],
            }
            for r in results
        ]
    }


def _print_repairs(results: list[Repaired]) -> None:
    for result in results:
        reports = result.reports
        for r in reports:
            click.secho(cli_hints(str(r)), fg="yellow")
        lost = _lost(reports)
        regions = "no damage" if not reports else f"{len(reports)} damaged region(s), "
        if not reports:
            tail = ""
        elif lost is None:
            # A damaged deflate stream ends the file: how much was behind it is unknown.
            known = sum(r.bytes_skipped or 0 for r in reports)
            tail = (
                f"at least {known} bytes lost, then an unknown number"
                if known
                else ("an unknown number of bytes lost")
            )
        else:
            tail = f"{lost} bytes lost"
        click.echo(f"{result.target}: {result.kept} records kept, {regions}{tail}")


def _lost(reports: list[DamageReport]) -> int | None:
    """The bytes the damage cost, or ``None`` when a report could not count them."""
    if any(r.bytes_skipped is None for r in reports):
        return None
    return sum(r.bytes_skipped or 0 for r in reports)


COMMANDS = [repair_command]
