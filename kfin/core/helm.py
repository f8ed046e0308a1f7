"""Helm's uninstall, as Helm does it (read in helm/helm, not guessed):

- the release record: Secret (or ConfigMap) `sh.helm.release.v1.NAME.vN` labelled owner=helm, name=NAME,
  version=N; its `release` key holds base64 of gzip of the release's JSON (pkg/storage/driver/util.go,
  encodeRelease/decodeRelease); a Secret's data is base64 once more, as every Secret's.
- the order (pkg/releaseutil/kind_sorter.go, UninstallOrder; Helm 4: pkg/release/v1/util/kind_sorter.go):
  by kind, a kind's objects in manifest order (sort.SliceStable), unknown kinds last, alphabetically by kind.
  Helm 3 (v3.21.4, 813176c5) has no webhook configurations in its list: they go last, with the custom
  resources; Helm 4 (v4.2.4, 3900f434, and main at e9b85e4d) deletes ValidatingWebhookConfiguration, then
  MutatingWebhookConfiguration, first of all. Helm's main (906f87ce, in no release yet) also skips the objects
  that do not carry its ownership label and annotations (pkg/action/validate.go, verifyOwnershipBeforeDelete):
  not modelled here.
- the deletes (pkg/kube/client.go, batchPerform): a run of objects of the same kind is deleted concurrently,
  the next kind once those DELETEs returned; Helm never waits for the objects to be gone between kinds
  (`--wait` waits at the end only). Propagation background, unless `--cascade`.
- `helm.sh/resource-policy: keep` objects are not deleted; CRDs of the chart's crds/ directory are not in the
  manifest and never deleted; pre-delete hooks run before the deletes, post-delete hooks after."""

from __future__ import annotations

import base64
import binascii
import gzip
import json

from msgspec import Struct, field

from kfin.api.builtin_kinds import builtin_resources
from kfin.core.facts import Facts
from kfin.core.manifests import Manifest, parse
from kfin.errors import UsageError
from kfin.model import JSON, ResourceType

UNINSTALL_ORDER_3 = [
    "APIService",
    "Ingress",
    "IngressClass",
    "Service",
    "CronJob",
    "Job",
    "StatefulSet",
    "HorizontalPodAutoscaler",
    "Deployment",
    "ReplicaSet",
    "ReplicationController",
    "Pod",
    "DaemonSet",
    "RoleBindingList",
    "RoleBinding",
    "RoleList",
    "Role",
    "ClusterRoleBindingList",
    "ClusterRoleBinding",
    "ClusterRoleList",
    "ClusterRole",
    "CustomResourceDefinition",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "ConfigMap",
    "SecretList",
    "Secret",
    "ServiceAccount",
    "PodDisruptionBudget",
    "PodSecurityPolicy",
    "LimitRange",
    "ResourceQuota",
    "NetworkPolicy",
    "Namespace",
    "PriorityClass",
]
UNINSTALL_ORDER_4 = ["ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", *UNINSTALL_ORDER_3]
KEEP = "helm.sh/resource-policy"
GZIP_MAGIC = b"\x1f\x8b\x08"


class Release(Struct):
    name: str
    namespace: str
    version: int
    status: str
    manifests: list[Manifest]
    hooks: list[JSON] = field(default_factory=list)  # name, kind, events
    chart_crds: list[str] = field(default_factory=list)  # files under the chart's crds/: never deleted by Helm


def decode(encoded: str | bytes) -> JSON:
    """A release from what Helm stores under `release` (base64 of gzip of JSON; an older release: of JSON)."""
    try:
        data = base64.b64decode(encoded, validate=False)
    except (binascii.Error, ValueError):
        raise UsageError("the Helm release record is not base64") from None
    if data.startswith(GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError):
            raise UsageError("the Helm release record is not valid gzip") from None
    try:
        found = json.loads(data)
    except ValueError:
        raise UsageError("the Helm release record is not JSON") from None
    if not isinstance(found, dict):
        raise UsageError("the Helm release record is not a release")
    return found


