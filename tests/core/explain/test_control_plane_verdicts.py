"""Verdicts never wrong in the dangerous direction (issue 23): a finalizer in a Kubernetes-owned domain is
the control plane's, never ORPHANED, and never removed without --finalizer and --force, whatever its name,
whatever kfin knows of it and whatever the cluster shows."""

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from kfin.core.explain.causes import Verdict, explain_object
from kfin.core.read.catalog import Catalog
from kfin.core.explain.causes.registry import control_plane_owned, family
from kfin.core.remove.plan import plan
from tests.values import custom_type, facts, lease, obj

LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)
NAME = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,12}[A-Za-z0-9])?", fullmatch=True)
KUBERNETES_DOMAIN = st.one_of(
    st.just("kubernetes.io"), st.just("k8s.io"),
    st.builds(lambda sub: f"{sub}.kubernetes.io", LABEL), st.builds(lambda sub: f"{sub}.k8s.io", LABEL),
    st.builds(lambda a, b: f"{a}.{b}.k8s.io", LABEL, LABEL),
)
CONTROL_PLANE_FINALIZER = st.one_of(st.builds(lambda d, n: f"{d}/{n}", KUBERNETES_DOMAIN, NAME),
                                    st.sampled_from(["kubernetes", "foregroundDeletion", "orphan"]))
WIDGETS = custom_type()
# What the cluster around it shows: whether kube-controller-manager runs, and whether anything else does.
CLUSTERS = st.sampled_from(["alive", "stale", "no-lease", "nothing"])


def cluster_with(target, shown: str):
    around = {"alive": (lease(),), "stale": (lease(renewed_ago=timedelta(hours=2)),), "no-lease": (),
              "nothing": ()}[shown]
    unlisted = ("leases", "pods", "clusterroles", "clusterrolebindings") if shown == "nothing" else ()
    return facts(target, *around, extra_types=(WIDGETS,), unlisted=unlisted)


@settings(max_examples=200, deadline=None)
@given(finalizer=CONTROL_PLANE_FINALIZER, on=st.sampled_from([WIDGETS, "cm", "svc", "servicecidrs.networking.k8s.io",
                                                               "resourceclaims.resource.k8s.io"]),
       shown=CLUSTERS)
def test_a_control_plane_finalizer_is_never_orphaned_nor_removed_by_default(finalizer, on, shown):
    assert control_plane_owned(finalizer)
    namespace = "" if on == "servicecidrs.networking.k8s.io" else "shop"
    target = obj(on, "x", namespace, finalizers=(finalizer,), deleting_for=timedelta(hours=1))
    findings = explain_object(target, cluster_with(target, shown)).findings
    assert findings and all(f.verdict != Verdict.ORPHANED for f in findings), findings
    by_default = plan(target, findings, None, force=False, allow_live=False)
    assert not by_default.selected  # --all-stuck plans every object like this
    named = plan(target, findings, [finalizer], force=False, allow_live=False)
    assert not named.selected and named.blocked  # refused, with the reason
    forced = plan(target, findings, [finalizer], force=True, allow_live=False)
    assert [f.finalizer for f in forced.selected] == [finalizer] and forced.choices[0].warning


def test_an_unknown_kubernetes_finalizer_is_the_control_planes_and_says_what_was_seen():
    target = obj("svc", "web", "shop", finalizers=("service.kubernetes.io/future-cleanup",),
                 deleting_for=timedelta(hours=1))
    assert family("service.kubernetes.io/future-cleanup", Catalog()).name == "control-plane"
    [finding] = explain_object(target, facts(target, lease())).findings
    assert finding.verdict == Verdict.UNKNOWN and finding.controller_alive is True
    assert any("kube-controller-manager is running" in line for line in finding.evidence)
    assert finding.remove_command.endswith("--force --confirm")


def test_names_outside_kubernetes_domains_are_not_the_control_planes():
    for name in ("example.com/cleanup", "kubernetes.example.com/x", "k8s.io.example.com/x", "acme.io/kubernetes"):
        assert not control_plane_owned(name), name
