"""kfin guard's answer to a DELETE: what `kfin preflight` predicts it leaves stuck, said to whoever deletes.

The request comes from kube-apiserver's admission chain (an AdmissionReview v1's `request`); the answer is worked
out from the watch cache (kfin.core.explain.watching) by the same code as `kfin preflight KIND NAME`
(kfin.core.predict.teardown.preflight_of: kfin.core.predict.preflight.foresee's answer; a request that deletes many
objects, a Namespace its content, a CRD its custom resources, by the teardown model of `kfin preflight -f`
(kfin.core.predict.teardown.of_deletion: what that deletion's cascade takes away from what it deletes, a controller or a
webhook's Service; what the namespace or CRD then waits for), in the same words);
never by a request the guard's own webhook configuration matches: no write, no dry run, only what the watches
hold and the reads `explain` makes on demand (GET and LIST, which the configuration never matches).

By default every deletion is allowed, with admission warnings (kubectl, helm, Argo CD and the consoles print
them). Deny mode (a label on the object or its namespace, or --deny for the whole cluster; never with --warn-only)
refuses a deletion predicted to leave objects that nothing will ever release (ORPHANED: no controller would remove
their finalizer); an annotation on the object lets a person through, and the answer's audit annotations record it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from msgspec import Struct, field

from kfin.core.explain.survival import Stuck
from kfin.core.predict.preflight import Preflight
from kfin.core.predict.teardown import Caused, preflight_of
from kfin.core.read.facts import Facts
from kfin.model import JSON, KubeObject

# The label that turns deny mode on for one object, or for everything in a namespace (on the Namespace).
DENY_LABEL = "kfin.dev/guard"
DENY_VALUE = "deny"
# The annotation a person sets on the object to delete it anyway in deny mode (its value says why).
OVERRIDE_ANNOTATION = "kfin.dev/allow-stuck-deletion"

# kube-apiserver's limits for warnings (k8s.io/api admission/v1 AdmissionResponse.warnings: "Limit warnings to 120
# characters if possible. Warnings over 256 characters and large numbers of warnings may be truncated";
# k8s.io/apiserver pkg/endpoints/filters/warning.go: truncateItemRunes = 256 once all warnings of a request pass
# truncateAtTotalRunes = 4 * 1024, and pkg/util/net NewWarningHeader drops a text with control characters). kfin
# keeps each warning within 256 runes, one line, and at most MOST_WARNINGS plus one line for the rest, so that
# nothing it says is cut even when other webhooks warn too.
MOST_RUNES = 256
MOST_WARNINGS = 3

# kfin_guard_reviews_total's decisions
ALLOWED, WARNED, DENIED, OVERRIDDEN, NOT_CURRENT, SKIPPED = (
    "allowed",
    "warned",
    "denied",
    "overridden",
    "not-current",
    "skipped",
)

# Who deletes as part of the control plane's own work: a namespace's content (the namespace controller), a cascade
# (the garbage collector), a Node's Pods (the pod garbage collector); with or without
# --use-service-account-credentials. The deploy configuration's matchConditions skip them before the guard is
# called; the guard skips them too, in case a configuration without them calls it.
CONTROL_PLANE_USERS = (
    "system:kube-controller-manager",
    "system:serviceaccount:kube-system:namespace-controller",
    "system:serviceaccount:kube-system:generic-garbage-collector",
    "system:serviceaccount:kube-system:pod-garbage-collector",
)


class Review(Struct):
    """The answer to one AdmissionReview request."""

    allowed: bool
    decision: str
    warnings: list[str] = field(default_factory=list)
    message: str = ""  # why it is denied
    audit: dict[str, str] = field(default_factory=dict)  # auditAnnotations (kube-apiserver prefixes the webhook)

    def answer(self) -> JSON:
        """The AdmissionReview v1 `response` kube-apiserver reads back (its uid is the request's)."""
        answer: JSON = {"allowed": self.allowed}
        if self.warnings:
            answer["warnings"] = self.warnings
        if not self.allowed:
            answer["status"] = {"code": 403, "reason": "Forbidden", "message": self.message}
        if self.audit:
            answer["auditAnnotations"] = self.audit
        return answer


def short(text: str, most: int = MOST_RUNES) -> str:
    """One line of at most `most` runes (kube-apiserver cuts longer warnings where it likes)."""
    line = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    if len(line) <= most:
        return line
    cut = line[: most - 1].rsplit(" ", 1)[0]
    return cut + "…"


class Guard:
    """Answers AdmissionReview requests from the facts `facts()` gives (None while the cache is not current:
    starting, or a type not listed yet)."""

    def __init__(
        self,
        facts: Callable[[], tuple[Facts | None, str]],
        deny_everywhere: bool = False,
        skip_users: tuple[str, ...] = CONTROL_PLANE_USERS,
        warn_only: bool = False,
    ):
        """`facts`: (the facts, "" or why they are not current). `warn_only`: never deny, the label
        kfin.dev/guard=deny included (an installer's choice that no namespace owner can turn into refusals)."""
        if warn_only and deny_everywhere:
            raise ValueError("a guard that only warns cannot deny everywhere")
        self._facts = facts
        self.deny_everywhere = deny_everywhere
        self.warn_only = warn_only
        self.skip_users = set(skip_users)
        self._lock = threading.Lock()  # a Facts is worked on by one answer at a time

    def review(self, request: JSON) -> Review:
        old = request.get("oldObject")
        # a deletecollection is reviewed object by object, its request naming none (v1.36.2 on the real tier): the
        # object deleted is its oldObject
        name = request.get("name") or ((old if isinstance(old, dict) else {}).get("metadata") or {}).get("name")
        if request.get("operation") != "DELETE" or not name:
            return Review(True, SKIPPED)  # never UPDATE
        if (request.get("userInfo") or {}).get("username") in self.skip_users:
            return Review(True, SKIPPED)
        resource = request.get("resource") or {}
        kind = (request.get("kind") or {}).get("kind") or resource.get("resource", "object")
        what = f"{kind.lower()} {name}"
        with self._lock:
            facts, why = self._facts()
            if facts is None:
                return Review(
                    True, NOT_CURRENT, [short(f"kfin: not checked: {why}; {_preflight(request, kind, name)}")]
                )
            rtype = facts.resource(resource.get("group", ""), resource.get("resource", ""))
            if rtype is None or not isinstance(old, dict):
                return Review(True, ALLOWED)
            target = KubeObject(rtype, old)
            namespace = facts.find("", "namespaces", "", target.namespace, full=True) if target.namespace else None
            result = preflight_of(facts, target)  # the answer `kfin preflight KIND NAME` gives
        notes = [short(f"kfin: could not read {', '.join(result.unknown[:3])}: the prediction may miss some")]
        notes = notes if result.unknown else []
        if why:  # a watch is down: what it would say is not known, so nothing is refused on it
            notes.append(short(f"kfin: {why}: the prediction may miss some"))
        if result.clean and not result.warnings:
            return Review(True, NOT_CURRENT if why else ALLOWED, notes)
        warnings = _warnings(result, what)
        warnings = (
            warnings[:MOST_WARNINGS] + [short(f"kfin: the whole answer: {_preflight(request, kind, name)}")] + notes
        )
        stranded = [s for s in result.stuck + result.orphaned if s.verdict == "ORPHANED" and s.certain]
        if why or not stranded or not self._deny_mode(target, namespace):
            return Review(True, NOT_CURRENT if why else WARNED, warnings)
        override = (target.meta.get("annotations") or {}).get(OVERRIDE_ANNOTATION)
        if override is not None:
            audit = {"override": short(f"{OVERRIDE_ANNOTATION}={override}", 1000), "stranded": str(len(stranded))}
            return Review(True, OVERRIDDEN, warnings, audit=audit)
        why_denied = _warnings(
            Preflight(
                target,
                result.deleted,
                [s for s in result.stuck if s in stranded],
                orphaned=[s for s in result.orphaned if s in stranded],
            ),
            what,
        )[0]
        message = short(
            f"kfin guard denies deleting {what}: "
            + why_denied.removeprefix("kfin: ")
            + f" (to delete it anyway, annotate it {OVERRIDE_ANNOTATION}=<why>)",
            1000,
        )
        return Review(False, DENIED, warnings, message, {"denied": str(len(stranded))})

    def _deny_mode(self, target: KubeObject, namespace: KubeObject | None) -> bool:
        if self.warn_only:
            return False
        if self.deny_everywhere:
            return True
        return any(
            (o.meta.get("labels") or {}).get(DENY_LABEL) == DENY_VALUE for o in (target, namespace) if o is not None
        )


def _preflight(request: JSON, kind: str, name: str) -> str:
    # the object's own namespace: a Namespace's request names itself as its namespace (kube-apiserver's RequestInfo)
    namespace = ((request.get("oldObject") or {}).get("metadata") or {}).get("namespace")
    ns = f" -n {namespace}" if namespace else ""
    return f"kfin preflight {kind.lower()} {name}{ns}"


def _warnings(result: Preflight, what: str) -> list[str]:
    """One warning per kind of object and reason, most objects first."""
    groups: dict[tuple[object, ...], list[Stuck]] = {}
    for stuck in result.stuck + result.orphaned:
        if stuck.obj is result.target:
            key: tuple[object, ...] = ("target", stuck.finalizer, stuck.reason)
        else:
            key = (stuck.obj.type.qualified, stuck.obj.namespace, stuck.finalizer, stuck.verdict, stuck.first)
        groups.setdefault(key, []).append(stuck)
    out = [_said(f"kfin: deleting {what} drains nothing", warning, "") for warning in result.warnings]
    for found in sorted(groups.values(), key=len, reverse=True):
        first = found[0]
        obj = first.obj
        if obj is result.target:
            # what a namespace or CRD waits for is named: what to do about it is in the warnings about those
            step = "" if isinstance(first, Caused) and first.waits_for else _step(first.step) or "see kfin preflight"
            out.append(_said(f"kfin: deleting {what} stays stuck", first.reason, step))
            continue
        count = len({s.obj.uid for s in found})
        subject = f"{obj.type.kind} {obj.name}" if count == 1 else f"{count} {obj.type.kind}s"
        left = "stuck" if first in result.stuck else "without a controller"
        reason, step = first.reason, _step(first.step)
        if first.first:  # its controller goes with the deletion: the reason names a Pod, the step says it all
            if not isinstance(first, Caused):  # the teardown model's says what goes: the controller, or its rights
                reason = f"{'their' if count > 1 else 'its'} controller is deleted with it"
            ns = f" -n {obj.namespace}" if obj.namespace else ""
            same = obj.namespace and all(s.obj.namespace == obj.namespace for s in found)
            step = (
                f"delete them first: kubectl delete {obj.type.qualified}{ns} --all"
                if count > 1 and same and first in result.stuck
                else f"delete first: {step}"
            )
        out.append(_said(f"kfin: deleting {what} leaves {subject} {left} ({first.finalizer})", reason, step))
    return out


def _step(step: object) -> str:
    """A Stuck's step in words: a command, or actions (each a command or a note, and when)."""
    if isinstance(step, str):
        return step
    return "; ".join(dict.fromkeys(getattr(a, "text", str(a)) for a in step or ()))  # type: ignore[attr-defined]


def _said(head: str, reason: str, step: str) -> str:
    """HEAD: REASON; STEP within MOST_RUNES, the reason shortened first: the step is what to do."""
    tail = f"; {step}" if step else ""
    room = MOST_RUNES - len(head) - len(tail) - 2
    if room < 20:
        return short(f"{head}: {reason}{tail}")
    return short(f"{head}: {short(reason, room)}{tail}")
