"""protobuf message classes for Example & co., built in a private descriptor pool.

For users who want message objects (the engine itself uses the hand-written codec in
:mod:`.wire`/:mod:`.encode`). The descriptors mirror ``proto/feature.proto`` and
``proto/example.proto`` (package ``tensorflow``, TensorFlow's message names and field
numbers) but are added to a pool of our own, never protobuf's default pool, so they can
never clash with TensorFlow's copies, whichever is imported first. No generated ``_pb2``
code is shipped, so no protoc version is pinned against the installed runtime.

Example:
    >>> from tfrecord_engine.example.protos import Example
    >>> msg = Example()
    >>> msg.features.feature["x"].int64_list.value.append(3)
    >>> msg.SerializeToString().hex()
    '0a0c0a0a0a017812051a030a0103'
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = [
    "POOL",
    "BytesList",
    "Example",
    "Feature",
    "FeatureList",
    "FeatureLists",
    "Features",
    "FloatList",
    "Int64List",
    "SequenceExample",
]

_F = descriptor_pb2.FieldDescriptorProto
_PACKAGE = "tensorflow"


def _field(
    msg: descriptor_pb2.DescriptorProto,
    name: str,
    number: int,
    ftype: int,
    *,
    repeated: bool = False,
    type_name: str | None = None,
) -> descriptor_pb2.FieldDescriptorProto:
    f = msg.field.add(
        name=name,
        number=number,
        type=ftype,
        label=_F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL,
        json_name=name
        if "_" not in name
        else name.split("_", maxsplit=1)[0] + "".join(p.capitalize() for p in name.split("_")[1:]),
    )
    if type_name is not None:
        f.type_name = f".{_PACKAGE}.{type_name}"
    return f


def _map(parent: descriptor_pb2.DescriptorProto, field: str, value_type: str) -> None:
    """A ``map<string, value_type> field = 1`` (a repeated, nested ``...Entry`` message)."""
    entry_name = "".join(p.capitalize() for p in field.split("_")) + "Entry"
    entry = parent.nested_type.add(name=entry_name)
    entry.options.map_entry = True
    _field(entry, "key", 1, _F.TYPE_STRING)
    _field(entry, "value", 2, _F.TYPE_MESSAGE, type_name=value_type)
    _field(
        parent, field, 1, _F.TYPE_MESSAGE, repeated=True, type_name=f"{parent.name}.{entry_name}"
    )


def _feature_file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(
        name="tfrecord_engine/proto/feature.proto", package=_PACKAGE, syntax="proto3"
    )
    _field(fd.message_type.add(name="BytesList"), "value", 1, _F.TYPE_BYTES, repeated=True)
    floats = _field(fd.message_type.add(name="FloatList"), "value", 1, _F.TYPE_FLOAT, repeated=True)
    floats.options.packed = True
    ints = _field(fd.message_type.add(name="Int64List"), "value", 1, _F.TYPE_INT64, repeated=True)
    ints.options.packed = True
    ints.options.jstype = descriptor_pb2.FieldOptions.JS_STRING
    feature = fd.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for number, (name, list_type) in enumerate(
        [("bytes_list", "BytesList"), ("float_list", "FloatList"), ("int64_list", "Int64List")],
        start=1,
    ):
        _field(feature, name, number, _F.TYPE_MESSAGE, type_name=list_type).oneof_index = 0
    _map(fd.message_type.add(name="Features"), "feature", "Feature")
    _field(
        fd.message_type.add(name="FeatureList"),
        "feature",
        1,
        _F.TYPE_MESSAGE,
        repeated=True,
        type_name="Feature",
    )
    _map(fd.message_type.add(name="FeatureLists"), "feature_list", "FeatureList")
    return fd


def _example_file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(
        name="tfrecord_engine/proto/example.proto",
        package=_PACKAGE,
        syntax="proto3",
        dependency=["tfrecord_engine/proto/feature.proto"],
    )
    _field(
        fd.message_type.add(name="Example"), "features", 1, _F.TYPE_MESSAGE, type_name="Features"
    )
    seq = fd.message_type.add(name="SequenceExample")
    _field(seq, "context", 1, _F.TYPE_MESSAGE, type_name="Features")
    _field(seq, "feature_lists", 2, _F.TYPE_MESSAGE, type_name="FeatureLists")
    return fd


def file_descriptor_protos() -> list[descriptor_pb2.FileDescriptorProto]:
    """The two FileDescriptorProtos (feature.proto, example.proto) this module builds."""
    return [_feature_file(), _example_file()]


POOL = descriptor_pool.DescriptorPool()
"""The private descriptor pool holding our copies of the messages."""
for _fd in file_descriptor_protos():
    POOL.Add(_fd)


def _cls(name: str) -> Any:
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(f"{_PACKAGE}.{name}"))


BytesList = _cls("BytesList")
FloatList = _cls("FloatList")
Int64List = _cls("Int64List")
Feature = _cls("Feature")
Features = _cls("Features")
FeatureList = _cls("FeatureList")
FeatureLists = _cls("FeatureLists")
Example = _cls("Example")
SequenceExample = _cls("SequenceExample")
