"""kfin explain: for each finalizer, what it protects, who removes it, what holds it now, and what is safe.

Importing this package registers every explainer; a new family is a new module here, listed below.
"""

from kfin.explain import builtin, custom, gc, namespace, storage  # noqa: F401  (they register themselves)
from kfin.explain.core import EXPLAINERS, Explanation, Finding, Verdict, explain_object

__all__ = ["EXPLAINERS", "Explanation", "Finding", "Verdict", "explain_object"]
