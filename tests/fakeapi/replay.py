"""Replaying a captured story (shared/k8s-reference) against the fake, and comparing what it answers."""

import json
import urllib.error
import urllib.request

VOLATILE = {"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "lastTransitionTime",
            "lastPhaseTransitionTime", "continue", "time", "expirationTimestamp", "lastHeartbeatTime", "timeAdded",
            "firstTimestamp", "lastTimestamp", "deprecatedFirstTimestamp", "deprecatedLastTimestamp"}
# Server bookkeeping kfin never reads: server-side-apply field ownership and opaque storage hashes.
IGNORED = {"managedFields", "storageVersionHash"}


def normalise(value, ignored=frozenset(IGNORED)):
    if isinstance(value, dict):
        return {k: ("<volatile>" if k in VOLATILE else normalise(v, ignored)) for k, v in value.items()
                if k not in ignored}
    if isinstance(value, list):
        return [normalise(v, ignored) for v in value]
    return value


def pick(value, paths):
    """Only the given /-separated paths of a JSON value (for captures taken mid-reconcile). A field left out
    and a field written as null differ (ABSENT): Go writes some unset fields as null, omits others."""
    out = {}
    for path in paths:
        node = value
        for part in path.split("/"):
            if isinstance(node, list):
                node = node[int(part)] if part.isdigit() and int(part) < len(node) else ABSENT
            else:
                node = node.get(part, ABSENT) if isinstance(node, dict) else ABSENT
        out[path] = node
    return out


ABSENT = "(absent)"


class Replay:
    def __init__(self, fake):
        self.fake = fake

    def send(self, method, path, body=None, accept="application/json", content_type=None, token="admin-token",
             headers=None):
        """(status, content type, text, response headers)."""
        data = None if body is None else json.dumps(body).encode()
        sent = {"Authorization": f"Bearer {token}", "Accept": accept, **(headers or {})}
        if content_type:
            sent["Content-Type"] = content_type
        request = urllib.request.Request(self.fake.url + path, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.headers.get("Content-Type") or "", response.read().decode(), \
                    response.headers
        except urllib.error.HTTPError as error:
            return error.code, error.headers.get("Content-Type") or "", error.read().decode(), error.headers

    def create(self, path, body, token="admin-token"):
        code, _, text, _ = self.send("POST", path, body, content_type="application/json", token=token)
        assert code == 201, text
        return json.loads(text)

    def get(self, path):
        code, _, text, _ = self.send("GET", path)
        assert code == 200, text
        return json.loads(text)
