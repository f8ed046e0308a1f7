"""Properties every scenario must keep, checked on both tiers at the moment a scenario first asks kfin about the
situation it set up (its first reading command against the scenario's cluster that finds something stuck of
the scenario's, tests/runner.py):

- one verdict: `kfin stuck -o json` and `kfin explain -o json` give the same verdict and root causes for every
  stuck object, finalizer by finalizer;
- every finalizer accounted for: each finalizer on a stuck object has a finding; a Terminating namespace's
  conditions are a checklist: every finalizer and resource count its NamespaceFinalizersRemaining and
  NamespaceContentRemaining name, and every finalizer on a stuck object left in it, is answered (an object of the
  chain explained for it, a step of the plan, or the namespace's own finding that says why);
- no placeholder: no command of a plan or a root cause holds a `<name>` or NAME to fill in, nor does a command
  its words quote (a step's note, a finding's fix).

A real control plane moves while kfin reads it (its controllers act between two commands), so a difference in
verdicts is asked again a few times before it counts; the fake answers the same each time.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator

# not wait: a scenario runs it in the background while it moves the cluster
READING = frozenset({"stuck", "explain", "graph", "preflight", "report", "remove", "delete"})
MOST_EXPLAINED = 12  # stuck objects explained per checkpoint: a scenario's own are fewer
# the namespace controller's messages (pkg/controller/namespace/deletion/status_condition_utils.go
# ProcessContentTotals): "FINALIZER in N resource instances", "RESOURCE.GROUP has N resource instances" (core
# resources with a trailing dot: "pods. has 1 resource instances"), each list sorted and joined by ", "
FINALIZER_COUNT = re.compile(r"(\S+) in (\d+) resource instances")
RESOURCE_COUNT = re.compile(r"(\S+) has (\d+) resource instances")
# what a person would have to replace before running a command: <name>, NAME; in the words around a command (a
# step's note, a finding's fix, which may quote one) only <name>: words in capitals are kfin's (DELETE, RBAC)
PLACEHOLDER = re.compile(r"<[^<>\s]*>|\b[A-Z][A-Z_]{2,}\b")
QUOTED_PLACEHOLDER = re.compile(r"<[^<>\s]*>")

ACTIVE: list = []  # the scenario clusters of the running test (tests/conftest.py adds and removes them)


def scenario_of(args: tuple[str, ...]):
    """The active scenario whose admin kubeconfig this command line reads, if its properties are still unchecked."""
    if not args or args[0] not in READING or "--from-snapshot" in args:
        return None
    for cluster in ACTIVE:
        if not cluster.properties_checked and str(cluster.kubeconfig) in args:
            return cluster
    return None


def check(cluster, run) -> None:
    """Raise AssertionError naming every property the scenario's current situation breaks. `run` runs kfin
    in-process (tests.runner.kfin). What the checks read is left out of the fake's request log, and the
    discovery cache they fill is their own, so that the scenario sees the cluster as it left it."""
    cluster.properties_checked = True  # meanwhile: the checks' own commands are not checked
    cluster.properties_seen = False
    before = len(cluster.fake.requests) if cluster.is_fake else 0
    cache = os.environ.get("KFIN_CACHE_DIR")
    with tempfile.TemporaryDirectory() as own_cache:
        os.environ["KFIN_CACHE_DIR"] = own_cache
        try:
            broken = _settled(cluster, run)
        finally:
            if cache is None:
                os.environ.pop("KFIN_CACHE_DIR", None)
            else:
                os.environ["KFIN_CACHE_DIR"] = cache
            if cluster.is_fake:
                del cluster.fake.requests[before:]
            # nothing of the scenario's stuck yet (a preflight before the delete): checked again at the next command
            cluster.properties_checked = cluster.properties_seen
    assert not broken, "properties of every scenario broken:\n- " + "\n- ".join(broken)


def _settled(cluster, run) -> list[str]:
    """What is broken; on a real cluster asked again for a few seconds while it is not empty, since its controllers
    may act between two commands (a verdict changing between them is no disagreement of kfin's)."""
    seen: list[list[str]] = []

    def kept() -> bool:
        seen.append(_broken(cluster, run))
        return not seen[-1]

    if cluster.is_fake:
        kept()
    else:
        cluster.eventually(kept, timeout=10, interval=1, raise_on_timeout=False)
    return seen[-1]


def _broken(cluster, run) -> list[str]:
    """What is broken now."""
    base = ("--kubeconfig", str(cluster.kubeconfig))
    scanned = run("stuck", "-A", "-o", "json", *base)
    try:
        report = json.loads(scanned.stdout)
    except ValueError:
        return [f"kfin stuck -A -o json gave no JSON (exit {scanned.code}): {scanned.stderr.strip()[:300]}"]
    items = [i for i in report.get("items") or [] if _ours(cluster, i)]
    cluster.properties_seen = bool(items)
    if os.environ.get("KFIN_PROPERTIES_TRACE"):
        print(f"properties: {len(items)} stuck objects", [_ref(i) for i in items], file=sys.__stderr__)
    broken = [f"stuck -A: placeholder in {hole}" for hole in placeholders(report)]
    for item in items[:MOST_EXPLAINED]:
        ref = _ref(item)
        line = ["explain", _resource(item), item["name"], "-o", "json", *base]
        if item.get("namespace"):
            line += ["-n", item["namespace"]]
        answer = run(*line)
        try:
            explained = json.loads(answer.stdout)
        except ValueError:
            if "not found" in answer.stderr:
                continue  # gone meanwhile
            broken.append(f"{ref}: kfin explain gave no JSON (exit {answer.code}): {answer.stderr.strip()[:300]}")
            continue
        now = explained.get("object") or {}
        if now.get("uid") != item.get("uid") or not explained.get("terminating"):
            continue  # gone, or made anew, meanwhile
        broken += [f"{ref}: {problem}" for problem in _disagreements(item, explained)]
        inside = [_as_served(i) for i in items if item["kind"] == "Namespace" and i.get("namespace") == item["name"]]
        broken += [f"{ref}: {problem}" for problem in unaccounted(explained, item, inside)]
        broken += [f"{ref}: placeholder in {hole}" for hole in placeholders(explained)]
    return broken


def _as_served(item: dict) -> dict:
    """A stuck item as the API server would send its object (what unaccounted_finalizers reads)."""
    return {"metadata": {"deletionTimestamp": item.get("deletionTimestamp"), "finalizers": item.get("finalizers")}}


def _ours(cluster, item: dict) -> bool:
    """An object of this scenario: on the fake every one; on a shared real cluster its namespace, or a name that
    carries the scenario's suffix."""
    if cluster.is_fake:
        return True
    namespace, name = item.get("namespace") or "", item.get("name") or ""
    return namespace == cluster.namespace or cluster.suffix in namespace or cluster.suffix in name


def _ref(item: dict) -> str:
    where = f"{item['namespace']}/" if item.get("namespace") else ""
    return f"{item['kind']}/{where}{item['name']}"


def _resource(item: dict) -> str:
    return f"{item['resource']}.{item['group']}" if item.get("group") else item["resource"]


def _main_verdict(explained: dict) -> str | None:
    """The verdict of the finding that speaks for the object (kfin.core.explain.causes.registry.main_finding)."""
    findings = explained.get("findings") or []
    if not findings:
        return None
    if not (explained.get("object") or {}).get("finalizers"):
        return next((f for f in findings if f["finalizer"] == "kubernetes"), findings[0])["verdict"]
    return findings[0]["verdict"]


def _roots(causes: list[dict] | None) -> list[tuple[str | None, str | None, str | None]]:
    return sorted(((c.get("object"), c.get("actor"), c.get("verdict")) for c in causes or []), key=str)


def _disagreements(item: dict, explained: dict) -> Iterator[str]:
    """Where `kfin stuck` and `kfin explain` answer the same object differently."""
    if item.get("verdict") != _main_verdict(explained):
        yield f"stuck says {item.get('verdict')}, explain says {_main_verdict(explained)}"
    scanned = {(f["finalizer"] or "", f["field"]): f["verdict"] for f in item.get("findings") or []}
    said = {(f["finalizer"] or "", f["field"]): f["verdict"] for f in explained.get("findings") or []}
    for key in scanned.keys() & said.keys():
        if scanned[key] != said[key]:
            yield f"finalizer {key[0] or '(none)'}: stuck says {scanned[key]}, explain says {said[key]}"
    roots, explained_roots = _roots(item.get("rootCauses")), _roots((explained.get("chain") or {}).get("rootCauses"))
    if roots != explained_roots:
        yield f"root causes differ: stuck {roots}, explain {explained_roots}"


def unaccounted(explained: dict, item: dict | None = None, objects: list[dict] = ()) -> list[str]:
    """What an explanation leaves unanswered: a finalizer of the object with no finding; for a namespace, what its
    conditions or the stuck objects left in it (`objects`) name that the answer leaves out (unaccounted_finalizers)."""
    obj = explained.get("object") or {}
    answered = {f["finalizer"] for f in explained.get("findings") or []}
    missing = [
        f"finalizer {name} has no finding"
        for name in list(obj.get("finalizers") or []) + list(obj.get("specFinalizers") or [])
        if name not in answered
    ]
    if obj.get("kind") == "Namespace":
        left = unaccounted_finalizers(explained, (item or {}).get("conditions") or [], objects)
        missing += [f"{what} (named by its conditions or left in it) is not in the answer" for what in left]
    return missing


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
