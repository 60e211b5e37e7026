"""The loopback proxy's request log, which the S3 tests count on: an answer whose body
the client already holds is in the log when the test asks, and never lands after a
reset (CI once saw a sidecar's GET, answered before a reset, logged after it)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.storage.remote import RemoteFile
from tfrecord_engine.testing import s3_proxy

from .conftest import S3


@pytest.fixture
def slow_log(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Every answer is logged 0.3 s after its body went out (a handler thread that
    loses the CPU on a loaded machine); the event is set once one has been logged."""
    logged = threading.Event()
    log = s3_proxy._Handler._log

    def late(self: Any, *args: Any) -> None:
        time.sleep(0.3)
        log(self, *args)
        logged.set()

    monkeypatch.setattr(s3_proxy._Handler, "_log", late)
    return logged


def _object(s3: S3) -> str:
    url = f"{s3.url}/one.tfrecord"
    with tfe.TFRecordWriter(url) as w:
        w.write(b"x" * 100)
    return url


def test_an_answer_the_client_holds_is_in_the_log(s3: S3, slow_log: threading.Event) -> None:
    url = _object(s3)
    s3.proxy.reset()
    blob = RemoteFile(url).read_all()
    assert len(blob) == 116
    gets = [q for q in s3.proxy.requests if q.method == "GET" and q.path.endswith("/one.tfrecord")]
    assert [q.received for q in gets] == [116]


def test_no_answer_is_logged_after_a_reset(s3: S3, slow_log: threading.Event) -> None:
    url = _object(s3)
    RemoteFile(url).read_all()
    s3.proxy.reset()
    slow_log.clear()
    assert not slow_log.wait(0.6)  # nothing still on its way to the log
    assert s3.proxy.requests == []
