"""Custom finalizers: find, in the cluster itself, the controller that could remove one.

The controller of a resource must be allowed to update or patch it. kfin follows RBAC from the
resource to the subjects granted that (by ClusterRoles and Roles naming the resource or its group, or
any with wildcards; `system:` roles count where they name the resource, since kube-controller-manager's
rights come from them; the defaults every cluster has, cluster-admin, admin and edit, are no evidence),
then from ServiceAccounts to the Pods running as them and the Deployments and StatefulSets behind them.
WAITING needs more than a controller that runs: it must be shown to own that finalizer name, by the field manager
that added it (managedFields) being that controller (its ServiceAccount, its workload's name or app label, or one of
its containers' names), or by the same name on other objects of the type that it added. A finalizer a person added
(kubectl) or one no running controller is shown to own is UNKNOWN, who added it named. A controller that runs outside
the cluster under a user's identity (`kopf run` on a laptop) shows itself by its writes: recent ones by the field
manager that added the finalizer make it WAITING, never ORPHANED.
ORPHANED needs all of it to come up empty: no grant to anyone kfin cannot follow (a User or Group), no
workload, no running workload of the field manager that added the finalizer, and no recent write by it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from msgspec import Struct

from kfin.core.explain.causes.dryrun import controller_removal
from kfin.core.explain.causes.registry import (
    EVERYWHERE,
    OBJECT_NAMESPACE,
    WORKLOADS,
    Action,
    Context,
    Finding,
    Link,
    Verdict,
    condition,
    explains,
    kfin_remove_command,
)
from kfin.core.read.facts import ClusterFacts, Worked
from kfin.model import JSON, MANAGERS, KubeObject, parse_time
from kfin.util.durations import format_age

RBAC = "rbac.authorization.k8s.io"
DEFAULT_ROLES = ("cluster-admin", "admin", "edit")
WRITE_VERBS = {"update", "patch", "*"}
# Field managers of the tools people type into (kube-apiserver names a writer that gives none by its user agent's
# first word: kubectl sends its command, kubectl-edit, kubectl-patch, kubectl-client-side-apply): not a controller
PERSON_TOOLS = re.compile(r"^(kubectl(-[a-z-]+)?|k9s)$")
RECENT_WRITE = 600  # seconds: a field manager that wrote to objects of the type this recently still acts
MOST_WRITES_READ = 4  # objects of a type and namespace read whole for when the field manager last wrote to them


class Grant(Struct, frozen=True):
    """A subject that RBAC lets update or patch the objects a custom finalizer sits on, and the role that does."""

    role: str  # "ClusterRole foo-operator" or "Role ns/foo"
    namespace: str  # the ServiceAccount's ("" for a User or Group)
    service_account: str  # its name (a User's or Group's name when subject_kind says so)
    subject_kind: str = "ServiceAccount"

    @property
    def subject(self) -> str:
        if self.subject_kind == "ServiceAccount":
            return f"ServiceAccount {self.namespace}/{self.service_account}"
        return f"{self.subject_kind} {self.service_account}"


def _grants_write(rule: JSON, group: str, resource: str, by_name_only: bool = False) -> bool:
    """Does the rule allow update or patch of the resource? `by_name_only`: only when it names the group and
    the resource (a `system:` role's wildcards, the garbage collector's and the namespace controller's, are
    about every resource and say nothing of who removes this finalizer)."""
    groups, resources = rule.get("apiGroups") or [], rule.get("resources") or []
    if not WRITE_VERBS & set(rule.get("verbs") or []):
        return False
    if by_name_only:
        return group in groups and resource in resources
    return (group in groups or "*" in groups) and (resource in resources or "*" in resources)


def find_grants(ctx: Context) -> list[Grant] | None:
    """Who RBAC lets update or patch the object's type in its namespace: through ClusterRoleBindings, then
    RoleBindings there. Each part is worked out once per type (and namespace) for the same facts: a scan
    asks for every stuck object, and RBAC holds thousands of rules."""
    obj = ctx.obj
    group, resource = obj.type.group, obj.type.resource
    cluster = ctx.facts.remember(CLUSTER_GRANTS, (group, resource), lambda: _cluster_grants(ctx.facts, group, resource))
    if cluster is None:
        return None
    local: list[Grant] = []
    if obj.namespace:
        local = ctx.facts.remember(
            NAMESPACE_GRANTS,
            (group, resource, obj.namespace),
            lambda: _namespace_grants(ctx.facts, group, resource, obj.namespace),
        )
    return list(dict.fromkeys(cluster + local))


# What custom's causes work out once per key for the same facts (kfin.core.read.facts.Worked)
CLUSTER_GRANTS: Worked[tuple[str, str], list[Grant] | None] = Worked("cluster grants by type")
NAMESPACE_GRANTS: Worked[tuple[str, str, str], list[Grant]] = Worked("grants by type and namespace")
CLUSTER_ROLES: Worked[tuple[()], list[KubeObject] | None] = Worked("clusterroles")
CLUSTER_ROLES_BY_NAME: Worked[tuple[()], dict[str, KubeObject]] = Worked("clusterroles by name")
ROLE_BINDINGS: Worked[str, list[tuple[KubeObject, KubeObject | None, str]]] = Worked("rolebindings by namespace")
RBAC_READ: Worked[str, str] = Worked("rbac read by namespace")
POD_WARNINGS: Worked[str, list[JSON]] = Worked("pod warnings by uid")
WORKLOADS_OF: Worked[str, list[tuple[KubeObject, int, int]] | None] = Worked("workloads by manager")
LAST_WRITE: Worked[tuple[str, str, str, str, str], tuple[datetime, KubeObject] | None] = Worked("last write")
CARRYING: Worked[tuple[str, str, str, str], list[KubeObject] | None] = Worked("objects carrying a finalizer")
FINALIZED: Worked[tuple[()], dict[tuple[str, str], list[KubeObject]]] = Worked("finalized by type")


def _cluster_roles(facts: ClusterFacts) -> dict[str, KubeObject] | None:
    roles = facts.remember(CLUSTER_ROLES, (), lambda: facts.objects(RBAC, "clusterroles", full=True))
    return None if roles is None else facts.remember(CLUSTER_ROLES_BY_NAME, (), lambda: {r.name: r for r in roles})


def _cluster_grants(facts: ClusterFacts, group: str, resource: str) -> list[Grant] | None:
    by_name = _cluster_roles(facts)
    cluster_bindings = facts.objects(RBAC, "clusterrolebindings", full=True)
    if by_name is None or cluster_bindings is None:
        return None
    bindings = [(b, by_name.get(str((b.raw.get("roleRef") or {}).get("name"))), "") for b in cluster_bindings]
    return _granted(bindings, group, resource)


def _namespace_grants(facts: ClusterFacts, group: str, resource: str, namespace: str) -> list[Grant]:
    bindings = facts.remember(ROLE_BINDINGS, namespace, lambda: _role_bindings(facts, namespace))
    return _granted(bindings, group, resource) if bindings else []


def _role_bindings(facts: ClusterFacts, namespace: str) -> list[tuple[KubeObject, KubeObject | None, str]]:
    """A namespace's RoleBindings with the Role or ClusterRole each names."""
    by_name = _cluster_roles(facts) or {}
    role_names = {r.name: r for r in facts.objects(RBAC, "roles", namespace, full=True) or []}
    bindings = []
    for b in facts.objects(RBAC, "rolebindings", namespace, full=True) or []:
        ref = b.raw.get("roleRef") or {}
        named = str(ref.get("name"))
        role = by_name.get(named) if ref.get("kind") == "ClusterRole" else role_names.get(named)
        bindings.append((b, role, namespace))
    return bindings


