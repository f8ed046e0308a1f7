"""Properties every answer of kfin must have, as checks over its JSON: reused by scenarios and property tests.

- unaccounted_finalizers: a Terminating namespace's conditions are a checklist. Every finalizer and every resource
  count its NamespaceFinalizersRemaining and NamespaceContentRemaining name, and every finalizer on every stuck
  object left in it, is accounted for by `kfin explain ns NAME -o json`: an object of the blocking chain explained
  for that finalizer, a step of the plan, or the namespace's own finding that says why.
- placeholders: no command of a plan holds a placeholder (`<name>`, NAME) to fill in: each one pastes as it stands;
  nor does a command its words quote (a step's note, a finding's fix).
"""

from __future__ import annotations

import re

# the namespace controller's messages (pkg/controller/namespace/deletion/status_condition_utils.go
# ProcessContentTotals): "FINALIZER in N resource instances", "RESOURCE.GROUP has N resource instances" (core
# resources with a trailing dot: "pods. has 1 resource instances"), each list sorted and joined by ", "
FINALIZER_COUNT = re.compile(r"(\S+) in (\d+) resource instances")
RESOURCE_COUNT = re.compile(r"(\S+) has (\d+) resource instances")
# what a person would have to replace before running a command: <name>, NAME; in the words around a command (a
# step's note, a finding's fix, which may quote one) only <name>: words in capitals are kfin's (DELETE, RBAC)
PLACEHOLDER = re.compile(r"<[^<>\s]*>|\b[A-Z][A-Z_]{2,}\b")
QUOTED_PLACEHOLDER = re.compile(r"<[^<>\s]*>")

def _true(conditions: list[dict], kind: str) -> str:
    found = next((c for c in conditions or [] if c.get("type") == kind and c.get("status") == "True"), None)
    return str(found.get("message") or "") if found else ""


def _steps(explained: dict) -> list[dict]:
    plan = explained.get("plan") or {}
    return list(plan.get("steps") or [])


def _actions(step: dict) -> list[dict]:
    return [step] + list(step.get("more") or [])


def _step_text(explained: dict) -> str:
    return "\n".join(
        " ".join(str(a.get(key) or "") for key in ("command", "when", "note"))
        + f" {step.get('resolves') or ''} {step.get('why') or ''}"
        for step in _steps(explained)
        for a in _actions(step)
    )


def _own_findings(explained: dict) -> list[dict]:
    return [f for f in explained.get("findings") or [] if f.get("finalizer") == "kubernetes"]


def unaccounted_finalizers(explained: dict, conditions: list[dict], objects: list[dict] = ()) -> list[str]:
    """What the namespace's conditions, or the stuck objects left in it (`objects`, as the API server sends them),
    name that the answer leaves out: "finalizer F" or "resource R (N instances)", each once; [] when complete.

    A finalizer is accounted for when an object of the blocking chain was explained for it (an edge carries it),
    when a step of the plan names it, or when the namespace's own finding says why in its condition; a resource
    count, when the namespace's own finding or a step names that resource."""
    chain = explained.get("chain") or {}
    explained_for = {edge.get("finalizer") for edge in chain.get("edges") or [] if edge.get("finalizer")}
    steps = _step_text(explained)
    said = "\n".join(f.get("condition") or "" for f in _own_findings(explained))
    told = "\n".join(
        "\n".join([f.get("condition") or "", f.get("fix") or "", *(f.get("evidence") or [])])
        for f in _own_findings(explained)
    )
    finalizers = [name for name, _ in FINALIZER_COUNT.findall(_true(conditions, "NamespaceFinalizersRemaining"))]
    for obj in objects:
        meta = obj.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            finalizers += list(meta.get("finalizers") or [])
    missing = [
        f"finalizer {name}"
        for name in dict.fromkeys(finalizers)
        if name not in explained_for and name not in steps and name not in said
    ]
    for resource, count in RESOURCE_COUNT.findall(_true(conditions, "NamespaceContentRemaining")):
        resource = resource.rstrip(".")
        if resource not in told and resource not in steps:
            missing.append(f"resource {resource} ({count} instances)")
    return missing


def placeholders(report: dict) -> list[str]:
    """Every command of the answer that holds a placeholder, and every command quoted in its words that does: of
    `kfin explain -o json`'s plan and findings, and of `kfin stuck -o json`'s root causes, as "text: placeholder"."""
    steps = _steps(report) + [c["step"] for c in report.get("rootCauses") or [] if c.get("step")]
    actions = [a for step in steps for a in _actions(step)]
    commands = [a.get("command") for a in actions] + [f.get("removeCommand") for f in report.get("findings") or []]
    words = [a.get(key) for a in actions for key in ("note", "when")]
    words += [f.get("fix") for f in report.get("findings") or []]
    found = [f"{command}: {hole}" for command in commands if command for hole in PLACEHOLDER.findall(command)]
    return found + [f"{text}: {hole}" for text in words if text for hole in QUOTED_PLACEHOLDER.findall(text)]
