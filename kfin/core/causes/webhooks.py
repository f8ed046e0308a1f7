"""Admission webhooks that fail closed: a Validating- or MutatingWebhookConfiguration whose rules match an
UPDATE of the object, with `failurePolicy: Fail` (the default) and a backend that cannot answer, rejects
every finalizer removal, its own controller's included (captures 12-16 of causes). It is the root cause of
every finalizer of the object, whatever each one protects."""

from __future__ import annotations

from kfin.core.causes.registry import EVERYWHERE, Link, gates
from kfin.core.facts import ClusterFacts
from kfin.model import KubeObject

GROUP = "admissionregistration.k8s.io"
KINDS = ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")


def _has(values: list[str] | None, wanted: str) -> bool:
    return "*" in (values or []) or wanted in (values or [])


def rule_matches(rule: dict, obj: KubeObject) -> bool:
    """Does an admission rule match an UPDATE of the object itself (no subresource)?"""
    scope = rule.get("scope") or "*"
    if scope != "*" and scope != ("Namespaced" if obj.type.namespaced else "Cluster"):
        return False
    resources = rule.get("resources") or []
    return (
        _has(rule.get("operations"), "UPDATE")
        and _has(rule.get("apiGroups"), obj.type.group)
        and _has(rule.get("apiVersions"), obj.type.version)
        and ("*" in resources or obj.type.resource in resources)
    )


def selector_matches(selector: dict | None, labels: dict) -> bool:
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, values = expression.get("key"), expression.get("values") or []
        present, operator = key in labels, expression.get("operator")
        if (
            (operator == "In" and (not present or labels[key] not in values))
            or (operator == "NotIn" and present and labels[key] in values)
            or (operator == "Exists" and not present)
            or (operator == "DoesNotExist" and present)
        ):
            return False
    return True


def backend_problem(hook: dict, facts: ClusterFacts) -> str | None:
    """Why the webhook's backend cannot answer, or None when it looks healthy."""
    config = hook.get("clientConfig") or {}
    service = config.get("service")
    if not service:
        return f"it calls {config.get('url', 'a URL')}, which kfin cannot check" if config.get("url") else None
    namespace, name = service.get("namespace", ""), service.get("name", "")
    services = facts.objects("", "services", namespace)
    if services is None:
        return None  # not readable: no claim either way
    if not any(s.name == name for s in services):
        return f"its Service {namespace}/{name} does not exist"
    slices = facts.objects("discovery.k8s.io", "endpointslices", namespace, full=True)
    if slices is None:
        return None
    mine = [s for s in slices if (s.meta.get("labels") or {}).get("kubernetes.io/service-name") == name]
    ready = [
        e for s in mine for e in s.raw.get("endpoints") or [] if ((e.get("conditions") or {}).get("ready")) is not False
    ]
    return None if ready else f"its Service {namespace}/{name} has no ready endpoints"


@gates(
    reads=((GROUP, "validatingwebhookconfigurations", EVERYWHERE), (GROUP, "mutatingwebhookconfigurations", EVERYWHERE))
)
def failing_webhooks(obj: KubeObject, facts: ClusterFacts) -> list[Link]:
    links = []
    namespace_labels: dict[str, str] = {}
    if obj.namespace:
        ns = (facts.namespaces_by_name() or {}).get(obj.namespace)
        namespace_labels = (ns.meta.get("labels") or {}) if ns else {}
    for kind in KINDS:
        for config in facts.objects(GROUP, kind, full=True) or []:
            for hook in config.raw.get("webhooks") or []:
                if (hook.get("failurePolicy") or "Fail") != "Fail":
                    continue
                if not any(rule_matches(r, obj) for r in hook.get("rules") or []):
                    continue
                if obj.namespace and not selector_matches(hook.get("namespaceSelector"), namespace_labels):
                    continue
                if not selector_matches(hook.get("objectSelector"), obj.meta.get("labels") or {}):
                    continue
                problem = backend_problem(hook, facts)
                if problem is None:
                    continue
                conditions = " (its matchConditions were not evaluated)" if hook.get("matchConditions") else ""
                singular = (
                    "validatingwebhookconfiguration"
                    if kind.startswith("validating")
                    else "mutatingwebhookconfiguration"
                )
                links.append(
                    Link(
                        "webhook",
                        f"webhook {hook.get('name')} of {config.type.kind} {config.name} "
                        f"rejects every UPDATE of it (failurePolicy Fail): {problem}{conditions}",
                        target=config,
                        step=f"restore the backend of webhook {hook.get('name')}, or kubectl delete "
                        f"{singular} {config.name} if its operator was uninstalled",
                        risk="deleting the webhook configuration lifts the check it enforces for every "
                        "matching request until its operator puts it back",
                    )
                )
    return links
