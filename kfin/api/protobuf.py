"""Metadata-only lists read as protobuf: how kube-controller-manager's garbage collector and namespace
controller list everything, and about half the bytes of the same list as JSON.

kube-apiserver answers `Accept: application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;...` for
built-in and custom resources alike: the 4-byte magic "k8s\\0", then a runtime.Unknown whose `raw` is the
PartialObjectMetadataList. It is decoded by the `protobuf` package's C implementation with kfin's own
messages (proto/metadata.proto: the fields kfin does not read are kept as bytes, never parsed), and turned
into the same metadata dicts a JSON list gives. A server or aggregated API that does not serve protobuf
answers JSON (the Accept header lists it after), and that answer is read as JSON.

A page is refused (ShapeError: the scan is then incomplete, never an all-clear) where Kubernetes' own
decoders refuse it, and where kfin cannot read what it needs: bytes that are no message (truncated, a length
past the end), a field kfin declares arriving with another wire type (the runtime would keep it aside as an
unknown field, and the item would look as if it had no deletionTimestamp or no finalizers), a string kfin
reads that is not UTF-8, a deletionTimestamp outside the years 1 to 9999 (what RFC 3339 and the JSON path
read), an item without a name.

KFIN_LIST_ENCODING=json asks for JSON only (a workaround, and the bench's anchor).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.unknown_fields import UnknownFieldSet

from kfin.api.proto import metadata_pb2
from kfin.api.shapes import ShapeError
from kfin.model import JSON, OwnerTuple, format_time

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
METADATA_LIST = ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


def wanted() -> bool:
    return os.environ.get("KFIN_LIST_ENCODING", "protobuf").lower() != "json"


def is_protobuf(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == CONTENT_TYPE


# The seconds of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the times RFC 3339 (and Python) can write,
# and those the JSON path reads (kfin.api.shapes.is_time)
FIRST_SECOND = -62_135_596_800
LAST_SECOND = 253_402_300_799

_WIRE_TYPES = {
    0: "a varint",
    1: "a fixed64",
    2: "a length-delimited field",
    3: "a group",
    4: "a group's end",
    5: "a fixed32",
}


def in_range(value: metadata_pb2.Time) -> bool:
    """Whether a metav1.Time's seconds make a time RFC 3339 can write (years 1 to 9999)."""
    return FIRST_SECOND <= value.seconds <= LAST_SECOND


def _time(value: Any) -> str:
    """metav1.Time as JSON writes it (in_range checked first)."""
    return format_time(datetime.fromtimestamp(value.seconds, UTC))


def _expected(field: FieldDescriptor) -> str:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return "a message"
    if field.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
        return "a length-delimited field"
    return "a varint"  # kfin's messages declare no fixed-width numbers


def wrong_wire_type(message: Message, at: str = "") -> str | None:
    """The first field of `message` (or of a message in it) that arrived with another wire type than its
    declared one, said as "metadata.finalizers arrives as a fixed64, not a length-delimited field"; None when
    there is none. The runtime keeps such a field aside as an unknown field: this reads them."""
    fields = message.DESCRIPTOR.fields_by_number
    for unknown in UnknownFieldSet(message):
        field = fields.get(unknown.field_number)
        if field is not None:
            got = _WIRE_TYPES.get(unknown.wire_type, f"wire type {unknown.wire_type}")
            return f"{at}{field.name} arrives as {got}, not {_expected(field)}"
    for field, value in message.ListFields():
        if field.message_type is None or field.message_type.GetOptions().map_entry:
            continue
        if field.is_repeated:
            for number, each in enumerate(value):
                found = wrong_wire_type(each, f"{at}{field.name}[{number}].")
                if found:
                    return found
        else:
            found = wrong_wire_type(value, f"{at}{field.name}.")
            if found:
                return found
    return None


def _item_named(found: str) -> str:
    """`items[N].rest` as the JSON path names an item: "item N+1 is malformed: rest"."""
    if found.startswith("items["):
        number, _, rest = found[len("items[") :].partition("].")
        return f"whose item {int(number) + 1} is malformed: {rest}"
    return f"that is malformed: {found}"


