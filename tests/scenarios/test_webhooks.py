"""An admission webhook that fails closed is the root cause of every finalizer of the objects it gates
(captures 12-16 of causes). The webhook only gates this scenario's namespace, so it is safe on a real
cluster, and the cleanup deletes it before anything else."""

import json

import pytest

from kfin.errors import ExitCode
from tests.runner import kfin


def gate(cluster, service=True):
    """A failurePolicy Fail webhook on UPDATE of configmaps in this namespace; its Service selects no Pod
    (no ready endpoints), or does not exist."""
    if service:
        cluster.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "gate-svc"},
                        "spec": {"selector": {"app": cluster.name("gate")}, "ports": [{"port": 443}]}})
    return cluster.create({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": cluster.name("gate")},
        "webhooks": [{"name": "gate.kfin.test", "failurePolicy": "Fail", "sideEffects": "None",
                      "admissionReviewVersions": ["v1"], "timeoutSeconds": 2,
                      "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": cluster.namespace}},
                      "clientConfig": {"service": {"namespace": cluster.namespace, "name": "gate-svc", "port": 443}},
                      "rules": [{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                 "resources": ["configmaps"], "scope": "*"}]}]})


def test_a_webhook_failing_closed_blocks_every_finalizer_and_is_the_root_cause(cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("KFIN_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "gated", "finalizers": ["example.com/hold"]}})
    config = gate(cluster)
    cluster.delete(f"/api/v1/namespaces/{cluster.namespace}/configmaps/gated")  # DELETE is not an UPDATE
    base = ("--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)
    report = json.loads(kfin("explain", "cm", "gated", *base, "-o", "json").stdout)
    [finding] = report["findings"]
    assert finding["verdict"] == "BLOCKED" and f"gate.kfin.test of ValidatingWebhookConfiguration {config['metadata']['name']}" \
        in finding["condition"]
    assert "has no ready endpoints" in finding["condition"]
    [root] = report["chain"]["rootCauses"]
    assert root["object"] == f"ValidatingWebhookConfiguration.admissionregistration.k8s.io/{config['metadata']['name']}"
    [step] = report["plan"]["steps"]
    assert step["command"] is None and step["note"] == "restore the backend of webhook gate.kfin.test"
    assert step["more"] == [{"command": f"kubectl delete validatingwebhookconfiguration {config['metadata']['name']}",
                             "when": "instead, if its operator was uninstalled", "note": None}]
    stuck = kfin("stuck", *base, "-o", "json")
    [item] = json.loads(stuck.stdout)["items"]
    assert item["blocker"].startswith("custom: example.com/hold cannot be removed: webhook gate.kfin.test")
    if cluster.is_fake:  # a cluster-wide scan lists the admission configuration once, whole: not again to explain
        cluster.fake.requests.clear()
        everywhere = json.loads(kfin("stuck", "-A", "--kubeconfig", str(cluster.kubeconfig), "-o", "json").stdout)
        assert [i["blocker"] for i in everywhere["items"]] == [item["blocker"]]
        for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations",
                     "validatingadmissionpolicies", "validatingadmissionpolicybindings"):
            assert [r.accept for r in cluster.fake.requests if r.path.endswith(f"/{kind}")] == ["application/json"], kind
    assert len(json.loads(stuck.stdout)["webhooks"]) == 1 and "(1 stuck object gated)" in stuck.stderr
    refused = kfin("remove", "cm", "gated", *base, "--finalizer", "example.com/hold", "--confirm")
    assert refused.code == ExitCode.REFUSED and "it cannot be removed now: webhook gate.kfin.test" in refused.stderr
    forced = kfin("remove", "cm", "gated", *base, "--finalizer", "example.com/hold", "--confirm", "--force")
    assert forced.code == ExitCode.API, forced
    [line] = [x for x in forced.stderr.splitlines() if x.startswith("error:")]
    assert 'failed calling webhook "gate.kfin.test"' in line
    cluster.api.delete(cluster.path_of(config))
    cluster.eventually(lambda: cluster.get(config) is None)


def test_a_webhook_that_fails_open_or_does_not_match_is_no_cause(cluster):
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "free", "finalizers": ["example.com/hold"], "labels": {"skip": "yes"}}})
    config = gate(cluster, service=False)
    cluster.api.merge_patch(cluster.path_of(config), {"webhooks": [{
        "name": "gate.kfin.test", "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": cluster.namespace}},
        "objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
        "clientConfig": {"service": {"namespace": cluster.namespace, "name": "gate-svc", "port": 443}},
        "rules": [{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]}]})
    cluster.delete(f"/api/v1/namespaces/{cluster.namespace}/configmaps/free")
    report = json.loads(kfin("explain", "cm", "free", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace,
                             "-o", "json").stdout)
    assert report["findings"][0]["verdict"] != "BLOCKED"
    cluster.api.delete(cluster.path_of(config))


