"""Issue 40: the garbage collector's DELETE of an owner's blocking dependents passes admission as its ServiceAccount
(system:serviceaccount:kube-system:generic-garbage-collector, kube-controller-manager with
--use-service-account-credentials). An owner deleted in the foreground whose dependent's DELETE is rejected stays
Terminating, and nothing on the owner says why: kfin names what rejects it, BLOCKED, with its step first in the plan.
The gate matches only this scenario's ConfigMaps (its label) or its namespace; the fixture deletes it first."""

import json

import pytest

from kfin.api.connection import Kube
from kfin.api.dryrun import send
from kfin.model import Write
from kfin.api.target import Target
from kfin.errors import ExitCode
from kfin.model import ResourceType
from tests.runner import kfin

CONFIGMAPS = ResourceType("", "v1", "configmaps", "ConfigMap", True)
GARBAGE_COLLECTOR = "system:serviceaccount:kube-system:generic-garbage-collector"
ADMISSION = "admissionregistration.k8s.io/v1"


def owner_and_dependent(cluster, data: dict | None = None) -> tuple[dict, dict]:
    """ConfigMap owner, and ConfigMap dependent that it owns with blockOwnerDeletion (the scenario's label on both,
    `dependent: "true"` on the dependent alone)."""
    labels = {"kfin-test": cluster.suffix}
    owner = cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner", "labels": labels}})
    dependent = cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "dependent", "labels": dict(labels, dependent="true"),
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                             "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}]}, "data": data or {}})
    return owner, dependent


def gc_denied(cluster, dependent: dict) -> bool:
    """Whether the server rejects the garbage collector's DELETE of the dependent now (a dry run as it): a new
    admission configuration is enforced a moment after it is created (seen on the real tier)."""
    admin = Kube.connect(Target(str(cluster.kubeconfig)))
    write = Write.delete(CONFIGMAPS, cluster.namespace, dependent["metadata"]["name"],
                         {"propagationPolicy": "Background"}, GARBAGE_COLLECTOR)
    return not send(admin, write, impersonate=True).accepted


