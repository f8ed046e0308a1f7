"""The catalog of finalizer families: what each finalizer name belongs to and what it protects.

`kfin stuck` names the family in its BLOCKER column; `kfin explain` builds on the same catalog.
A family is added here, not in the commands.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

QUALIFIED = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


@dataclass(frozen=True)
class Family:
    name: str  # short label shown in tables
    protects: str  # what it guards, in a phrase
    owner: str  # who removes it


FAMILIES: list[tuple[str, Family]] = [
    ("kubernetes.io/pvc-protection", Family("pvc-protection", "a claim still used by a Pod",
                                            "kube-controller-manager (pvc-protection controller)")),
    ("kubernetes.io/pv-protection", Family("pv-protection", "a volume still bound to a claim",
                                           "kube-controller-manager (pv-protection controller)")),
    ("kubernetes", Family("namespace", "a namespace until its content is deleted",
                          "kube-controller-manager (namespace controller)")),
    ("foregroundDeletion", Family("foregroundDeletion", "an owner until its blocking dependents are deleted",
                                  "kube-controller-manager (garbage collector)")),
    ("orphan", Family("orphan", "an owner until its dependents are released",
                      "kube-controller-manager (garbage collector)")),
    ("kubernetes.io/pv-controller", Family("volume", "a volume until its storage is deprovisioned",
                                           "kube-controller-manager (persistent volume controller)")),
    ("external-provisioner.volume.kubernetes.io/finalizer", Family(
        "volume", "a volume until the CSI driver deletes its storage", "the CSI driver's external-provisioner")),
    ("external-attacher/*", Family("volume", "an attachment until the CSI driver detaches the volume",
                                   "the CSI driver's external-attacher")),
    ("snapshot.storage.kubernetes.io/*", Family("volume-snapshot", "a snapshot or its source while in use",
                                                "the snapshot controller")),
    ("service.kubernetes.io/load-balancer-cleanup", Family(
        "load-balancer-cleanup", "a Service until its cloud load balancer is deleted",
        "the cloud controller manager (service controller)")),
    ("batch.kubernetes.io/job-tracking", Family("job-tracking", "a Job's Pod until the Job controller counts it",
                                                "kube-controller-manager (job controller)")),
    ("customresourcecleanup.apiextensions.k8s.io", Family(
        "crd-cleanup", "a CustomResourceDefinition until its custom resources are deleted",
        "kube-apiserver (CRD finalizer)")),
]


def family(finalizer: str) -> Family:
    for pattern, fam in FAMILIES:
        if fnmatch.fnmatchcase(finalizer, pattern):
            return fam
    if "/" in finalizer and QUALIFIED.match(finalizer):
        return Family("custom", "whatever its controller cleans up first", "the controller of " +
                      finalizer.split("/")[0])
    return Family("unknown", "unknown: not a domain-qualified name, so no owner can be told", "unknown")


def matches(finalizer: str, pattern: str) -> bool:
    """--finalizer PATTERN: a glob (example.com/*) or a plain substring."""
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(finalizer, pattern)
    return pattern in finalizer
