"""The fake's protobuf answers: metadata lists encoded with kfin's messages (kfin/api/proto/metadata.proto),
framed as kube-apiserver frames them: the magic "k8s\\0", then a runtime.Unknown whose raw is the
PartialObjectMetadataList (k8s.io/apimachinery/pkg/runtime/serializer/protobuf). Fields kfin does not declare
(selfLink, a managedFields entry's operation and time) are left out, so these answers are a little smaller
than a real server's."""

import json
from datetime import datetime

from kfin.api.proto import metadata_pb2

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"


def _seconds(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


def _meta(meta: dict, out) -> None:
    for key in ("name", "generateName", "namespace", "uid", "resourceVersion"):
        if meta.get(key):
            setattr(out, key, str(meta[key]))
    if meta.get("generation") is not None:
        out.generation = int(meta["generation"])
    for key in ("creationTimestamp", "deletionTimestamp"):
        if meta.get(key):
            getattr(out, key).seconds = _seconds(meta[key])
    if meta.get("deletionGracePeriodSeconds") is not None:
        out.deletionGracePeriodSeconds = int(meta["deletionGracePeriodSeconds"])
    out.labels.update(meta.get("labels") or {})
    out.annotations.update(meta.get("annotations") or {})
    for ref in meta.get("ownerReferences") or []:
        owner = out.ownerReferences.add(apiVersion=ref.get("apiVersion", ""), kind=ref.get("kind", ""),
                                        name=ref.get("name", ""), uid=ref.get("uid", ""))
        for flag in ("controller", "blockOwnerDeletion"):
            if ref.get(flag) is not None:
                setattr(owner, flag, bool(ref[flag]))
    out.finalizers.extend(meta.get("finalizers") or [])
    for entry in meta.get("managedFields") or []:
        managed = out.managedFields.add(manager=entry.get("manager", ""))
        if entry.get("fieldsV1") is not None:
            managed.fieldsV1.Raw = json.dumps(entry["fieldsV1"], separators=(",", ":")).encode()


# Each object's encoding, by (uid, resourceVersion): any write moves the resourceVersion. kube-apiserver encodes
# in Go; without this the fake's Python encoding, not the client, would be what a benchmark measures.
_ENCODED: dict[tuple, bytes] = {}
_MOST = 2_000_000


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _item(meta: dict) -> bytes:
    """One PartialObjectMetadata, encoded."""
    key = (meta.get("uid"), meta.get("resourceVersion"))
    found = _ENCODED.get(key)
    if found is None:
        item = metadata_pb2.PartialObjectMetadata()
        _meta(meta, item.metadata)
        found = item.SerializeToString()
        if len(_ENCODED) >= _MOST:
            _ENCODED.clear()
        _ENCODED[key] = found
    return found


def metadata_list(items: list[dict], list_meta: dict) -> bytes:
    head = metadata_pb2.ListMeta()
    if list_meta.get("resourceVersion"):
        head.resourceVersion = str(list_meta["resourceVersion"])
    if list_meta.get("continue"):
        setattr(head, "continue", list_meta["continue"])
    if list_meta.get("remainingItemCount") is not None:
        head.remainingItemCount = int(list_meta["remainingItemCount"])
    # PartialObjectMetadataList: field 1 its ListMeta, field 2 each item (length-delimited fields, which
    # protobuf lets a message be made of by concatenation)
    parts = [b"\x0a", _varint(head.ByteSize()), head.SerializeToString()]
    for obj in items:
        encoded = _item(obj["metadata"])
        parts += [b"\x12", _varint(len(encoded)), encoded]
    envelope = metadata_pb2.Unknown(raw=b"".join(parts))
    envelope.typeMeta.apiVersion, envelope.typeMeta.kind = "meta.k8s.io/v1", "PartialObjectMetadataList"
    return MAGIC + envelope.SerializeToString()
