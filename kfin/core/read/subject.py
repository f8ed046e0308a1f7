"""Finding the object a command names (KIND NAME), live or in a snapshot, with the Facts to explain it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from msgspec import Struct, field

from kfin.api import inventory
from kfin.api.builtin_kinds import builtin_resources
from kfin.api.connection import Kube
from kfin.api.resources import KindLookup, stored_as
from kfin.api.scan import REDUCED_FIELDS, names_listed, reduce_object, slim_metadata, with_managers
from kfin.core.read.catalog import Catalog
from kfin.core.read.facts import Facts
from kfin.core.read.reader import Reader, reader_for
from kfin.core.read.scope import Scope
from kfin.errors import KfinError, NotFoundError, UsageError
from kfin.model import Inventory, KubeObject, ResourceType
from kfin.names import nearest

NAMESPACE_TYPE = ResourceType("", "v1", "namespaces", "Namespace", False)


def load_target(scope: Scope, kind: str, name: str) -> tuple[KubeObject, Facts]:
    """The object to explain and the Facts to explain it with (live, or from a snapshot)."""
    if not scope.from_snapshot:
        return live_target(scope, kind, name)
    inv = inventory.load(scope.from_snapshot)
    rtype = KindLookup(inv.resources + builtin_resources()).find(kind)
    namespace = scope.namespace
    stored = stored_as(rtype.group, rtype.resource)
    matches = [
        o
        for o in inv.objects
        if stored_as(o.type.group, o.type.resource) == stored  # a file may hold Events under either API
        and o.name == name
        and (not rtype.namespaced or not namespace or o.namespace == namespace)
    ]
    if not matches:
        raise NotFoundError(
            f'{rtype.qualified} "{name}" not found in {scope.from_snapshot}'
            + (f' (namespace "{namespace}")' if namespace else "")
        )
    if len(matches) > 1:
        raise UsageError(
            f'{rtype.qualified} "{name}" exists in several namespaces of the snapshot '
            f"({', '.join(o.namespace for o in matches)}): pass -n"
        )
    return matches[0], Facts(inv, reader_for(scope, None))


class Whereabouts(Struct):
    """Where an object a command named but did not find may be instead, as far as kfin could read: under another
    type the kind typed names too, in other namespaces, or by a name or namespace one typo away."""

    other_types: list[ResourceType] = field(default_factory=list)  # of the same name, where it was looked for
    namespaces: list[str] = field(default_factory=list)  # of the same type and name, elsewhere
    namespace_absent: bool = False
    near_namespace: str | None = None  # the namespace one typo away from one that does not exist
    near_name: str | None = None  # the name one typo away, in the namespace looked in


class MissingObjectError(NotFoundError):
    """The kind is known, but no object of that name is there (a typo of the kind is a plain NotFoundError)."""

    def __init__(
        self,
        message: str,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        kube: Kube,
        named: list[ResourceType] | None = None,
    ):
        super().__init__(message, rtype.resource, name)
        self.rtype, self.namespace, self.kube = rtype, namespace, kube
        self.named = named or [rtype]  # every type the kind as typed names (rtype the one looked in)

    @property
    def ref(self) -> str:
        return f"{self.rtype.kind_display}/{self.namespace + '/' if self.namespace else ''}{self.name}"

    def namespace_absent(self) -> bool:
        """Whether its namespace is known not to exist (a GET of an object in a namespace that does not
        exist answers 404 for the object alone); False when that cannot be read. Asked only when wanted."""
        if not self.namespace:
            return False
        try:
            return self.kube.read_object_or_none(NAMESPACE_TYPE, None, self.namespace) is None
        except KfinError:
            return False

    def whereabouts(self) -> Whereabouts:
        """Where it may be instead, each from a read that stops at the first answer: the other types the kind
        names (a GET each), the same name in every namespace (one list the server narrows to that name), then
        the nearest namespace (when its own does not exist) or the nearest name there. What cannot be read is
        left out: it is never said to be anywhere it was not seen."""
        found = Whereabouts()
        for other in self.named:
            if other == self.rtype:
                continue
            namespace = self.namespace if other.namespaced else None
            try:
                self.kube.read_object(other, namespace, self.name, metadata_only=True)
            except KfinError:  # not there, or not readable: not said to be there
                continue
            found.other_types.append(other)
        if found.other_types:
            return found
        if self.rtype.namespaced:
            try:
                listed = names_listed(self.kube, self.rtype, None, self.name)
                found.namespaces = sorted({ns for ns, name in listed if name == self.name})
            except KfinError:
                pass
            if found.namespaces:
                return found
        try:
            names = [name for _, name in names_listed(self.kube, self.rtype, self.namespace)]
        except KfinError:
            return found
        found.near_name = nearest(self.name, names)
        # a namespace that does not exist lists empty: asked only then, with the namespace nearest to it
        found.namespace_absent = not names and self.namespace_absent()
        if found.namespace_absent:
            try:
                namespaces = [name for _, name in names_listed(self.kube, NAMESPACE_TYPE, None)]
            except KfinError:
                return found
            found.near_namespace = nearest(str(self.namespace), namespaces)
        return found


def live_target(scope: Scope, kind: str, name: str) -> tuple[KubeObject, Facts]:
    """The object as the API server has it now (whole for the kinds explanations read whole), and Facts
    that start with it alone and read the rest on demand."""
    kube = Kube.connect(scope.target)
    reader = reader_for(scope, kube)
    resources, failures = reader.discover(scope.refresh)
    lookup = KindLookup(resources)
    rtype: ResourceType = lookup.find(kind)
    namespace = (scope.namespace or kube.namespace) if rtype.namespaced else None
    key = (rtype.group, rtype.resource)
    full = key in REDUCED_FIELDS
    try:
        raw = reader.read_object(rtype, namespace, name, metadata_only=not full)
    except NotFoundError:
        where = f' in namespace "{namespace}"' if namespace else ""
        raise MissingObjectError(
            f'{rtype.qualified} "{name}" not found{where}',
            rtype,
            namespace,
            name,
            kube,
            lookup.all_named(kind),
        ) from None
    obj = KubeObject(
        rtype,
        with_managers(
            {
                "apiVersion": rtype.api_version,
                "kind": rtype.kind,
                "metadata": slim_metadata(raw.get("metadata") or {}),
                **reduce_object(key, raw),
            },
            raw.get("metadata") or {},
        ),
    )
    inv = Inventory(
        resources,
        [obj],
        failures=list(failures),
        observed_at=datetime.now(UTC),
        context=kube.context,
        server=kube.server,
        namespace=namespace,
        detailed={(rtype.group, rtype.resource, namespace or "")} if full else set(),
    )
    return obj, Facts(inv, reader, scanned=False)


def facts_on_demand(scope: Scope) -> Facts:
    """Facts that read what they are asked for (live), or everything a snapshot holds."""
    if scope.from_snapshot:
        return Facts(inventory.load(scope.from_snapshot), reader_for(scope, None))
    kube = Kube.connect(scope.target)
    reader = reader_for(scope, kube)
    resources, failures = reader.discover(scope.refresh)
    inv = Inventory(
        resources,
        [],
        failures=list(failures),
        observed_at=datetime.now(UTC),
        context=kube.context,
        server=kube.server,
        namespace=kube.namespace,
    )
    return Facts(inv, reader, scanned=False)


def fresh_facts(kube: Kube, resources: list[ResourceType], catalog: Catalog) -> Callable[[KubeObject], Facts]:
    """A maker of Facts for one object read again, to explain it afresh (after a race, kfin remove), with the
    command's catalog."""

    def make(obj: KubeObject) -> Facts:
        inv = Inventory(
            resources,
            [obj],
            failures=[],
            observed_at=datetime.now(UTC),
            context=kube.context,
            server=kube.server,
            namespace=obj.namespace or None,
        )
        return Facts(inv, Reader(kube, catalog=catalog), scanned=False)

    return make
