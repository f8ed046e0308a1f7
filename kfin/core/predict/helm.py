"""Helm's uninstall, as Helm does it (read in helm/helm, not guessed):

- the release record: Secret (or ConfigMap) `sh.helm.release.v1.NAME.vN` labelled owner=helm, name=NAME,
  version=N; its `release` key holds base64 of gzip of the release's JSON (pkg/storage/driver/util.go,
  encodeRelease/decodeRelease); a Secret's data is base64 once more, as every Secret's. kfin reads it bounded
  (MAX_RECORD_BYTES as stored, MAX_RELEASE_JSON inflated) and typed (Record): someone else wrote it.
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
import re
import zlib

import msgspec
from msgspec import Struct, field

from kfin.api.builtin_kinds import builtin_resources
from kfin.api.shapes import ShapeError
from kfin.core.predict.manifests import Manifest, parse
from kfin.core.read.facts import Facts
from kfin.errors import UsageError
from kfin.model import JSON, ResourceType
from kfin.names import KIND_TEXT, namespace_problem, path_segment_problem, quoted

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
RECORD_PREFIX = "sh.helm.release.v1."


# Kubernetes' limit on the data of a Secret or a ConfigMap (MaxSecretSize, 1 MiB, k8s.io/api core/v1 types.go, which
# pkg/apis/core/validation applies to both): the largest release record the API server stores. A Secret's value is
# that many bytes once its own base64 is undone; over the wire it is up to 4/3 of it.
MAX_RECORD_BYTES = 1024 * 1024
MAX_SECRET_VALUE_CHARS = 4 * -(-MAX_RECORD_BYTES // 3)
# The release's JSON, decompressed. Helm inflates a record without limit (decodeRelease, io.ReadAll); kfin does not:
# a record inside the 1 MiB holds at most 768 KiB of gzip, which deflate could inflate a thousandfold. A release's
# JSON compresses far less: measured, 100 Deployments rendered from one template that differ only by name inflate
# 16 times, 5,000 of them 30 times (a chart's templates and files are base64 in the JSON, which compresses poorly):
# a record that repetitive, at the limit, would be 23 MiB. 32 MiB keeps a margin over that and refuses a gzip bomb
# before it is in memory.
MAX_RELEASE_JSON = 32 * 1024 * 1024
GUNZIP_PIECE = 4096
# Helm's rule for a release name (ValidateReleaseName, pkg/chart/v2/util/validate_name.go, which helm install and
# helm uninstall apply): a DNS subdomain of at most 53 characters.
RELEASE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
RELEASE_NAME_MAX = 53


class Release(Struct):
    name: str
    namespace: str
    version: int
    status: str
    manifests: list[Manifest]
    hooks: list[JSON] = field(default_factory=list)  # name, kind, events
    chart_crds: list[str] = field(default_factory=list)  # files under the chart's crds/: never deleted by Helm


# The fields of Helm's release JSON that kfin reads (pkg/release/v1: release.go, hook.go, info.go; pkg/chart/v2/
# chart.go; pkg/chart/common/file.go), typed: a record of another shape is refused with the path of what is wrong.
# Go's json.Unmarshal takes null for any field (as its zero value), and so does kfin; the fields kfin does not read
# are skipped unparsed.
class RecordHook(Struct):
    name: str | None = None
    kind: str | None = None
    path: str | None = None
    events: list[str] | None = None


class RecordFile(Struct):
    name: str | None = None


class RecordChart(Struct):
    files: list[RecordFile] | None = None


class RecordInfo(Struct):
    status: str | None = None


class Record(Struct):
    name: str | None = None
    namespace: str | None = None
    version: int | None = None
    info: RecordInfo | None = None
    manifest: str | None = None
    hooks: list[RecordHook] | None = None
    chart: RecordChart | None = None


def is_release_name(name: str) -> bool:
    return len(name) <= RELEASE_NAME_MAX and bool(RELEASE_NAME.fullmatch(name))


def check_release_name(name: str) -> str:
    if not is_release_name(name):
        raise UsageError(
            f"invalid release name {quoted(name)}: Helm's release names are lowercase DNS subdomains (a-z, 0-9, '-' "
            f"and '.') of at most {RELEASE_NAME_MAX} characters"
        )
    return name


def inflate(encoded: str | bytes, what: str = "Helm release") -> bytes:
    """The release's JSON from what Helm stores under `release` (base64 of gzip; an older release: of JSON), as
    decodeRelease reads it, its size bounded: the record's by Kubernetes' limit, the JSON by MAX_RELEASE_JSON."""
    if len(encoded) > MAX_RECORD_BYTES:
        raise UsageError(
            f"{what}: the record is larger than {MAX_RECORD_BYTES // 1024} KiB, Kubernetes' limit on a Secret's or "
            "ConfigMap's data"
        )
    try:
        # Go's StdEncoding: padded, the standard alphabet; it skips line breaks
        text = encoded.encode("ascii") if isinstance(encoded, str) else encoded
        data = base64.b64decode(text.replace(b"\r", b"").replace(b"\n", b""), validate=True)
    except (UnicodeEncodeError, binascii.Error, ValueError):
        raise UsageError(f"{what}: the record is not base64") from None
    if len(data) > 3 and data.startswith(GZIP_MAGIC):
        return _gunzip(data, what)
    return data


def _gunzip(data: bytes, what: str) -> bytes:
    """Every gzip member of `data` (Go's gzip.Reader reads concatenated members as one stream), never more than
    MAX_RELEASE_JSON bytes inflated: a gzip bomb is refused as soon as it passes that. The input goes in pieces of
    GUNZIP_PIECE bytes, so that what zlib copies at each member's end (its unused_data) stays small however many
    members there are."""
    view = memoryview(data)
    out: list[bytes] = []
    size = pos = 0
    try:
        while pos < len(data):
            if data[pos : pos + 2] != GZIP_MAGIC[:2]:
                raise UsageError(f"{what}: the record is not valid gzip: data follows its end")
            member = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # 16+: a gzip header and trailer
            while not member.eof:
                if pos == len(data):
                    raise UsageError(f"{what}: the record is not valid gzip: it is cut short")
                piece = view[pos : pos + GUNZIP_PIECE]
                chunk = member.decompress(piece, MAX_RELEASE_JSON - size + 1)  # stops one byte past the cap
                size += len(chunk)
                if size > MAX_RELEASE_JSON:
                    raise UsageError(
                        f"{what}: the record inflates to more than {MAX_RELEASE_JSON // (1024 * 1024)} MiB, kfin's "
                        "limit on a release: refused"
                    )
                out.append(chunk)
                pos += len(piece) - len(member.unused_data)  # below the cap zlib took all of the piece
    except zlib.error:
        raise UsageError(f"{what}: the record is not valid gzip: its deflate data is corrupt") from None
    return b"".join(out)


def decode(encoded: str | bytes, what: str = "Helm release") -> Record:
    """A release from what Helm stores under `release`: the fields kfin reads, typed."""
    data = inflate(encoded, what)
    try:
        return msgspec.json.decode(data, type=Record)
    except msgspec.ValidationError as failure:
        raise UsageError(f"{what}: {_shape_problem(str(failure))}") from None
    except (msgspec.DecodeError, UnicodeDecodeError):
        raise UsageError(f"{what}: the record is not JSON") from None
    except RecursionError:
        raise UsageError(f"{what}: the record is nested too deep to be a release") from None


# msgspec's words for a JSON type -> what it is called in kfin's messages
TYPE_WORDS = {
    "array": "a list",
    "object": "an object",
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "a boolean",
    "null": "null",
}


def _shape_problem(message: str) -> str:
    """msgspec's "Expected `array | null`, got `object` - at `$.hooks`" as "hooks must be a list, not an object"."""
    found = re.fullmatch(r"Expected `(.+?)`, got `(.+?)`(?: - at `\$\.?(.*)`)?", message)
    if not found:
        return message
    expected, got, path = found.groups()
    wanted = [TYPE_WORDS.get(t, t) for t in expected.split(" | ") if t != "null"]
    where = path or "the record"
    return f"{where} must be {' or '.join(wanted)}, not {TYPE_WORDS.get(got, got)}"


def encode(release: JSON) -> str:
    """As Helm writes it (encodeRelease): JSON, gzip at best compression, base64 standard encoding."""
    return base64.b64encode(gzip.compress(json.dumps(release).encode(), compresslevel=9)).decode()


def release_of(record: Record, namespace: str, name: str = "", what: str = "Helm release") -> Release:
    """The release of a decoded record read in `namespace` for the release `name`: its name and namespace checked
    as Helm and the API server would (they go into requests and into the command kfin prints), its hooks' names
    and kinds as the API server's."""
    release_name = record.name or name
    problem = _name_problem(release_name, name)
    if problem:
        raise UsageError(f"{what}: {problem}")
    release_namespace = record.namespace or namespace
    if record.namespace and record.namespace != namespace:  # Helm keeps a release's records in its namespace
        problem = namespace_problem(record.namespace)
        raise UsageError(
            f"{what}: invalid namespace {quoted(record.namespace)}: {problem}"
            if problem
            else f"{what}: its namespace is {quoted(record.namespace)}, not {quoted(namespace)} where its record is"
        )
    hooks: list[JSON] = []
    for at, hook in enumerate(record.hooks or []):
        problem = path_segment_problem(hook.name) if hook.name else None
        if problem:
            raise UsageError(f"{what}: hooks[{at}].name {quoted(hook.name or '')} {problem}")
        if hook.kind and not KIND_TEXT.fullmatch(hook.kind):
            raise UsageError(f"{what}: hooks[{at}].kind {quoted(hook.kind)} is not a kind")
        hooks.append({"name": hook.name, "kind": hook.kind, "events": list(hook.events or []), "path": hook.path})
    files = (record.chart.files if record.chart else None) or []
    crds = [f.name for f in files if f.name and f.name.startswith("crds/")]
    return Release(
        release_name,
        release_namespace,
        record.version or 0,
        (record.info.status if record.info else None) or "",
        parse(record.manifest or "", f"release {release_name}"),
        hooks,
        crds,
    )


def _name_problem(found: str, asked: str) -> str | None:
    if not is_release_name(found):
        return f"invalid release name {quoted(found)}: not a Helm release name"
    if asked and found != asked:
        return f"it is the release {quoted(found)}, not {quoted(asked)}"
    return None


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
    return f"{RECORD_PREFIX}{name}.v{version}"


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
    """The release in one named GET of its record (a Secret's `release` is base64 once more). A record kfin cannot
    read is said in one line naming it: exit 2; a Secret or ConfigMap no API server would answer (its data not
    strings, or larger than Kubernetes lets it be): exit 9."""
    if facts.kube is None:
        raise UsageError("kfin preflight helm reads the release record from a live cluster, not a snapshot")
    name, _, version = record.removeprefix(RECORD_PREFIX).rpartition(".v")
    what = f"release {quoted(name)} version {version}"
    found = facts.kube.read_object(rtype, namespace, record)
    data = found.get("data") or {}
    encoded = data.get("release") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(encoded, str | None):
        raise ShapeError(f"{rtype.kind} {namespace}/{record}: its data is not a map of strings")
    if not encoded:
        raise UsageError(f"{rtype.kind} {namespace}/{record} holds no release")
    limit = MAX_SECRET_VALUE_CHARS if rtype.resource == "secrets" else MAX_RECORD_BYTES
    if len(encoded) > limit:
        raise ShapeError(
            f"{rtype.kind} {namespace}/{record} holds more than {MAX_RECORD_BYTES // 1024} KiB, Kubernetes' limit on "
            f"a {rtype.kind}'s data (MaxSecretSize): no API server stores that"
        )
    stored: str | bytes = encoded
    if rtype.resource == "secrets":
        try:
            stored = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise ShapeError(f"Secret {namespace}/{record}: its data is not base64") from None
    return release_of(decode(stored, what), namespace, name, what)