@pytest.mark.controllers
def test_a_webhook_failing_closed_on_delete_holds_a_namespace_and_is_named(cluster):
    """Issue 40: a webhook that rejects every DELETE of configmaps in a namespace (failurePolicy Fail, its Service
    missing) rejects the namespace controller's deletions too: the namespace never goes (every namespace holds
    kube-root-ca.crt). preflight predicts it, and explain names the configuration as the root cause, BLOCKED, where
    kfin said "Nothing would be left stuck" and then "wait"."""
    ns = cluster.name("guarded")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    config = cluster.create({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": cluster.name("deny-deletes")},
        "webhooks": [{"name": "deletes.kfin.test", "failurePolicy": "Fail", "sideEffects": "None",
                      "admissionReviewVersions": ["v1"], "timeoutSeconds": 2,
                      "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                      "clientConfig": {"service": {"namespace": cluster.namespace, "name": "no-such-svc"}},
                      "rules": [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"],
                                 "resources": ["configmaps"]}]}]})
    name = config["metadata"]["name"]
    why = (f"webhook deletes.kfin.test of ValidatingWebhookConfiguration {name} rejects every DELETE of configmaps in "
           f"the namespace (failurePolicy Fail): its Service {cluster.namespace}/no-such-svc does not exist")
    step = {"note": "restore the backend of webhook deletes.kfin.test",
            "instead": f"kubectl delete validatingwebhookconfiguration {name}"}
    base = ("--kubeconfig", str(cluster.kubeconfig))
    predicted = kfin("preflight", "ns", ns, "-o", "json", "--exit-code", *base)
    assert predicted.code == ExitCode.FOUND, predicted
    report = json.loads(predicted.stdout)
    [gate] = [s for s in report["wouldBeStuck"] if s["object"]["kind"] == "Namespace"]
    assert gate["verdict"] == "BLOCKED" and gate["reason"].startswith(why), gate
    assert report["plan"][0]["note"] == step["note"] and report["plan"][0]["more"][0]["command"] == step["instead"]

    cluster.delete(f"/api/v1/namespaces/{ns}")
    cluster.eventually(lambda: 'failed calling webhook "deletes.kfin.test"' in next(
        (c["message"] for c in (cluster.get(f"/api/v1/namespaces/{ns}") or {}).get("status", {}).get("conditions", [])
         if c["type"] == "NamespaceDeletionContentFailure" and c["status"] == "True"), ""),
        message="the namespace controller to fail")
    explained = json.loads(kfin("explain", "ns", ns, "-o", "json", *base).stdout)
    [finding] = explained["findings"]
    assert finding["verdict"] == "BLOCKED" and finding["condition"].startswith(why), finding
    assert any(e.startswith("condition NamespaceDeletionContentFailure: ") for e in finding["evidence"])
    [root] = explained["chain"]["rootCauses"]
    assert root["object"] == f"ValidatingWebhookConfiguration.admissionregistration.k8s.io/{name}"
    first = explained["plan"]["steps"][0]
    assert first["note"] == step["note"] and first["more"][0]["command"] == step["instead"], first
    assert not [s for s in explained["plan"]["steps"] if (s["note"] or "").startswith("wait")]
    [item] = [i for i in json.loads(kfin("stuck", "-A", "-o", "json", *base).stdout)["items"] if i["name"] == ns]
    assert item["verdict"] == "BLOCKED"

    cluster.api.delete(cluster.path_of(config))  # as the plan says: the namespace controller then carries on
    cluster.eventually(lambda: cluster.get(f"/api/v1/namespaces/{ns}") is None, message="the namespace to go")


