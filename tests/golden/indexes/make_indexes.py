"""Regenerates the golden indexes of older formats (run by hand, not by the tests).

    PYTHONPATH=<a checkout of commit 95c7c3e> python tests/golden/indexes/make_indexes.py

Written by the engine as it was before index columns existed (the commit above), so
that ``tests/test_index_columns.py`` proves that every older index format still loads
and is written back byte for byte: version 1 (a header walk), 2 (a damage list), 3
(written with the data), each with and without the content check (+32), and a
multi-member GZIP file's index (+16). ``manifest.json`` lists each index with its data
file, the damage policy it serves, its version word and its offsets and lengths.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import shutil
import struct
import tempfile
from pathlib import Path

import tfrecord_engine as tfe
from tfrecord_engine.records import framing

HERE = Path(__file__).parent


@dataclasses.dataclass
class Entry:
    index: str
    data: str
    policy: str


def records(n: int, start: int = 0) -> list[bytes]:
    return [tfe.encode_example({"label": [i % 3], "id": [b"r%d" % i]}) for i in range(start, n)]


def without_content(idx: tfe.Index) -> tfe.Index:
    """The same index as a build before the content check (+32) existed wrote it."""
    return tfe.Index(
        idx.data_path,
        idx.offsets,
        idx.lengths,
        data_size=idx.data_size,
        fingerprint=idx.fingerprint,
        compression=idx.compression,
        restarts=idx.restarts,
        member_starts=idx.member_starts,
        damage=idx.damage,
        damage_policy=idx.damage_policy,
        data_verified=idx.data_verified,
    )


def main() -> None:
    entries: list[tuple[Entry, tfe.Index]] = []
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "plain.tfrecord")
        with tfe.TFRecordWriter(plain, index=True) as w:
            w.write_many(records(7))
        written = tfe.Index.load(plain)  # version 3 + 32
        walked = tfe.Index.build(plain)  # version 1 + 32
        entries += [
            (Entry("plain.v35.tfeidx", "plain.tfrecord", "raise"), written),
            (Entry("plain.v3.tfeidx", "plain.tfrecord", "raise"), without_content(written)),
            (Entry("plain.v33.tfeidx", "plain.tfrecord", "raise"), walked),
            (Entry("plain.v1.tfeidx", "plain.tfrecord", "raise"), without_content(walked)),
        ]
        damaged = os.path.join(tmp, "damaged.tfrecord")
        shutil.copy(plain, damaged)
        with open(damaged, "r+b") as f:  # the data of record 2 no longer matches its CRC
            f.seek(int(written.offsets[2]) + framing.HEADER_SIZE)
            f.write(b"\xff")
        skipped = tfe.Index.build(damaged, on_damage="skip", on_damage_report=lambda r: None)
        entries += [
            (Entry("damaged.v34.tfeidx", "damaged.tfrecord", "skip"), skipped),
            (Entry("damaged.v2.tfeidx", "damaged.tfrecord", "skip"), without_content(skipped)),
        ]
        members = os.path.join(tmp, "members.tfrecord.gz")
        with open(members, "wb") as f:
            for a, b in ((0, 4), (4, 9)):
                f.write(gzip.compress(framing.frame_many(records(b, a)), mtime=0))
        joined = tfe.Index.build(members)  # version 1 + 16 + 32
        entries += [
            (Entry("members.v49.tfeidx", "members.tfrecord.gz", "raise"), joined),
            (Entry("members.v17.tfeidx", "members.tfrecord.gz", "raise"), without_content(joined)),
        ]
        for name in ("plain.tfrecord", "damaged.tfrecord", "members.tfrecord.gz"):
            shutil.copy(os.path.join(tmp, name), HERE / name)
    manifest = []
    for entry, idx in entries:
        blob = idx.to_bytes()
        (HERE / entry.index).write_bytes(blob)
        manifest.append(
            {
                **dataclasses.asdict(entry),
                "version": struct.unpack_from("<I", blob, 8)[0],
                "offsets": idx.offsets.tolist(),
                "lengths": idx.lengths.tolist(),
                "restarts": idx.restarts.tolist(),
                "damage": [d.record_index for d in idx.damage],
            }
        )
    text = json.dumps({"commit": "95c7c3e", "indexes": manifest}, indent=1)
    (HERE / "manifest.json").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