def _granted(bindings: list[tuple[KubeObject, KubeObject | None, str]], group: str, resource: str) -> list[Grant]:
    grants = []
    for binding, role, namespace in bindings:
        if role is None or role.name in DEFAULT_ROLES:
            continue
        system = role.name.startswith("system:")
        if not any(_grants_write(rule, group, resource, system) for rule in role.raw.get("rules") or []):
            continue
        label = f"{role.type.kind} {role.namespace + '/' if role.namespace else ''}{role.name}"
        for subject in binding.raw.get("subjects") or []:
            kind, name = str(subject.get("kind") or ""), str(subject.get("name") or "")
            if kind == "ServiceAccount":
                grants.append(Grant(label, subject.get("namespace") or namespace, name))
            elif kind in ("User", "Group") and name:
                grants.append(Grant(label, "", name, kind))
    return grants


def _rbac_read(ctx: Context) -> str:
    """How much RBAC the verdict rests on, in words (once per namespace for the same facts)."""
    return ctx.facts.remember(RBAC_READ, ctx.obj.namespace, lambda: _rbac_counted(ctx))


def _rbac_counted(ctx: Context) -> str:
    counts = []
    for resource, where in (
        ("clusterroles", None),
        ("clusterrolebindings", None),
        ("roles", ctx.obj.namespace),
        ("rolebindings", ctx.obj.namespace),
    ):
        if where == "":
            continue
        found = ctx.facts.objects(RBAC, resource, where, full=True)
        counts.append(f"{len(found or [])} {resource}" + (f" in {where}" if where else ""))
    return ", ".join(counts)


def workload_account(workload: KubeObject) -> str:
    """The ServiceAccount a Deployment's, StatefulSet's or DaemonSet's Pods run as."""
    template = ((workload.raw.get("spec") or {}).get("template") or {}).get("spec") or {}
    return str(template.get("serviceAccountName") or "default")


def _pod_account(pod: KubeObject) -> str:
    """The ServiceAccount a Pod runs as."""
    return str((pod.raw.get("spec") or {}).get("serviceAccountName") or "default")


def readiness(workload: KubeObject) -> tuple[int, int]:
    """(ready, wanted) Pods of a Deployment, StatefulSet or DaemonSet (a DaemonSet wants what it has, at least 1)."""
    status = workload.raw.get("status") or {}
    if workload.type.resource == "daemonsets":
        ready = status.get("numberReady") or 0
        return ready, max(ready, 1)
    return status.get("readyReplicas") or 0, (workload.raw.get("spec") or {}).get("replicas", 1)


def is_ready(pod: KubeObject) -> bool:
    """The Pod's Ready condition is True."""
    return condition(pod, "Ready").get("status") == "True"


def _trouble(pod: KubeObject) -> str:
    """Why a controller's Pod does not run: its containers' waiting reasons and restarts."""
    parts = []
    for c in (pod.raw.get("status") or {}).get("containerStatuses") or []:
        waiting = ((c.get("state") or {}).get("waiting") or {}).get("reason")
        restarts = c.get("restartCount") or 0
        if waiting or restarts:
            parts.append(", ".join(filter(None, [waiting, f"{restarts} restarts" if restarts else ""])))
    phase = (pod.raw.get("status") or {}).get("phase") or "?"
    return f"Pod {pod.namespace}/{pod.name} is not Ready ({'; '.join(parts) or phase})"


def workload_pods(facts: ClusterFacts, workload: KubeObject) -> list[KubeObject]:
    """The Pods of a Deployment (through its ReplicaSet, named after it and the pod-template-hash label the
    deployment controller puts on both), StatefulSet or DaemonSet (owned by it), without reading ReplicaSets."""
    found = []
    for pod in facts.objects("", "pods", workload.namespace, full=True) or []:
        template_hash = (pod.meta.get("labels") or {}).get("pod-template-hash")
        for owner in pod.owner_references:
            if owner.get("uid") == workload.uid or (
                workload.type.resource == "deployments"
                and owner.get("kind") == "ReplicaSet"
                and template_hash
                and owner.get("name") == f"{workload.name}-{template_hash}"
            ):
                found.append(pod)
                break
    return found


