"""The private-pool descriptors match proto/*.proto (the source of truth)."""

from __future__ import annotations

import re
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool

from tfrecord_engine.example import protos

PROTO_DIR = Path(__file__).resolve().parents[2] / "proto"
_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "bytes": _F.TYPE_BYTES,
    "float": _F.TYPE_FLOAT,
    "int64": _F.TYPE_INT64,
    "string": _F.TYPE_STRING,
}

Field = tuple[str, int, bool, str]  # name, number, repeated, type (scalar or message name)


def _parse_proto(text: str) -> dict[str, list[Field]]:
    """A deliberately small parser for the flat messages in proto/*.proto."""
    text = re.sub(r"//[^\n]*", "", text)
    out: dict[str, list[Field]] = {}
    for name, body in re.findall(r"message\s+(\w+)\s*\{((?:[^{}]|\{[^{}]*\})*)\}", text):
        fields: list[Field] = []
        for m in re.finditer(
            r"(repeated\s+)?(map<\s*string\s*,\s*(\w+)\s*>|\w+)\s+(\w+)\s*=\s*(\d+)", body
        ):
            repeated, ftype, map_value, fname, number = m.groups()
            if map_value:
                fields.append((fname, int(number), True, f"map<string,{map_value}>"))
            else:
                fields.append((fname, int(number), bool(repeated), ftype))
        out[name] = fields
    return out


def _from_descriptors() -> dict[str, list[Field]]:
    out: dict[str, list[Field]] = {}
    for fd in protos.file_descriptor_protos():
        for msg in fd.message_type:
            entries = {n.name: n for n in msg.nested_type if n.options.map_entry}
            fields: list[Field] = []
            for f in msg.field:
                type_name = f.type_name.rsplit(".", 1)[-1]
                if type_name in entries:
                    value = entries[type_name].field[1].type_name.rsplit(".", 1)[-1]
                    fields.append((f.name, f.number, True, f"map<string,{value}>"))
                elif f.type == _F.TYPE_MESSAGE:
                    fields.append((f.name, f.number, f.label == _F.LABEL_REPEATED, type_name))
                else:
                    scalar = {v: k for k, v in _SCALARS.items()}[f.type]
                    fields.append((f.name, f.number, f.label == _F.LABEL_REPEATED, scalar))
            out[msg.name] = fields
    return out


def test_runtime_descriptors_match_proto_files() -> None:
    text = "\n".join(p.read_text() for p in sorted(PROTO_DIR.glob("*.proto")))
    assert _parse_proto(text) == _from_descriptors()


def test_parser_sees_every_message() -> None:
    # Guards the test above against a parser that silently finds nothing.
    parsed = _parse_proto((PROTO_DIR / "feature.proto").read_text())
    assert set(parsed) == {
        "BytesList",
        "FloatList",
        "Int64List",
        "Feature",
        "Features",
        "FeatureList",
        "FeatureLists",
    }
    assert parsed["Feature"][2] == ("int64_list", 3, False, "Int64List")


def test_messages_live_in_a_private_pool() -> None:
    assert protos.POOL is not descriptor_pool.Default()
    assert protos.Example.DESCRIPTOR.file.pool is protos.POOL
    msg = protos.Example()
    msg.features.feature["x"].float_list.value.extend([1.5])
    assert protos.Example.FromString(msg.SerializeToString()) == msg
