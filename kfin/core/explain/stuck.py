"""Which objects are stuck in Terminating, for how long, and the blocker of each in one line."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from functools import partial
from typing import Literal

from msgspec import Struct, field

from kfin.api.builtin_kinds import builtin_resources
from kfin.api.resources import KindLookup, one_per_storage, stored_as
from kfin.api.scan import Lean
from kfin.core.explain.blocking import Chain, follow, root_summary
from kfin.core.explain.causes import blocker_line, explain_cached, family, main_finding, reads_for
from kfin.core.explain.causes.ghosts import missing_namespace
from kfin.core.explain.roots import root_causes
from kfin.core.explain.selectors import Selector
from kfin.core.read.contexts import ProgressFactory, gather, no_progress
from kfin.core.read.facts import ClusterFacts, Facts, Worked
from kfin.core.read.scope import Scope
from kfin.errors import KfinError, NotFoundError
from kfin.model import JSON, NAMESPACES, Inventory, KubeObject, format_time
from kfin.names import check_kind
from kfin.util.globs import glob_match
from kfin.util.parallel import ordered


class StuckObject(Struct):
    """A row of kfin stuck: an object in Terminating, its finalizers and what blocks it."""

    obj: KubeObject
    terminating_seconds: float
    finalizers: list[str]  # metadata.finalizers, then a namespace's spec.finalizers
    families: list[str]
    blocker: str
    conditions: list[JSON] = field(default_factory=list)
    context: str = ""
    root_causes: list[JSON] = field(default_factory=list)
    verdict: str | None = None  # of the finding that speaks for it (causes.main_finding)
    family: str | None = None  # that finding's family
    chain: Chain | None = None  # its blocking chain, as followed here
    # each finalizer's verdict ({finalizer, field, verdict}), as kfin explain gives it: the same explanation
    findings: list[JSON] = field(default_factory=list)

    @property
    def root_cause(self) -> str:
        """The first root cause in a few words: the object or the actor at the end of the chain."""
        first = self.root_causes[0] if self.root_causes else {}
        return first.get("object") or first.get("actor") or self.obj.ref

    def to_dict(self, with_context: bool = False) -> JSON:
        o, meta = self.obj, self.obj.meta
        out: dict[str, object] = {"context": self.context} if with_context else {}
        out.update(
            {
                "apiVersion": o.type.api_version,
                "kind": o.type.kind,
                # as kubectl's items: `-o jsonpath={.items[*].metadata.name}` and --sort-by read it
                "metadata": {
                    k: meta[k]
                    for k in (
                        "name",
                        "namespace",
                        "uid",
                        "labels",
                        "creationTimestamp",
                        "deletionTimestamp",
                        "finalizers",
                    )
                    if k in meta
                },
                "group": o.type.group,
                "resource": o.type.resource,
                "namespace": o.namespace or None,
                "name": o.name,
                "uid": o.uid,
                "deletionTimestamp": meta.get("deletionTimestamp"),
                "deletionGracePeriodSeconds": meta.get("deletionGracePeriodSeconds"),
                "terminatingSeconds": int(self.terminating_seconds),
                "finalizers": o.finalizers,
                "specFinalizers": o.spec_finalizers,
                "families": self.families,
                "blocker": self.blocker,
                "verdict": self.verdict,
                "findings": [dict(f) for f in self.findings],
                "ownerReferences": len(o.owner_references),
                "rootCauses": self.root_causes,
            }
        )
        if self.conditions:
            out["conditions"] = self.conditions
        return out


class Filters(Struct):
    """What kfin stuck narrows to before explaining: kinds, a finalizer pattern, an age."""

    kinds: set[tuple[str, str]] | None = None  # {(group, resource)}
    finalizer: str | None = None
    older_than: float | None = None  # seconds

    def deleted_for(self, obj: KubeObject, now: datetime) -> float | None:
        """How long `obj` has been deleted (seconds; 0 for a ghost) when its finalizers match --finalizer and its
        age --older-than; None when they do not."""
        if self.finalizer and not any(matches(f, self.finalizer) for f in obj.finalizers + obj.spec_finalizers):
            return None
        since = obj.deletion_requested_at
        seconds = max(0.0, (now - since).total_seconds()) if since else 0.0
        return None if self.older_than is not None and seconds < self.older_than else seconds


def find_stuck(
    inventory: Inventory, filters: Filters = Filters(), facts: ClusterFacts | None = None
) -> list[StuckObject]:
    """Stuck objects of an inventory; `facts` (with a live connection) may read what blockers need."""
    now = inventory.observed_at
    facts = facts or Facts(inventory)
    found = facts.kept(EARLY_ROWS)
    early = found.popitem() if found and facts.inventory is inventory else None
    # found before the scan's last list ended (find_all), among the same objects: that list added none
    if early is not None and early[0] == len(inventory.objects) and early[1][0] == filters:
        return list(early[1][1])
    rows = []
    scope = inventory.namespace

    # Thin objects are neither being deleted nor holding finalizers (kfin.model.ThinObject): most of a large
    # cluster, passed over at once
    if facts.kube is not None:  # what the explanations below will read whole, fetched in parallel first
        reads = (reads_for(obj, facts.catalog) for obj in inventory.kept_objects() if obj.terminating)
        facts.prefetch({read for wanted in reads for read in wanted})
    for obj in inventory.kept_objects():  # as they are after the prefetch
        # a ghost (its namespace forced away) is listed only by a cluster-wide scan: one namespace's does not
        # read every namespace to tell
        if not obj.terminating and (scope is not None or not is_ghost(obj, facts)):
            continue
        if (
            scope is not None
            and obj.namespace != scope
            and not (obj.type.resource == "namespaces" and obj.type.group == "" and obj.name == scope)
        ):
            continue  # read to explain what is in scope, not to be listed
        if filters.kinds is not None and stored_as(obj.type.group, obj.type.resource) not in filters.kinds:
            continue
        seconds = filters.deleted_for(obj, now)
        if seconds is None:
            continue
        names = obj.finalizers + obj.spec_finalizers
        is_namespace = (obj.type.group, obj.type.resource) == ("", "namespaces")
        conditions = list((obj.raw.get("status") or {}).get("conditions") or []) if is_namespace else []
        chain = follow(obj, facts)
        explanation = explain_cached(obj, facts)
        line, main = blocker_line(explanation), main_finding(explanation)
        root = root_summary(chain)
        rows.append(
            StuckObject(
                obj,
                seconds,
                finalizers=names,
                families=list(dict.fromkeys(family(f, facts.catalog).name for f in names)),
                blocker=f"{line}; {root}" if root else line,
                conditions=conditions,
                context=inventory.context,
                root_causes=chain.root_causes(),
                verdict=main.verdict.value if main else None,
                family=main.family if main else None,
                chain=chain,
                findings=[
                    {"finalizer": f.finalizer or None, "field": f.location, "verdict": f.verdict.value}
                    for f in explanation.findings
                ],
            )
        )
    rows.sort(key=lambda r: (-r.terminating_seconds, r.obj.namespace, r.obj.type.kind_display, r.obj.name))
    return rows


def storage_problems(inventory: Inventory) -> list[JSON]:
    """Related problems a storage scan finds: claims Lost (their volume is gone) and volumes Released with
    reclaim policy Retain (their disk is kept until someone deletes it)."""
    out = []
    for claim in inventory.of_type("", "persistentvolumeclaims"):
        if (claim.raw.get("status") or {}).get("phase") == "Lost":
            volume = (claim.raw.get("spec") or {}).get("volumeName")
            out.append(
                {
                    "type": "LostClaim",
                    "object": claim.ref,
                    "message": f"claim {claim.namespace}/{claim.name} is Lost: its volume {volume} is gone, so "
                    "its data cannot be reached through it (restore the volume, or delete the claim)",
                }
            )
    for volume in inventory.of_type("", "persistentvolumes"):
        spec = volume.raw.get("spec") or {}
        if (volume.raw.get("status") or {}).get("phase") == "Released" and spec.get(
            "persistentVolumeReclaimPolicy"
        ) == "Retain":
            handle = (spec.get("csi") or {}).get("volumeHandle")
            out.append(
                {
                    "type": "RetainedVolume",
                    "object": volume.ref,
                    "message": f"volume {volume.name} is Released with reclaim policy Retain: its disk"
                    + (f" ({handle})" if handle else "")
                    + " and data are kept until someone "
                    "deletes them, and no new claim can bind it",
                }
            )
    return out


def matches(finalizer: str, pattern: str) -> bool:
    """--finalizer PATTERN: a glob (example.com/*) or a plain substring."""
    if any(c in pattern for c in "*?["):
        return glob_match(finalizer, pattern)
    return pattern in finalizer


def report(rows: list[StuckObject], inventories: list[Inventory]) -> JSON:
    """The machine-readable result of `kfin stuck -o json|yaml` (schema documented in docs/commands/stuck.md)."""
    several = len(inventories) > 1
    return {
        "apiVersion": "kfin.dev/v1",
        "kind": "StuckReport",
        "observedAt": format_time(inventories[0].observed_at) if inventories else None,
        "sources": [
            {"context": inv.context, "server": inv.server, "namespace": inv.namespace, "complete": inv.complete}
            for inv in inventories
        ],
        "complete": all(inv.complete for inv in inventories),
        # what holds the items, each once: the few things to deal with, before the many objects they hold
        "rootCauses": [cause.to_dict(several) for cause in root_causes(rows)],
        "items": [r.to_dict(several) for r in rows],
        "failures": [
            dict(f.to_dict(), context=inv.context) if several else f.to_dict()
            for inv in inventories
            for f in inv.failures
        ],
    }


def is_ghost(obj: KubeObject, facts: ClusterFacts) -> bool:
    """Left with finalizers in a namespace that no longer exists (forced through /finalize): stuck with them
    even when not being deleted, since every write to it answers 404 until the namespace exists again."""
    return bool(obj.finalizers) and missing_namespace(obj, facts) is not None


def is_stuck(obj: KubeObject, facts: ClusterFacts) -> bool:
    """Being deleted, or a ghost: what `kfin stuck` lists and `kfin explain` follows to its root causes."""
    return obj.terminating or is_ghost(obj, facts)


def resolve_kinds(kinds: Iterable[str], inventories: list[Inventory]) -> set[tuple[str, str]] | None:
    """--kind values as (group, resource), each found in at least one inventory; None: every kind."""
    kinds = list(kinds)
    if not kinds:
        return None
    wanted = set()
    for text in kinds:
        check_kind(text)
        found, last_error = False, None
        for inv in inventories:
            try:
                r = KindLookup(inv.resources + builtin_resources()).find(text)
                wanted.add(stored_as(r.group, r.resource))  # Event.events.k8s.io: read as core's
                found = True
            except NotFoundError as error:
                last_error = error
        if not found and last_error is not None:
            raise last_error
    return wanted


# Where find_all keeps, in a context's Facts, the rows found before its scan's last list ended: by how many objects
# the inventory held, (filters, rows). Worked out of the objects, forgotten on any read: they are those rows only
# while the facts are those they were found in, with no object added since.
EARLY_ROWS: Worked[int, tuple[Filters, list[StuckObject]]] = Worked("stuck rows before the last list")


def find_all(
    scope: Scope,
    kinds: Iterable[str] = (),
    finalizer: str | None = None,
    older: float | None = None,
    progress: ProgressFactory = no_progress,
    failed: dict[str, KfinError] | None = None,
) -> tuple[list[StuckObject], list[Facts]]:
    """(stuck rows of every context, oldest first; the Facts they came from): what `kfin stuck` prints
    and what `kfin serve --rescan` exposes at each scan. `failed`: as gather's."""
    kinds = list(kinds)

    def explain(facts: Facts) -> None:  # while the scan's last list still pages (kfin.core.read.before_last)
        filters = Filters(resolve_kinds(kinds, [facts.inventory]), finalizer, older)
        rows = find_stuck(facts.inventory, filters, facts)
        facts.kept(EARLY_ROWS)[len(facts.inventory.objects)] = (filters, rows)

    sources = gather(
        scope,
        lean=True,
        progress=progress,
        failed=failed,
        ahead=partial(reads_for, catalog=scope.catalog),
        explain=explain,
    )
    return stuck_in(sources, kinds, finalizer, older), sources


def stuck_in(
    sources: list[Facts], kinds: Iterable[str] = (), finalizer: str | None = None, older: float | None = None
) -> list[StuckObject]:
    """The stuck rows of every context's Facts, oldest first, with --kind, --finalizer and --older-than:
    from a scan (find_all) or from watches (kfin.core.explain.watching) alike."""
    filters = Filters(resolve_kinds(kinds, [f.inventory for f in sources]), finalizer, older)
    # contexts side by side: what their explanations read waits on several API servers at once
    found = ordered(lambda facts: find_stuck(facts.inventory, filters, facts), sources, min(8, len(sources)))
    return oldest_first([row for rows in found for row in rows])


def narrowed(rows: list[StuckObject], verdicts: set[str], chosen: Selector | None) -> list[StuckObject]:
    """--verdict and -l/--field-selector, on the stuck objects found, never on kfin's lists
    (kfin.core.explain.selectors): what kfin stuck lists and kfin remove --all-stuck selects, alike."""
    return [r for r in rows if (not verdicts or r.verdict in verdicts) and (chosen is None or chosen.matches(r.obj))]


def oldest_first(rows: list[StuckObject]) -> list[StuckObject]:
    """The rows of several contexts in one order: longest stuck first."""
    return sorted(
        rows, key=lambda r: (-r.terminating_seconds, r.context, r.obj.namespace, r.obj.type.kind_display, r.obj.name)
    )


def gating_webhooks(rows: list[StuckObject], sources: list[Facts]) -> dict[str, int]:
    """Each webhook failing closed in front of stuck objects (once each), and how many it gates."""
    facts_of = {f.inventory.context: f for f in sources}
    found: dict[str, int] = {}
    for row in rows:
        explanation = explain_cached(row.obj, facts_of.get(row.context, sources[0]))
        whys = {link.why for f in explanation.findings for link in f.links if link.kind == "webhook"}
        for why in whys:
            found[why] = found.get(why, 0) + 1
    return found


# (context, group, resource, namespace, name, uid): a row the same from one scan to the next
RowKey = tuple[str, str, str, str, str, str]
Change = Literal["ADDED", "MODIFIED", "DELETED"]


def row_key(row: StuckObject) -> RowKey:
    return (row.context, row.obj.type.group, row.obj.type.resource, row.obj.namespace, row.obj.name, row.obj.uid)


def changes(before: dict[RowKey, StuckObject], after: list[StuckObject]) -> list[tuple[Change, StuckObject]]:
    """(ADDED | MODIFIED | DELETED, row) between two scans, as kubectl -w names them: MODIFIED when the
    verdict, the blocker or the finalizers changed."""
    now = {row_key(r): r for r in after}
    out: list[tuple[Change, StuckObject]] = []
    for key, row in now.items():
        old = before.get(key)
        if old is None:
            out.append(("ADDED", row))
        elif (old.verdict, old.blocker, old.finalizers) != (row.verdict, row.blocker, row.finalizers):
            out.append(("MODIFIED", row))
    out += [("DELETED", row) for key, row in before.items() if key not in now]
    return out


class Elsewhere(Struct):
    """What is stuck outside the namespace a scan looked in, as one metadata-only list of each type across the
    cluster shows (objects being deleted, and ghosts; their verdicts are not worked out)."""

    looked: bool  # False: no type could be listed across the cluster
    count: int = 0
    namespaces: dict[str, int] = field(default_factory=dict)  # namespace -> objects stuck in it
    cluster_scoped: int = 0  # stuck objects of cluster-scoped types (a Namespace counts as in itself)
    unread: int = 0  # types that could not be listed across namespaces
    why: str = ""  # the first of those failures, in a few words


def stuck_elsewhere(
    facts: Facts, filters: Filters = Filters(), concurrency: int = 16, progress: ProgressFactory = no_progress
) -> Elsewhere | None:
    """After a scan of one namespace found nothing stuck: how many objects are stuck in the other namespaces and
    among cluster-scoped types, as kfin stuck -A would list them (being deleted, or ghosts
    left in a namespace that is gone), with --kind, --finalizer and --older-than applied. None when there is no
    cluster to ask (a snapshot) or the scan was of every namespace. Costs a list per type across namespaces,
    metadata-only, of which only what may be stuck is kept (Lean)."""
    inventory, kube = facts.inventory, facts.kube
    if kube is None or inventory.namespace is None:
        return None
    here = inventory.namespace
    counted = [
        r
        for r in one_per_storage(inventory.resources)
        if filters.kinds is None or (r.group, r.resource) in filters.kinds
    ]
    # Namespaces are listed whatever is counted: a ghost is told by its namespace's absence
    namespace_types = [r for r in inventory.resources if (r.group, r.resource) == NAMESPACES and r not in counted]
    types = namespace_types + counted
    if not types:  # nothing discovered: nothing to ask
        return None
    with progress("looking in other namespaces") as report:
        objects, failures = facts.reader.scan_types(types, concurrency=concurrency, lean=Lean(), progress=report)
    why = f"listing {failures[0].target}: {failures[0].reason}" if failures else ""
    if len(failures) >= len(types):
        return Elsewhere(False, unread=len(failures), why=why)
    existing = (
        None
        if any(f.target == "namespaces" for f in failures)
        else {o.name for o in objects if (o.type.group, o.type.resource) == NAMESPACES}
    )
    wanted = {(r.group, r.resource) for r in counted}
    now = datetime.now(UTC)
    namespaces: dict[str, int] = {}
    cluster_scoped = 0
    for obj in objects:
        is_namespace = (obj.type.group, obj.type.resource) == NAMESPACES
        where = obj.namespace if obj.type.namespaced else obj.name if is_namespace else None
        ghost = bool(obj.finalizers) and existing is not None and obj.type.namespaced and where not in existing
        if (not obj.terminating and not ghost) or where == here or (obj.type.group, obj.type.resource) not in wanted:
            continue
        if filters.deleted_for(obj, now) is None:
            continue
        if where is None:
            cluster_scoped += 1
        else:
            namespaces[where] = namespaces.get(where, 0) + 1
    count = sum(namespaces.values()) + cluster_scoped
    return Elsewhere(True, count, namespaces, cluster_scoped, unread=len(failures), why=why)


class Inside(Struct):
    """The objects being deleted in a Namespace that is not (kfin explain ns NAME on an Active one)."""

    objects: list[KubeObject]
    complete: bool  # False: some of its types could not be listed (or nothing could be read: a snapshot without it)


def stuck_inside(namespace: KubeObject, facts: ClusterFacts) -> Inside | None:
    """What is stuck in a Namespace that is not being deleted itself, oldest first, from a metadata-only list of
    each type in it; None for any other object (a Namespace being deleted is explained with its content)."""
    if (namespace.type.group, namespace.type.resource) != NAMESPACES or namespace.terminating:
        return None
    found = facts.everything(namespace.name)
    if found is None:
        return Inside([], False)
    stuck = [o for o in found if o.terminating]
    stuck.sort(key=lambda o: (o.deletion_requested_at or datetime.max.replace(tzinfo=UTC), o.type.kind, o.name))
    return Inside(stuck, facts.listed(namespace.name))
