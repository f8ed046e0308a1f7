"""Ghosts: objects left stored after their namespace was forced through /finalize with content in it (the
recipe kfin exists to replace). They are still listed across namespaces with their finalizers, but every
write to them answers 404 for the namespace until a namespace of that name exists again (captures 35-37
of causes): nothing can remove their finalizers, their controllers included."""

from __future__ import annotations

from kfin.core.explain.causes.registry import Action, Link, gates
from kfin.core.read.facts import ClusterFacts
from kfin.model import KubeObject


def missing_namespace(obj: KubeObject, facts: ClusterFacts) -> str | None:
    """The namespace of a namespaced object when it no longer exists (and kfin could see that), else None."""
    if not obj.type.namespaced or not obj.namespace:
        return None
    namespaces = facts.namespaces_by_name()
    return None if namespaces is None or obj.namespace in namespaces else obj.namespace


@gates()
def ghost(obj: KubeObject, facts: ClusterFacts) -> list[Link]:
    namespace = missing_namespace(obj, facts)
    if namespace is None:
        return []
    return [
        Link(
            "ghost",
            f'its namespace "{namespace}" no longer exists (forced through /finalize with content '
            "left): the object is still stored, and every write to it answers 404 until the namespace exists "
            "again",
            actor=f"namespace {namespace} (gone)",
            step=(
                Action(f"kubectl create namespace {namespace}", note="or kfin remove ... --recreate-namespace"),
                Action(f"kfin stuck -n {namespace}", when="then", note="deal with its content"),
                Action(f"kubectl delete namespace {namespace}", when="then"),
            ),
            family="ghost",
        )
    ]
