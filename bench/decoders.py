"""Reading a metadata list three ways, on the same pages, in one process: JSON (json.loads, what kfin reads
without protobuf), the protobuf package (upb, C) with kfin's messages as kfin.api.protobuf uses it, and a
small hand decoder in Python that walks the wire format and decodes only the fields a lean scan keeps.
The issue asked for the hand decoder only if it is measurably faster: this is the measurement.

    python -m bench.decoders [ITEMS]      # prints the figures as JSON
"""

from __future__ import annotations

import json
import sys
import time

from kfin.api import protobuf
from kfin.api.protobuf import _varint  # the wire walk kfin reads a continue token with
from tests.fakeapi import protobuf as encoder


def sample(items: int) -> list[dict]:
    """Objects shaped as the bench loader makes them: labels, annotations, an owner, managedFields."""
    out = []
    for n in range(items):
        meta = {"name": f"app-{n}-pod", "namespace": f"kfin-bench-{n // 1000:03d}", "uid": f"uid-{n:08d}",
                "resourceVersion": str(1000 + n), "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"app": f"app-{n // 25}", "tier": "backend", "bench.kfin.dev/run": "1"},
                "annotations": {"bench.kfin.dev/note": "x" * 40},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"app-{n // 25}-rs",
                                     "uid": f"uid-{n // 25:08d}-rs", "controller": True, "blockOwnerDeletion": True}],
                "managedFields": [{"manager": "bench", "operation": "Apply", "apiVersion": "v1",
                                   "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {
                                       "f:app": {}, "f:tier": {}}}}}]}
        if n % 100 == 0:
            meta.update(deletionTimestamp="2026-01-02T00:00:00Z", finalizers=["bench.kfin.dev/hold"])
        out.append({"metadata": meta})
    return out


def _fields(data: bytes, at: int, end: int):
    """(field number, wire type, value or (start, end) of a length-delimited field) of one message."""
    while at < end:
        key, at = _varint(data, at)
        kind = key & 7
        if kind == 2:
            length, at = _varint(data, at)
            yield key >> 3, (at, at + length)
            at += length
        elif kind == 0:
            value, at = _varint(data, at)
            yield key >> 3, value
        else:
            at += 8 if kind == 1 else 4


def hand_decode(data: bytes) -> list[dict]:
    """The items' name, namespace, uid, owners' uids, finalizers and whether being deleted: the lean minimum."""
    raw = next(span for number, span in _fields(data, 4, len(data)) if number == 2)
    out = []
    for number, (start, end) in _fields(data, *raw):
        if number != 2:
            continue
        meta_span = next(span for n, span in _fields(data, start, end) if n == 1)
        meta: dict = {"finalizers": [], "owners": []}
        for field, span in _fields(data, *meta_span):
            if field in (1, 3, 5):
                meta[{1: "name", 3: "namespace", 5: "uid"}[field]] = data[span[0]:span[1]].decode()
            elif field == 9:
                meta["deleting"] = True
            elif field == 14:
                meta["finalizers"].append(data[span[0]:span[1]].decode())
            elif field == 13:
                uid = next((s for n, s in _fields(data, *span) if n == 4), None)
                if uid:
                    meta["owners"].append(data[uid[0]:uid[1]].decode())
        out.append(meta)
    return out


def measure(items: int = 50_000, page: int = 500) -> dict:
    objects = sample(items)
    pages_pb = [encoder.metadata_list(objects[i:i + page], {"resourceVersion": "1"}) for i in range(0, items, page)]
    pages_json = [json.dumps({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                              "metadata": {"resourceVersion": "1"}, "items": objects[i:i + page]}).encode()
                  for i in range(0, items, page)]
    figures = {"items": items, "bytes_json": sum(map(len, pages_json)), "bytes_protobuf": sum(map(len, pages_pb))}
    for name, decode, pages in (("json", json.loads, pages_json),
                                ("protobuf", lambda d: protobuf.metadata_list(d, "bench", light=True), pages_pb),
                                ("hand", hand_decode, pages_pb)):
        started = time.perf_counter()
        for data in pages:
            decode(data)
        figures[f"seconds_{name}"] = round(time.perf_counter() - started, 4)
    return figures


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 50_000)))
