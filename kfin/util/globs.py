"""Shell-style patterns of finalizer names (the catalog's, --finalizer, the control plane's)."""

from __future__ import annotations

import fnmatch

WILDCARDS = frozenset("*?[")


def glob_match(name: str, pattern: str) -> bool:
    """fnmatch.fnmatchcase, with a pattern without wildcards compared as a string: most of the catalog's are
    plain names, and fnmatch compiles a regular expression for each pattern it meets, which costs a small
    scan more than all its matching."""
    if WILDCARDS.isdisjoint(pattern):
        return name == pattern
    return fnmatch.fnmatchcase(name, pattern)
