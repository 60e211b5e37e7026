"""A Hypothesis state machine over write / append / crash / failed write / read.

The model is the list of records the file must hold (``None``: no file) plus whether a
torn tail is pending. After every step the file reads back as the model under
``on_damage="stop"`` (with exactly one report while a torn tail is pending), and no
temporary file is left. Index and resume steps join when those modules land.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import tfrecord_engine as tfe
from tfrecord_engine import framing
from tfrecord_engine.testing.faults import FaultyOps
from tfrecord_engine.testing.records import payloads

_BATCH = st.lists(payloads(300), max_size=4)


class _Crash(Exception):
    pass


class FileMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="tfe-state-")
        self.path = os.path.join(self.dir, "s.tfrecord")
        self.model: list[bytes] | None = None
        self.torn = False
        self.compression = ""

    @initialize(compression=st.sampled_from(["", "GZIP"]))
    def choose_compression(self, compression: str) -> None:
        self.compression = compression

    @rule(records=_BATCH)
    def write_new(self, records: list[bytes]) -> None:
        with tfe.TFRecordWriter(self.path, self.compression) as w:
            w.write_many(records)
        self.model, self.torn = list(records), False

    @rule(records=_BATCH)
    def write_new_but_crash(self, records: list[bytes]) -> None:
        w = tfe.TFRecordWriter(self.path, self.compression)
        w.write_many(records)
        w.abort()  # what an exception inside `with` does; the model is unchanged

    @rule(records=_BATCH, nth=st.integers(1, 3))
    def write_new_but_io_fails(self, records: list[bytes], nth: int) -> None:
        w = tfe.TFRecordWriter(self.path, self.compression, _ops=FaultyOps("write", nth))
        try:
            for r in [*records, b"last"]:
                w.write(r)
            w.close()
        except OSError:
            w.abort()
        else:
            self.model, self.torn = [*records, b"last"], False

    @precondition(lambda self: not (self.torn and self.compression))
    @rule(records=_BATCH)
    def append(self, records: list[bytes]) -> None:
        reports: list[tfe.DamageReport] = []
        with tfe.TFRecordWriter(
            self.path, self.compression, append=True, on_damage_report=reports.append
        ) as w:
            w.write_many(records)
        assert len(reports) == self.torn
        self.model, self.torn = [*(self.model or []), *records], False

    @precondition(lambda self: self.compression == "" and self.model is not None)
    @rule(record=payloads(300), data=st.data())
    def crash_mid_append(self, record: bytes, data: st.DataObject) -> None:
        # A killed in-place appender: part of one more frame reached the file.
        frame = framing.frame(record)
        cut = data.draw(st.integers(1, len(frame) - 1), label="bytes that reached the disk")
        with open(self.path, "ab") as f:
            f.write(frame[:cut])
        self.torn = True

    @precondition(lambda self: self.torn and self.compression == "")
    @rule()
    def raise_policy_sees_the_torn_tail(self) -> None:
        with pytest.raises(tfe.DataLossError):
            list(tfe.read_records(self.path, self.compression))

    @invariant()
    def file_matches_model(self) -> None:
        assert [n for n in os.listdir(self.dir) if ".tmp-" in n] == []
        if self.model is None:
            assert not os.path.exists(self.path)
            return
        reports: list[tfe.DamageReport] = []
        got = [
            bytes(r)
            for r in tfe.read_records(
                self.path, self.compression, on_damage="stop", on_damage_report=reports.append
            )
        ]
        assert got == self.model
        assert len(reports) == self.torn

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


# Enough steps for write/crash/append chains; more mostly repeats them (and fsyncs).
FileMachine.TestCase.settings = settings(settings(), stateful_step_count=12)
TestFileMachine = FileMachine.TestCase
