"""What kfin's user may do, as the API server's authorizers answer it (a SelfSubjectAccessReview): asked before
kfin names a step only some users can take."""

from __future__ import annotations

from kfin.api.connection import Kube
from kfin.api.paths import api_path
from kfin.errors import KfinError


def may(
    kube: Kube, verb: str, group: str, resource: str, namespace: str | None = None, name: str | None = None
) -> bool | None:
    """Whether kfin's user may `verb` the resource (a SelfSubjectAccessReview); None when the review cannot be
    had (the server refused it, or could not be reached)."""
    attributes = {"verb": verb, "group": group, "resource": resource}
    if namespace:
        attributes["namespace"] = namespace
    if name:
        attributes["name"] = name
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    path = api_path("apis", "authorization.k8s.io", "v1", "selfsubjectaccessreviews")
    try:
        answer = kube.request(  # a review stores nothing; dryRun=All all the same, as every write of a reading command
            "POST", path, {"dryRun": "All"}, body=review, what=("create", "selfsubjectaccessreviews", None)
        )
    except KfinError:
        return None
    status = answer.get("status") if isinstance(answer, dict) else None
    if not isinstance(status, dict):
        return None
    return status.get("allowed") is True
