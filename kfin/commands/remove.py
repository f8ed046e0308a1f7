"""`kfin remove` and `kfin audit`: plans, confirmation, and the audit record of every applied change."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

from kfin.errors import ExitCode, KfinError, UsageError
from kfin.model import KubeObject, format_time
from kfin.names import check_kind, check_name
from kfin.commands.flags import Options
from kfin.util.text import one_line, say, warn


def _audit_record(kube, user: str, plan_, outcome, forced: bool) -> dict:
    from kfin import __version__

    o = plan_.obj
    return {
        "time": format_time(datetime.now(timezone.utc)), "kfinVersion": __version__,
        "context": kube.context, "server": kube.server, "user": user,
        "object": {"apiVersion": o.type.api_version, "kind": o.type.kind, "namespace": o.namespace or None,
                   "name": o.name, "uid": o.uid, "resourceVersion": o.meta.get("resourceVersion")},
        "finalizersBefore": outcome.before, "finalizersAfter": outcome.after,
        "selected": [f.finalizer for f in plan_.selected], "removed": outcome.removed,
        "verdicts": {c.finding.finalizer: c.finding.verdict.value for c in plan_.choices},
        "forced": forced and any(c.warning and c.finding.verdict.value in ("HOLDING", "UNKNOWN", "BLOCKED")
                                 for c in plan_.choices if c.selected),
        "result": outcome.result, "message": outcome.message, "attempts": outcome.attempts,
    }


def _patch_preview(plan_) -> list[str]:
    from kfin.core.removal import FORCE_DELETION, metadata_patch

    o = plan_.obj
    lines = []
    meta = [f.finalizer for f in plan_.selected if f.field == "metadata.finalizers"]
    spec = [f.finalizer for f in plan_.selected if f.field == "spec.finalizers"]
    if meta:
        lines.append(f"PATCH {o.type.path(o.namespace or None, o.name)} (application/json-patch+json)")
        lines.append(json.dumps(metadata_patch(o.uid, o.finalizers, meta)))
    if any(f.family == FORCE_DELETION for f in plan_.selected):
        lines.append(f"DELETE {o.type.path(o.namespace or None, o.name)} with gracePeriodSeconds 0 and "
                     f"preconditions.uid {o.uid}")
    if spec:
        lines.append(f"PUT {o.type.path(None, o.name, 'finalize')} with the Namespace as read and spec.finalizers: "
                     f"{json.dumps([f for f in o.spec_finalizers if f not in spec])}")
    return lines


def print_plan(plan_) -> None:
    from kfin.core.removal import FORCE_DELETION

    o = plan_.obj
    say(f"{o.ref} ({'Terminating' if o.terminating else 'not being deleted'}), "
          f"finalizers: {', '.join(o.finalizers + o.spec_finalizers) or 'none'}")
    for c in plan_.choices:
        f = c.finding
        action = "refused" if c.selected and c.refused else ("remove" if c.selected else "keep")
        if f.family == FORCE_DELETION and action == "remove":
            action = "force-delete"
        say(f"  {action:8} {f.finalizer or '(' + f.family + ')'}  [{f.verdict.value}] {f.condition}")
        if c.selected and not c.refused:
            say(f"           risk: {f.risk}")
        if c.refused:
            say(f"           refused: {c.refused}")
        if c.warning:
            say(f"           warning: {c.warning}")
    if plan_.selected and not plan_.refused and not plan_.blocked:
        for line in _patch_preview(plan_):
            say(f"  {line}")


def _facts_for(kube, resources):
    """Fresh facts for one object, to explain it again after a race."""
    from kfin.core.facts import Facts
    from kfin.model import Inventory

    def make(obj: KubeObject):
        inv = Inventory(resources, [obj], [], datetime.now(timezone.utc), kube.context, kube.server,
                        obj.namespace or None)
        return Facts(inv, kube, scanned=False)
    return make


def remove_one(options: Options, *, kind, name, patterns, confirm, force, allow_live, server_dry_run,
               audit_log, refresh, wait_seconds: float | None = None, node_lost_after: float = 300,
               recreate_namespace: bool = False) -> int:
    from kfin.core import audit
    from kfin.commands.explain import live_target
    from kfin.core.causes import explain_object
    from kfin.core.removal import Outcome, Remover, plan

    obj, facts = live_target(options, kind, name, refresh)
    findings = explain_object(obj, facts).findings
    if recreate_namespace and confirm and not server_dry_run and any(f.family == "ghost" for f in findings):
        _recreate_namespace(facts.kube, obj.namespace, audit.check_writable(Path(audit_log) if audit_log else None))
        obj, facts = live_target(options, kind, name, refresh)  # no longer a ghost: explained afresh
        findings = explain_object(obj, facts).findings
    plan_ = plan(obj, findings, patterns, force, allow_live, node_lost_after)
    print_plan(plan_)
    if plan_.refused or plan_.blocked:
        reason = plan_.refused or "; ".join(f"{c.finding.finalizer}: {c.refused}" for c in plan_.blocked)
        say(f"error: refused to remove finalizers from {obj.ref}: {one_line(reason)}", err=True)
        return ExitCode.REFUSED
    for c in plan_.choices:
        if c.warning and c.selected:
            warn(f"{c.finding.finalizer}: {c.warning}")
    if not confirm and not server_dry_run:
        print("Dry run: nothing was changed. Add --confirm to apply (or --server-dry-run to have the API server "
              "validate it).", file=sys.stderr)
        return ExitCode.OK
    kube = facts.kube
    remover = Remover(kube, _facts_for(kube, facts.inventory.resources), node_lost_after)
    if server_dry_run:
        outcome = remover.apply(plan_, patterns, force, allow_live, dry_run=True)
        say(f"server dry run: {outcome.message}")
        return ExitCode.OK
    log_path = audit.check_writable(Path(audit_log) if audit_log else None)  # before anything is written
    user = kube.whoami()
    try:
        outcome = remover.apply(plan_, patterns, force, allow_live)
    except KfinError as error:
        outcome = Outcome("failed", error.message, before=obj.finalizers + obj.spec_finalizers)
        _record(_audit_record(kube, user, plan_, outcome, force), log_path)
        raise
    except KeyboardInterrupt:
        outcome = Outcome("interrupted", "interrupted before kfin could read the answer: the change may or may not "
                          "have been applied", before=obj.finalizers + obj.spec_finalizers)
        _record(_audit_record(kube, user, plan_, outcome, force), log_path)
        say(f"interrupted: {obj.ref}: the change may or may not have been applied; `kfin explain` shows its "
              "state now", err=True)
        raise
    recorded = _record(_audit_record(kube, user, plan_, outcome, force), log_path)
    say(f"{outcome.result}: {obj.ref}: {outcome.message}")
    ok = outcome.result in ("removed", "gone", "unchanged", "force-deleted")
    if recorded:
        print(f"recorded in {log_path}", file=sys.stderr)
    if not (ok and recorded):
        return ExitCode.API
    if wait_seconds is not None and outcome.after is not None:
        from kfin.commands.wait import follow_to_end
        return follow_to_end(options, kind, name, obj, kube, wait_seconds)
    return ExitCode.OK


def _recreate_namespace(kube, namespace: str, log_path: Path) -> None:
    """--recreate-namespace: create the namespace of a ghost again (recorded), so that writes to what was left
    in it are accepted; it is left for the operator to delete once its content is dealt with."""
    from kfin import __version__

    created = kube.request("POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace",
                                                              "metadata": {"name": namespace}},
                           what=("create", "namespaces", None))
    meta = (created or {}).get("metadata") or {}
    _record({"time": format_time(datetime.now(timezone.utc)), "kfinVersion": __version__, "context": kube.context,
             "server": kube.server, "user": kube.whoami(),
             "object": {"apiVersion": "v1", "kind": "Namespace", "namespace": None, "name": namespace,
                        "uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")},
             "finalizersBefore": [], "finalizersAfter": [], "selected": [], "removed": [], "verdicts": {},
             "forced": False, "result": "created", "attempts": 1,
             "message": "created again (--recreate-namespace) so that what was left in it can be written"}, log_path)
    say(f"namespace {namespace} created again, so that what was left in it can be written; delete it once its "
        f"content is dealt with (kubectl delete namespace {namespace})", err=True)


def _record(record: dict, path: Path) -> bool:
    """Append to the audit log; if that fails after a write, the record goes to stderr instead of being lost."""
    from kfin.core import audit

    try:
        audit.append(record, path)
        return True
    except audit.AuditError as error:
        say(f"error: {one_line(error.message)}; the record of what was applied follows:", err=True)
        print(json.dumps(record, separators=(",", ":")), file=sys.stderr)
        return False


def remove_all_stuck(options: Options, *, patterns, confirm, force, allow_live, server_dry_run, audit_log,
                     refresh, yes, node_lost_after: float = 300) -> int:
    from kfin.core import audit
    from kfin.render import tables as render
    from kfin.commands.stuck import gather
    from kfin.core.causes import explain_object
    from kfin.core.removal import Outcome, Remover, plan
    from kfin.core.stuck import Filters, find_stuck

    [facts] = gather(options, [], None, refresh, lean=True)
    kube = facts.kube
    rows = find_stuck(facts.inventory, Filters(), facts)
    plans = [plan(r.obj, explain_object(r.obj, facts).findings, patterns, force, allow_live, node_lost_after)
             for r in rows]
    plans = [p for p in plans if not (patterns and p.refused and p.refused.startswith("none of its finalizers"))]
    if not plans:
        print("Nothing to remove: no stuck object matches.", file=sys.stderr)
        return ExitCode.OK
    render.removal_table(plans)
    runnable = [p for p in plans if not p.refused and not p.blocked]
    refused = len(plans) - len(runnable)
    if not confirm and not server_dry_run:
        print(f"Dry run: {len(runnable)} to change, {refused} refused; nothing was changed. Add --confirm to apply.",
              file=sys.stderr)
        return ExitCode.REFUSED if refused else ExitCode.OK
    if confirm and not server_dry_run and sys.stdin.isatty() and not yes:
        try:
            answer = input(f"Remove finalizers from {len(runnable)} objects in context {kube.context}? [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            print("Nothing was changed.", file=sys.stderr)
            return ExitCode.REFUSED
    log_path = None if server_dry_run else audit.check_writable(Path(audit_log) if audit_log else None)
    remover = Remover(kube, _facts_for(kube, facts.inventory.resources), node_lost_after)
    user = "" if server_dry_run else kube.whoami()
    done = failed = unrecorded = 0
    number = 0
    try:
        for number, p in enumerate(runnable, 1):
            try:
                outcome = remover.apply(p, patterns, force, allow_live, dry_run=server_dry_run)
            except KfinError as error:
                outcome = Outcome("failed", error.message, before=p.obj.finalizers + p.obj.spec_finalizers)
            except KeyboardInterrupt:
                outcome = Outcome("interrupted", "interrupted before kfin could read the answer: the change may or "
                                  "may not have been applied", before=p.obj.finalizers + p.obj.spec_finalizers)
                if log_path:
                    _record(_audit_record(kube, user, p, outcome, force), log_path)
                raise
            if log_path and not _record(_audit_record(kube, user, p, outcome, force), log_path):
                unrecorded += 1
            ok = outcome.result in ("removed", "gone", "unchanged", "dry-run", "force-deleted")
            done, failed = done + ok, failed + (not ok)
            say(f"[{number}/{len(runnable)}] {outcome.result}: {p.obj.ref}: {outcome.message}", err=True)
    except KeyboardInterrupt:
        say(f"interrupted at [{number}/{len(runnable)}] {runnable[number - 1].obj.ref} (its state is unknown: "
            f"`kfin explain` shows it): done {done}, failed {failed}, not started {len(runnable) - number}", err=True)
        raise
    print(f"done {done}, refused {refused}, failed {failed}"
          + (f", {unrecorded} not recorded in the audit log (their records are above)" if unrecorded else ""),
          file=sys.stderr)
    if failed or unrecorded:
        return ExitCode.API
    return ExitCode.REFUSED if refused else ExitCode.OK


def remove(options: Options, *, kind, name, patterns, confirm, force, allow_live, server_dry_run, audit_log,
           refresh, all_stuck, yes, wait: bool = False, timeout: str = "5m", node_lost_after: str = "5m",
           recreate_namespace: bool = False) -> int:
    from kfin.commands.wait import parse_timeout

    seconds = parse_timeout(timeout)
    lost_after = parse_timeout(node_lost_after, "--node-lost-after")
    if wait and (all_stuck or not confirm or server_dry_run):
        raise UsageError("--wait follows one object's deletion after --confirm (not with --all-stuck or a dry run)")
    if all_stuck:
        if kind or name:
            raise UsageError("--all-stuck takes no KIND NAME: it works on every stuck object in -n NS or -A")
        return remove_all_stuck(options, patterns=patterns, confirm=confirm, force=force, allow_live=allow_live,
                                server_dry_run=server_dry_run, audit_log=audit_log, refresh=refresh, yes=yes,
                                node_lost_after=lost_after)
    if kind is None or name is None:
        raise UsageError("kfin remove needs KIND NAME (or --all-stuck)")
    check_kind(kind)
    check_name(name)
    return remove_one(options, kind=kind, name=name, patterns=patterns, confirm=confirm, force=force,
                      allow_live=allow_live, server_dry_run=server_dry_run, audit_log=audit_log, refresh=refresh,
                      wait_seconds=seconds if wait else None, node_lost_after=lost_after,
                      recreate_namespace=recreate_namespace)


def show_audit(options: Options, audit_log: str | None) -> int:
    from kfin.core import audit
    from kfin.render import tables as render
    from kfin.commands.flags import check_output

    fmt = check_output(options, ("table", "json", "yaml"))
    path = Path(audit_log) if audit_log else audit.default_path()
    log = audit.read(path)
    for number, why in log.bad_lines:
        warn(f"{path} line {number} is not an audit record ({why}): skipped")
    if fmt != "table":
        render.dump(log.records, fmt)
    elif log.records:
        render.audit_table(log.records)
    else:
        print(f"No removals recorded in {path}.", file=sys.stderr)
    return ExitCode.PARTIAL if log.bad_lines else ExitCode.OK
