"""An owner deleted with propagationPolicy Orphan keeps the `orphan` finalizer until the garbage collector has released
its dependents: a patch of each that removes its ownerReference to the owner (a strategic merge patch, or a JSON merge
patch for a custom resource: kube-controller-manager's garbagecollector.go orphanDependents), which admission sees as
an UPDATE by system:serviceaccount:kube-system:generic-garbage-collector. A webhook failing closed on that UPDATE keeps
the owner for good, and nothing on the owner says why (kube-controller-manager's log: failed calling webhook): kfin
asks the server with the same patch as a dry run as the garbage collector, and names the webhook, BLOCKED, with its
step first in the plan. The webhook matches only this scenario's dependents (their label, its namespace); the owner's
own UPDATE (the removal of `orphan`) passes, so only the release can be what holds it."""

import json

import pytest

from kfin.errors import ExitCode
from tests.runner import kfin

GARBAGE_COLLECTOR = "system:serviceaccount:kube-system:generic-garbage-collector"
ADMISSION = "admissionregistration.k8s.io/v1"
KEPT = ("kept-1", "kept-2")


def owner_and_dependents(cluster, api_version: str = "v1", kind: str = "ConfigMap") -> dict:
    """Owner `owner` and its dependents kept-1 and kept-2 (an ownerReference without blockOwnerDeletion, the label
    `dependent: "true"` besides the scenario's)."""
    labels = {"kfin-test": cluster.suffix}
    owner = cluster.create({"apiVersion": api_version, "kind": kind, "metadata": {"name": "owner", "labels": labels}})
    ref = {"apiVersion": api_version, "kind": kind, "name": "owner", "uid": owner["metadata"]["uid"]}
    for name in KEPT:
        cluster.create({"apiVersion": api_version, "kind": kind, "metadata": {
            "name": name, "labels": dict(labels, dependent="true"), "ownerReferences": [ref]}})
    return owner


def collected(cluster, api_version: str, kind: str):
    """Once the garbage collector watches a new type: it deletes an object whose owner does not exist. Before (up to
    30 s after the CRD, as it rediscovers types), an owner of that type deleted with orphaning may be finalized before
    the collector knows its dependents, which it then deletes as dangling (seen on the real tier)."""
    dangling = {"apiVersion": api_version, "kind": kind, "name": "gone", "uid": "00000000-0000-0000-0000-000000000000"}
    probe = cluster.create({"apiVersion": api_version, "kind": kind,
                            "metadata": {"name": "collected", "ownerReferences": [dangling]}})
    cluster.eventually(lambda: cluster.get(probe) is None, message=f"the garbage collector to watch {kind}")


def update_webhook(cluster, group: str, resource: str, failure_policy: str = "Fail", resources: str = "") -> dict:
    """A ValidatingWebhookConfiguration whose webhook gc.kfin.test matches UPDATE of `resource` (or of `resources`
    when given) for this scenario's dependents only; its Service does not exist, so neither tier can call it."""
    return cluster.create({
        "apiVersion": ADMISSION, "kind": "ValidatingWebhookConfiguration", "metadata": {"name": cluster.name("no-gc")},
        "webhooks": [{"name": "gc.kfin.test", "failurePolicy": failure_policy, "sideEffects": "None",
                      "admissionReviewVersions": ["v1"], "timeoutSeconds": 2,
                      "objectSelector": {"matchLabels": {"kfin-test": cluster.suffix, "dependent": "true"}},
                      "clientConfig": {"service": {"namespace": cluster.namespace, "name": "no-such-svc"}},
                      "rules": [{"operations": ["UPDATE"], "apiGroups": [group], "apiVersions": ["v1"],
                                 "resources": [resources or resource]}]}]})


def update_rejected(cluster, path: str) -> bool:
    """Whether an UPDATE of the object is rejected now (a dry run of a label's merge patch): a new webhook
    configuration is called a moment after it is created (seen on the real tier)."""
    code, _ = cluster.api.send("PATCH", f"{path}?dryRun=All", {"metadata": {"labels": {"probe": "yes"}}},
                               content_type="application/merge-patch+json")
    return code >= 400


def released(cluster, path: str) -> bool:
    """The owner gone, its dependents kept, without their ownerReference."""
    kept = [cluster.get(f"{path}/{name}") for name in KEPT]
    return cluster.get(f"{path}/owner") is None and all(k is not None and not k["metadata"].get("ownerReferences")
                                                        for k in kept)


