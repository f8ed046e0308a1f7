"""Why kfin's own list of a resource type failed, when the cluster says: the CRD's conversion webhook cannot
be called, the APIService that serves the type is unavailable, or kube-apiserver cannot read what it stored of
the type. The same causes keep the namespace controller from deleting a namespace's content or from finishing, so
they are named on kfin's warning too, never left as a bare server error."""

from __future__ import annotations

import re

from msgspec import Struct, field

from kfin.api.paths import resource_path
from kfin.core.explain.causes.conversion import failing_conversions
from kfin.core.explain.causes.registry import Action, Context, Finding, Link, Verdict, prose
from kfin.core.read.facts import ClusterFacts
from kfin.model import STORAGE_READ_ERROR, Failure, ResourceType


def _unavailable_apiservices(facts: ClusterFacts) -> list[tuple[str, str]]:
    """(group, why) of every APIService that is not Available."""
    out = []
    for service in facts.objects("apiregistration.k8s.io", "apiservices", full=True) or []:
        group = str((service.raw.get("spec") or {}).get("group") or "")
        for condition in (service.raw.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "Available" and condition.get("status") == "False":
                out.append(
                    (
                        group,
                        f"the APIService {service.name} that serves it is unavailable "
                        f"({condition.get('reason')}: {condition.get('message')})",
                    )
                )
    return out


def list_failure_causes(facts: ClusterFacts) -> dict[str, str]:
    """For each failed list whose cause kfin can name: that cause, by the failure's target."""
    failed = [f.target for f in facts.inventory.failures if f.what == "list"]
    if not failed:
        return {}
    causes = {}
    for crd, why in failing_conversions(facts):
        for target in failed:
            if target == crd.name or target.startswith(crd.name + " "):
                causes[target] = why
    for group, why in _unavailable_apiservices(facts):
        for target in failed:
            resource = target.split(" ")[0]
            if group and resource.endswith("." + group):
                causes.setdefault(target, why)
    named = set()  # one storage cause per type, on its widest failed list (a namespace's is read again after)
    for failure in sorted(facts.inventory.failures, key=lambda f: IN_NAMESPACE in f.target):
        resource = failure.target.partition(IN_NAMESPACE)[0]
        if (
            failure.what == "list"
            and storage_failure(failure)
            and failure.target not in causes
            and resource not in named
        ):
            named.add(resource)
            keys = f" (keys {', '.join(failure.keys)})" if failure.keys else ""
            causes[failure.target] = (
                f"kube-apiserver cannot read what it stored of {resource}{keys}: undecodable or undecryptable "
                "(kfin explain on a namespace it holds names the ways out)"
            )
    return causes


# --- objects kube-apiserver cannot read from storage (KEP-3926) -------------------------------------------------
# A stored object whose bytes cannot be decoded or decrypted (a lost encryption key, a bad write) fails every list
# and deletion of its type where it lies, the namespace controller's included: its namespace never goes. What a
# real v1.36.2 control plane answered, bytes that are no protobuf written under /registry/configmaps/NS/NAME:
# - the AllowUnsafeMalformedObjectDeletion feature gate off (alpha, off by default in v1.36:
#   staging/src/k8s.io/apiserver/pkg/features/kube_features.go): a list (limit=500) and a GET, 500 with the
#   decoder's bare error and no reason, "proto: wrong wireType = 7 for field TypeMeta"; the namespace controller's
#   NamespaceDeletionContentFailure "Failed to delete all resource types, 1 remaining: proto: wrong wireType ...";
# - the gate on: a list, 500 reason StorageReadError "failed to read one or more configmaps from the storage",
#   details.causes[].field the key "/registry/configmaps/NS/NAME" (message "StorageError: corrupt object, Code: 7,
#   Key: ..., AdditionalErrorMsg: object not decodable ..."), the namespace controller's deletion the same;
#   a GET, 500 InternalError "Internal error occurred: StorageError: corrupt object ...".
# An undecryptable object answers "... data from the storage is not transformable ..." ("no matching prefix found"
# without the gate): test/integration/controlplane/transformation/transformation_test.go.
DECODE_FAILURE = re.compile(
    r"^proto: |StorageError: corrupt object|object not decodable|not transformable|no matching prefix found"
)
STORAGE_READ_LIST = re.compile(r"failed to read one or more (\S+) from the storage")
SERVER_SUFFIX = re.compile(r" \(\d{3} [^)]*\)$")  # kfin's "(500 Internal Server Error)" after the server's message
IN_NAMESPACE = " in namespace "
GATE = "AllowUnsafeMalformedObjectDeletion"
DELETE_OPTION = "ignoreStoreReadErrorWithClusterBreakingPotential"
# the verb the delete option needs on the object's resource: k8s.io/apiserver's unsafedeletepolicy admission
# answers 'not permitted to do "unsafe-delete-ignore-read-errors"' without it (and so does
# test/integration/controlplane/transformation/transformation_test.go); a dry run of it is refused (422 "cannot
# be set together with .dryRun", seen on the real tier), so kfin asks a SelfSubjectAccessReview
UNSAFE_DELETE_VERB = "unsafe-delete-ignore-read-errors"
UNSAFE_DELETE_RISK = (
    f"deleting with {DELETE_OPTION} removes the key from etcd without reading it: its finalizers, preconditions and "
    "the type's after-delete hooks are skipped (staging/src/k8s.io/apiserver/pkg/registry/generic/registry/"
    "corrupt_obj_deleter.go), so whatever its finalizers and owners would have cleaned up stays, and what reads it "
    "(a workload that mounts it) may break"
)


def storage_failure(failure: Failure) -> bool:
    """Whether a failed read is the server failing to decode or decrypt what it stored."""
    return failure.reason == STORAGE_READ_ERROR or bool(DECODE_FAILURE.search(failure.message))


class Unreadable(Struct):
    """Objects of one type in one namespace that kube-apiserver cannot read from storage."""

    resource: str  # kubectl's resource.group form
    rtype: ResourceType | None
    namespace: str
    message: str  # the server's own message
    keys: list[str]  # the storage keys, where the server names them (the feature gate on)
    gate: bool | None  # AllowUnsafeMalformedObjectDeletion on the API server that answered, as its answer shows
    confirmed: bool  # the namespace controller's condition reports the same failure
    failed: list[str] = field(default_factory=list)  # kfin's own failed reads, as warned

    @property
    def what(self) -> str:
        return f"{self.resource} in namespace {self.namespace}"


def _server_message(failure: Failure) -> str:
    return SERVER_SUFFIX.sub("", failure.message)


def _in_namespace(key: str, namespace: str) -> bool:
    parts = key.rstrip("/").split("/")
    return len(parts) >= 2 and parts[-2] == namespace


def unreadable_content(facts: ClusterFacts, namespace: str, failed_content: str) -> list[Unreadable]:
    """The types of which the namespace holds objects kube-apiserver cannot read from storage: from kfin's own
    failed lists (of that namespace, or cluster-wide naming keys in it), and from the namespace controller's
    condition (`failed_content`), which a StorageReadError names by resource."""
    types = {r.qualified: r for r in facts.inventory.resources if r.namespaced}
    found: dict[str, Unreadable] = {}
    for failure in facts.inventory.failures:
        if failure.what != "list" or not storage_failure(failure):
            continue
        resource, _, where = failure.target.partition(IN_NAMESPACE)
        keys = [k for k in failure.keys if _in_namespace(k, namespace)]
        if (where or namespace) != namespace or resource not in types or (not where and not keys):
            continue
        message = _server_message(failure)
        entry = found.setdefault(resource, Unreadable(resource, types[resource], namespace, message, [], None, False))
        entry.keys = list(dict.fromkeys(entry.keys + keys))
        entry.failed.append(f"{failure.target}: {failure.message}")
        entry.gate = True if failure.reason == STORAGE_READ_ERROR else (entry.gate or False)
        if failure.reason == STORAGE_READ_ERROR:
            entry.message = message
        entry.confirmed = entry.confirmed or bool(failed_content and message in failed_content)
    for resource in STORAGE_READ_LIST.findall(failed_content):
        if resource in types:
            entry = found.setdefault(
                resource,
                Unreadable(
                    resource,
                    types[resource],
                    namespace,
                    f"failed to read one or more {resource} from the storage",
                    [],
                    True,
                    True,
                ),
            )
            entry.confirmed = True
    return list(found.values())


def _may_unsafe_delete(facts: ClusterFacts, item: Unreadable, name: str | None) -> bool | None:
    """Whether kfin's user holds the verb the delete option needs (a SelfSubjectAccessReview); None when it
    cannot be asked (a snapshot) or had no answer."""
    if item.rtype is None:
        return None
    return facts.may(UNSAFE_DELETE_VERB, item.rtype.group, item.rtype.resource, item.namespace, name)


def _way_out(facts: ClusterFacts, item: Unreadable) -> tuple[tuple[Action, ...], list[str]]:
    """The step that frees the namespace of one unreadable type, and the evidence behind it (gate, verb)."""
    names = [k.rstrip("/").rsplit("/", 1)[-1] for k in item.keys]
    if item.gate:
        gate = f"the {GATE} feature gate is on (the API server answered {STORAGE_READ_ERROR})"
    elif item.gate is False:
        gate = (
            f"the {GATE} feature gate is off on the API server that answered (its list answered the decoder's bare "
            f"error; with the gate on it answers {STORAGE_READ_ERROR}, naming the keys): turn it on in "
            "kube-apiserver's --feature-gates (alpha, off by default)"
        )
    else:
        gate = f"it needs the {GATE} feature gate on kube-apiserver (alpha, off by default)"
    allowed = _may_unsafe_delete(facts, item, names[0] if len(names) == 1 else None)
    verb = f"the verb {UNSAFE_DELETE_VERB} on {item.resource} in namespace {item.namespace}"
    if allowed is True:
        access = f"you have {verb} (SelfSubjectAccessReview)"
    elif allowed is False:
        access = f"you do not have {verb} (SelfSubjectAccessReview): a cluster admin must grant it or do it"
    else:
        access = f"it needs {verb} (kfin did not check whether you have it)"
    body = f'{{"apiVersion":"v1","kind":"DeleteOptions","{DELETE_OPTION}":true}}'
    restore = Action(
        None,
        when=f"if {item.what} became unreadable when an encryption key was lost or rotated out",
        note="put that key back in kube-apiserver's --encryption-provider-config: they read again and the namespace "
        "controller carries on",
    )
    otherwise = (
        "otherwise"
        if item.gate
        else f"otherwise ({GATE} feature gate " + ("off here: turn it on)" if item.gate is False else "needed)")
    )
    why = f"delete option {DELETE_OPTION}=true, which kfin never sends; {access.split(' (')[0]}"
    if item.rtype is not None and names:
        deletes = tuple(
            Action(
                f"echo '{body}' | kubectl delete --raw {resource_path(item.rtype, item.namespace, name)} -f -",
                when=otherwise,
                note=why,
            )
            for name in names
        )
    else:
        prefix = f"/registry/{item.rtype.resource if item.rtype else item.resource}/{item.namespace}/"
        deletes = (
            Action(
                None,
                when=otherwise,
                note=f"delete each unreadable one with kubectl delete --raw PATH -f - and a DeleteOptions body "
                f"setting {DELETE_OPTION}: true (the server names them only with the gate on; etcdctl get --prefix "
                f"--keys-only {prefix} lists their keys, under the default --etcd-prefix); {why}",
            ),
        )
    return (restore, *deletes), [gate, access]


def storage_finding(ctx: Context, items: list[Unreadable], failed_content: str, risk: str) -> Finding:
    """A namespace that holds objects kube-apiserver cannot read: the namespace controller can never delete them,
    so it never finishes. BLOCKED where the server said so itself (StorageReadError) or the controller's condition
    reports the failure kfin's own list had; UNKNOWN while only kfin's list shows a decode error."""
    steps, evidence = [], []
    for item in items:
        step, why = _way_out(ctx.facts, item)
        steps.append(step)
        keys = f" (keys {', '.join(item.keys)})" if item.keys else ""
        evidence.append(f"kube-apiserver cannot read {item.what} from storage{keys}: {item.message}")
        evidence += [f"kfin could not list {line}" for line in item.failed] + why
    if failed_content:
        evidence.append(f"condition NamespaceDeletionContentFailure: {failed_content}")
    certain = all(i.gate or i.confirmed for i in items)
    what = "; ".join(
        f"{i.what} from storage ({'keys ' + ', '.join(i.keys) + ': ' if i.keys else ''}{i.message})" for i in items
    )
    condition = f"kube-apiserver cannot read {what}: undecodable or undecryptable, so the namespace controller " + (
        "can never list or delete them and never finishes" if certain else "cannot delete them either"
    )
    return ctx.finding(
        condition if certain else condition + " (its condition does not say so yet)",
        Verdict.BLOCKED if certain else Verdict.UNKNOWN,
        fix=prose(a for step in steps for a in step),
        risk=f"{UNSAFE_DELETE_RISK}; {risk}",
        evidence=evidence,
        controller="kube-controller-manager (namespace controller)",
        summary=(
            f"{', '.join(i.what for i in items)} cannot be read from storage ({items[0].message}): the namespace "
            "controller can never finish"
        ),
        links=[
            Link(
                "unreadable-storage",
                f"kube-apiserver cannot read {item.what} from storage: {item.message}",
                actor=f"storage of {item.what}" + (f" ({', '.join(item.keys)})" if item.keys else ""),
                step=step,
            )
            for item, step in zip(items, steps, strict=True)
        ],
    )
