"""Properties every scenario must keep, checked on both tiers at the moment a scenario first asks kfin about the
situation it set up (its first reading command against the scenario's cluster that finds something stuck of
the scenario's, tests/runner.py):

- one verdict: `kfin stuck -o json` and `kfin explain -o json` give the same verdict and root causes for every
  stuck object, finalizer by finalizer;
- every finalizer accounted for: each finalizer on a stuck object, and each one a Terminating namespace's
  NamespaceFinalizersRemaining condition names, has an answer (a finding, or a link of the chain, a root cause or
  a step of the plan that names it);
- no placeholder: no command of a plan holds a `<name>` to fill in.

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

READING = frozenset({"stuck", "explain", "graph", "preflight", "report", "remove", "delete"})  # not wait: it is run in the background while the scenario moves
MOST_EXPLAINED = 12  # stuck objects explained per checkpoint: a scenario's own are fewer
PLACEHOLDER = re.compile(r"<[^<>\s]+>")
# "Some content in the namespace has finalizers remaining: a/b in 1 resource instances, c in 2 resource instances"
REMAINING = re.compile(r"([^\s,:]+) in \d+ resource instances")

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
    broken = [f"stuck -A: placeholder in {c!r}" for c in _commands(report.get("rootCauses")) if PLACEHOLDER.search(c)]
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
        broken += [f"{ref}: {problem}" for problem in unaccounted(explained, item)]
        broken += [f"{ref}: placeholder in {c!r}" for c in _commands(explained.get("plan")) if PLACEHOLDER.search(c)]
    return broken


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
    """The verdict of the finding that speaks for the object (kfin.core.causes.registry.main_finding)."""
    findings = explained.get("findings") or []
    if not findings:
        return None
    if not (explained.get("object") or {}).get("finalizers"):
        return next((f for f in findings if f["finalizer"] == "kubernetes"), findings[0])["verdict"]
    return findings[0]["verdict"]


def _roots(causes: list[dict] | None) -> list[tuple[str | None, str | None, str | None]]:
    return sorted((c.get("object"), c.get("actor"), c.get("verdict")) for c in causes or [])


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


def remaining_finalizers(obj: dict) -> list[str]:
    """The finalizers a namespace's NamespaceFinalizersRemaining condition names (True)."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "NamespaceFinalizersRemaining" and condition.get("status") == "True":
            return REMAINING.findall(condition.get("message") or "")
    return []


def unaccounted(explained: dict, item: dict | None = None) -> list[str]:
    """What an explanation leaves unanswered: a finalizer of the object with no finding, or a finalizer its
    namespace's conditions name that neither a finding, the chain, a root cause nor a step of the plan names."""
    obj = explained.get("object") or {}
    answered = {f["finalizer"] for f in explained.get("findings") or []}
    missing = [
        f"finalizer {name} has no finding"
        for name in list(obj.get("finalizers") or []) + list(obj.get("specFinalizers") or [])
        if name not in answered
    ]
    conditions = (item or {}).get("conditions") or []
    named = remaining_finalizers({"status": {"conditions": conditions}}) if obj.get("kind") == "Namespace" else []
    said = json.dumps([explained.get("findings"), explained.get("chain"), explained.get("plan")])
    missing += [f"finalizer {name} (NamespaceFinalizersRemaining) is not in the answer" for name in named
                if name not in said]
    return missing


def _commands(value) -> Iterator[str]:
    """Every command string under a plan or a root cause's step, however deep."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "command" and isinstance(inner, str):
                yield inner
            else:
                yield from _commands(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _commands(inner)