def encode(release: JSON) -> str:
    """As Helm writes it (encodeRelease): JSON, gzip at best compression, base64 standard encoding."""
    return base64.b64encode(gzip.compress(json.dumps(release).encode(), compresslevel=9)).decode()


def release_of(record: JSON, namespace: str) -> Release:
    source = f"release {record.get('name')}"
    hooks = [
        {"name": h.get("name"), "kind": h.get("kind"), "events": list(h.get("events") or []), "path": h.get("path")}
        for h in record.get("hooks") or []
    ]
    chart = record.get("chart") or {}
    crds = [f.get("name") for f in chart.get("files") or [] if str(f.get("name") or "").startswith("crds/")]
    return Release(
        str(record.get("name") or ""),
        str(record.get("namespace") or namespace),
        int(record.get("version") or 0),
        str((record.get("info") or {}).get("status") or ""),
        parse(str(record.get("manifest") or ""), source),
        hooks,
        [str(c) for c in crds],
    )


def uninstall_order(manifests: list[Manifest], major: int) -> list[Manifest]:
    """Helm's sortManifestsByKind with UninstallOrder: stable; unknown kinds last, alphabetically by kind."""
    order = {k: i for i, k in enumerate(UNINSTALL_ORDER_4 if major >= 4 else UNINSTALL_ORDER_3)}
    return sorted(manifests, key=lambda m: (0, order[m.kind], "") if m.kind in order else (1, 0, m.kind))


def kept(manifest: Manifest) -> bool:
    """Helm leaves the object in place (filterManifestsToKeep, pkg/action/resource_policy.go at v3.21.4): with
    `helm.sh/resource-policy: keep`, and, as that function drops an object with any other value from both of
    its lists, with any value at all."""
    return KEEP in manifest.annotations


def batches(manifests: list[Manifest]) -> list[int]:
    """The batch of each object: a run of the same kind is deleted concurrently (batchPerform)."""
    out, batch, kind = [], 0, None
    for m in manifests:
        if m.kind != kind:
            batch, kind = batch + 1, m.kind
        out.append(batch)
    return out


def record_name(name: str, version: int) -> str:
    return f"sh.helm.release.v1.{name}.v{version}"


def latest_record(facts: Facts, name: str, namespace: str) -> tuple[ResourceType, str] | None:
    """The newest `sh.helm.release.v1.NAME.vN`, Secret driver first, then ConfigMap: found in kfin's
    metadata-only lists (never a Secret's data), its version read from its name as Helm writes it."""
    prefix = record_name(name, 0)[:-1]
    types = {r.resource: r for r in builtin_resources() if r.group == ""}
    for rtype in (types["secrets"], types["configmaps"]):
        versions = [
            int(o.name[len(prefix) :])
            for o in facts.objects("", rtype.resource, namespace) or []
            if o.name.startswith(prefix) and o.name[len(prefix) :].isdigit()
        ]
        if versions:
            return rtype, record_name(name, max(versions))
    return None


def read_release(facts: Facts, rtype: ResourceType, namespace: str, record: str) -> Release:
    """The release in one named GET of its record (a Secret's `release` is base64 once more)."""
    if facts.kube is None:
        raise UsageError("kfin preflight helm reads the release record from a live cluster, not a snapshot")
    found = facts.kube.read_object(rtype, namespace, record)
    encoded = str((found.get("data") or {}).get("release") or "")
    if not encoded:
        raise UsageError(f"{rtype.kind} {namespace}/{record} holds no release")
    if rtype.resource == "secrets":
        try:
            encoded = base64.b64decode(encoded).decode()
        except (binascii.Error, ValueError):
            raise UsageError(f"Secret {namespace}/{record} is not a Helm release record") from None
    return release_of(decode(encoded), namespace)