def not_running(facts: ClusterFacts, workload: KubeObject, ready: int, wanted: int) -> str:
    """Why a workload that should run a controller does not, in words: scaled to zero, or its first Pod that is
    not Ready (crash-looping: its waiting reason and restarts); "" when kfin sees no more than the counts."""
    if not wanted:
        return "scaled to zero"
    failing = _failing_pod(facts, workload)
    return _trouble(failing) if failing is not None else ""


def pod_warnings(facts: ClusterFacts, workload: KubeObject) -> list[str]:
    """The Warning events of a workload's first Pod that is not Ready (BackOff, FailedScheduling...), read once
    per workload for the same facts: every stuck object of one operator names the same workload."""
    failing = _failing_pod(facts, workload)
    if failing is None:
        return []
    events = facts.remember(POD_WARNINGS, failing.uid, lambda: (facts.warnings_about(failing) or [])[:3])
    return [f"its Pod reported {e.get('reason')}: {e.get('message')}" for e in events]


def _failing_pod(facts: ClusterFacts, workload: KubeObject) -> KubeObject | None:
    return next((p for p in workload_pods(facts, workload) if not p.terminating and not is_ready(p)), None)


# what workloads_of_grant reads whole in a ServiceAccount's namespace
GRANT_WORKLOADS = (("", "pods"), ("apps", "deployments"), ("apps", "statefulsets"))


def workloads_of_grant(ctx: Context, grant: Grant) -> tuple[list[KubeObject], list[str], list[str]]:
    """(its Pods that are meant to run, idle workloads, other notes) for one ServiceAccount."""
    facts = ctx.facts
    pods = facts.objects("", "pods", grant.namespace, full=True) or []
    mine = [
        p
        for p in pods
        if (p.raw.get("spec") or {}).get("serviceAccountName") == grant.service_account
        and (p.raw.get("status") or {}).get("phase") in ("Running", "Pending")
        and not p.terminating
    ]
    idle: list[str] = []
    notes: list[str] = []
    for group, resource, kind in (("apps", "deployments", "Deployment"), ("apps", "statefulsets", "StatefulSet")):
        for w in facts.objects(group, resource, grant.namespace, full=True) or []:
            spec = w.raw.get("spec") or {}
            if ((spec.get("template") or {}).get("spec") or {}).get("serviceAccountName") != grant.service_account:
                continue
            replicas = spec.get("replicas", 1)
            ready = (w.raw.get("status") or {}).get("readyReplicas") or 0
            text = f"its {kind} {w.namespace}/{w.name} has {replicas} replica{'s' if replicas != 1 else ''}"
            (notes if ready else idle).append(text + ("" if not replicas or ready else f", {ready} ready"))
    if not mine and not idle and not notes:
        notes.append("no Pod, Deployment or StatefulSet runs as it")
    return mine, idle, notes


def workloads_of_manager(facts: ClusterFacts, manager: str) -> list[tuple[KubeObject, int, int]] | None:
    """(workload, ready, wanted) of the Deployments, StatefulSets and DaemonSets named like a field manager
    (or labelled app.kubernetes.io/name with it), in any namespace; None when none of them can be read. Once per
    manager for the same facts: the stuck objects of one operator name the same manager."""
    kept = facts.kept(WORKLOADS_OF)
    if manager not in kept:
        facts.prefetch({(group, resource, None, True) for group, resource in WORKLOADS})  # one round trip, not three
        facts.kept(WORKLOADS_OF)[manager] = _workloads_named(facts, manager)
    return facts.kept(WORKLOADS_OF)[manager]


def _workloads_named(facts: ClusterFacts, manager: str) -> list[tuple[KubeObject, int, int]] | None:
    found, readable = [], False
    for group, resource in WORKLOADS:
        workloads = facts.objects(group, resource, None, full=True)
        readable = readable or workloads is not None
        for w in workloads or []:
            if manager in workload_identities(w):
                found.append((w, *readiness(w)))
    return found if readable else None


def added_by_person(manager: str) -> bool:
    """Whether a field manager is a tool people type into (kubectl and its commands, k9s), not a controller."""
    return bool(PERSON_TOOLS.match(manager))


def who_added(manager: str | None) -> str:
    """Who added a finalizer, in words, from the field manager managedFields name."""
    if not manager:
        return "a writer managedFields do not name"
    if added_by_person(manager):
        return f'field manager "{manager}" (a person\'s {manager.split("-")[0]}, not a controller)'
    return f'field manager "{manager}"'


def pod_identities(pod: KubeObject) -> set[str]:
    """The names a Pod's writes may carry as their field manager: its ServiceAccount, its workload's name (a
    Deployment's through its ReplicaSet, named after it and the pod-template-hash label), its app labels, and its
    containers' names (a binary named like its container, as controller-runtime's `manager`)."""
    labels = pod.meta.get("labels") or {}
    names = {_pod_account(pod), *(str(labels[k]) for k in ("app.kubernetes.io/name", "app") if labels.get(k))}
    template_hash = labels.get("pod-template-hash")
    for owner in pod.owner_references:
        name = str(owner.get("name") or "")
        if owner.get("kind") == "ReplicaSet" and template_hash and name.endswith(f"-{template_hash}"):
            names.add(name[: -len(template_hash) - 1])
        elif owner.get("kind") in ("StatefulSet", "DaemonSet", "Deployment"):
            names.add(name)
    names |= {str(c.get("name")) for c in (pod.raw.get("status") or {}).get("containerStatuses") or [] if c.get("name")}
    return names - {""}


def workload_identities(workload: KubeObject) -> set[str]:
    """The names a workload's writes may carry as their field manager: its name, its app.kubernetes.io/name label,
    the ServiceAccount its Pods run as."""
    label = (workload.meta.get("labels") or {}).get("app.kubernetes.io/name")
    return {workload.name, workload_account(workload), *([str(label)] if label else [])}


def identities(runner: KubeObject) -> set[str]:
    """The names a Pod's or a workload's writes may carry as their field manager."""
    if (runner.type.group, runner.type.resource) == ("", "pods"):
        return pod_identities(runner)
    return workload_identities(runner)


