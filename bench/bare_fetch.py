"""The floor a scan is measured against: every list kfin's scan makes, fetched in parallel, each body
read and thrown away. It connects and discovers as kfin does (same transport, a fresh discovery cache),
then lists every listable type across all namespaces, metadata-only, in pages of 500, 16 at a time, and
parses nothing: the continue token is found in the page's text. What remains above this floor in a
kfin run is kfin's own work (start-up, parsing, analysis, the report).

    python -m bench.bare_fetch KUBECONFIG CONTEXT [--protobuf]    # prints bytes and requests as JSON

--protobuf asks for the lists as kfin does by default (protobuf metadata lists, JSON where not served) and
finds the continue token by walking the first few protobuf fields (kfin.api.protobuf.continue_of, which kfin uses
to ask for a list's next page early), decoding nothing else: the protobuf floor.
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


def main(kubeconfig: str, context: str, protobuf: bool = False) -> int:
    from kfin.api.connection import METADATA_LIST_ACCEPT, PROTOBUF_METADATA_LIST_ACCEPT, Kube, Target
    from kfin.api.discovery import discover
    from kfin.api.paths import resource_path
    from kfin.api.protobuf import continue_of  # the list's own metadata, read off the wire as kfin does

    kube = Kube.connect(Target(kubeconfig, context, 60))
    resources, _ = discover(kube, True)

    def fetch(rtype) -> tuple[int, int]:
        token, size, requests = None, 0, 0
        while True:
            answer = kube.send("GET", resource_path(rtype), {"limit": 500, "continue": token},
                               accept=PROTOBUF_METADATA_LIST_ACCEPT if protobuf else METADATA_LIST_ACCEPT)
            headers, body = answer.headers, answer.body
            size, requests = size + len(body), requests + 1
            binary = (headers.get("Content-Type") or "").startswith("application/vnd.kubernetes.protobuf")
            token = continue_of(body) if binary else continue_token(body)
            if not token:
                return size, requests

    with ThreadPoolExecutor(max_workers=16) as pool:
        counts = list(pool.map(fetch, resources))
    print(json.dumps({"types": len(resources), "bytes": sum(c[0] for c in counts),
                      "requests": sum(c[1] for c in counts)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], "--protobuf" in sys.argv[3:]))
