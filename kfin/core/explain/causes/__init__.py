"""The causes of stuck deletions: one module each, registered in kfin.core.explain.causes.registry on import.

A new cause is a new module here, listed below.
"""

from kfin.core.explain.causes import (  # noqa: F401  (they register)
    builtin,
    control_plane,
    custom,
    dra,
    dryrun,
    ecosystem,
    gc,
    ghosts,
    namespace,
    networking,
    pods,
    policies,
    scheduling,
    snapshots,
    storage,
    webhooks,
)
from kfin.core.explain.causes.registry import (
    EXPLAINERS,
    Action,
    Explanation,
    Finding,
    Link,
    Verdict,
    blocker_line,
    explain_cached,
    explain_object,
    family,
    main_finding,
    reads_for,
)

__all__ = [
    "EXPLAINERS",
    "Action",
    "Explanation",
    "Finding",
    "Link",
    "Verdict",
    "blocker_line",
    "explain_cached",
    "explain_object",
    "family",
    "main_finding",
    "reads_for",
]
