"""Per-record raw decode against a set of requested keys, with TensorFlow's type errors.

This is the shared first stage of :func:`parse_example`, :func:`parse_single_example` and
:func:`parse_sequence_example`: it decodes only the requested features of each record
(as TensorFlow does, a malformed value under an unrequested key is not an error) and
checks each one's kind against the requested dtype.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..errors import ExampleParseError, InvalidArgumentError, MalformedExampleError
from .specs import DType
from .wire import (
    KIND_BYTES,
    KIND_FLOAT,
    KIND_INT64,
    KIND_NONE,
    PARSE_FAILED,
    Duplicates,
    FeatureMap,
    RawValues,
    decode_feature,
    feature_kind,
)

__all__ = [
    "KIND_OF",
    "TF_NAME",
    "Request",
    "decode_requests",
    "error_prefix",
    "list_failure",
    "object_array",
    "tensor_value",
    "to_records",
]

Role = Literal["dense", "sparse", "ragged"]

_KIND_BY_TAG = {-1: KIND_NONE, 0x0A: KIND_BYTES, 0x12: KIND_FLOAT, 0x1A: KIND_INT64}
KIND_OF: dict[DType, int] = {"int64": KIND_INT64, "float32": KIND_FLOAT, "string": KIND_BYTES}
# TensorFlow's DataTypeString names, as they appear in its messages.
TF_NAME: dict[int, str] = {KIND_INT64: "int64", KIND_FLOAT: "float", KIND_BYTES: "string"}


@dataclass(frozen=True, slots=True)
class Request:
    """One feature key to decode per record, with the dtype the spec expects.

    ``role`` picks TensorFlow's wording for a type mismatch: dense features say
    ``Data type: X but expected type: Y``, sparse/ragged ones
    ``Expected type: Y, Actual type: X``.
    """

    key: str
    raw_key: bytes
    kind: int
    role: Role
    #: TensorFlow counts this feature's values before reading them (every feature but a
    #: FixedLenFeature), which words a bad BytesList differently.
    counted: bool = True


def error_prefix(key: str, index: int | None) -> str:
    """TensorFlow's message prefix: batch records carry a name and index."""
    if index is None:
        return f"Key: {key}.  "
    return f"Name: <unknown>, Key: {key}, Index: {index}.  "


def tensor_value(value: Any) -> Any:
    """The value of a tensor-like input: ``value.numpy()`` for an object that has it and
    is no numpy array (a ``tf.Tensor``: its bytes, or an object array of them), else
    ``value`` itself. TensorFlow is never imported for it.

    >>> class Scalar:
    ...     def numpy(self) -> bytes:
    ...         return b"x"
    >>> tensor_value(Scalar()), tensor_value([b"y"])
    (b'x', [b'y'])
    """
    method = getattr(value, "numpy", None)
    if callable(method) and not isinstance(value, (np.ndarray, bytes, bytearray, memoryview)):
        return method()
    return value


def to_records(serialized: object) -> list[bytes]:
    """Normalizes a batch of serialized records (list/tuple/1-D array of bytes)."""
    if isinstance(serialized, np.ndarray):
        if serialized.ndim != 1:
            raise InvalidArgumentError(
                f"serialized must be a vector of bytes, got an array of shape {serialized.shape}"
            )
        items: Sequence[object] = list(serialized)
    elif isinstance(serialized, (list, tuple)):
        items = serialized
    else:
        raise InvalidArgumentError(
            f"serialized must be a list, tuple or 1-D array of bytes, got "
            f"{type(serialized).__name__}"
        )
    out = []
    for i, item in enumerate(items):
        if isinstance(item, bytes):
            out.append(bytes(item) if type(item) is not bytes else item)
        elif isinstance(item, (bytearray, memoryview)):
            out.append(bytes(item))
        else:
            raise InvalidArgumentError(f"serialized[{i}] must be bytes, got {type(item).__name__}")
    return out