def strictly(kind: Any, data: bytes, where: str, at: str = "") -> Any:
    """`data` decoded as a message of `kind`, refused as Kubernetes' generated decoders refuse it: a ShapeError
    for bytes that are no such message, or for a declared field that arrived with another wire type.
    Every field Kubernetes writes is declared (proto/metadata.proto), so a well-formed answer has no unknown
    fields: what they hold is read (wrong_wire_type) only when the sizes with and without them differ.
    `at`: where in the list `data` is ("items[2]." for an item read again whole)."""
    try:
        message = kind.FromString(data)
    except DecodeError:  # text that is not UTF-8 included (proto3 strings are checked as they are decoded)
        raise ShapeError(f"{where} answered a protobuf list kfin cannot decode") from None
    whole = message.ByteSize()
    message.DiscardUnknownFields()  # fields no version of Kubernetes kfin knows writes: skipped, as Go skips them
    if message.ByteSize() != whole:
        found = wrong_wire_type(kind.FromString(data), at)
        if found:
            raise ShapeError(f"{where} answered a protobuf list {_item_named(found)}")
    return message


def _owner(ref: Any) -> JSON:
    out = {"apiVersion": ref.apiVersion, "kind": ref.kind, "name": ref.name, "uid": ref.uid}
    if ref.HasField("controller"):
        out["controller"] = ref.controller
    if ref.HasField("blockOwnerDeletion"):
        out["blockOwnerDeletion"] = ref.blockOwnerDeletion
    return out


def _managed(entry: Any) -> JSON:
    out: JSON = {"manager": entry.manager}
    try:
        out["fieldsV1"] = json.loads(entry.fieldsV1.Raw) if entry.fieldsV1.Raw else {}
    except (ValueError, RecursionError):
        out["fieldsV1"] = {}  # unreadable bookkeeping: the finalizer's manager is left unknown
    return out


def metadata(meta: Any, light: bool) -> JSON:
    """ObjectMeta as the dict a JSON answer gives (empty fields left out, as Go's omitempty does).
    `light`: for an object neither being deleted nor with finalizers, only what a lean scan keeps of it
    (name, namespace, uid, owners): its labels, annotations and managedFields are never made into dicts."""
    out: JSON = {"name": meta.name, "uid": meta.uid}
    if meta.namespace:
        out["namespace"] = meta.namespace
    if meta.ownerReferences:
        out["ownerReferences"] = [_owner(r) for r in meta.ownerReferences]
    deleting = meta.HasField("deletionTimestamp")
    if light and not deleting and not meta.finalizers:
        return out
    if meta.generateName:
        out["generateName"] = meta.generateName
    if meta.resourceVersion:
        out["resourceVersion"] = meta.resourceVersion
    if meta.HasField("generation"):
        out["generation"] = meta.generation
    if meta.HasField("creationTimestamp") and in_range(meta.creationTimestamp):
        # one out of range is left out: the JSON path reads a creation time it cannot parse as none (parse_time)
        out["creationTimestamp"] = _time(meta.creationTimestamp)
    if deleting:
        out["deletionTimestamp"] = _time(meta.deletionTimestamp)  # in range: metadata_list checked it
    if meta.HasField("deletionGracePeriodSeconds"):
        out["deletionGracePeriodSeconds"] = meta.deletionGracePeriodSeconds
    if meta.labels:
        out["labels"] = dict(meta.labels)
    if meta.annotations:
        out["annotations"] = dict(meta.annotations)
    if meta.finalizers:
        out["finalizers"] = list(meta.finalizers)
        out["managedFields"] = [_managed(e) for e in meta.managedFields]  # who added each finalizer
    return out


OwnerRef = metadata_pb2.OwnerReference

# What a lean read keeps of an object neither being deleted nor with finalizers, made from its fields: (name,
# namespace, uid, its ownerReferences' messages) -> the object kept, or None (kfin.api.scan.Lean.keep_refs, which
# reads of the owners only what it keeps: most objects of a cluster are read this way)
Keep = Callable[[str, str, str, Sequence[OwnerRef]], Any]


def owners_of(refs: Sequence[OwnerRef]) -> tuple[OwnerTuple, ...]:
    """An object's ownerReferences as kfin.model.owner_tuples gives them."""
    return tuple(
        [
            (
                r.apiVersion,
                r.kind,
                r.name,
                r.uid,
                r.controller if r.HasField("controller") else None,
                r.blockOwnerDeletion if r.HasField("blockOwnerDeletion") else None,
            )
            for r in refs
        ]
    )


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if byte < 0x80:
            return value, at


