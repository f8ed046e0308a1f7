"""Admission webhooks that fail closed: a Validating- or MutatingWebhookConfiguration whose rules match an
operation, with `failurePolicy: Fail` (the default) and a backend that cannot answer, rejects every request it
matches. On an UPDATE of the object it rejects every finalizer removal, its own controller's included
(captures 12-16 of causes): the root cause of every finalizer of the object, whatever each one protects. On a
DELETE it rejects the namespace controller's deletion of a namespace's content (kfin.core.explain.causes.namespace)
and the garbage collector's of an owner's dependents (kfin.core.explain.causes.gc)."""

from __future__ import annotations

from msgspec import Struct

from kfin.core.explain.causes.registry import EVERYWHERE, Action, Link, gates
from kfin.core.read.facts import ClusterFacts
from kfin.model import JSON, KubeObject, ResourceType

GROUP = "admissionregistration.k8s.io"
KINDS = ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")


def _has(values: list[str] | None, wanted: str) -> bool:
    return "*" in (values or []) or wanted in (values or [])


def rule_matches(rule: JSON, rtype: ResourceType, operation: str = "UPDATE") -> bool:
    """Does an admission rule match `operation` on objects of a type (the objects themselves, no subresource)?"""
    scope = rule.get("scope") or "*"
    if scope != "*" and scope != ("Namespaced" if rtype.namespaced else "Cluster"):
        return False
    resources = rule.get("resources") or []
    return (
        _has(rule.get("operations"), operation)
        and _has(rule.get("apiGroups"), rtype.group)
        and _has(rule.get("apiVersions"), rtype.version)
        and ("*" in resources or rtype.resource in resources)
    )


def selector_matches(selector: JSON | None, labels: JSON) -> bool:
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


def backend_problem(hook: JSON, facts: ClusterFacts) -> str | None:
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


class Rejection(Struct):
    """A webhook that rejects an operation on objects: its configuration, its name, why its backend cannot
    answer."""

    config: KubeObject
    hook: str
    problem: str
    conditions: str  # " (its matchConditions were not evaluated)" or ""

    @property
    def step(self) -> tuple[Action, ...]:
        singular = self.config.type.kind.lower()
        return (
            Action(None, note=f"restore the backend of webhook {self.hook}"),
            Action(f"kubectl delete {singular} {self.config.name}", when="instead, if its operator was uninstalled"),
        )


def rejecting_webhooks(
    facts: ClusterFacts, rtype: ResourceType, operation: str, namespace: str, labels: list[JSON]
) -> list[Rejection]:
    """The webhooks failing closed whose rules match `operation` on objects of `rtype` in `namespace` with one of
    the `labels` (an object selector matches an object's labels), and whose backend cannot answer. A webhook called
    by URL, which kfin cannot call itself, is left to the server's answer where a dry run can ask it (the writes
    whose gates these are are sent as dry runs: kfin.core.explain.causes.dryrun); only without one is it named, as
    unchecked."""
    asked = facts.kube is not None and facts.dry_runs_allowed
    namespace_labels: dict[str, str] = {}
    if namespace:
        ns = (facts.namespaces_by_name() or {}).get(namespace)
        namespace_labels = (ns.meta.get("labels") or {}) if ns else {}
    found = []
    for kind in KINDS:
        for config in facts.objects(GROUP, kind, full=True) or []:
            for hook in config.raw.get("webhooks") or []:
                if (hook.get("failurePolicy") or "Fail") != "Fail":
                    continue
                if not any(rule_matches(r, rtype, operation) for r in hook.get("rules") or []):
                    continue
                if namespace and not selector_matches(hook.get("namespaceSelector"), namespace_labels):
                    continue
                if not any(selector_matches(hook.get("objectSelector"), each) for each in labels):
                    continue
                if asked and not (hook.get("clientConfig") or {}).get("service"):
                    continue  # by URL: the dry run's answer says whether it rejects, not its configuration
                problem = backend_problem(hook, facts)
                if problem is None:
                    continue
                conditions = " (its matchConditions were not evaluated)" if hook.get("matchConditions") else ""
                found.append(Rejection(config, str(hook.get("name")), problem, conditions))
    return found


def hook_named(facts: ClusterFacts, name: str) -> KubeObject | None:
    """The webhook configuration that holds a webhook of this name (as an API server's error names it)."""
    for kind in KINDS:
        for config in facts.objects(GROUP, kind, full=True) or []:
            if any(hook.get("name") == name for hook in config.raw.get("webhooks") or []):
                return config
    return None


def service_problem(facts: ClusterFacts, name: str) -> str | None:
    """Why the Service behind the webhook of this name cannot answer, as its configuration shows; None for a
    webhook called by URL or one whose Service looks healthy (or that kfin cannot find)."""
    for kind in KINDS:
        for config in facts.objects(GROUP, kind, full=True) or []:
            for hook in config.raw.get("webhooks") or []:
                if hook.get("name") == name and (hook.get("clientConfig") or {}).get("service"):
                    return backend_problem(hook, facts)
    return None


RISK = (
    "deleting the webhook configuration lifts the check it enforces for every matching request until its operator "
    "puts it back"
)


@gates(
    reads=((GROUP, "validatingwebhookconfigurations", EVERYWHERE), (GROUP, "mutatingwebhookconfigurations", EVERYWHERE))
)
def failing_webhooks(obj: KubeObject, facts: ClusterFacts) -> list[Link]:
    return [
        Link(
            "webhook",
            f"webhook {r.hook} of {r.config.type.kind} {r.config.name} rejects every UPDATE of it (failurePolicy "
            f"Fail): {r.problem}{r.conditions}",
            target=r.config,
            step=r.step,
            risk=RISK,
        )
        for r in rejecting_webhooks(facts, obj.type, "UPDATE", obj.namespace, [obj.meta.get("labels") or {}])
    ]
