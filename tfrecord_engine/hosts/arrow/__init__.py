"""TFRecord files as Arrow tables: the machinery behind :mod:`tfrecord_engine.arrow`.

Internal: :mod:`tfrecord_engine.arrow` is the public front. The modules, bottom up:

- :mod:`.spans`: bytes values as spans of one buffer, and Arrow binary arrays built
  from them (offsets and one data buffer, never a Python object per value);
- :mod:`.walk` and :mod:`.templated`: the values of requested keys of a batch of
  Examples, per key: template gathers for records of a known layout, the lockstep walk
  for the rest (bytes left as spans);
- :mod:`.leaf`: Arrow value types and the three kinds of Example lists, both ways,
  checked (nothing is cut silently);
- :mod:`.plan`: what each output column is (Arrow type, shape, what a missing feature
  gives), from ``tfe`` feature specs or from an Arrow schema;
- :mod:`.build` and :mod:`.decode`: plans and walked values made into Arrow arrays and
  record batches (:mod:`.sequence`: SequenceExamples as list columns);
- :mod:`.infer`: an Arrow schema inferred from a sample of records;
- :mod:`.flatten`, :mod:`.encode`, :mod:`.sequence_encode`: Arrow columns encoded into
  serialized Examples (a column at a time) and SequenceExamples;
- :mod:`.reader` and :mod:`.writer`: files and datasets to record batches and back;
- :mod:`.ray_blocks`: the blocks of the Ray Data host (``tfrecord_engine.ray``).

Needs the ``arrow`` extra (pyarrow); importing it without pyarrow raises
:class:`~tfrecord_engine.MissingDependencyError`.
"""

from __future__ import annotations

import importlib.util

from ...errors import MissingDependencyError, install_hint


def _installed(name: str) -> bool:
    # find_spec, not an import: cheap, and it never half-imports pyarrow.
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


if not _installed("pyarrow"):
    raise MissingDependencyError(f"tfrecord_engine.arrow needs pyarrow: {install_hint('arrow')}")

from .ray_blocks import records_to_table  # noqa: E402 - only once pyarrow is known

__all__ = ["records_to_table"]
