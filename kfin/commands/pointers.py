"""Where to look instead: an object not found where it was named, and stuck objects in other namespaces than
the one looked in, each said with the command that shows them."""

from __future__ import annotations

import shlex

from kfin.core.explain.stuck import Elsewhere
from kfin.core.read.subject import MissingObjectError
from kfin.errors import NotFoundError
from kfin.render.terminal import Console
from kfin.util.text import counted

NAMED_AT_MOST = 3  # namespaces named in a line; the others are counted


def not_found(missing: MissingObjectError, command: str, kind: str) -> NotFoundError:
    """The error for an object not found: its message, then where it is instead (as far as kfin could read) with
    the `kfin COMMAND` that names it there. `kind`: the kind as the user typed it, kept where it still fits."""
    found = missing.whereabouts()
    name = missing.name

    def again(kind_text: str, object_name: str, namespace: str | None) -> str:
        where = f" -n {shlex.quote(namespace)}" if namespace else ""
        return f"kfin {command} {shlex.quote(kind_text)} {shlex.quote(object_name)}{where}"

    pointer = ""
    if found.other_types:
        pointer = "; " + "; ".join(
            f'{other.qualified} "{name}" exists'
            + (f' in namespace "{missing.namespace}"' if other.namespaced and missing.namespace else "")
            + f": {again(other.qualified, name, missing.namespace if other.namespaced else None)}"
            for other in found.other_types
        )
    elif found.namespaces:
        several = len(found.namespaces) > 1
        pointer = (
            f"; it exists in namespace{'s' if several else ''} {listed(found.namespaces)}: "
            f"{again(kind, name, found.namespaces[0])}"
        )
    elif found.namespace_absent:
        pointer = f': namespace "{missing.namespace}" does not exist'
        if found.near_namespace:
            pointer += f" (did you mean {found.near_namespace}? {again(kind, name, found.near_namespace)})"
    elif found.near_name:
        pointer = f" (did you mean {found.near_name}? {again(kind, found.near_name, missing.namespace)})"
    return NotFoundError(missing.message + pointer, missing.rtype.resource, name)


def listed(names: list[str]) -> str:
    """The first few names, and how many more."""
    shown = ", ".join(names[:NAMED_AT_MOST])
    more = len(names) - NAMED_AT_MOST
    return shown + (f" and {more} more" if more > 0 else "")


def say_elsewhere(console: Console, elsewhere: Elsewhere | None, command: str) -> None:
    """After "nothing stuck in namespace N": how many objects are stuck in other namespaces (naming the first
    few) and among cluster-scoped types, and `command` (the same command with -A) to see them; or that kfin could
    not look. Nothing when it did not try (a snapshot)."""
    if elsewhere is None:
        return
    if not elsewhere.looked:
        console.note(
            f"kfin could not look in other namespaces ({elsewhere.why}): {command} would, with the right to list "
            "across namespaces."
        )
        return
    count, namespaces = elsewhere.count, sorted(elsewhere.namespaces)
    unread = elsewhere.unread
    if not count:
        if unread:
            console.note(
                f"No stuck objects elsewhere in the cluster among what kfin could list; {counted(unread, 'type')} "
                f"could not be listed ({elsewhere.why})."
            )
        else:
            console.note("No stuck objects elsewhere in the cluster either.")
        return
    in_namespaces, cluster_scoped = sum(elsewhere.namespaces.values()), elsewhere.cluster_scoped
    at_least = "at least " if unread else ""
    are = "are" if count > 1 else "is"
    where = f"{counted(len(namespaces), 'other namespace')} ({listed(namespaces)})"
    if not cluster_scoped:
        said = f"{at_least}{counted(count, 'object')} {are} stuck in {where}"
    elif not in_namespaces:
        said = f"{at_least}{counted(count, 'cluster-scoped object')} {are} stuck"
    else:
        said = f"{at_least}{count} objects are stuck: {in_namespaces} in {where}, {cluster_scoped} cluster-scoped"
    console.note(f"{said[0].upper()}{said[1:]}: {command}")


def say_not_looked(console: Console, what: str, command: str) -> None:
    """That kfin did not look in other namespaces (for `what`), and the command that would."""
    console.note(f"kfin did not look in other namespaces {what}: {command} would.")
