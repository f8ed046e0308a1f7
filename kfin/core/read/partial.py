"""Which of the things kfin could not read bear on an answer about one object.

As kubectl does: a discovery failure of another API group (an aggregated API whose backend is down, as
metrics.k8s.io often is) is a warning, and the command still succeeds when what was asked was read; it makes
the result partial (exit 8) only when it could hide part of the answer. A list or get that failed always
bears: kfin read only what the answer needed.
"""

from __future__ import annotations

from collections.abc import Iterable

from kfin.model import CRDS, NAMESPACES, Failure, KubeObject


def bears_on(failure: Failure, obj: KubeObject) -> bool:
    if failure.what != "discovery":
        return True
    kind = (obj.type.group, obj.type.resource)
    if kind == NAMESPACES:  # its content may be of any group, and the namespace controller stops on it
        return True
    group = obj.name.partition(".")[2] if kind == CRDS else obj.type.group  # a CRD: the group it serves
    failed_group = failure.target.rpartition("/")[0]  # "metrics.k8s.io/v1beta1"; the core group is "v1"
    return failed_group == group


def split(failures: Iterable[Failure], obj: KubeObject | None) -> tuple[list[Failure], list[Failure]]:
    """(bearing, unrelated); about no single object (a namespace's graph, a scan) every failure bears."""
    bearing: list[Failure] = []
    unrelated: list[Failure] = []
    for failure in failures:
        (bearing if obj is None or bears_on(failure, obj) else unrelated).append(failure)
    return bearing, unrelated
