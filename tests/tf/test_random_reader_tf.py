"""``tfe.RandomRecordReader`` against TensorFlow's ``tf_record_random_reader`` on the same
files and offsets: the same record and next offset, or a failure of the same kind."""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.testing.records import record_lists


def _tf_read(tf: ModuleType, path: str, offset: int) -> tuple[bytes, int] | str:
    from tensorflow.python.lib.io import tf_record

    reader = tf_record.tf_record_random_reader(path)
    try:
        record, nxt = reader.read(offset)
        return bytes(record), int(nxt)
    except IndexError:
        return "out of range"
    except tf.errors.DataLossError:
        return "data loss"
    finally:
        reader.close()


def _ours(path: str, offset: int) -> tuple[bytes, int] | str:
    with tfe.RandomRecordReader(path) as reader:
        try:
            return reader.read(offset)
        except tfe.OutOfRangeError:
            return "out of range"
        except tfe.DataLossError:
            return "data loss"


@settings(
    max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
@given(records=record_lists(max_records=8, max_size=300), data=st.data())
def test_every_offset_reads_as_tensorflow_reads_it(
    tf: ModuleType, records: list[bytes], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "r.tfrecord")
        with tfe.TFRecordWriter(path) as w:
            w.write_many(records)
        size = Path(path).stat().st_size
        offsets = data.draw(st.lists(st.integers(0, size + 3), max_size=6))
        starts = [0]
        for r in records:
            starts.append(starts[-1] + 16 + len(r))
        for offset in [*starts, *offsets]:
            assert _ours(path, offset) == _tf_read(tf, path, offset), offset


def test_damaged_data_and_closed_reader(tf: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "d.tfrecord"
    with tfe.TFRecordWriter(path) as w:
        w.write_many([b"a" * 10, b"b" * 10])
    blob = bytearray(path.read_bytes())
    blob[12] ^= 1  # the first record's data
    path.write_bytes(bytes(blob))
    assert _ours(str(path), 0) == _tf_read(tf, str(path), 0) == "data loss"
    with pytest.raises(tfe.CorruptedRecordError, match="the record at offset 0"):
        tfe.RandomRecordReader(path).read(0)
    reader = tfe.RandomRecordReader(path)
    assert reader.read(26) == (b"b" * 10, 52)
    reader.close()
    with pytest.raises(tfe.InvalidArgumentError, match="closed"):
        reader.read(26)
    with pytest.raises(tfe.InvalidArgumentError, match=">= 0"):
        tfe.RandomRecordReader(path).read(-1)
