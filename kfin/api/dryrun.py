"""Writes kfin sends only as dry runs (dryRun=All): the server admits them as it would the real write (RBAC,
admission webhooks, ValidatingAdmissionPolicies, storage) and stores nothing. Sent as another user (the
namespace controller's ServiceAccount, a finalizer's controller) with Impersonate-User when kfin's user may
impersonate that user, which a SelfSubjectAccessReview tells beforehand.

A ServiceAccount is impersonated by its user name alone: kube-apiserver then gives it the groups its token
would carry (system:serviceaccounts, system:serviceaccounts:NAMESPACE, system:authenticated), and an
Impersonate-Group header would need the right to impersonate groups as well
(k8s.io/apiserver/pkg/endpoints/filters/impersonation.go).
"""

from __future__ import annotations

import json

from kfin.api.access import may
from kfin.api.connection import Kube
from kfin.api.kubeconfig_types import header_safe
from kfin.api.paths import resource_path
from kfin.api.transport import APPLICATION_JSON
from kfin.model import JSON, Answer, Write
from kfin.names import check_name, check_namespace

SERVICE_ACCOUNT = "system:serviceaccount:"
PATCH_TYPES = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}


def split_service_account(user: str) -> tuple[str, str] | None:
    """(namespace, name) of a ServiceAccount's user name, as kube-apiserver splits it; None for another user."""
    if not user.startswith(SERVICE_ACCOUNT):
        return None
    namespace, _, name = user[len(SERVICE_ACCOUNT) :].partition(":")
    return (namespace, name) if namespace and name and ":" not in name else None


def may_impersonate(kube: Kube, user: str) -> bool:
    """Whether kfin's user may impersonate `user` (a SelfSubjectAccessReview of verb impersonate on the
    ServiceAccount, or on users for another name); False when the review cannot be had."""
    account = split_service_account(user)
    if account:
        return may(kube, "impersonate", "", "serviceaccounts", account[0], account[1]) is True
    return may(kube, "impersonate", "", "users", None, user) is True


def send(kube: Kube, write: Write, impersonate: bool) -> Answer:
    """The write with dryRun=All, as `write.actor` when `impersonate`; never stored. A failure to reach the
    server raises, as any request."""
    check_name(write.name)
    if write.namespace:
        check_namespace(write.namespace)
    path = resource_path(write.rtype, write.namespace, write.name)
    # a name from managedFields, sent in a header
    actor = write.actor if impersonate and write.actor and header_safe(write.actor) else None
    headers = {"Impersonate-User": actor} if actor else None
    method, content_type = {"delete": ("DELETE", APPLICATION_JSON), "update": ("PUT", APPLICATION_JSON)}.get(
        write.verb, ("PATCH", PATCH_TYPES[write.patch_type])
    )
    body = json.loads(write.body)
    if write.verb == "delete":  # a DELETE with a body takes its options from the body alone, dryRun included
        body = dict(body, dryRun=["All"])
    answer = kube.send(
        method,
        path,
        {"dryRun": "All"},
        body=body,
        content_type=content_type,
        what=(write.verb, write.rtype.qualified, write.namespace),
        headers=headers,
        check=False,
    )
    status, data = answer.status, answer.body
    sent_as = write.actor if headers else None
    try:
        parsed = json.loads(data) if data else {}
    except (ValueError, RecursionError):
        parsed = {}
    parsed = parsed if isinstance(parsed, dict) else {}
    if 200 <= status < 300:
        return Answer(status, "", "", sent_as, {}, returned_finalizers(parsed))
    text = parsed.get("message") or data[:500].decode(errors="replace").strip()
    details = parsed["details"] if isinstance(parsed.get("details"), dict) else {}
    return Answer(status, str(parsed.get("reason") or ""), str(text), sent_as, details)


def returned_finalizers(answer: JSON) -> tuple[str, ...] | None:
    """metadata.finalizers of the object a write returned (as admission and the server left it); None for a
    Status, or an answer that is no object."""
    meta = answer.get("metadata")
    if answer.get("kind") == "Status" or not isinstance(meta, dict):
        return None
    finalizers = meta.get("finalizers") or []
    return tuple(f for f in finalizers if isinstance(f, str)) if isinstance(finalizers, list) else None
