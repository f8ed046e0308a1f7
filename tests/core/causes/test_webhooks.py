"""Admission webhooks that fail closed in front of every finalizer (kfin/core/explain/causes/webhooks.py)."""

from datetime import timedelta

from kfin.core.explain.causes import Verdict, explain_object
from tests.values import facts, obj

DELETING = timedelta(hours=1)


def webhook_config(policy: str = "Fail", resources: tuple[str, ...] = ("configmaps",)):
    hook = {"name": "check.example.com", "failurePolicy": policy,
            "rules": [{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": list(resources)}],
            "clientConfig": {"service": {"namespace": "hooks", "name": "checker"}}}
    return obj("validatingwebhookconfigurations.admissionregistration.k8s.io", "checker", webhooks=[hook])


def held():
    return obj("cm", "settings", "shop", finalizers=("example.com/keep",), deleting_for=DELETING)


def test_a_webhook_failing_closed_without_a_backend_blocks_every_finalizer_and_is_named():
    cm, config = held(), webhook_config()
    [finding] = explain_object(cm, facts(cm, config, obj("ns", "hooks"))).findings
    assert finding.verdict == Verdict.BLOCKED
    assert [link.target.name for link in finding.links] == ["checker"]
    assert "Service hooks/checker does not exist" in finding.condition


def test_a_webhook_that_fails_open_or_matches_other_resources_gates_nothing():
    cm = held()
    for config in (webhook_config(policy="Ignore"), webhook_config(resources=("secrets",))):
        [finding] = explain_object(cm, facts(cm, config, obj("ns", "hooks"))).findings
        assert finding.verdict != Verdict.BLOCKED


def test_a_webhook_whose_backend_has_ready_endpoints_gates_nothing():
    cm, config = held(), webhook_config()
    service = obj("svc", "checker", "hooks")
    endpoints = obj("endpointslices.discovery.k8s.io", "checker-1", "hooks",
                    labels={"kubernetes.io/service-name": "checker"}, endpoints=[{"conditions": {"ready": True}}])
    [finding] = explain_object(cm, facts(cm, config, service, endpoints)).findings
    assert finding.verdict != Verdict.BLOCKED
