"""The root causes of a scan: the few things at the ends of the stuck objects' blocking chains (a node that is
down, an unavailable APIService, a Pod that still runs, an operator that is gone), each once, with every stuck
object it holds and the one step that frees them. What `kfin stuck`, `graph` and `report` lead with."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from msgspec import Struct, field

from kfin.core.explain.blocking import Chain, Step, joined, node_id
from kfin.model import JSON, KubeObject


class HeldObject(Protocol):
    """What a root cause needs of a stuck object (kfin.core.explain.stuck.StuckObject, which reports root causes)."""

    obj: KubeObject
    terminating_seconds: float
    context: str
    chain: Chain | None


class RootCause(Struct):
    """A root cause shared by stuck objects: the object or actor at the end of their chains, and what it holds."""

    label: str  # the object (Node/ip-10-0-2-44) or the actor (the controller of acme.io)
    is_actor: bool
    type: str  # of the link into it: kubelet, used-by-pod, discovery-failure, controller, cloud...
    evidence: str
    verdict: str | None
    holds: list[HeldObject] = field(default_factory=list)  # longest stuck first; never itself
    step: Step | None = None  # what frees them; None where only waiting is left
    context: str = ""

    def to_dict(self, with_context: bool = False) -> JSON:
        out: dict[str, object] = {"context": self.context} if with_context else {}
        out.update(
            {
                "type": self.type,
                "object": None if self.is_actor else self.label,
                "actor": self.label if self.is_actor else None,
                "evidence": self.evidence,
                "verdict": self.verdict,
                "holds": [row.obj.ref for row in self.holds],
                "step": self.step.to_dict() if self.step is not None else None,
            }
        )
        return out


def root_causes(rows: Iterable[HeldObject]) -> list[RootCause]:
    """Each root cause of the rows' chains once (per context), those that hold the most objects first, then
    those holding the longest stuck."""
    by_context: dict[str, list[HeldObject]] = {}
    for row in rows:
        if row.chain is not None:
            by_context.setdefault(row.context, []).append(row)
    found: list[RootCause] = []
    for context, held in by_context.items():
        chains: list[Chain] = [row.chain for row in held if row.chain is not None]
        whole = joined(chains)
        steps = {step.resolves: step for step in whole.steps}
        # what each root holds besides itself: a stuck object its own chain ends at holds nothing but itself
        holders: dict[str, list[HeldObject]] = {}  # in one pass: a scan can have as many roots as objects
        for row in held:
            for root in dict.fromkeys(row.chain.roots if row.chain is not None else ()):
                if node_id(row.obj) != root:
                    holders.setdefault(root, []).append(row)
        for root in whole.roots:
            data = whole.graph.nodes[root]
            into = [d for _, _, d in whole.graph.in_edges(root, data=True)]
            holding = holders.get(root, [])
            found.append(
                RootCause(
                    label=data["label"],
                    is_actor=bool(data.get("actor")),
                    type=into[0]["type"] if into else "waiting",
                    evidence=into[0]["why"] if into else data.get("line") or "",
                    verdict=into[0]["verdict"] if into else data.get("verdict"),
                    holds=holding,
                    step=steps.get(data["label"]),
                    context=context,
                )
            )
    found.sort(key=lambda r: (-len(r.holds), -max((h.terminating_seconds for h in r.holds), default=0), r.label))
    return found
