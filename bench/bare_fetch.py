"""The floor a scan is measured against: every list kfin's scan makes, fetched in parallel, each body
read and thrown away. It connects and discovers as kfin does (same transport, a fresh discovery cache),
then lists every listable type across all namespaces, metadata-only, in pages of 500, 16 at a time, and
parses nothing: the continue token is found in the page's text. What remains above this floor in a
kfin run is kfin's own work (start-up, parsing, analysis, the report).

    python -m bench.bare_fetch KUBECONFIG CONTEXT [--protobuf]    # prints bytes and requests as JSON

--protobuf asks for the lists as kfin does by default (protobuf metadata lists, JSON where not served) and
finds the continue token by walking the first few protobuf fields, decoding nothing else: the protobuf floor.
"""

import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor

CONTINUE = re.compile(rb'"continue":\s*"([^"]+)"')


def continue_token(page: bytes) -> str | None:
    """A list's metadata comes before or after its items (servers differ): look at both ends only."""
    for part in (page[:4096], page[-4096:]):
        found = CONTINUE.search(part)
        if found:
            return found.group(1).decode()
    return None


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if byte < 0x80:
            return value, at


def _field(data: bytes, at: int, end: int, number: int) -> bytes | None:
    """The first length-delimited field `number` of a message, skipping the others by their length."""
    while at < end:
        key, at = _varint(data, at)
        kind = key & 7
        if kind == 2:
            length, at = _varint(data, at)
            if key >> 3 == number:
                return data[at:at + length]
            at += length
        elif kind == 0:
            _, at = _varint(data, at)
        elif kind in (1, 5):
            at += 8 if kind == 1 else 4
        else:
            return None
    return None


def protobuf_continue(page: bytes) -> str | None:
    """Unknown.raw (2) → PartialObjectMetadataList.metadata (1) → ListMeta.continue (3), the list's own
    metadata coming first as Go encodes it."""
    raw = _field(page, 4, len(page), 2)
    meta = raw and _field(raw, 0, len(raw), 1)
    token = meta and _field(meta, 0, len(meta), 3)
    return token.decode() if token else None


def main(kubeconfig: str, context: str, protobuf: bool = False) -> int:
    from kfin.api.discovery import discover
    from kfin.api.connection import METADATA_LIST_ACCEPT, PROTOBUF_METADATA_LIST_ACCEPT, Kube, Target
    from kfin.api.paths import resource_path

    kube = Kube.connect(Target(kubeconfig, context, 60))
    resources, _ = discover(kube, True)

    def fetch(rtype) -> tuple[int, int]:
        token, size, requests = None, 0, 0
        while True:
            _, headers, body = kube.send("GET", resource_path(rtype), {"limit": 500, "continue": token},
                                         accept=PROTOBUF_METADATA_LIST_ACCEPT if protobuf else METADATA_LIST_ACCEPT)
            size, requests = size + len(body), requests + 1
            binary = (headers.get("Content-Type") or "").startswith("application/vnd.kubernetes.protobuf")
            token = protobuf_continue(body) if binary else continue_token(body)
            if not token:
                return size, requests

    with ThreadPoolExecutor(max_workers=16) as pool:
        counts = list(pool.map(fetch, resources))
    print(json.dumps({"types": len(resources), "bytes": sum(c[0] for c in counts),
                      "requests": sum(c[1] for c in counts)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], "--protobuf" in sys.argv[3:]))
