"""kfin: find out why Kubernetes objects are stuck in Terminating, and unstick them safely."""

__version__ = "0.1.0"