def ownership(ctx: Context, names: set[str], who: str) -> tuple[bool, list[str]]:
    """Is the running controller whose writes carry one of `names` shown to own the finalizer? By the field manager
    that added it, or by the same finalizer on other objects of the type, added by it. (shown, the evidence)."""
    manager = (ctx.obj.raw.get(MANAGERS) or {}).get(ctx.finalizer)
    if manager and manager in names:
        return True, [f'{who} owns {ctx.finalizer}: it added it (field manager "{manager}")']
    obj = ctx.obj
    listed = siblings(ctx)
    carrying = [o for o in listed or [] if o.uid != obj.uid]
    by_it = [o for o in carrying if (o.raw.get(MANAGERS) or {}).get(ctx.finalizer) in names]
    if by_it:
        first = by_it[0]
        where = f"{first.namespace}/" if first.namespace else ""
        added = (first.raw.get(MANAGERS) or {})[ctx.finalizer]
        return True, [
            f"{who} owns {ctx.finalizer}: it added it to {first.type.kind} {where}{first.name} (field manager "
            f'"{added}")' + (f" and {len(by_it) - 1} more" if len(by_it) > 1 else "")
        ]
    said = [
        f"{ctx.finalizer} was added by {who_added(manager)}, not by {who} (it writes as {', '.join(sorted(names))})"
    ]
    if listed is None:
        said.append(f"kfin could not list the other {obj.type.qualified} to see who added {ctx.finalizer} to them")
    elif carrying:
        said.append(
            f"{who} added {ctx.finalizer} to none of the {len(carrying)} other {obj.type.qualified} carrying it"
        )
    else:
        said.append(f"no other {obj.type.qualified} carries {ctx.finalizer}")
    return False, said


def last_write(ctx: Context, manager: str) -> tuple[datetime, KubeObject] | None:
    """When field manager `manager` last wrote to objects of the type in the object's namespace that carry the
    finalizer added by it (the object among them), and where. A few of them are read whole for their managedFields'
    times (MOST_WRITES_READ, those being deleted first, newest deletion first, then by name): the same few whichever
    of them is explained, so that a scan and explain answer alike, at a bounded cost. Only writes after an object's
    creation count: the manifest that created it with the finalizer (kubectl apply, Helm) is no sign that anything
    acts on it since. kube-apiserver stamps a create's managedFields before its creationTimestamp (apiserver's
    endpoints/handlers/create.go: FieldManager.UpdateNoErrors, then r.Create, whose BeforeCreate sets it), so a write
    of a later second than that is a later write."""
    obj, facts = ctx.obj, ctx.facts
    key = (obj.type.group, obj.type.resource, obj.namespace, ctx.finalizer, manager)
    if key not in facts.kept(LAST_WRITE):
        members = {o.uid: o for o in siblings(ctx) or [] if (o.raw.get(MANAGERS) or {}).get(ctx.finalizer) == manager}
        members.setdefault(obj.uid, obj)
        ordered = sorted(members.values(), key=lambda o: o.name)  # those being deleted first, the latest first
        ordered.sort(key=lambda o: str(o.meta.get("deletionTimestamp") or ""), reverse=True)
        latest: tuple[datetime, KubeObject] | None = None
        for candidate in ordered[:MOST_WRITES_READ]:
            meta = (facts.whole(candidate) or {}).get("metadata") or {}
            created = parse_time(meta.get("creationTimestamp"))
            entries = [e for e in meta.get("managedFields") or [] if isinstance(e, dict)]
            for entry in entries:
                when = parse_time(entry.get("time"))
                if when is None or entry.get("manager") != manager:
                    continue
                if created is not None and when <= created and not _added_after_create(entry, entries):
                    continue
                if latest is None or when > latest[0]:
                    latest = (when, candidate)
        facts.kept(LAST_WRITE)[key] = latest
    return facts.kept(LAST_WRITE)[key]


def _added_after_create(entry: JSON, entries: list[JSON]) -> bool:
    """Whether a write stamped within the second of the object's creation was another request than the create: it
    set metadata only (a finalizer, annotations: what a controller adds to an object it starts to handle) while
    another field manager holds the rest (the spec or data the create carried), as kopf adds its finalizer within
    a second of the object's creation. managedFields' times have a second's resolution."""
    fields = entry.get("fieldsV1")
    if not isinstance(fields, dict) or set(fields) != {"f:metadata"}:
        return False
    return any(
        e is not entry and e.get("manager") != entry.get("manager") and set(e.get("fieldsV1") or {}) - {"f:metadata"}
        for e in entries
    )


def siblings(ctx: Context) -> list[KubeObject] | None:
    """The objects of the type in the object's namespace (everywhere for a cluster-scoped type) that carry its
    finalizer, itself included: where its controller's own use of that name shows. A scan that listed the namespace
    holds every object with finalizers (a lean one drops only those without): taken from it, never read again;
    otherwise (kfin explain) the type is listed there once. None when they cannot be listed."""
    obj, facts = ctx.obj, ctx.facts
    key = (obj.type.group, obj.type.resource, obj.namespace, ctx.finalizer)
    if key not in facts.kept(CARRYING):
        if facts.listed(obj.namespace or None):
            found: list[KubeObject] | None = _finalized(facts).get((obj.type.group, obj.type.resource), [])
        else:
            found = facts.objects(obj.type.group, obj.type.resource, obj.namespace or None)
        facts.kept(CARRYING)[key] = (
            None
            if found is None
            else [o for o in found if o.namespace == obj.namespace and ctx.finalizer in o.finalizers]
        )
    return facts.kept(CARRYING)[key]


def _finalized(facts: ClusterFacts) -> dict[tuple[str, str], list[KubeObject]]:
    """The objects with finalizers the facts hold, by type: indexed once for every stuck object's question."""
    if () not in facts.kept(FINALIZED):
        index: dict[tuple[str, str], list[KubeObject]] = {}
        for o in facts.inventory.kept_objects():
            if o.finalizers:
                index.setdefault((o.type.group, o.type.resource), []).append(o)
        facts.kept(FINALIZED)[()] = index
    return facts.kept(FINALIZED)[()]


