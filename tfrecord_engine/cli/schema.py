"""``tfr schema``: infer a feature spec from the records of the inputs."""

from __future__ import annotations

from typing import cast

import click

from .collect import add_records
from .common import chunked, compression_option, echo_json, expand_inputs, progress
from .infer import SchemaStats, render_json, render_python
from .interrupt import on_interrupt, whole
from .render import Kind
from .show import iter_range

__all__ = ["COMMANDS"]

# Records whose statistics are gathered together (one batched parse each).
_BATCH = 1024


@click.command("schema")
@click.argument("paths", nargs=-1)
@compression_option("Compression of the inputs (auto: from each file's first bytes).")
@click.option(
    "--sample",
    default=1000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Infer from the first N records (in file order).",
)
@click.option("--all", "use_all", is_flag=True, help="Infer from every record.")
@click.option("--example", "kind", flag_value="example", help="Decode as tf.train.Example.")
@click.option("--sequence", "kind", flag_value="sequence", help="Decode as SequenceExample.")
@click.option(
    "--auto", "kind", flag_value="auto", default=True, help="Detect per record [default]."
)
@click.option("--json", "as_json", is_flag=True, help="Statistics and suggestions as JSON.")
@click.option("--tf", "tf_style", is_flag=True, help="Print tf.io specs instead of tfe ones.")
def schema_command(
    *,
    paths: tuple[str, ...],
    compression: str,
    sample: int,
    use_all: bool,
    kind: str,
    as_json: bool,
    tf_style: bool,
) -> None:
    """Infer the feature spec: per key the type, fixed or variable length, presence.

    PATHS are files or quoted globs. Prints ready-to-paste Python for
    tfe.parse_example (or, with --tf, tf.io.parse_example): FixedLenFeature for keys
    with one length in every record, FixedLenFeature with a default for single values
    missing in some records, VarLenFeature otherwise; keys with conflicting types are
    commented out. SequenceExamples get context_features and sequence_features. The
    sample is the first N records in file order: a length that never varies in the
    sample may still vary later (use --all to be sure). A binary value of one size in
    every record gets a RawFeature hint; text (UTF-8) and encoded files do not. Encoded
    images (PNG, JPEG, GIF, WebP, TIFF) get tfe.ImageFeature(), which decodes them to
    pixels. In Python, tfe.infer_features(paths) returns the same specs as objects.

    \b
    Example:
      $ tfr schema --all train-00000-of-00002.tfrecord
      import tfrecord_engine as tfe

    \b
      # Inferred by `tfr schema` from all 761 records of 1 file.
      features = {
          "caption": tfe.FixedLenFeature([], "string"),  # always 1 value of 21 bytes, text
          "image": tfe.FixedLenFeature([], "string"),  # always 1 value of 784 bytes: ...
          "label": tfe.FixedLenFeature([], "int64"),  # always 1 value
      }
    """
    files = expand_inputs(paths)
    stop = None if use_all else sample
    stats = SchemaStats()
    nfiles = f"{len(files)} file{'s' if len(files) != 1 else ''}"

    def show(source: str, **extra: object) -> None:
        if as_json:
            echo_json({**render_json(stats, source=source), **extra})
        else:
            click.echo(render_python(stats, source=source, tf=tf_style), nl=False)

    def interrupted() -> str:
        # What was read is a sample too: the spec it gives, said to be partial.
        show(f"the first {stats.records} records of {nfiles} (interrupted)", interrupted=True)
        return f"inferred from the first {stats.records} records read"

    with on_interrupt(interrupted), progress(stop or len(files), "reading") as bar:
        last = None
        for chunk in chunked(iter_range(files, compression, 0, stop), _BATCH):
            wheres = [f"{path}: record {i}" for path, i, _ in chunk]
            with whole():  # the statistics take a batch whole or not at all
                add_records(stats, [r for _, _, r in chunk], wheres, cast(Kind, kind))
            if stop is not None:
                bar.update(len(chunk))
            else:
                names = [path for path, _, _ in chunk]
                bar.update(len(set(names) - {last}))
                last = names[-1]
    source = (
        f"all {stats.records} records of {nfiles}"
        if use_all or stats.records < sample
        else f"the first {stats.records} records of {nfiles}"
    )
    show(source)


COMMANDS = [schema_command]
