"""The TFRecord format and reading it in order.

Framing with masked CRC32C (:mod:`.framing`), GZIP/ZLIB streams (:mod:`.compression`),
sequential readers over mapped files, streams and pipes (:mod:`.reader`,
:mod:`.stream_reader`) and the resynchronizing scanner behind the damage policies
(:mod:`.recovery`). Internal: the public names are re-exported by :mod:`tfrecord_engine`.
"""