def acting_elsewhere(
    ctx: Context, manager: str | None, *, risk: str, evidence: list[str], controller: str, more: Iterable[str] = ()
) -> Finding | None:
    """No workload of its controller runs in the cluster, but the field manager that added the finalizer (not a
    person's tool) wrote to objects of the type recently: it acts from elsewhere (a process outside the cluster,
    under a user's identity: `kopf run` on a laptop). WAITING when it wrote within RECENT_WRITE seconds, UNKNOWN
    when it wrote since the deletion only longer ago (`more`: evidence said after its write); None otherwise (its
    last write, if any, is added to `evidence`)."""
    if not manager or added_by_person(manager):
        return None
    found = last_write(ctx, manager)
    if found is None:
        return None
    when, where = found
    age = max(0.0, (ctx.facts.inventory.observed_at - when).total_seconds())
    place = f"{where.type.kind} {where.namespace + '/' if where.namespace else ''}{where.name}"
    wrote = f'field manager "{manager}", which added it, last wrote to {place} {format_age(age)} ago'
    deleted = ctx.obj.deletion_timestamp
    if age > RECENT_WRITE and (where is not ctx.obj or deleted is None or when < deleted):
        evidence.append(wrote)
        return None
    recent = age <= RECENT_WRITE
    remove = None if recent else kfin_remove_command(ctx.obj, ctx.finalizer)
    writer = f'field manager "{manager}"'
    if remove is None:
        link = Link("controller", wrote + " and should remove it", actor=writer)
    else:
        link = Link(
            "controller",
            wrote,
            actor=writer,
            step=(
                Action(None, note=f'find out whether the process that writes as "{manager}" still runs'),
                Action(remove, when="if it does not, once what it guards is cleaned up by hand"),
            ),
        )
    return ctx.finding(
        f"no workload of its controller runs in the cluster, but {wrote}: it acts from outside the cluster (a "
        "process under a user's identity, as `kopf run` on a laptop)"
        + ("" if recent else ", since the deletion; kfin cannot tell whether it still runs"),
        Verdict.WAITING if recent else Verdict.UNKNOWN,
        fix=f'check the process that writes as "{manager}" (outside the cluster): its logs say why it does not '
        "remove the finalizer",
        risk=risk,
        evidence=[*evidence, wrote, *more],
        alive=True if recent else None,
        controller=f'{controller} (field manager "{manager}", outside the cluster)',
        summary=f'{ctx.finalizer} (field manager "{manager}" acts from outside the cluster)',
        detail={"lastWrite": {"manager": manager, "object": place, "seconds": int(age)}},
        remove_command=remove,
        links=[link],
    )


def not_shown_owner(
    ctx: Context, runs: str, said: list[str], *, risk: str, evidence: list[str], controller: str
) -> Finding:
    """A controller runs, but nothing shows it owns the finalizer (a person added it, or a writer no running
    controller is): UNKNOWN, naming who added it, with the removal for after checking what it guards."""
    manager = (ctx.obj.raw.get(MANAGERS) or {}).get(ctx.finalizer)
    added = who_added(manager)
    remove = kfin_remove_command(ctx.obj, ctx.finalizer)
    return ctx.finding(
        f"its controller runs ({runs}), but nothing shows it owns {ctx.finalizer}: it was added by {added}, and no "
        "running controller is shown to remove it",
        Verdict.UNKNOWN,
        fix=f"find out what {ctx.finalizer} guards and whether anything removes it (ask who added it: {added}); "
        "if nothing does, clean up what it guards by hand, then remove it",
        risk=risk,
        evidence=[*evidence, *said],
        alive=None,
        controller=controller,
        summary=f"{ctx.finalizer} (added by {added}; no running controller shown to own it)",
        remove_command=remove,
        links=[
            Link(
                "controller",
                f"{ctx.finalizer} was added by {added}, and no running controller is shown to remove it",
                actor=f'field manager "{manager}"' if manager else controller,
                step=(
                    Action(
                        None, note=f"find out what {ctx.finalizer} guards and whether anything removes it ({added})"
                    ),
                    Action(remove, when="once you checked what it guards and cleaned it up by hand"),
                ),
            )
        ],
    )


def may_update(ctx: Context, namespace: str, account: str) -> bool | None:
    """Does RBAC let ServiceAccount namespace/account update or patch the object's type where it lives? Every
    binding counts here (cluster-admin, admin and edit too: they are no evidence of who the controller is, but
    they do allow it), and the User and Groups every ServiceAccount is; None when RBAC cannot be read."""
    obj, facts = ctx.obj, ctx.facts
    by_name = _cluster_roles(facts)
    cluster_bindings = facts.objects(RBAC, "clusterrolebindings", full=True)
    if by_name is None or cluster_bindings is None:
        return None
    bindings = [(b, by_name.get(str((b.raw.get("roleRef") or {}).get("name"))), "") for b in cluster_bindings]
    if obj.namespace:
        if any(facts.objects(RBAC, kind, obj.namespace, full=True) is None for kind in ("roles", "rolebindings")):
            return True if _names_one_of(bindings, obj, namespace, account) else None
        local = facts.remember(ROLE_BINDINGS, obj.namespace, lambda: _role_bindings(facts, obj.namespace))
        bindings += local
    return _names_one_of(bindings, obj, namespace, account)


