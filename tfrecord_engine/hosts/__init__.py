"""Helpers of the host modules (``tfrecord_engine.ray`` and the other frameworks).

Internal: the host modules are the public surface. Each module here imports only what
its own host needs, or raises :class:`~tfrecord_engine.MissingDependencyError` naming
the extra.
"""
