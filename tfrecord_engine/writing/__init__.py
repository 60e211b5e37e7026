"""Writing TFRecord files: atomic publish, durability, appends, indexes written inline.

:mod:`.writer` holds :class:`~tfrecord_engine.TFRecordWriter`; :mod:`.append` finds and cuts
a torn tail before an append. Internal: the public names are re-exported by
:mod:`tfrecord_engine`.
"""