def _names_one_of(
    bindings: list[tuple[KubeObject, KubeObject | None, str]], obj: KubeObject, namespace: str, account: str
) -> bool:
    """Does one of the bindings grant update or patch on the object's type to the ServiceAccount (or to a
    User or Group it is)?"""
    identities = {
        ("ServiceAccount", f"{namespace}/{account}"),
        ("User", f"system:serviceaccount:{namespace}:{account}"),
        ("Group", "system:serviceaccounts"),
        ("Group", f"system:serviceaccounts:{namespace}"),
        ("Group", "system:authenticated"),
    }
    for binding, role, where in bindings:
        if role is None or not any(
            _grants_write(rule, obj.type.group, obj.type.resource) for rule in role.raw.get("rules") or []
        ):
            continue
        for subject in binding.raw.get("subjects") or []:
            kind, name = str(subject.get("kind") or ""), str(subject.get("name") or "")
            if kind == "ServiceAccount":
                name = f"{subject.get('namespace') or where}/{name}"
            if (kind, name) in identities:
                return True
    return False


def forbidden_finding(
    ctx: Context,
    w: KubeObject,
    *,
    ready: int,
    wanted: int,
    risk: str,
    evidence: list[str],
    controller: str,
    who: str,
    summary: str | None = None,
) -> Finding:
    """Its controller runs, but RBAC lets it neither update nor patch the object's type: the grant it lacks
    (`summary`: its line, when not the custom cause's)."""
    account = workload_account(w)
    resource = ctx.obj.type
    rule = f'apiGroups: ["{resource.group}"], resources: ["{resource.resource}"], verbs: ["get", "patch", "update"]'
    return ctx.finding(
        f"its controller runs ({w.type.kind} {w.namespace}/{w.name}, {ready}/{wanted} ready{who}) but is "
        f"forbidden to update {resource.qualified}: no Role or ClusterRole grants update or patch to "
        f"ServiceAccount {w.namespace}/{account}",
        Verdict.STALLED,  # it runs, but nothing changes until someone grants it the right
        fix=f"grant ServiceAccount {w.namespace}/{account} update and patch on {resource.qualified} "
        f"(a rule {{{rule}}}, bound to it); it then removes the finalizer",
        risk=risk,
        evidence=[
            *evidence,
            f"RBAC read: no grant of update or patch on {resource.qualified} names ServiceAccount "
            f"{w.namespace}/{account}",
        ],
        alive=True,
        controller=controller,
        summary=summary or f"{ctx.finalizer} ({controller} runs but is forbidden to update it)",
        detail={"forbidden": True, "serviceAccount": f"{w.namespace}/{account}", "rule": rule},
        links=[
            Link(
                "forbidden",
                f"{w.type.kind} {w.namespace}/{w.name} may not update {resource.qualified}",
                target=w,
                step=(
                    Action(
                        None,
                        note=f"grant ServiceAccount {w.namespace}/{account} update and patch on {resource.qualified} "
                        f"({rule})",
                    ),
                ),
            )
        ],
    )


def _by_evidence(
    ctx: Context, manager: str, *, risk: str, evidence: list[str], controller: str, line: str
) -> Finding | None:
    """The workload of the field manager that added the finalizer, if kfin sees it: running (and allowed to
    update the resource, or not), or installed but not running."""
    matched = workloads_of_manager(ctx.facts, manager)
    if not matched:
        return None
    running = [(w, r, n) for w, r, n in matched if r > 0]
    if not running:
        w, ready, wanted = matched[0]
        why = not_running(ctx.facts, w, ready, wanted)
        stopped = f"its controller {w.type.kind} {w.namespace}/{w.name} (the field manager that added it) is " + (
            f"installed but not running ({ready}/{wanted} ready){': ' + why if why else ''}"
        )
        return _not_running(
            ctx,
            stopped,
            fix=f"fix or scale up {w.type.kind} {w.namespace}/{w.name}: running, it removes the finalizer",
            risk=risk,
            evidence=[*evidence, *pod_warnings(ctx.facts, w)],
            controller=controller,
            why=f"{w.type.kind} {w.namespace}/{w.name} is not running",
            target=w,
            fix_note=f"fix or scale up {w.type.kind} {w.namespace}/{w.name}",
            instead="instead, if it cannot run again",
        )
    w, ready, wanted = running[0]
    if may_update(ctx, w.namespace, workload_account(w)) is False:
        return forbidden_finding(
            ctx,
            w,
            ready=ready,
            wanted=wanted,
            risk=risk,
            evidence=evidence,
            controller=controller,
            who=", the field manager that added it",
        )
    runs = f"{w.type.kind} {w.namespace}/{w.name}, {ready}/{wanted} ready, the field manager that added it"
    owns = f'{w.type.kind} {w.namespace}/{w.name} owns {ctx.finalizer}: it added it (field manager "{manager}")'
    return _running(
        ctx,
        f"its controller is running ({runs}) and should remove it",
        fix="check that controller's logs for why it does not finish",
        risk=risk,
        evidence=[*evidence, owns],
        controller=controller,
        line=line,
        runner=w,
        account=f"{w.namespace}/{workload_account(w)}",
        runs=runs,
    )


def _running(
    ctx: Context,
    condition: str,
    *,
    fix: str,
    risk: str,
    evidence: list[str],
    controller: str,
    line: str,
    runner: KubeObject,
    account: str,
    runs: str,
) -> Finding:
    """WAITING: its controller runs and is shown to own the finalizer; the server's answer to the dry run of its
    removal, as its ServiceAccount `account`, decides (kfin.core.explain.causes.dryrun.controller_removal)."""
    waiting = ctx.finding(
        condition,
        Verdict.WAITING,
        fix=fix,
        risk=risk,
        evidence=evidence,
        alive=True,
        controller=controller,
        summary=line,
        links=[Link("controller", f"{controller} is running and should remove it", actor=controller)],
    )
    return controller_removal(ctx, waiting, account, runs, runner)


def _not_running(
    ctx: Context,
    condition: str,
    *,
    fix: str,
    risk: str,
    evidence: list[str],
    controller: str,
    why: str,
    target: KubeObject | None,
    fix_note: str,
    instead: str,
) -> Finding:
    """STALLED: its controller is there but acts only once someone fixes or scales it up (`why`: what its link
    says; `fix_note`: that step; `instead`: when kfin's removal comes instead)."""
    remove = kfin_remove_command(ctx.obj, ctx.finalizer)
    return ctx.finding(
        condition,
        Verdict.STALLED,
        fix=fix,
        risk=risk,
        evidence=evidence,
        alive=False,
        controller=controller,
        summary=f"{ctx.finalizer} ({controller} is installed but not running)",
        remove_command=remove,
        links=[
            Link(
                "controller",
                why,
                target=target,
                actor=None if target else controller,
                step=(Action(None, note=fix_note), Action(remove, when=instead)),
            )
        ],
    )


