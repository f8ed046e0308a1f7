"""Why kfin's own list of a resource type failed, when the cluster says: the CRD's conversion webhook cannot
be called, or the APIService that serves the type is unavailable. The same causes stop the namespace
controller, so they are named on kfin's warning too, never left as a bare server error."""

from __future__ import annotations

from kfin.core.causes.conversion import failing_conversions
from kfin.core.facts import ClusterFacts


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
    return causes
