"""Explaining while a scan's last list still pages.

On a large cluster one list is a scan's wall: Events, the most numerous kind, page after page, long after every
other type is listed. What the explanations of the others need of that list is little: whether it adds a dependent
of an owner they looked at, an object where one read a namespace's content or a type's objects, or a failure. So the
explanations start on everything else (the step kfin.api.inventory.live_steps gives then: BeforeLastList), in the
scan's thread while the list pages, with the facts recording what they asked (Facts.asked); when the list ends, what
it added is checked against that. Asked of nothing, it is added to those facts and their explanations stand (the
answers are those a scan that waited would give, observed when the other lists had ended), and a stuck object it
added is explained then; asked of, the explanations are worked out again on facts of the whole scan, which take what
was read instead of reading it again (Facts.succeeding, Reader.succeeding).
"""

from __future__ import annotations

from collections.abc import Callable

from kfin.core.read.facts import Asked, Facts
from kfin.errors import KfinError
from kfin.model import Inventory, KubeObject, ResourceType


class BeforeLast:
    """Facts of a scan without its last list, explained while that list pages, until the scan ends."""

    def __init__(self, make_facts: Callable[[Inventory], Facts], explain: Callable[[Facts], object]):
        """`make_facts`: Facts of an inventory, as the scan's caller makes them; `explain`: what the command works
        out of them (kfin.core.explain.stuck.find_all: the stuck rows)."""
        self.make_facts, self.explain = make_facts, explain
        self.facts: Facts | None = None
        self.last: ResourceType | None = None

    def start(self, inventory: Inventory, last: ResourceType) -> None:
        """Explain what is known without the list of type `last` (live_steps' BeforeLastList)."""
        facts = self.make_facts(inventory)
        facts.asked = Asked()
        facts.reader.recording = {}  # what they read, for the facts that may succeed them
        try:
            self.explain(facts)
        except KfinError:  # said again, and the same way, when the whole scan is explained
            return
        self.facts, self.last = facts, last

    def settle(self, scanned: Inventory) -> Facts | None:
        """Facts of the whole scan (`scanned`, as live returns it), with what was worked out before its last list
        ended when nothing that list added was asked of it; None when nothing was started."""
        facts, last = self.facts, self.last
        if facts is None or last is None:
            return None
        before = facts.inventory
        asked = facts.asked
        known = {(f.what, f.target) for f in before.failures}
        if asked is None or any((f.what, f.target) not in known for f in scanned.failures):
            return facts.succeeding(scanned)  # the last list failed: explanations counted it as listed
        uids = {o.uid for o in before.objects}
        added = [o for o in scanned.objects if o.type == last or o.uid not in uids]
        if any(_asked_of(o, asked) for o in added):
            return facts.succeeding(scanned)
        facts.add_last_list(added, scanned.dropped)
        return facts


def _asked_of(obj: KubeObject, asked: Asked) -> bool:
    """Whether an object the last list added may change an answer given before: of a type asked for, in a
    namespace whose content was read, or a dependent of an owner asked about. One that is stuck itself changes
    none: it is explained with the others, once the list has ended (kfin.core.explain.stuck.find_stuck)."""
    return (
        (obj.type.group, obj.type.resource) in asked.types
        or None in asked.namespaces
        or obj.namespace in asked.namespaces  # "" for a cluster-scoped one: everything(None, cluster_scoped_only)
        or not asked.owners.isdisjoint(obj.owner_uids())
    )