def held(cluster, owner: dict, why: str, step: dict, root: str):
    """Deleted in the foreground, the owner stays with foregroundDeletion and its dependent stays untouched; explain,
    stuck and graph name the gate, the plan's first step is its step (`step`: its note, and the command offered
    instead)."""
    base = ("--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)
    predicted = kfin("preflight", "configmap", "owner", "-o", "json", "--exit-code", *base)
    assert predicted.code == ExitCode.FOUND, predicted
    report = json.loads(predicted.stdout)
    [gate] = [s for s in report["wouldBeStuck"] if s["object"]["name"] == "owner"]
    assert gate["verdict"] == "BLOCKED" and gate["finalizer"] == "foregroundDeletion", gate
    assert gate["reason"].startswith(why), gate
    assert report["plan"][0]["note"].startswith(step["note"]), report["plan"]
    assert report["plan"][0]["command"] is None and report["plan"][0]["more"][0]["command"] == step["instead"]

    cluster.delete(owner, propagation="Foreground")
    path = f"/api/v1/namespaces/{cluster.namespace}/configmaps"
    current = cluster.get(f"{path}/owner")
    assert current["metadata"]["finalizers"] == ["foregroundDeletion"] and current["metadata"]["deletionTimestamp"]
    # the garbage collector is denied: its dependent stays, not even marked deleted
    assert not cluster.get(f"{path}/dependent")["metadata"].get("deletionTimestamp")
    explained = json.loads(kfin("explain", "configmap", "owner", "-o", "json", *base).stdout)
    [finding] = explained["findings"]
    assert finding["verdict"] == "BLOCKED" and finding["condition"].startswith(why), finding
    [cause] = explained["chain"]["rootCauses"]
    assert cause["object"] == root, explained["chain"]
    first = explained["plan"]["steps"][0]
    assert first["note"].startswith(step["note"]) and first["more"][0]["command"] == step["instead"], first
    assert not [s for s in explained["plan"]["steps"] if (s["note"] or "").startswith("wait")]
    [item] = [i for i in json.loads(kfin("stuck", "-o", "json", *base).stdout)["items"] if i["name"] == "owner"]
    assert item["verdict"] == "BLOCKED", item
    tree = kfin("graph", "configmap", "owner", *base).stdout
    assert root.rsplit("/", 1)[1] in tree, tree


@pytest.mark.controllers
def test_a_policy_denying_the_garbage_collectors_delete_blocks_a_foreground_deletion(cluster):
    owner, dependent = owner_and_dependent(cluster)
    policy = cluster.create({
        "apiVersion": ADMISSION, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": cluster.name("no-gc")},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                         "operations": ["DELETE"], "resources": ["configmaps"]}],
                                      "objectSelector": {"matchLabels": {"kfin-test": cluster.suffix}}},
                 "matchConditions": [{"name": "garbage-collector",
                                      "expression": f"request.userInfo.username == '{GARBAGE_COLLECTOR}'"}],
                 "validations": [{"expression": "false", "message": "dependents are deleted by hand"}]}})
    binding = cluster.create({
        "apiVersion": ADMISSION, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": cluster.name("no-gc")},
        "spec": {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}})
    pname, bname = policy["metadata"]["name"], binding["metadata"]["name"]
    try:
        cluster.eventually(lambda: gc_denied(cluster, dependent), message="the policy to be enforced")
        why = (f"ValidatingAdmissionPolicy {pname} (binding {bname}) denies the garbage collector's DELETE: dependents "
               "are deleted by hand (configmaps dependent)")
        step = {"note": f"change ValidatingAdmissionPolicy {pname} (or its binding {bname}) so that it allows the "
                        "deletion", "instead": f"kubectl delete validatingadmissionpolicybinding {bname}"}
        held(cluster, owner, why, step, f"ValidatingAdmissionPolicy.admissionregistration.k8s.io/{pname}")
    finally:
        cluster.api.delete(cluster.path_of(binding))  # as the plan says: the garbage collector then carries on
    path = f"/api/v1/namespaces/{cluster.namespace}/configmaps"
    cluster.eventually(lambda: cluster.get(f"{path}/owner") is None, message="the owner to go")
    assert cluster.get(f"{path}/dependent") is None


@pytest.mark.controllers
def test_a_webhook_failing_closed_on_the_garbage_collectors_delete_blocks_a_foreground_deletion(cluster):
    owner, dependent = owner_and_dependent(cluster)
    config = cluster.create({
        "apiVersion": ADMISSION, "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": cluster.name("no-gc")},
        "webhooks": [{"name": "gc.kfin.test", "failurePolicy": "Fail", "sideEffects": "None",
                      "admissionReviewVersions": ["v1"], "timeoutSeconds": 2,
                      "objectSelector": {"matchLabels": {"kfin-test": cluster.suffix, "dependent": "true"}},
                      "clientConfig": {"service": {"namespace": cluster.namespace, "name": "no-such-svc"}},
                      "rules": [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"],
                                 "resources": ["configmaps"]}]}]})
    name = config["metadata"]["name"]
    try:
        cluster.eventually(lambda: gc_denied(cluster, dependent), message="the webhook to be called")
        why = (f"webhook gc.kfin.test of ValidatingWebhookConfiguration {name} rejects every DELETE of configmaps in "
               f"namespace {cluster.namespace} (failurePolicy Fail): its Service {cluster.namespace}/no-such-svc does "
               "not exist")
        step = {"note": "restore the backend of webhook gc.kfin.test",
                "instead": f"kubectl delete validatingwebhookconfiguration {name}"}
        held(cluster, owner, why, step, f"ValidatingWebhookConfiguration.admissionregistration.k8s.io/{name}")
    finally:
        cluster.api.delete(cluster.path_of(config))  # as the plan says: the garbage collector then carries on
    path = f"/api/v1/namespaces/{cluster.namespace}/configmaps"
    cluster.eventually(lambda: cluster.get(f"{path}/owner") is None, message="the owner to go")
    assert cluster.get(f"{path}/dependent") is None


