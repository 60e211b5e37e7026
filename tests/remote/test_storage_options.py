"""``storage_options``: parsing (``tfr --storage-option``), redaction, copies, and their
way to fsspec's filesystem constructor (``memory://``, which keeps what it is given)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.errors import InvalidArgumentError, InvalidArgumentTypeError
from tfrecord_engine.storage import remote
from tfrecord_engine.storage.options import (
    StorageOptions,
    as_kwargs,
    normalize_storage_options,
    parse_storage_option,
    redacted,
)

pytest.importorskip("fsspec")

SECRET = "wJalrXUtnFEMI-s3cr3t"


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("endpoint_url=http://127.0.0.1:8333", ("endpoint_url", "http://127.0.0.1:8333")),
        (
            'client_kwargs={"region_name": "eu-west-1"}',
            ("client_kwargs", {"region_name": "eu-west-1"}),
        ),
        ("anon=true", ("anon", True)),
        ("default_block_size=1048576", ("default_block_size", 1048576)),
        ("token=null", ("token", None)),
        ("secret=a=b", ("secret", "a=b")),  # the first "=" splits
        ("key=", ("key", "")),
        ("profile={not json", ("profile", "{not json")),
    ],
)
def test_storage_option_values_are_json_when_they_parse(text: str, parsed: tuple[str, Any]) -> None:
    assert parse_storage_option(text) == parsed


@pytest.mark.parametrize("text", [SECRET, f"={SECRET}"])
def test_a_storage_option_without_a_key_is_refused_without_echoing_it(text: str) -> None:
    with pytest.raises(InvalidArgumentError, match="key=value") as caught:
        parse_storage_option(text)
    assert SECRET not in str(caught.value)


def test_secrets_are_redacted_at_any_depth() -> None:
    options = {
        "key": "AKIA",
        "secret": SECRET,
        "endpoint_url": "http://h",
        "client_kwargs": {"aws_session_token": SECRET, "region_name": "r"},
        "headers": {"Authorization": f"Bearer {SECRET}"},
        "token": SECRET,
        "password": SECRET,
        "nested": [{"sas_token": SECRET}],
    }
    shown = repr(StorageOptions(options))
    assert SECRET not in shown
    assert "AKIA" not in shown
    assert "http://h" in shown
    assert "'r'" in shown
    assert redacted(options)["client_kwargs"] == {"aws_session_token": "***", "region_name": "r"}  # type: ignore[index]


def test_options_are_copied_so_backends_cannot_change_the_callers() -> None:
    given: dict[str, Any] = {"config_kwargs": {"retries": {"max_attempts": 0}}}
    options = normalize_storage_options(given)
    assert options is not None
    kwargs = as_kwargs(options)
    kwargs["config_kwargs"]["retries"] = {"total_max_attempts": 1}  # what s3fs does
    given["config_kwargs"]["retries"]["max_attempts"] = 9
    assert options == {"config_kwargs": {"retries": {"max_attempts": 0}}}
    assert as_kwargs(options) == {"config_kwargs": {"retries": {"max_attempts": 0}}}


def test_options_pickle_and_compare_as_mappings() -> None:
    options = StorageOptions({"key": "AKIA", "secret": SECRET})
    back = pickle.loads(pickle.dumps(options))
    assert isinstance(back, StorageOptions)
    assert back == {"key": "AKIA", "secret": SECRET}
    assert dict(back) == dict(options)


def test_bad_storage_options_are_refused() -> None:
    with pytest.raises(InvalidArgumentTypeError, match="mapping"):
        normalize_storage_options(["key", "x"])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentTypeError, match="strings"):
        normalize_storage_options({1: "x"})  # type: ignore[dict-item]
    assert normalize_storage_options({}) is None
    assert normalize_storage_options(None) is None


def test_options_reach_the_filesystem_and_travel_with_the_index(mem: str) -> None:
    url = f"{mem}/a.tfrecord"
    options = {"marker": "per-call", "secret": SECRET}
    fs, _ = remote.filesystem(url, options)
    assert fs.storage_options["marker"] == "per-call"
    # Another set of options is another filesystem object (fsspec's cache is keyed so).
    assert remote.filesystem(url)[0] is not fs
    with tfe.TFRecordWriter(url, index=True, storage_options=options) as w:
        w.write_many([b"a", b"bc"])
    assert list(tfe.read_records(url, storage_options=options)) == [b"a", b"bc"]
    idx = tfe.Index.load(url, storage_options=options)
    assert dict(idx.storage_options or {}) == options
    assert SECRET not in repr(idx)
    assert SECRET not in repr(idx.storage_options)
    assert dict(pickle.loads(pickle.dumps(idx)).storage_options or {}) == options
    f = remote.RemoteFile(url, storage_options=options)
    assert f.fs.storage_options["marker"] == "per-call"
