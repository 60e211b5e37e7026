"""A DamageWarning (damage reported without on_damage_report) points at the caller's
line, not at a module of the library, whatever the path to the report was."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import tfrecord_engine as tfe


def _damaged(tmp_path: Path) -> Path:
    path = tmp_path / "d.tfrecord"
    with tfe.TFRecordWriter(path) as w:
        w.write_many([b"a" * 40, b"b" * 40, b"c" * 40])
    data = bytearray(path.read_bytes())
    data[60 + 12] ^= 0xFF  # inside the second record's data
    path.write_bytes(bytes(data))
    return path


def test_the_warning_names_this_file(tmp_path: Path) -> None:
    path = _damaged(tmp_path)
    calls: dict[str, Callable[[], object]] = {
        "read_records": lambda: list(tfe.read_records(path, on_damage="skip")),
        "Index.build": lambda: tfe.Index.build(path, on_damage="skip"),
        "RecordDataset": lambda: len(tfe.RecordDataset(path, on_damage="skip", save_index=False)),
    }
    for name, call in calls.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        damage = [w for w in caught if issubclass(w.category, tfe.DamageWarning)]
        assert damage, name
        assert all(w.filename == __file__ for w in damage), (name, [w.filename for w in damage])
