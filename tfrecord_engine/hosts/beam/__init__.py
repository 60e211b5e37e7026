"""Apache Beam I/O over TFRecord files: the machinery behind :mod:`tfrecord_engine.beam`.

Internal: :mod:`tfrecord_engine.beam` is the public front. The modules:

- :mod:`.pieces`: a file's compression recognised from its first bytes, its pieces
  planned from its index (record boundaries, or restart points of GZIP/ZLIB), and the
  restriction, tracker and provider of the splittable read;
- :mod:`.read`: :class:`~.read.ReadTFRecords` (file patterns matched, files indexed on
  the workers, pieces read; damage as a tagged output);
- :mod:`.write`: :class:`~.write.WriteTFRecords` (shards written into a hidden
  temporary folder, published with their indexes once every bundle has finished);
- :mod:`.tools`: whole-file operations on the workers: :class:`~.tools.BuildIndexes`,
  :class:`~.tools.VerifyShards`, :class:`~.tools.CountRecords`;
- :mod:`.reshard`: :class:`~.reshard.Reshard` (a seeded global permutation into shards
  of even sizes).

Needs the ``beam`` extra; importing it without Apache Beam raises
:class:`~tfrecord_engine.MissingDependencyError`. The rest of the package never imports
``apache_beam``.
"""

from __future__ import annotations

import importlib

from ...errors import MissingDependencyError, install_hint

_BEAM_MODULES = (
    "apache_beam",
    "apache_beam.io.filesystem",
    "apache_beam.io.filesystems",
    "apache_beam.io.restriction_trackers",
    "apache_beam.metrics",
    "apache_beam.transforms.core",
    "apache_beam.transforms.window",
)

try:
    # Every Beam module the package uses: a missing or broken one fails here, naming
    # the extra, before any module of the package runs.
    for _name in _BEAM_MODULES:
        importlib.import_module(_name)
except ImportError as exc:
    raise MissingDependencyError(
        f"tfrecord_engine.beam needs Apache Beam ({exc}): {install_hint('beam')}"
    ) from exc
