"""Removal only by proof: kfin mcp plans a removal as kfin remove's dry run does, binds what it would remove to the
object's uid and resourceVersion with a digest, and applies it later only for that digest, on the object as it
is then, through the same Remover (test op, audit log).

An assistant is held to less than a person at the command line: it may remove only what kfin proved nothing else
will remove (kfin remove's default selection). A finalizer its controller still wants (WAITING, STALLED), one that
HOLDS, or one kfin cannot account for (UNKNOWN) is refused with its safe fix, even when named: forcing those is a
person's decision (kfin remove --finalizer NAME [--force])."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from kfin.core.explain.causes import explain_object
from kfin.core.read.facts import Facts
from kfin.core.read.scope import Scope
from kfin.core.read.subject import fresh_facts, live_target, load_target
from kfin.core.remove.apply import apply_plans
from kfin.core.remove.plan import Plan, as_read, plan, requests_preview
from kfin.errors import ExitCode, KfinError
from kfin.model import KubeObject, metadata_patch
from kfin.util.text import one_line


class RefusedError(KfinError):
    """A removal kfin mcp refuses, with the reason (kfin remove's exit code 10)."""

    exit_code = ExitCode.REFUSED


class RemovalRequest(Struct, frozen=True):
    """What plan_removal was asked: which object, and which finalizers (none: those kfin proved orphaned)."""

    kind: str
    name: str
    namespace: str | None
    finalizers: tuple[str, ...] = ()


class Planned(Struct):
    request: RemovalRequest
    plan: Plan
    digest: str | None  # None when refused


class Ledger(Struct):
    """The digests this server gave out, each usable once: an unknown digest is no proof of anything."""

    issued: dict[str, RemovalRequest] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def digest_of(obj: KubeObject, server: str, remove: list[str]) -> str:
    """The object's identity and version, and exactly what would go: any change of the object changes it."""
    bound = {
        "server": server,
        "apiVersion": obj.type.api_version,
        "resource": obj.type.resource,
        "namespace": obj.namespace or None,
        "name": obj.name,
        "uid": obj.uid,
        "resourceVersion": obj.meta.get("resourceVersion"),
        "finalizers": obj.finalizers + obj.spec_finalizers,
        "remove": sorted(remove),
    }
    return "sha256:" + hashlib.sha256(json.dumps(bound, sort_keys=True).encode()).hexdigest()


def assistant_plan(obj: KubeObject, facts: Facts, request: RemovalRequest) -> Plan:
    """kfin remove's plan, less what a person must decide on (module docstring): kept with the plan, so that a
    plan made again after a race is held to it too."""
    findings = explain_object(obj, facts).findings
    return plan(obj, findings, request.finalizers, force=False, allow_live=False, proven_only=True)


def make_plan(scope: Scope, request: RemovalRequest) -> tuple[Plan, str]:
    """The plan for the object as read now (live, or from the snapshot), and the server it was read from."""
    obj, facts = load_target(scope, request.kind, request.name)
    return assistant_plan(obj, facts, request), facts.inventory.server


def refusal(p: Plan) -> str | None:
    """Why nothing is removed, as kfin remove says it, or None."""
    if p.refusal is not None:
        return f"refused to {p.refused_what}: {one_line(p.refusal)}"
    return None


def plan_document(planned: Planned, writes_allowed: bool) -> dict[str, Any]:
    """What plan_removal answers: the object as read, each finalizer's fate, the exact requests and patch, the
    risks, and the digest that apply_removal needs."""
    p = planned.plan
    o = p.obj
    meta = [f.finalizer for f in p.selected if f.location == "metadata.finalizers"]
    refused = refusal(p)
    return {
        "object": {**as_read(o), "terminating": o.terminating},
        "finalizers": o.finalizers + o.spec_finalizers,
        "choices": [
            {
                **c.finding.to_dict(),
                "selected": c.selected and not c.refused,
                "refused": c.refused,
                "warning": c.warning,
            }
            for c in p.choices
        ],
        "remove": [f.finalizer for f in p.selected] if not refused else [],
        "risks": [{"finalizer": f.finalizer, "risk": f.risk} for f in p.selected] if not refused else [],
        "requests": requests_preview(p) if not refused else [],
        "patch": metadata_patch(o.uid, o.finalizers, meta) if meta and not refused else None,
        "refused": refused,
        "digest": planned.digest,
        "writesAllowed": writes_allowed,
        "next": (
            None
            if refused
            else (
                f"apply_removal with digest {planned.digest}"
                if writes_allowed
                else "kfin mcp was started without --allow-writes: a person applies it with kfin remove ... --confirm"
            )
        ),
    }


def plan_removal(scope: Scope, request: RemovalRequest, ledger: Ledger) -> Planned:
    p, server = make_plan(scope, request)
    digest = None
    if refusal(p) is None:
        digest = digest_of(p.obj, server, [f.finalizer for f in p.selected])
        with ledger.lock:
            ledger.issued[digest] = request
    return Planned(request, p, digest)


class Writes(Struct, frozen=True):
    """How kfin mcp was started: whether it may write, and where it records what it writes."""

    allowed: bool
    audit_log: Path | None = None


def apply_removal(scope: Scope, digest: str, *, ledger: Ledger, writes: Writes, client: str) -> dict[str, Any]:
    """Apply the plan a digest names, if writes are allowed, the object is still as planned, and the verdicts still
    allow it; applied and recorded as kfin remove --confirm does (kfin.core.remove.apply), with the MCP client's
    name."""
    with ledger.lock:
        request = ledger.issued.get(digest)
    if request is None:
        raise RefusedError(
            "refused: no removal was planned with this digest (plan_removal gives one, for one object as read then)"
        )
    if not writes.allowed:
        raise RefusedError(
            "refused: kfin mcp was started without --allow-writes, so it applies nothing; a person can apply the "
            f"plan with kfin remove {request.kind} {request.name}"
            + (f" -n {request.namespace}" if request.namespace else "")
            + " --confirm"
        )
    if scope.from_snapshot:
        raise RefusedError("refused: kfin mcp reads a snapshot (--from-snapshot), which cannot be written")
    obj, facts = live_target(scope, request.kind, request.name)
    p = assistant_plan(obj, facts, request)
    reason = refusal(p)
    if reason is not None:
        raise RefusedError(f"{reason} (as read now)")
    kube = facts.kube
    assert kube is not None  # live_target's facts are live
    if digest_of(obj, facts.inventory.server, [f.finalizer for f in p.selected]) != digest:
        raise RefusedError(
            f"refused: {obj.ref} changed since plan_removal (now resourceVersion "
            f"{obj.meta.get('resourceVersion')}, finalizers {', '.join(obj.finalizers + obj.spec_finalizers) or 'none'}"
            "): the digest no longer matches it; plan it again"
        )
    with ledger.lock:
        if ledger.issued.pop(digest, None) is None:  # another call took it meanwhile
            raise RefusedError("refused: this digest was used already")
    [applied] = apply_plans(
        [p],
        kube=kube,
        facts_for=fresh_facts(kube, facts.inventory.resources, facts.catalog),
        audit_log=writes.audit_log,
        noted={"mcpClient": client},
    )
    if applied.error is not None:  # recorded as kfin remove records it, then said
        raise applied.error
    outcome = applied.outcome
    return {
        "result": outcome.result,
        "object": obj.ref,
        "message": outcome.message,
        "removed": outcome.removed,
        "finalizersBefore": outcome.before,
        "finalizersAfter": outcome.after,
        "recorded": str(applied.log) if applied.recorded else None,
        "auditRecord": applied.record if not applied.recorded else None,
        "ok": applied.ok and applied.recorded,
    }