@pytest.mark.controllers
def test_an_admission_policy_denying_the_namespace_controllers_deletes_holds_a_namespace_and_is_named(cluster):
    """Issue 40: a ValidatingAdmissionPolicy (bound with Deny) that refuses the DELETE of this scenario's ConfigMaps
    when the namespace controller makes it (request.userInfo.username, as kube-apiserver sees it with
    --use-service-account-credentials). The namespace never goes; kfin evaluates the policy as that controller:
    preflight predicts it, explain names it BLOCKED with the policy as root cause, never "wait"."""
    ns = cluster.name("kept")
    labels = {"kfin-test": cluster.suffix}
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    cluster.api.create(f"/api/v1/namespaces/{ns}/configmaps",
                       {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ledger", "labels": labels}})
    controller = "system:serviceaccount:kube-system:namespace-controller"
    policy = cluster.create({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": cluster.name("no-ns-deletes")},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                         "operations": ["DELETE"], "resources": ["configmaps"]}],
                                      "objectSelector": {"matchLabels": labels}},
                 "matchConditions": [{"name": "namespace-controller",
                                      "expression": f"request.userInfo.username == '{controller}'"}],
                 "validations": [{"expression": "false", "message": "the ledger is kept"}]}})
    binding = cluster.create({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": cluster.name("no-ns-deletes")},
        "spec": {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}})
    pname, bname = policy["metadata"]["name"], binding["metadata"]["name"]
    why = (f"ValidatingAdmissionPolicy {pname} (binding {bname}) denies the namespace controller's DELETE: the ledger "
           "is kept (configmaps ledger)")
    step = f"change ValidatingAdmissionPolicy {pname} (or its binding {bname}) so that it allows the deletion"
    instead = f"kubectl delete validatingadmissionpolicybinding {bname}"
    base = ("--kubeconfig", str(cluster.kubeconfig))
    predicted = kfin("preflight", "ns", ns, "-o", "json", "--exit-code", *base)
    assert predicted.code == ExitCode.FOUND, predicted
    report = json.loads(predicted.stdout)
    assert [s["reason"] for s in report["wouldBeStuck"] if s["object"]["kind"] == "Namespace"] == [
        why + ": the namespace controller cannot delete it"], report

    cluster.delete(f"/api/v1/namespaces/{ns}")
    cluster.eventually(lambda: "the ledger is kept" in next(
        (c["message"] for c in (cluster.get(f"/api/v1/namespaces/{ns}") or {}).get("status", {}).get("conditions", [])
         if c["type"] == "NamespaceDeletionContentFailure" and c["status"] == "True"), ""),
        message="the namespace controller to be denied")
    explained = json.loads(kfin("explain", "ns", ns, "-o", "json", *base).stdout)
    [finding] = explained["findings"]
    assert finding["verdict"] == "BLOCKED" and finding["condition"].startswith(why), finding
    [root] = explained["chain"]["rootCauses"]
    assert root["object"] == f"ValidatingAdmissionPolicy.admissionregistration.k8s.io/{pname}"
    first = explained["plan"]["steps"][0]
    assert first["note"].startswith(step) and first["more"][0]["command"] == instead, first
    assert not [s for s in explained["plan"]["steps"] if (s["note"] or "").startswith("wait")]

    cluster.api.delete(cluster.path_of(binding))  # as the plan says: the namespace controller then carries on
    cluster.eventually(lambda: cluster.get(f"/api/v1/namespaces/{ns}") is None, message="the namespace to go")
