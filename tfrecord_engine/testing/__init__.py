"""Hypothesis strategies and helpers shared by tfrecord-engine's tests (and yours).

Import the submodules directly, e.g. ``from tfrecord_engine.testing import records``.
Hypothesis is needed only when these modules are imported.
"""
