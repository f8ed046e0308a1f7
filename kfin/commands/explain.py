"""`kfin explain KIND NAME`: the thin layer between the command line and kfin.explain."""

from __future__ import annotations

from datetime import datetime, timezone

from kfin.errors import ExitCode, NotFoundError, UsageError
from kfin.core.facts import Facts
from kfin.model import Inventory, KubeObject, ResourceType
from kfin.commands.flags import Options
from kfin.util.text import warn_failures


def load_target(options: Options, kind: str, name: str, from_snapshot: str | None,
                refresh: bool) -> tuple[KubeObject, Facts]:
    """The object to explain and the Facts to explain it with (live, or from a snapshot)."""
    from kfin.api.builtin_kinds import builtin_resources
    from kfin.api.resources import Catalog

    if from_snapshot:
        from kfin.api import inventory
        inv = inventory.load(from_snapshot)
        rtype = Catalog(inv.resources + builtin_resources()).find(kind)
        matches = [o for o in inv.objects if o.type.group == rtype.group and o.type.resource == rtype.resource
                   and o.name == name and (not rtype.namespaced or not options.namespace
                                           or o.namespace == options.namespace)]
        if not matches:
            raise NotFoundError(f'{rtype.qualified} "{name}" not found in {from_snapshot}'
                                + (f' (namespace "{options.namespace}")' if options.namespace else ""))
        if len(matches) > 1:
            raise UsageError(f'{rtype.qualified} "{name}" exists in several namespaces of the snapshot '
                             f'({", ".join(o.namespace for o in matches)}): pass -n')
        return matches[0], Facts(inv)
    return live_target(options, kind, name, refresh)


def live_target(options: Options, kind: str, name: str, refresh: bool) -> tuple[KubeObject, Facts]:
    from kfin.api.discovery import discover
    from kfin.api.connection import Kube
    from kfin.api.resources import Catalog
    from kfin.api.scan import REDUCED_FIELDS, reduce_object, slim_metadata, with_managers

    kube = Kube.connect(options.target())
    resources, failures = discover(kube, refresh)
    rtype: ResourceType = Catalog(resources).find(kind)
    namespace = (options.namespace or kube.namespace) if rtype.namespaced else None
    key = (rtype.group, rtype.resource)
    full = key in REDUCED_FIELDS
    path = rtype.path(namespace, name)
    what = ("get", rtype.qualified, namespace)
    try:
        raw = kube.get(path, what=what) if full else kube.get_metadata(path, what=what)
    except NotFoundError:
        where = f' in namespace "{namespace}"' if namespace else ""
        raise NotFoundError(f'{rtype.qualified} "{name}" not found{where}') from None
    obj = KubeObject(rtype, with_managers({"apiVersion": rtype.api_version, "kind": rtype.kind,
                                           "metadata": slim_metadata(raw.get("metadata") or {}),
                                           **reduce_object(key, raw)}, raw.get("metadata") or {}))
    inv = Inventory(resources, [obj], list(failures), datetime.now(timezone.utc), kube.context, kube.server,
                    namespace, {(rtype.group, rtype.resource, namespace or "")} if full else set())
    return obj, Facts(inv, kube, scanned=False)


def explain(options: Options, *, kind: str, name: str, from_snapshot: str | None, refresh: bool) -> int:
    from kfin.render import tables as render
    from kfin.core.blocking import follow
    from kfin.core.causes import explain_cached
    from kfin.commands.flags import check_output

    fmt = check_output(options, ("table", "json", "yaml"))
    obj, facts = load_target(options, kind, name, from_snapshot, refresh)
    explanation = explain_cached(obj, facts)
    chain = follow(obj, facts) if obj.terminating else None
    events = facts.warnings_about(obj)
    if fmt == "table":
        render.explanation_panels(explanation)
        if events:
            render.warning_events(events, facts.inventory.observed_at)
        if chain is not None:
            render.chain_and_plan(chain)
    else:
        report = explanation.to_dict(facts)
        report.update(chain.to_dict() if chain else {"chain": None, "plan": None})
        report["events"] = events
        render.dump(report, fmt)
    warn_failures(facts.inventory.failures)
    return ExitCode.PARTIAL if facts.inventory.failures else ExitCode.OK