def _field(data: bytes, at: int, end: int, number: int) -> tuple[int, int] | None:
    """(start, end) of the first length-delimited field `number` of the message in data[at:end], the others
    skipped by their length; None when there is none or the bytes are not a message."""
    while at < end:
        key, at = _varint(data, at)
        kind = key & 7
        if kind == 2:
            length, at = _varint(data, at)
            if key >> 3 == number:
                return (at, at + length) if at + length <= end else None
            at += length
        elif kind == 0:
            _, at = _varint(data, at)
        elif kind in (1, 5):
            at += 8 if kind == 1 else 4
        else:
            return None
    return None


def continue_of(data: bytes) -> str | None:
    """A protobuf list's continue token, read from the wire without decoding its items: Unknown.raw (2) →
    the list's ListMeta (1) → continue (3), which Go writes before the items. Kube._pages asks for the next
    page with it while this one is parsed; the parsed token stays the one that counts. None when not found."""
    if not data.startswith(MAGIC):
        return None
    try:
        raw = _field(data, len(MAGIC), len(data), 2)
        meta = raw and _field(data, raw[0], raw[1], 1)
        token = meta and _field(data, meta[0], meta[1], 3)
        return data[token[0] : token[1]].decode() if token else None
    except (IndexError, UnicodeDecodeError):  # not a message: the parse says what is wrong
        return None


def metadata_list(data: bytes, where: str, light: bool = False, keep: Keep | None = None) -> JSON:
    """A PartialObjectMetadataList answer as the dict its JSON form would give (items' metadata only).
    `keep` (with `light`): objects neither being deleted nor with finalizers are made by it straight from the
    messages, with no metadata dict, and come in the page's "kept" (what it kept), not in its items."""
    if not data.startswith(MAGIC):
        raise ShapeError(f"{where} answered protobuf without the Kubernetes magic prefix")
    envelope = strictly(metadata_pb2.Unknown, data[len(MAGIC) :], where)
    listed: Any = metadata_pb2.PartialObjectMetadataListLight if light else metadata_pb2.PartialObjectMetadataList
    listed = strictly(listed, envelope.raw, where)
    if envelope.typeMeta.kind and envelope.typeMeta.kind != "PartialObjectMetadataList":
        raise ShapeError(f"{where} answered a protobuf {envelope.typeMeta.kind[:60]!r}, not a metadata list")
    list_meta: JSON = {}
    if listed.metadata.resourceVersion:
        list_meta["resourceVersion"] = listed.metadata.resourceVersion
    token = getattr(listed.metadata, "continue")  # a keyword in Python
    if token:
        list_meta["continue"] = token
    page = {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta}
    # one pass over the items (each field read once: every read of a message's field makes a Python object)
    items, kept = [], []
    for number, item in enumerate(listed.items, 1):
        meta = item.metadata
        name = meta.name
        if not name:  # what the messages' types leave open (shapes.check_page)
            raise ShapeError(f"{where} answered a list whose item {number} is malformed: metadata.name is missing")
        deleting = meta.HasField("deletionTimestamp")
        if deleting and not in_range(meta.deletionTimestamp):  # as the JSON path's is_time refuses it
            raise ShapeError(
                f"{where} answered a list whose item {number} is malformed: metadata.deletionTimestamp is "
                f"{meta.deletionTimestamp.seconds} seconds, outside the years 1 to 9999"
            )
        if not light:
            items.append({"metadata": metadata(meta, False)})
        elif deleting or meta.finalizers:  # read again, whole, from its own bytes
            whole = strictly(
                metadata_pb2.PartialObjectMetadata, item.SerializeToString(), where, f"items[{number - 1}]."
            )
            meta = whole.metadata
            items.append({"metadata": metadata(meta, True)})
        elif keep is None:
            items.append({"metadata": metadata(meta, True)})
        else:
            obj = keep(name, meta.namespace, meta.uid, meta.ownerReferences)
            if obj is not None:
                kept.append(obj)
    if light and keep is not None:
        return dict(page, items=items, kept=kept)
    return dict(page, items=items)
