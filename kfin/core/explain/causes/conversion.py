"""CRDs whose conversion webhook cannot be called (its Service is missing or has no ready endpoints): every
read or write of their resources in another version than the stored one fails, so the namespace controller
cannot list them to delete them (the namespace never goes) and kfin's own list of them fails too. Named as the
root cause on both."""

from __future__ import annotations

from kfin.core.explain.causes.registry import Action
from kfin.core.explain.causes.webhooks import backend_problem
from kfin.core.read.facts import ClusterFacts
from kfin.model import CRDS, KubeObject


def failing_conversions(facts: ClusterFacts) -> list[tuple[KubeObject, str]]:
    """(CRD, why its conversion webhook cannot be called) of every CRD converting through a webhook whose
    backend kfin sees is gone."""
    out = []
    for crd in facts.objects(*CRDS, full=True) or []:
        conversion = (crd.raw.get("spec") or {}).get("conversion") or {}
        if not isinstance(conversion, dict) or conversion.get("strategy") != "Webhook":
            continue
        client = (conversion.get("webhook") or {}).get("clientConfig") or {}
        problem = backend_problem({"clientConfig": client}, facts) if isinstance(client, dict) else None
        if problem:
            out.append(
                (crd, f"the conversion webhook of CustomResourceDefinition {crd.name} cannot be called: {problem}")
            )
    return out


def conversion_step(crd: KubeObject) -> tuple[Action, ...]:
    client = (((crd.raw.get("spec") or {}).get("conversion") or {}).get("webhook") or {}).get("clientConfig") or {}
    service = client.get("service") or {}
    where = f"Service {service.get('namespace')}/{service.get('name')}" if service else "its URL"
    return (
        Action(None, note=f"restore the conversion webhook of CustomResourceDefinition {crd.name} ({where})"),
        Action(None, when="instead, if its operator was uninstalled", note="set its conversion strategy back to None"),
    )
