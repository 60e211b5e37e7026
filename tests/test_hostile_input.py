"""Lying length fields under an address-space limit, and transient read errors."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import BinaryIO, cast

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.records import framing
from tfrecord_engine.records.compression import Compression, make_compressor
from tfrecord_engine.records.recovery import DamagePolicy
from tfrecord_engine.testing.faults import FlakyStream, PipeStream

LYING_LENGTHS = (2**31, 2**40, 2**63, 2**64 - 1)

_SCRIPT = textwrap.dedent(
    """
    import io, json, resource, struct, sys, time
    import tfrecord_engine as tfe
    from tfrecord_engine.records import framing
    from tfrecord_engine.records.compression import Compression, make_compressor
    from tfrecord_engine.testing.faults import PipeStream

    def header(n):
        raw = struct.pack("<Q", n)
        return raw + struct.pack("<I", framing.mask_crc(framing.crc32c(raw)))

    tail = bytes(range(256)) * 4096  # 1 MiB of real bytes after the lie
    good = framing.frame(b"after")
    cases = []
    for n in (2**31, 2**40, 2**63, 2**64 - 1):
        blob = framing.frame(b"before") + header(n) + tail + good
        co = make_compressor(Compression.GZIP)
        cases.append((n, "plain", blob))
        cases.append((n, "gzip", co.compress(blob) + co.flush()))
        cases.append((n, "pipe", blob))
    path = sys.argv[1]
    vm = int([l for l in open("/proc/self/status") if l.startswith("VmSize")][0].split()[1])
    limit = (vm + 100 * 1024) * 1024  # what is mapped now + 100 MiB
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    results = []
    for n, kind, data in cases:
        for policy in ("raise", "stop", "skip"):
            if kind == "plain":
                with open(path, "wb") as f:
                    f.write(data)
                source, comp = path, ""
            elif kind == "gzip":
                source, comp = io.BytesIO(data), "GZIP"
            else:
                source, comp = PipeStream(data, 65536), ""
            reports = []
            t = time.perf_counter()
            out, err = [], None
            try:
                for r in tfe.read_records(source, comp, on_damage=policy,
                                          on_damage_report=reports.append):
                    out.append(bytes(r))
            except tfe.DataLossError as e:
                err = (e.record_index, e.offset, type(e).__name__)
            ms = (time.perf_counter() - t) * 1000
            want = [b"before"] + ([b"after"] if policy == "skip" else [])
            spots = [(r.record_index, r.offset) for r in reports]
            results.append([n, kind, policy, ms, out == want, err, spots])
    print(json.dumps(results))
    """
)


def test_lying_lengths_fail_fast_under_an_address_space_limit(tmp_path: Path) -> None:
    pytest.importorskip("resource")
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc to size the limit")
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path / "lie.tfrecord")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)
    assert len(results) == 4 * 3 * 3
    for n, kind, policy, ms, records_ok, err, reports in results:
        case = (n, kind, policy)
        assert records_ok, case
        if policy == "raise":
            assert err is not None, case
            assert err[:2] == [1, 22], case
        else:
            assert err is None, case
            assert reports[0] == [1, 22], case
        # Milliseconds: the 1 MiB after the lie is read (stream) or scanned (skip) at
        # most once. Generous for a loaded 2-core CI machine.
        assert ms < 500, case


def _compressed(blob: bytes) -> bytes:
    co = make_compressor(Compression.GZIP)
    return co.compress(blob) + co.flush()


@pytest.mark.parametrize("compression", ["", "GZIP"])
@pytest.mark.parametrize("policy", ["raise", "stop", "skip"])
def test_transient_read_error_surfaces_and_a_retry_is_identical(
    compression: str, policy: DamagePolicy
) -> None:
    records = [bytes([i % 251]) * (i * 37 % 3000) for i in range(60)]
    blob = framing.frame_many(records)
    data = _compressed(blob) if compression else blob
    chunk = 1024
    reads_needed = len(data) // chunk + 2
    for fail_at in range(1, reads_needed + 1):
        got: list[bytes] = []
        reports: list[tfe.DamageReport] = []
        stream = FlakyStream(data, fail_at, chunk)
        records_iter = tfe.read_records(
            cast(BinaryIO, stream), compression, on_damage=policy, on_damage_report=reports.append
        )
        with pytest.raises(OSError, match="Input/output error") as info:
            got.extend(records_iter)
        # An I/O error is not damage: never reported, never converted, never skipped.
        assert not isinstance(info.value, tfe.DataLossError)
        assert info.value.errno == errno.EIO
        assert reports == []
        assert got == records[: len(got)]
        retry = list(
            tfe.read_records(cast(BinaryIO, PipeStream(data, chunk)), compression, on_damage=policy)
        )
        assert retry == records
    assert stream.reads == fail_at