# RBAC always (small objects); workloads are read where a grant points, or everywhere only when RBAC names
# nobody, so they are not fetched ahead (whole Deployments of a large cluster are many megabytes).
RBAC_READS = (
    (RBAC, "clusterroles", EVERYWHERE),
    (RBAC, "clusterrolebindings", EVERYWHERE),
    (RBAC, "roles", OBJECT_NAMESPACE),
    (RBAC, "rolebindings", OBJECT_NAMESPACE),
)
# the names of the CustomResourceDefinitions (is the custom resource's own still there?)
CRD_NAMES = ("apiextensions.k8s.io", "customresourcedefinitions", EVERYWHERE, False)


@explains("custom", reads=(*RBAC_READS, CRD_NAMES))
def custom(ctx: Context) -> Finding:
    """Who may remove a domain-qualified finalizer, from RBAC (who may update the type), the workloads that run as
    those grants, managedFields (who added it) and recent writes: the first that answers decides."""
    obj = ctx.obj
    domain = ctx.finalizer.split("/")[0]
    risk = (
        f"whatever the controller of {domain} cleans up first (an external database, bucket, DNS record, "
        "certificate...) is left behind; kfin cannot see outside the cluster"
    )
    controller = f"the controller of {domain}"
    line = f"{ctx.finalizer} ({controller} must remove it)"
    manager = (obj.raw.get(MANAGERS) or {}).get(ctx.finalizer)
    evidence = _first_evidence(ctx, manager)
    said = {"risk": risk, "controller": controller}  # what every answer below says of it
    by_manager = manager if manager and not added_by_person(manager) else None
    grants = find_grants(ctx)
    if grants is None:
        return (
            (_by_evidence(ctx, by_manager, evidence=evidence, line=line, **said) if by_manager else None)
            or acting_elsewhere(ctx, manager, evidence=evidence, **said)
            or _unknown(
                ctx,
                "kfin could not read RBAC to find the controller",
                f"find the operator that manages {obj.type.qualified} and check its logs",
                evidence,
                line,
                **said,
            )
        )
    followed = [g for g in grants if g.subject_kind == "ServiceAccount"]
    unfollowed = [g for g in grants if g.subject_kind != "ServiceAccount"]
    granted = _granted_workloads(ctx, followed)
    evidence += granted.story
    owner, shown = _shown_owner(ctx, granted.healthy, manager)
    if owner is not None:
        ready_pods = ", ".join(f"Pod {p.namespace}/{p.name}" for p in granted.healthy[:3])
        return _running(
            ctx,
            f"its controller is running ({ready_pods}, Ready) and should remove it",
            fix="give it time, and check that controller's logs for why it does not finish: it usually waits on "
            "something outside the cluster",
            evidence=[*evidence, *shown],
            line=line,
            runner=owner,
            account=f"{owner.namespace}/{_pod_account(owner)}",
            runs=f"Pod {owner.namespace}/{owner.name}, Ready",
            **said,
        )
    found = _by_evidence(ctx, by_manager, evidence=evidence, line=line, **said) if by_manager else None
    if found is not None:  # the field manager's workload: running (allowed or not), or down
        return found
    if granted.healthy:  # running, but not shown to own this finalizer name (a person added it, or another writer)
        runs = ", ".join(f"Pod {p.namespace}/{p.name}" for p in granted.healthy[:3]) + ", Ready"
        return not_shown_owner(ctx, runs, shown, evidence=evidence, **said)
    if granted.pods or granted.idle:  # installed, but not running: the controller needs fixing, not the finalizer
        return _granted_not_running(ctx, granted, evidence, **said)
    unfollowed_lines = [f"the {g.role} grants update on {obj.type.qualified} to {g.subject}" for g in unfollowed]
    acting = acting_elsewhere(ctx, manager, evidence=evidence, more=unfollowed_lines, **said)
    if acting is not None:  # its writes show it acts, from outside the cluster: never ORPHANED
        return acting
    if unfollowed:  # a User or Group may run anywhere (kube-controller-manager, a controller outside the cluster)
        return _granted_elsewhere(ctx, unfollowed, [*evidence, *unfollowed_lines], line, **said)
    if by_manager and workloads_of_manager(ctx.facts, by_manager) is None:
        return _unknown(
            ctx,
            f'kfin could not read the workloads that may be field manager "{manager}", which added it',
            f"find what runs as {manager} and check its logs",
            evidence,
            line,
            **said,
        )
    return _orphaned(ctx, manager, bool(grants), evidence, line, **said)


def _first_evidence(ctx: Context, manager: str | None) -> list[str]:
    """What is said of every custom finalizer first: its type's CustomResourceDefinition, and who added it."""
    obj, evidence = ctx.obj, []
    crd = (
        ctx.facts.find("apiextensions.k8s.io", "customresourcedefinitions", "", obj.type.qualified)
        if obj.type.group
        else None
    )
    if crd is not None:
        evidence.append(f"CustomResourceDefinition {crd.name} exists")
    if manager:
        evidence.append(f'managedFields: {ctx.finalizer} was added by field manager "{manager}"')
    return evidence


def _granted_elsewhere(
    ctx: Context, unfollowed: list[Grant], evidence: list[str], line: str, *, risk: str, controller: str
) -> Finding:
    """UNKNOWN: update is granted to a User or Group, which kfin cannot follow to a workload."""
    qualified = ctx.obj.type.qualified
    return ctx.finding(
        f"update on {qualified} is granted to {', '.join(g.subject for g in unfollowed[:3])}, which "
        "kfin cannot follow to a workload: something outside kfin's view may remove it",
        Verdict.UNKNOWN,
        fix=f"check whether {unfollowed[0].subject} still runs and why it does not remove {ctx.finalizer}",
        risk=risk,
        evidence=evidence,
        alive=None,
        controller=controller,
        summary=line,
        remove_command=kfin_remove_command(ctx.obj, ctx.finalizer),
    )


