"""`kfin wait KIND NAME` and `kfin remove --wait`: follow a deletion until the object is gone."""

from __future__ import annotations


from kfin.errors import ExitCode, UsageError
from kfin.model import KubeObject
from kfin.commands.flags import Options
from kfin.util.text import say, warn


def parse_timeout(text: str, flag: str = "--timeout") -> float:
    from kfin.util.durations import parse_duration

    try:
        seconds = parse_duration(text)
    except ValueError as error:
        raise UsageError(f"{flag}: {error}") from None
    if not 0 < seconds <= 7 * 86400:
        raise UsageError(f'{flag}: "{text}" must be more than 0 and at most 7d')
    return seconds


def follow_to_end(options: Options, kind: str, name: str, obj: KubeObject, kube, timeout: float) -> int:
    """0 once the object is gone; 1 after `timeout`, naming what still holds it."""
    from kfin.util.durations import format_age
    from kfin.api.watch import wait_gone

    say(f"waiting for {obj.ref} to go (up to {format_age(timeout)})", err=True)
    gone = wait_gone(kube, obj.type, obj.namespace or None, obj.name, obj.uid, timeout,
                     lambda state: say(f"  {obj.ref}: {state}", err=True))
    if gone:
        say(f"{obj.ref} is gone")
        return ExitCode.OK
    say(f"{obj.ref} is still there after {format_age(timeout)}: {_holder(options, kind, name)}", err=True)
    return ExitCode.FOUND


def _holder(options: Options, kind: str, name: str) -> str:
    """What holds it now, read again: its blocker and root cause."""
    from kfin.core.blocking import follow, root_summary
    from kfin.core.causes import blocker_line, explain_cached
    from kfin.commands.explain import live_target
    from kfin.errors import NotFoundError

    try:
        obj, facts = live_target(options, kind, name, refresh=False)
    except NotFoundError:
        return "it went away just now"
    line = blocker_line(explain_cached(obj, facts))
    root = root_summary(follow(obj, facts)) if obj.terminating else None
    return f"{line}; {root}" if root else line


def wait(options: Options, *, kind: str, name: str, timeout: str) -> int:
    from kfin.commands.explain import live_target
    from kfin.errors import NotFoundError

    seconds = parse_timeout(timeout)
    try:
        obj, facts = live_target(options, kind, name, refresh=False)
    except NotFoundError:
        say(f"{kind} {name} is gone")
        return ExitCode.OK
    if not obj.terminating:
        warn(f"{obj.ref} is not being deleted: waiting anyway")
    return follow_to_end(options, kind, name, obj, facts.kube, seconds)