@pytest.mark.controllers
def test_the_garbage_collector_is_asked_as_itself(cluster):
    """A policy kfin's rules cannot evaluate (it reads the dependent's data, which kfin does not hold): the dry run of
    the garbage collector's DELETE, impersonating it, is the server's own answer, quoted as evidence."""
    owner, dependent = owner_and_dependent(cluster, {"keep": "yes"})
    policy = cluster.create({
        "apiVersion": ADMISSION, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": cluster.name("keep")},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                         "operations": ["DELETE"], "resources": ["configmaps"]}],
                                      "objectSelector": {"matchLabels": {"kfin-test": cluster.suffix}}},
                 "matchConditions": [{"name": "garbage-collector",
                                      "expression": f"request.userInfo.username == '{GARBAGE_COLLECTOR}'"}],
                 "validations": [{"expression": "!has(oldObject.data) || !('keep' in oldObject.data)",
                                  "message": "kept ConfigMaps are deleted by hand"}]}})
    binding = cluster.create({
        "apiVersion": ADMISSION, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": cluster.name("keep")},
        "spec": {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}})
    pname, bname = policy["metadata"]["name"], binding["metadata"]["name"]
    base = ("--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)
    try:
        cluster.eventually(lambda: gc_denied(cluster, dependent), message="the policy to be enforced")
        cluster.delete(owner, propagation="Foreground")
        if cluster.is_fake:
            cluster.fake.requests.clear()
        explained = json.loads(kfin("explain", "configmap", "owner", "-o", "json", *base).stdout)
        [finding] = explained["findings"]
        assert finding["verdict"] == "BLOCKED", finding
        assert finding["condition"].startswith(
            f"ValidatingAdmissionPolicy {pname} (binding {bname}) denies the DELETE of configmaps by "
            f"{GARBAGE_COLLECTOR}: kept ConfigMaps are deleted by hand"), finding
        assert f"dry run (dryRun=All) of DELETE configmaps/dependent in namespace {cluster.namespace} as " \
               f"{GARBAGE_COLLECTOR} (impersonated): 422 Invalid" in " ".join(finding["evidence"]), finding["evidence"]
        [cause] = explained["chain"]["rootCauses"]
        assert cause["object"] == f"ValidatingAdmissionPolicy.admissionregistration.k8s.io/{pname}"
        assert explained["plan"]["steps"][0]["note"].startswith(f"change ValidatingAdmissionPolicy {pname}")
        if cluster.is_fake:  # sent as the garbage collector, as a dry run: nothing was stored
            writes = [r for r in cluster.fake.requests if r.method not in ("GET", "HEAD")]
            deletes = [r for r in writes if r.method == "DELETE"]  # besides, a SelfSubjectAccessReview (may it?)
            assert {(r.user, r.dry_run, r.path) for r in deletes} == {
                (GARBAGE_COLLECTOR, True, f"/api/v1/namespaces/{cluster.namespace}/configmaps/dependent")}, deletes
            assert all(r.dry_run for r in writes), writes
        assert cluster.get(f"/api/v1/namespaces/{cluster.namespace}/configmaps/dependent") is not None

        unasked = json.loads(kfin("explain", "configmap", "owner", "-o", "json", "--no-dry-run", *base).stdout)
        [finding] = unasked["findings"]  # the rules alone only suspect it: never BLOCKED on the dry run's word
        assert "dry run (dryRun=All)" not in json.dumps(finding), finding
    finally:
        cluster.api.delete(cluster.path_of(binding))
    path = f"/api/v1/namespaces/{cluster.namespace}/configmaps"
    cluster.eventually(lambda: cluster.get(f"{path}/owner") is None, message="the owner to go")
