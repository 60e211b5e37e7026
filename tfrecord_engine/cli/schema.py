"""``tfr schema``: infer a feature spec from the records of the inputs."""

from __future__ import annotations

from typing import cast

import click

from .common import compression_option, echo_json, expand_inputs, progress
from .infer import SchemaStats, render_json, render_python
from .render import Kind, decode_record
from .show import iter_range

__all__ = ["COMMANDS"]


@click.command("schema")
@click.argument("paths", nargs=-1)
@compression_option("Compression of the inputs (auto: from each file's extension).")
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

    Prints ready-to-paste Python for tfe.parse_example (or, with --tf, tf.io.parse_example):
    FixedLenFeature for keys with one length in every record, FixedLenFeature with a
    default for single values missing in some records, VarLenFeature otherwise; keys
    with conflicting types are commented out. SequenceExamples get context_features and
    sequence_features. The sample is the first N records in file order: a length that
    never varies in the sample may still vary later (use --all to be sure).

    \b
    Example:
      $ tfr schema --all train-00000-of-00002.tfrecord
      import tfrecord_engine as tfe

      # Inferred by `tfr schema` from all 761 records of 1 file.
      features = {
          "image": tfe.FixedLenFeature([], 'string'),  # always 1 value(s)
          "label": tfe.FixedLenFeature([], 'int64'),  # always 1 value(s)
      }
    """
    files = expand_inputs(paths)
    stop = None if use_all else sample
    stats = SchemaStats()
    with progress(stop or len(files), "reading") as bar:
        last = None
        for path, i, record in iter_range(files, compression, 0, stop):
            decoded = decode_record(record, cast(Kind, kind), where=f"{path}: record {i}")
            stats.add(decoded.features, decoded.lists)
            if stop is not None:
                bar.update(1, flush_every=256)
            elif path != last:
                bar.update(1)
            last = path
    nfiles = f"{len(files)} file{'s' if len(files) != 1 else ''}"
    source = (
        f"all {stats.records} records of {nfiles}"
        if use_all or stats.records < sample
        else f"the first {stats.records} records of {nfiles}"
    )
    if as_json:
        echo_json(render_json(stats, source=source))
    else:
        click.echo(render_python(stats, source=source, tf=tf_style), nl=False)


COMMANDS = [schema_command]
