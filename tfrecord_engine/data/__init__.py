"""Random access and epochs: the layer users meet as :class:`~tfrecord_engine.RecordDataset`.

Record sources over indexed files (:mod:`.source`, :mod:`.compressed_source`), seeded
epoch orders (:mod:`.sampler`), chunk preparation shared by every path
(:mod:`.prepare`), the read-ahead thread (:mod:`.pipeline`), decode worker processes
(:mod:`.procpool`) and the dataset itself (:mod:`.dataset`). Internal: the public names
are re-exported by :mod:`tfrecord_engine`.
"""
