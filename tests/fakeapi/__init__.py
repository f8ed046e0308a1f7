"""tests/fakeapi: an in-process HTTP server that behaves like kube-apiserver for what kfin touches.

It is also the executable description of the Kubernetes behaviour kfin depends on; the captures in
shared/k8s-reference (a real v1.36 control plane) are the authority, and tests/harness/test_fakeapi_reference.py
holds the fake to them.
"""

from .cluster import Cluster, ResourceType
from .server import ADMIN_TOKEN, VIEWER_TOKEN, FakeAPIServer, Fault, LoggedRequest

__all__ = ["ADMIN_TOKEN", "VIEWER_TOKEN", "Cluster", "FakeAPIServer", "Fault", "LoggedRequest", "ResourceType"]
