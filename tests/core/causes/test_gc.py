"""The garbage collector's foregroundDeletion and orphan finalizers, on plain values."""

from datetime import timedelta

from kfin.core.explain.causes import Verdict, explain_object
from tests.values import facts, lease, obj

DELETING = timedelta(minutes=30)


def test_foreground_deletion_waits_for_every_blocking_dependent_and_names_each():
    deploy = obj("deploy.apps", "web", "shop", finalizers=("foregroundDeletion",), deleting_for=DELETING)
    replicas = obj("rs.apps", "web-1", "shop", owners=(deploy,), finalizers=("foregroundDeletion",),
                   deleting_for=DELETING)
    kept = obj("configmaps", "web-config", "shop", owners=(deploy,), block_owner=False)
    [finding] = explain_object(deploy, facts(deploy, replicas, kept, lease())).findings
    assert finding.verdict == Verdict.HOLDING
    assert [link.target.name for link in finding.links] == ["web-1"]  # only blockOwnerDeletion holds it


def test_foreground_deletion_without_blocking_dependents_waits_for_the_collector():
    deploy = obj("deploy.apps", "web", "shop", finalizers=("foregroundDeletion",), deleting_for=DELETING)
    [finding] = explain_object(deploy, facts(deploy, lease())).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is True


def test_a_stopped_controller_manager_is_named_with_its_lease():
    """Its lease stale, kube-controller-manager acts no more until someone brings it back: STALLED (issue 40)."""
    deploy = obj("deploy.apps", "web", "shop", finalizers=("foregroundDeletion",), deleting_for=DELETING)
    [finding] = explain_object(deploy, facts(deploy, lease(renewed_ago=timedelta(hours=1)))).findings
    assert finding.verdict == Verdict.STALLED and finding.controller_alive is False
    assert finding.fix.startswith("kube-controller-manager is down: bring it back")
    assert any(link.actor == "kube-controller-manager" for link in finding.links)


def test_orphan_names_the_dependents_it_releases():
    owner = obj("deploy.apps", "web", "shop", finalizers=("orphan",), deleting_for=DELETING)
    dependent = obj("rs.apps", "web-1", "shop", owners=(owner,))
    [finding] = explain_object(owner, facts(owner, dependent, lease())).findings
    assert any("web-1" in line for line in finding.evidence)
    # one dependent: its count and verb agree with it
    assert finding.condition.startswith("1 dependent still names it as owner: "), finding.condition


def release_webhook(policy: str = "Fail", resources: tuple[str, ...] = ("replicasets",)):
    """A webhook on UPDATE of ReplicaSets, whose Service hooks/checker does not exist."""
    hook = {"name": "check.example.com", "failurePolicy": policy,
            "rules": [{"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
                       "resources": list(resources)}],
            "clientConfig": {"service": {"namespace": "hooks", "name": "checker"}}}
    return obj("validatingwebhookconfigurations.admissionregistration.k8s.io", "checker", webhooks=[hook])


def test_from_a_snapshot_a_webhook_on_the_release_is_a_possible_gate_not_a_verdict():
    """The garbage collector's release of a dependent is an UPDATE of it; without a server to ask, a webhook whose
    rules match it is named as what may hold the owner, unchecked: UNKNOWN, neither BLOCKED nor WAITING."""
    owner = obj("deploy.apps", "web", "shop", finalizers=("orphan",), deleting_for=DELETING)
    dependent = obj("rs.apps", "web-1", "shop", owners=(owner,))
    [finding] = explain_object(owner, facts(owner, dependent, release_webhook(), obj("ns", "hooks"), lease())).findings
    assert finding.verdict == Verdict.UNKNOWN, finding
    assert "webhook check.example.com of ValidatingWebhookConfiguration checker rejects every UPDATE of " \
           "replicasets.apps in namespace shop (failurePolicy Fail): its Service hooks/checker does not exist" \
           in finding.condition
    assert finding.condition.endswith("not checked: a snapshot has no server to ask: no dry run was sent")
    assert [(link.target.name, link.possible) for link in finding.links] == [("checker", True)]
    assert finding.links[0].step[1].command == "kubectl delete validatingwebhookconfiguration checker"
    for config in (release_webhook(policy="Ignore"), release_webhook(resources=("statefulsets",))):  # lets it through
        [finding] = explain_object(owner, facts(owner, dependent, config, obj("ns", "hooks"), lease())).findings
        assert finding.verdict == Verdict.WAITING, finding
