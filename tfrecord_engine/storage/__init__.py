"""Where bytes live: local files and fsspec URLs, behind one byte-range seam.

The layer below the record format. It knows nothing of TFRecord: it checks what kind of
file a path is (:mod:`.filekind`), performs a writer's file-system calls behind an
injectable seam (:mod:`.fileops`, :mod:`.remote_fileops`), opens remote files through
``fsspec`` (:mod:`.remote`), reads them ahead in large blocks (:mod:`.readahead`) and
coalesces byte ranges into few requests (:mod:`.ranges`). Internal: the public names are
re-exported by :mod:`tfrecord_engine`.
"""