def blocked(cluster, owner: dict, path: str, kind: str, resource: str, config: dict, patch: str):
    """Predicted by preflight, then deleted with orphaning: the owner stays with `orphan`, its dependents keep their
    ownerReference; explain and stuck name the webhook, BLOCKED, its step first in the plan (`patch`: the patch the
    garbage collector sends, as kfin's evidence names it)."""
    name = config["metadata"]["name"]
    base = ("--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)
    why = (f"webhook gc.kfin.test of ValidatingWebhookConfiguration {name} rejects the UPDATE of {resource} (failing "
           "closed)")
    restore, instead = "restore the backend of webhook gc.kfin.test", f"kubectl delete validatingwebhookconfiguration {name}"

    predicted = kfin("preflight", kind, "owner", "--cascade=orphan", "-o", "json", "--exit-code", *base)
    assert predicted.code == ExitCode.FOUND, predicted
    report = json.loads(predicted.stdout)
    assert report["wouldDelete"] == [], report  # orphaned, the dependents stay
    [gate] = report["wouldBeStuck"]
    assert (gate["object"]["name"], gate["finalizer"], gate["verdict"]) == ("owner", "orphan", "BLOCKED"), gate
    assert gate["reason"].startswith(why), gate
    assert f"as {GARBAGE_COLLECTOR} (impersonated)" in gate["reason"], gate
    first = report["plan"][0]
    assert first["note"] == restore and first["more"][0]["command"] == instead, report["plan"]
    assert report["plan"][1]["command"] == f"kubectl delete {resource} owner -n {cluster.namespace} --cascade=orphan"

    cluster.delete(owner, propagation="Orphan")
    current = cluster.get(f"{path}/owner")
    assert current["metadata"]["finalizers"] == ["orphan"] and current["metadata"]["deletionTimestamp"], current
    explained = json.loads(kfin("explain", kind, "owner", "-o", "json", *base).stdout)
    [finding] = explained["findings"]
    assert finding["verdict"] == "BLOCKED" and finding["condition"].startswith(why), finding
    assert finding["condition"].endswith("the garbage collector cannot remove this owner from them"), finding
    said = " ".join(finding["evidence"])
    assert f"dry run (dryRun=All) of PATCH ({patch}) {resource}/kept-1 in namespace {cluster.namespace} as " \
           f"{GARBAGE_COLLECTOR} (impersonated): 500" in said, finding["evidence"]
    [cause] = explained["chain"]["rootCauses"]
    assert cause["object"] == f"ValidatingWebhookConfiguration.admissionregistration.k8s.io/{name}", explained["chain"]
    step = explained["plan"]["steps"][0]
    assert step["note"] == restore and step["more"][0]["command"] == instead, explained["plan"]
    assert not [s for s in explained["plan"]["steps"] if (s["note"] or "").startswith("wait")], explained["plan"]
    [item] = [i for i in json.loads(kfin("stuck", "-o", "json", *base).stdout)["items"] if i["name"] == "owner"]
    assert item["verdict"] == "BLOCKED" and name in json.dumps(item), item
    # the garbage collector was refused: no dependent released
    assert all(cluster.get(f"{path}/{kept}")["metadata"].get("ownerReferences") for kept in KEPT)


@pytest.mark.controllers
def test_a_webhook_failing_closed_on_update_keeps_an_orphaning_owner(cluster):
    owner = owner_and_dependents(cluster)
    config = update_webhook(cluster, "", "configmaps")
    path = f"/api/v1/namespaces/{cluster.namespace}/configmaps"
    try:
        cluster.eventually(lambda: update_rejected(cluster, f"{path}/kept-1"), message="the webhook to be called")
        blocked(cluster, owner, path, "configmap", "configmaps", config, "strategic merge patch")
    finally:
        cluster.api.delete(cluster.path_of(config))  # as the plan says: the garbage collector then carries on
    # it retries with backoff: seconds to tens of seconds after the configuration goes (seen on the real tier)
    cluster.eventually(lambda: released(cluster, path), timeout=300, message="the garbage collector to release them")


@pytest.mark.controllers
def test_a_webhook_failing_closed_keeps_an_orphaning_custom_resource(cluster):
    """A custom resource takes no strategic merge patch (415): the garbage collector, and kfin after it, send a JSON
    merge patch of its ownerReferences instead."""
    group = cluster.widget_crd()
    collected(cluster, f"{group}/v1", "Widget")
    owner = owner_and_dependents(cluster, f"{group}/v1", "Widget")
    config = update_webhook(cluster, group, "widgets")
    path = f"/apis/{group}/v1/namespaces/{cluster.namespace}/widgets"
    try:
        cluster.eventually(lambda: update_rejected(cluster, f"{path}/kept-1"), message="the webhook to be called")
        blocked(cluster, owner, path, f"widgets.{group}", f"widgets.{group}", config, "JSON merge patch")
    finally:
        cluster.api.delete(cluster.path_of(config))
    cluster.eventually(lambda: released(cluster, path), timeout=300, message="the garbage collector to release them")


@pytest.mark.controllers
@pytest.mark.parametrize("failure_policy, resources", [("Ignore", ""), ("Fail", "secrets")],
                         ids=["failing-open", "not-matching"])
def test_a_webhook_that_lets_the_release_through_holds_nothing(cluster, failure_policy, resources):
    """Failing open, or matching another type: the garbage collector's UPDATE passes. Nothing is predicted stuck, and
    the owner goes at once with its dependents kept."""
    owner = owner_and_dependents(cluster)
    config = update_webhook(cluster, "", "configmaps", failure_policy, resources)
    path = f"/api/v1/namespaces/{cluster.namespace}/configmaps"
    base = ("--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace)
    try:
        predicted = kfin("preflight", "configmap", "owner", "--cascade=orphan", "-o", "json", "--exit-code", *base)
        assert predicted.code == 0, predicted
        report = json.loads(predicted.stdout)
        assert report["clean"] and report["wouldBeStuck"] == [], report
        cluster.delete(owner, propagation="Orphan")
        cluster.eventually(lambda: released(cluster, path), message="the garbage collector to release them")
    finally:
        cluster.api.delete(cluster.path_of(config))


@pytest.mark.controllers
def test_without_a_dry_run_the_webhook_is_a_possible_gate(cluster):
    """--no-dry-run: the webhook's configuration alone matches the UPDATE; kfin names it, but not as proven."""
    owner = owner_and_dependents(cluster)
    config = update_webhook(cluster, "", "configmaps")
    name = config["metadata"]["name"]
    path = f"/api/v1/namespaces/{cluster.namespace}/configmaps"
    base = ("--kubeconfig", str(cluster.kubeconfig), "-n", cluster.namespace, "--no-dry-run")
    try:
        cluster.eventually(lambda: update_rejected(cluster, f"{path}/kept-1"), message="the webhook to be called")
        report = json.loads(kfin("preflight", "configmap", "owner", "--cascade=orphan", "-o", "json", *base).stdout)
        [gate] = report["wouldBeStuck"]
        assert (gate["finalizer"], gate["verdict"], gate["certain"]) == ("orphan", "UNKNOWN", False), gate
        assert gate["reason"].endswith("not checked: no dry run was sent (--no-dry-run)"), gate
        cluster.delete(owner, propagation="Orphan")
        explained = json.loads(kfin("explain", "configmap", "owner", "-o", "json", *base).stdout)
        [finding] = explained["findings"]
        assert finding["verdict"] == "UNKNOWN", finding
        assert f"webhook gc.kfin.test of ValidatingWebhookConfiguration {name} rejects every UPDATE of configmaps in " \
               f"namespace {cluster.namespace} (failurePolicy Fail): its Service {cluster.namespace}/no-such-svc does " \
               "not exist" in finding["condition"], finding
        assert finding["condition"].endswith("it may reject the garbage collector's UPDATE of them, not checked: no "
                                             "dry run was sent (--no-dry-run)"), finding
        assert "dry run (dryRun=All)" not in json.dumps(finding), finding
        step = explained["plan"]["steps"][0]
        assert step["more"][0]["command"] == f"kubectl delete validatingwebhookconfiguration {name}", explained["plan"]
        [item] = [i for i in json.loads(kfin("stuck", "-o", "json", *base).stdout)["items"] if i["name"] == "owner"]
        assert item["verdict"] == "UNKNOWN", item
    finally:
        cluster.api.delete(cluster.path_of(config))
    cluster.eventually(lambda: released(cluster, path), timeout=300, message="the garbage collector to release them")
