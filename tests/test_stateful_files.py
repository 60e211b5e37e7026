"""A Hypothesis state machine over write / append / crash / index / read / resume / damage.

The model is the list of records the file must hold (``None``: no file) plus whether a
torn tail is pending. After every step the file reads back as the model under
``on_damage="stop"`` (with exactly one report while a torn tail is pending), and no
temporary file is left.

Index steps open the file as a :class:`~tfrecord_engine.RecordDataset` (building, saving
or loading its sidecar index) under a damage policy, read it at random, and run epochs
interrupted at a batch and resumed from ``get_state()`` in a fresh dataset: head + rest
must equal the uninterrupted epoch. A damage step corrupts the file; from then on the
reference is ``read_records`` under the same policy (the model no longer says which
records are intact) until the file is written anew.
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
from tfrecord_engine.data.dataset import RecordBatchIterator
from tfrecord_engine.records import framing
from tfrecord_engine.records.recovery import DamagePolicy
from tfrecord_engine.testing.damage import damages
from tfrecord_engine.testing.epochs import shuffle_modes
from tfrecord_engine.testing.faults import FaultyOps, writer_with_ops
from tfrecord_engine.testing.records import payloads

_BATCH = st.lists(payloads(300), max_size=4)
_POLICIES = st.sampled_from(["raise", "stop", "skip"])
# Below this size the sampled fingerprint of an index covers every byte of the file, so
# damage always makes a sidecar stale (larger files rely on size and sampled windows).
_FULLY_FINGERPRINTED = 32 << 10


class _Crash(Exception):
    pass


class FileMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="tfe-state-")
        self.path = os.path.join(self.dir, "s.tfrecord")
        self.model: list[bytes] | None = None
        self.torn = False
        self.damaged = False
        self.compression = ""

    @initialize(compression=st.sampled_from(["", "GZIP"]))
    def choose_compression(self, compression: str) -> None:
        self.compression = compression

    @rule(records=_BATCH)
    def write_new(self, records: list[bytes]) -> None:
        with tfe.TFRecordWriter(self.path, self.compression) as w:
            w.write_many(records)
        self.model, self.torn, self.damaged = list(records), False, False

    @rule(records=_BATCH)
    def write_new_but_crash(self, records: list[bytes]) -> None:
        w = tfe.TFRecordWriter(self.path, self.compression)
        w.write_many(records)
        w.abort()  # what an exception inside `with` does; the model is unchanged

    @rule(records=_BATCH, nth=st.integers(1, 3))
    def write_new_but_io_fails(self, records: list[bytes], nth: int) -> None:
        w = writer_with_ops(FaultyOps("write", nth), self.path, self.compression)
        try:
            for r in [*records, b"last"]:
                w.write(r)
            w.close()
        except OSError:
            w.abort()
        else:
            self.model, self.torn, self.damaged = [*records, b"last"], False, False

    @precondition(lambda self: not (self.torn and self.compression) and not self.damaged)
    @rule(records=_BATCH)
    def append(self, records: list[bytes]) -> None:
        reports: list[tfe.DamageReport] = []
        with tfe.TFRecordWriter(
            self.path, self.compression, append=True, on_damage_report=reports.append
        ) as w:
            w.write_many(records)
        assert len(reports) == self.torn
        self.model, self.torn = [*(self.model or []), *records], False

    @precondition(
        lambda self: self.compression == "" and self.model is not None and not self.damaged
    )
    @rule(record=payloads(300), data=st.data())
    def crash_mid_append(self, record: bytes, data: st.DataObject) -> None:
        # A killed in-place appender: part of one more frame reached the file.
        frame = framing.frame(record)
        cut = data.draw(st.integers(1, len(frame) - 1), label="bytes that reached the disk")
        with open(self.path, "ab") as f:
            f.write(frame[:cut])
        self.torn = True

    @precondition(lambda self: self.torn and self.compression == "" and not self.damaged)
    @rule()
    def raise_policy_sees_the_torn_tail(self) -> None:
        with pytest.raises(tfe.DataLossError):
            list(tfe.read_records(self.path, self.compression))

    # ---- index, random access, epochs and resume ---------------------------------------

    def _expected(self, policy: DamagePolicy) -> tuple[list[bytes], list[tfe.DamageReport]] | None:
        """What the dataset must hold under ``policy`` (``None``: reading must fail).

        The reference is ``read_records``; while the file is not damaged, it must agree
        with the model.
        """
        reports: list[tfe.DamageReport] = []
        reader = tfe.read_records(
            self.path,
            self.compression,
            on_damage="stop" if policy == "raise" else policy,
            on_damage_report=reports.append,
        )
        got = [bytes(r) for r in reader]
        if not self.damaged:
            assert got == self.model
            assert len(reports) == self.torn
        if policy == "raise":
            return None if reports else (got, [])
        return got, reports

    def _dataset(self, policy: DamagePolicy, reports: list[tfe.DamageReport]) -> tfe.RecordDataset:
        return tfe.RecordDataset(
            self.path,
            compression=self.compression,
            on_damage=policy,
            on_damage_report=reports.append,
        )

    @precondition(lambda self: self.model is not None)
    @rule(policy=_POLICIES, data=st.data())
    def open_index_and_read_at_random(self, policy: DamagePolicy, data: st.DataObject) -> None:
        expected = self._expected(policy)
        reports: list[tfe.DamageReport] = []
        ds = self._dataset(policy, reports)
        if expected is None:
            # "raise" on a damaged file: the header walk fails, or a record read does.
            with pytest.raises(tfe.DataLossError):
                ds[:]
            return
        want, want_reports = expected
        assert len(ds) == len(want)
        assert reports == want_reports
        if want:
            picks = data.draw(st.lists(st.integers(-len(want), len(want) - 1), max_size=6))
            assert ds[picks] == [want[i] for i in picks]
            assert ds[picks[0] if picks else 0] == want[picks[0] if picks else 0]
        assert list(ds) == want
        ds.close()

    @precondition(lambda self: self.model is not None)
    @rule(
        policy=st.sampled_from(["stop", "skip"]),
        batch_size=st.integers(1, 5),
        shuffle=shuffle_modes(),
        seed=st.integers(0, 3),
        shards=st.integers(1, 3),
        data=st.data(),
    )
    def epoch_interrupted_and_resumed(
        self,
        *,
        policy: DamagePolicy,
        batch_size: int,
        shuffle: bool | tfe.BlockShuffle,
        seed: int,
        shards: int,
        data: st.DataObject,
    ) -> None:
        expected = self._expected(policy)
        assert expected is not None
        want = expected[0]
        shard = data.draw(st.integers(0, shards - 1), label="shard")

        def epoch(index: int, state: dict[str, object] | None = None) -> RecordBatchIterator:
            # A fresh dataset each time, as after a restart: the state alone resumes.
            return self._dataset(policy, []).batches(
                batch_size,
                shuffle,
                seed,
                shard_index=index,
                shard_count=shards,
                state=state,
            )

        full = list(epoch(shard))
        k = data.draw(st.integers(0, len(full)), label="batches before the interruption")
        it = epoch(shard)
        head = [next(it) for _ in range(k)]
        state = it.get_state()
        it.close()
        assert head + list(epoch(shard, state)) == full
        every = [r for s in range(shards) for b in epoch(s) for r in b]
        assert sorted(every) == sorted(want)

    @precondition(
        lambda self: (
            self.compression == ""
            and self.model is not None
            and 0 < os.path.getsize(self.path) < _FULLY_FINGERPRINTED
        )
    )
    @rule(data=st.data())
    def damage_the_file(self, data: st.DataObject) -> None:
        with open(self.path, "rb") as f:
            blob = f.read()
        damaged = data.draw(damages(len(blob)), label="damage").apply(blob)
        with open(self.path, "wb") as f:
            f.write(damaged)
        self.damaged = True

    @invariant()
    def file_matches_model(self) -> None:
        assert [n for n in os.listdir(self.dir) if ".tmp-" in n] == []
        if self.damaged:
            return
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


# Enough steps for write/crash/append/damage/index chains; more mostly repeats them.
FileMachine.TestCase.settings = settings(settings(), stateful_step_count=25, deadline=None)
TestFileMachine = FileMachine.TestCase