class GrantedWorkloads(Struct):
    """What runs as the ServiceAccounts granted update on the type: their Pods (the Ready ones `healthy`), what is
    installed but runs no Pod (`idle`, in words), and a line of evidence per grant."""

    pods: list[KubeObject]
    healthy: list[KubeObject]
    idle: list[str]
    story: list[str]


def _granted_workloads(ctx: Context, followed: list[Grant]) -> GrantedWorkloads:
    obj, facts = ctx.obj, ctx.facts
    # what workloads_of_grant reads of each ServiceAccount's namespace: one round trip, not three per grant
    facts.prefetch({(group, resource, g.namespace, True) for g in followed for group, resource in GRANT_WORKLOADS})
    pods_all: list[KubeObject] = []
    idle_all: list[str] = []
    story = []
    for grant in followed:
        pods, idle, notes = workloads_of_grant(ctx, grant)
        pods_all += pods
        idle_all += idle
        ready = [p for p in pods if is_ready(p)]
        detail = "; ".join(idle + notes) if not pods else f"{len(ready)} of {len(pods)} Pods Ready"
        story.append(
            f"the {grant.role} grants update on {obj.type.qualified} to ServiceAccount "
            f"{grant.namespace}/{grant.service_account}: {detail}"
        )
    return GrantedWorkloads(pods_all, [p for p in pods_all if is_ready(p)], idle_all, story)


def _shown_owner(ctx: Context, healthy: list[KubeObject], manager: str | None) -> tuple[KubeObject | None, list[str]]:
    """The running controller shown to own the finalizer name, if one is, and what shows it (or what was said of
    the first that did not)."""
    # a framework's field manager (kopf's) that its catalog entry names: whatever the workload is called
    framework = set(ctx.family.entry.controller.field_managers) if ctx.family.entry else set()
    shown: list[str] = []
    for p in healthy:
        owns, said = ownership(ctx, identities(p) | framework, f"Pod {p.namespace}/{p.name}")
        if owns:
            if manager in framework - identities(p):
                said.append(
                    f'the catalog names "{manager}" the field manager of {ctx.family.owner}, whatever its workload is '
                    f"called; Pod {p.namespace}/{p.name} is the running controller granted update on "
                    f"{ctx.obj.type.qualified}"
                )
            return p, said
        shown = shown or said
    return None, shown


def _granted_not_running(
    ctx: Context, granted: GrantedWorkloads, evidence: list[str], *, risk: str, controller: str
) -> Finding:
    """STALLED: what runs as a granted ServiceAccount is installed but not running (a failing Pod, with what it
    reported, or a workload with none)."""
    failing = granted.pods[0] if granted.pods else None
    why = _trouble(failing) if failing else granted.idle[0]
    reported = [
        f"its Pod reported {event.get('reason')}: {event.get('message')}"
        for event in ((ctx.facts.warnings_about(failing) or [])[:3] if failing else [])
    ]
    return _not_running(
        ctx,
        f"its controller is installed but not running: {why}",
        fix="fix the controller (kubectl logs and describe its Pods) or scale it up: running, it removes the finalizer",
        risk=risk,
        evidence=[*evidence, *reported],
        controller=controller,
        why=f"{controller} is installed but not running: {why}",
        target=failing,
        fix_note=f"fix or scale up {controller}",
        instead="instead, once what it guards is cleaned up by hand",
    )


def _unknown(
    ctx: Context, condition: str, fix: str, evidence: list[str], line: str, *, risk: str, controller: str
) -> Finding:
    """UNKNOWN: kfin could not read what would tell who removes it."""
    return ctx.finding(
        condition, Verdict.UNKNOWN, fix=fix, risk=risk, evidence=evidence, controller=controller, summary=line
    )


def _orphaned(
    ctx: Context, manager: str | None, granted: bool, evidence: list[str], line: str, *, risk: str, controller: str
) -> Finding:
    """ORPHANED: nothing runs that may update the type (`granted`: RBAC still grants it, to ServiceAccounts nothing
    runs as), and no field manager that added it is a controller that runs."""
    obj = ctx.obj
    evidence = [
        *evidence,
        f"managedFields: it was added by {who_added(manager)}, which no controller removes by itself"
        if added_by_person(manager or "")
        else f'managedFields: no Deployment, StatefulSet or DaemonSet is named or labelled "{manager}", or runs as it'
        if manager
        else "managedFields name no field manager for it (or were not kept)",
    ]
    if granted:
        condition = (
            "no Pod, Deployment or StatefulSet runs as a ServiceAccount allowed to update it: its controller "
            "is gone (only its RBAC is left)"
        )
    else:
        evidence.append(f"RBAC read: {_rbac_read(ctx)}; none grants update or patch on {obj.type.qualified} to anyone")
        condition = (
            f"no controller may update {obj.type.qualified}: beyond cluster-admin, admin and edit, no Role or "
            "ClusterRole grants it to anyone (system roles included where they name it): its controller is gone"
        )
    remove = kfin_remove_command(obj, ctx.finalizer)
    return ctx.finding(
        condition,
        Verdict.ORPHANED,
        fix="reinstall the controller so that it cleans up, or clean up by hand and remove the finalizer",
        risk=risk,
        evidence=evidence,
        alive=False,
        controller=controller,
        remove_command=remove,
        summary=line,
        links=[
            Link(
                "controller",
                f"{controller} is gone: nothing will remove {ctx.finalizer}",
                actor=controller,
                step=(
                    Action(remove, when="after cleaning up what it guarded"),
                    Action(None, when="instead", note="reinstall the controller"),
                ),
            )
        ],
    )
