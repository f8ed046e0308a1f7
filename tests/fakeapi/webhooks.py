"""Admission webhooks as kube-apiserver calls them, for a fake that can reach no backend.

A request that a Validating- or MutatingWebhookConfiguration matches (operation, group, version,
resource and subresource, scope; namespaceSelector against its namespace's labels; objectSelector
against the object's labels) is sent to the webhook's Service. The fake has no network behind its
Services, so every matched webhook fails to be called: with `failurePolicy: Fail` (the default) the
request answers 500 `failed calling webhook` (captures 12-16 of causes), with Ignore it goes on.
matchConditions are not evaluated (as if they matched). The webhook configurations themselves are
never sent to a webhook, so that a broken one can always be deleted.

The namespace controller's deletions of a namespace's content are admitted too (as DELETE, object by object:
tests/fakeapi/controllers.py), and the garbage collector's of dependents. Simplification: the fake's other controllers write around admission.
"""

from . import status as st

KINDS = ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
GROUP = "admissionregistration.k8s.io"


def _matches(values: list, wanted: str) -> bool:
    return "*" in (values or []) or wanted in (values or [])


def _resource_matches(resources: list, resource: str, subresource: str) -> bool:
    wanted = f"{resource}/{subresource}" if subresource else resource
    for entry in resources or []:
        name, _, sub = entry.partition("/")
        if entry == wanted or (not subresource and entry == "*"):
            return True
        if subresource and (entry == "*/*" or (name == "*" and sub == subresource) or (name == resource and sub == "*")):
            return True
    return False


def rule_matches(rule: dict, operation: str, rt, subresource: str) -> bool:
    scope = rule.get("scope") or "*"
    if scope != "*" and scope != ("Namespaced" if rt.namespaced else "Cluster"):
        return False
    return (_matches(rule.get("operations"), operation) and _matches(rule.get("apiGroups"), rt.group)
            and _matches(rule.get("apiVersions"), rt.version)
            and _resource_matches(rule.get("resources"), rt.name, subresource))


def selector_matches(selector: dict | None, labels: dict) -> bool:
    """A LabelSelector (matchLabels and matchExpressions); an empty one matches everything."""
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        present = key in labels
        if operator == "In" and (not present or labels[key] not in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def _call_error(cluster, hook: dict) -> str:
    """Why the webhook cannot be called from here (always: the fake has no backends)."""
    config = hook.get("clientConfig") or {}
    timeout = hook.get("timeoutSeconds") or 10
    service = config.get("service")
    if not service:
        return f'failed to call webhook: Post "{config.get("url", "")}?timeout={timeout}s": dial tcp: connection refused'
    name, namespace = service.get("name", ""), service.get("namespace", "")
    url = f"https://{name}.{namespace}.svc:{service.get('port') or 443}{service.get('path') or '/'}?timeout={timeout}s"
    if cluster.find(cluster.types[("", "services")], namespace, name) is None:
        reason = f'service "{name}" not found'
    else:
        reason = f'no endpoints available for service "{name}"'
    return f'failed to call webhook: Post "{url}": {reason}'


def admit(cluster, operation: str, rt, namespace: str | None, subresource: str, labels: dict):
    """Raise what kube-apiserver answers when a matched webhook with failurePolicy Fail cannot be called."""
    if rt.group == GROUP and rt.name in KINDS:
        return
    ns_labels = {}
    if namespace:
        ns = cluster.find(cluster.types[("", "namespaces")], "", namespace)
        ns_labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
    elif rt.key == ("", "namespaces"):
        ns_labels = labels
    for kind in KINDS:
        for config in cluster.list(cluster.types[(GROUP, kind)], None):
            for hook in config.get("webhooks") or []:
                if not any(rule_matches(r, operation, rt, subresource) for r in hook.get("rules") or []):
                    continue
                if (namespace or rt.key == ("", "namespaces")) and \
                        not selector_matches(hook.get("namespaceSelector"), ns_labels):
                    continue
                if not selector_matches(hook.get("objectSelector"), labels):
                    continue
                if (hook.get("failurePolicy") or "Fail") == "Ignore":
                    continue
                message = f'failed calling webhook "{hook.get("name")}": {_call_error(cluster, hook)}'
                raise st.failure(500, "InternalError", f"Internal error occurred: {message}",
                                 {"causes": [{"message": message}]})