def object_array(values: Sequence[bytes]) -> npt.NDArray[np.object_]:
    """A 1-D object array of bytes (``np.array`` would make a fixed-width 'S' array)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def add_request(
    requests: dict[str, Request], key: str, dtype: DType, role: Role, *, counted: bool = True
) -> None:
    """Registers ``key``; a key requested twice must be requested with one dtype."""
    kind = KIND_OF[dtype]
    prior = requests.get(key)
    if prior is not None and prior.role != role:
        # TensorFlow's op takes dense, sparse and ragged keys as separate lists.
        raise InvalidArgumentError(
            f"{prior.role.capitalize()} and {role} keys must not intersect: {key!r}"
        )
    if prior is not None and prior.kind != kind:
        raise InvalidArgumentError(
            f"feature key {key!r} is requested with two dtypes: "
            f"{TF_NAME[prior.kind]} and {TF_NAME[kind]}"
        )
    if prior is None:
        requests[key] = Request(key, key.encode("utf-8"), kind, role, counted)


def decode_requests(
    buf: bytes,
    fmap: FeatureMap,
    dups: Duplicates,
    requests: Mapping[str, Request],
    index: int | None,
) -> dict[str, RawValues | None]:
    """Decodes the requested features of one record; ``None`` marks a missing feature.

    Where a key's last entry is an empty Feature, TensorFlow lets it win (the feature
    is missing) only for sparse/ragged features of a batch; dense features, and every
    feature of a single record, fall back to the last non-empty entry
    (``dups.shadowed``). An earlier entry with an invalid kind byte fails, as in TensorFlow.

    Raises:
        ExampleParseError: a feature's kind differs from the requested dtype.
        MalformedExampleError: a requested feature's bytes are malformed.
    """
    out: dict[str, RawValues | None] = {}
    for key, req in requests.items():
        span = fmap.get(req.raw_key)
        if span is None:
            out[key] = None
            continue
        if dups.unsupported and req.raw_key in dups.unsupported:
            raise MalformedExampleError(
                f"Unsupported datatype. (feature {key!r})", key=key, index=index
            )
        if span[0] == span[1] and (index is None or req.role == "dense"):
            span = dups.shadowed.get(req.raw_key, span)
        try:
            # feature_kind(), inlined for the common kinds: this is per record and key.
            first = buf[span[0]] if span[0] != span[1] else -1
            kind = _KIND_BY_TAG.get(first)
            if kind is None:
                kind = feature_kind(buf, span)  # raises "Unsupported datatype."
            if kind == KIND_NONE:
                out[key] = None
                continue
            if kind != req.kind:
                raise ExampleParseError(
                    error_prefix(key, index) + _type_message(kind, req), key=key, index=index
                )
        except MalformedExampleError as exc:
            raise MalformedExampleError(
                f"{exc} (feature {key!r})", offset=exc.offset, key=key, index=index
            ) from None
        try:
            out[key] = decode_feature(buf, span, kind)
        except MalformedExampleError as exc:
            message = error_prefix(key, index) + _list_message(kind, req, index is None)
            raise MalformedExampleError(
                f"{message} ({list_failure(exc)})", offset=exc.offset, key=key, index=index
            ) from None
    return out


def list_failure(exc: MalformedExampleError) -> str:
    """What :func:`~.wire.decode_feature` found wrong, without its generic prefix."""
    return str(exc).removeprefix(PARSE_FAILED)


def _list_message(kind: int, req: Request, single: bool) -> str:
    """TensorFlow's text for a list it could not parse (batch vs single wording)."""
    if not single:
        return "Can't parse serialized Example."
    if kind == KIND_BYTES and req.counted:
        return "Can't parse serialized Example: Could not get num elements in bytes_list."
    return f"Can't parse serialized Example: Parsing {_LIST_NAME[kind]} failed."


_LIST_NAME = {KIND_INT64: "int64_list", KIND_FLOAT: "float_list", KIND_BYTES: "bytes_list"}


def _type_message(kind: int, req: Request) -> str:
    if req.role == "dense":
        return (
            f"Data types don't match. Data type: {TF_NAME[kind]} "
            f"but expected type: {TF_NAME[req.kind]}"
        )
    return (
        f"Data types don't match. Expected type: {TF_NAME[req.kind]}, Actual type: {TF_NAME[kind]}"
    )


def concat_values(parts: Sequence[RawValues | tuple[Any, ...]], kind: int) -> npt.NDArray[Any]:
    """Concatenates per-record values into one array of the feature's dtype."""
    if kind == KIND_BYTES:
        flat: list[bytes] = []
        for p in parts:
            flat.extend(p)  # type: ignore[arg-type]
        return object_array(flat)
    dtype = np.int64 if kind == KIND_INT64 else np.float32
    if not parts:
        return np.zeros(0, dtype=dtype)
    if all(isinstance(p, (list, tuple)) for p in parts):
        # Short int lists stay Python lists per record: convert once per batch.
        flat_numbers: list[Any] = []
        for p in parts:
            flat_numbers.extend(p)
        return np.array(flat_numbers, dtype=dtype)
    return np.concatenate([np.asarray(p, dtype=dtype) for p in parts])
