"""Complete for the whole namespace, and current (issue 56, items 5 and 6).

- Two root causes in one namespace: an unavailable APIService and a Widget whose operator is gone. The namespace
  controller still deletes all it can discover (the Widget is marked deleted) and only never finishes; its
  conditions name the Widget's finalizer. kfin gives both root causes, each with its step, the Widget's first
  (it holds the namespace while the controller deletes; the APIService keeps it from finishing).
- The namespace's conditions are a checklist: every finalizer and resource count they name, and every finalizer
  left in it, is accounted for (tests/properties.py).
- Stale answers: once the APIService is deleted, the namespace's NamespaceDeletionDiscoveryFailure still says
  discovery fails until the controller retries, with backoff (up to a minute apart). kfin says the condition is out
  of date and plans nothing for what is gone. The real tier retries on its own schedule: a reading counts as made
  while the condition was out of date only when the condition is still there, unchanged, after kfin answered.
- A claim whose Pod is being deleted as advised: explain's "Now" says so, and what the Pod waits for.

On a real control plane an unavailable APIService stops every namespace deletion while it exists: the scenarios'
APIServices are suffixed and removed first by the cluster's cleanup (tests/scenario.py).
"""

import json
from datetime import UTC, datetime

import pytest

from kfin.errors import ExitCode
from tests.properties import placeholders, unaccounted_finalizers
from tests.runner import kfin
from tests.scenario import unavailable_apiservice

DISCOVERY = "NamespaceDeletionDiscoveryFailure"


def explain(cluster, *args) -> dict:
    result = kfin("explain", *args, "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    assert result.code in (0, ExitCode.PARTIAL), result.stderr
    return json.loads(result.stdout)


def stuck(cluster) -> dict:
    result = kfin("stuck", "-A", "--kubeconfig", str(cluster.kubeconfig), "-o", "json")
    assert result.code in (0, ExitCode.PARTIAL), result.stderr
    return json.loads(result.stdout)


def conditions(cluster, ns) -> list[dict]:
    return ((cluster.get(f"/api/v1/namespaces/{ns}") or {}).get("status") or {}).get("conditions") or []


def said(cluster, ns, kind=DISCOVERY) -> dict:
    return next((c for c in conditions(cluster, ns) if c["type"] == kind and c["status"] == "True"), {})


def left_in(cluster, ns, group) -> list[dict]:
    return (cluster.get(f"/apis/{group}/v1/namespaces/{ns}/widgets") or {}).get("items") or []


def namespace_controller_retries(cluster):
    """The fake's namespace controller backs off a minute after a failed discovery, as the real one does once a
    namespace has failed a while (tests/fakeapi/controllers.py): its clock moves on. The real one retries by itself."""
    if cluster.is_fake:
        cluster.fake.advance_clock(61)
        cluster.fake.reconcile()


def failing_long_enough(cluster, ns):
    """Wait until the namespace has failed discovery for 20 s on a real control plane: its controller then waits
    about as long before it retries (its backoff doubles at each failure), long enough for kfin to answer."""
    if cluster.is_fake:
        return

    def old_enough():
        since = said(cluster, ns).get("lastTransitionTime")
        moment = since and datetime.fromisoformat(since.replace("Z", "+00:00"))
        return moment and (datetime.now(UTC) - moment).total_seconds() >= 20

    cluster.eventually(old_enough, timeout=60, message="the namespace to have failed discovery for 20 s")


def read_out_of_date(cluster, ns, apiservice: dict, read):
    """Delete the APIService, then `read`: its answer, made while the namespace's discovery condition was out of
    date (still there, unchanged, once kfin answered), or None when the controller retried meanwhile."""
    before = said(cluster, ns)
    assert before, "the namespace controller has not reported the discovery failure"
    cluster.delete(apiservice)
    cluster.eventually(lambda: cluster.get(apiservice) is None, message="the APIService to go")
    answer = read()
    return answer if said(cluster, ns) == before else None


def unavailable_again(cluster, apiservice: dict):
    """The same APIService created again, once it reports unavailable."""
    cluster.create({key: apiservice[key] for key in ("apiVersion", "kind", "spec")}
                   | {"metadata": {"name": apiservice["metadata"]["name"]}})
    cluster.eventually(lambda: any(c.get("type") == "Available" and c.get("status") == "False"
                                   for c in ((cluster.get(apiservice) or {}).get("status") or {}).get("conditions")
                                   or []), message="the APIService to be unavailable")


ATTEMPTS = 3  # on the real tier, readings lost to the controller's retry before kfin answered


def own_finding(report) -> dict:
    return next(f for f in report["findings"] if f["finalizer"] == "kubernetes")


def commands(report) -> list[str]:
    return [a["command"] for s in report["plan"]["steps"] for a in [s, *s["more"]] if a["command"]]


@pytest.mark.controllers
def test_two_root_causes_in_one_namespace_give_two_steps_and_a_fixed_one_is_not_planned(cluster):
    name, _ = unavailable_apiservice(cluster)
    apiservice = cluster.get(f"/apis/apiregistration.k8s.io/v1/apiservices/{name}")
    group, ns = cluster.namespace_held_by_widget()
    widget = f"/apis/{group}/v1/namespaces/{ns}/widgets/w1"
    try:
        cluster.eventually(lambda: said(cluster, ns) and said(cluster, ns, "NamespaceFinalizersRemaining"),
                           message="the namespace controller to report both")
        remove = f"kfin remove widgets.{group} w1 -n {ns} --finalizer {group}/cleanup --confirm"
        report = explain(cluster, "ns", ns)
        f = own_finding(report)
        assert f["verdict"] == "HOLDING"
        # the controller deleted the Widget although discovery fails: it only never finishes
        assert "stops before deleting anything" not in f["condition"] and "cannot finish" in f["condition"]
        assert f"{group}/cleanup" in " ".join(f["evidence"])
        roots = {r["object"] or r["actor"] for r in report["chain"]["rootCauses"]}
        assert f"APIService.apiregistration.k8s.io/{name}" in roots and len(roots) == 2, roots
        # the Widget bites first (the namespace controller deletes it, and waits), the APIService at the end
        assert commands(report) == [remove, f"kubectl delete apiservice {name}"]
        assert unaccounted_finalizers(report, conditions(cluster, ns), left_in(cluster, ns, group)) == []
        assert placeholders(report) == []

        scan = stuck(cluster)
        holding = {(c["object"] or c["actor"]): c for c in scan["rootCauses"] if f"Namespace/{ns}" in c["holds"]}
        assert set(holding) == roots, holding
        assert [a["command"] for a in [holding[f"APIService.apiregistration.k8s.io/{name}"]["step"]]
                + holding[f"APIService.apiregistration.k8s.io/{name}"]["step"]["more"]] == [
            None, f"kubectl delete apiservice {name}"]
        [widget_root] = [c for r, c in holding.items() if r != f"APIService.apiregistration.k8s.io/{name}"]
        assert widget_root["step"]["command"] == remove and f"Widget.{group}/{ns}/w1" in widget_root["holds"]
        assert all(c["object"] not in c["holds"] for c in scan["rootCauses"])
        assert placeholders(scan) == []

        # the APIService deleted as planned, before the namespace controller retries: the Widget alone holds it
        failing_long_enough(cluster, ns)
        after = None
        for _ in range(ATTEMPTS):
            after = read_out_of_date(cluster, ns, apiservice, lambda: explain(cluster, "ns", ns))
            if after is not None:
                break
            unavailable_again(cluster, apiservice)  # the real controller retried first: again
            cluster.eventually(lambda: said(cluster, ns), timeout=90, message="the discovery failure again")
            failing_long_enough(cluster, ns)
        assert after is not None, "the namespace controller always retried before kfin answered"
        f = own_finding(after)
        assert f["verdict"] == "HOLDING" and "out of date" in f["condition"]
        assert f"APIService {name} is gone" in f["condition"] and "has not retried since" in f["condition"]
        assert commands(after) == [remove]
        assert [r["object"] or r["actor"] for r in after["chain"]["rootCauses"]] == [
            r for r in roots if not r.startswith("APIService")]
        assert unaccounted_finalizers(after, conditions(cluster, ns), left_in(cluster, ns, group)) == []
        assert placeholders(after) == []

        cluster.strip_finalizers(widget)  # the plan's step: the namespace then goes by itself
        namespace_controller_retries(cluster)
        cluster.eventually(lambda: cluster.get(f"/api/v1/namespaces/{ns}") is None, timeout=90,
                           message="the namespace controller to finish")
    finally:
        if cluster.get(widget) is not None:
            cluster.strip_finalizers(widget)


@pytest.mark.controllers
def test_a_namespace_whose_discovery_failure_is_out_of_date_waits_and_holds_nothing_but_itself(cluster):
    """The issue's case: an empty namespace held only by an unavailable APIService, which is then deleted. Until
    the namespace controller retries, kfin says its condition is out of date and waits for it: no step for the
    APIService that is gone, no placeholder, and the namespace is not its own root cause."""
    name, _ = unavailable_apiservice(cluster)
    apiservice = cluster.get(f"/apis/apiregistration.k8s.io/v1/apiservices/{name}")
    answers = None
    for attempt in range(ATTEMPTS):  # on the real tier, until kfin answered before the controller retried
        if attempt:
            unavailable_again(cluster, apiservice)
        ns = cluster.name(f"gone{attempt}")
        cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        cluster.delete(f"/api/v1/namespaces/{ns}")
        cluster.eventually(lambda: said(cluster, ns), message="the namespace controller to report the failure")
        failing_long_enough(cluster, ns)
        answers = read_out_of_date(cluster, ns, apiservice, lambda: (explain(cluster, "ns", ns), stuck(cluster)))
        if answers is not None:
            break
    assert answers is not None, "the namespace controller always retried before kfin answered"
    report, scan = answers
    f = own_finding(report)
    alive = f["controllerAlive"]
    assert f["verdict"] == ("STALLED" if alive is False else "WAITING"), f
    assert "out of date" in f["condition"] and f"APIService {name} is gone" in f["condition"]
    assert any(e.startswith(f"condition {DISCOVERY}: ") and "(True since" in e for e in f["evidence"])
    assert not any("apiservice" in c for c in commands(report))
    assert placeholders(report) == [] and placeholders(scan) == []
    [row] = [i for i in scan["items"] if i["kind"] == "Namespace" and i["name"] == ns]
    assert row["verdict"] == f["verdict"] and "out of date" in row["blocker"]
    assert all(c["object"] not in c["holds"] for c in scan["rootCauses"])
    assert not [c for c in scan["rootCauses"] if f"Namespace/{ns}" in c["holds"]]

    namespace_controller_retries(cluster)
    cluster.eventually(lambda: cluster.get(f"/api/v1/namespaces/{ns}") is None, timeout=90,
                       message="the namespace controller to finish, as kfin said")


@pytest.mark.controllers
def test_a_claim_whose_pod_is_being_deleted_says_so_now(cluster):
    """pvc-protection holds a claim while a scheduled Pod references it, whatever its phase, so a Pod deleted as
    advised still holds it until it is gone; with no kubelet on its node it stays Terminating. explain's "Now"
    says the Pod is being deleted and what it waits for, and the plan no longer asks to delete it."""
    if cluster.get(f"/api/v1/namespaces/{cluster.namespace}/serviceaccounts/default") is None:
        cluster.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    node = cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": cluster.name("node")}})["metadata"]
    pvc = cluster.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                          "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                                   "storageClassName": cluster.name("manual")}})
    pod = cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-0"}, "spec": {
        "nodeName": node["name"], "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}})
    cluster.delete(pvc)
    where = ("-n", cluster.namespace)
    before = explain(cluster, "pvc", "data", *where)
    assert f"kubectl delete pod -n {cluster.namespace} db-0" in commands(before)

    cluster.delete(pod)  # as the plan says: no kubelet runs on the node, so it stays Terminating
    cluster.eventually(lambda: (cluster.get(pod) or {}).get("metadata", {}).get("deletionTimestamp"),
                       message="the Pod to be deleted")
    report = explain(cluster, "pvc", "data", *where)
    f = next(f for f in report["findings"] if f["finalizer"] == "kubernetes.io/pvc-protection")
    assert f["verdict"] == "HOLDING"  # it still does: the Pod is still there, scheduled
    assert f"Pod {cluster.namespace}/db-0 (on node {node['name']}, being deleted for " in f["condition"]
    assert f"waiting for the kubelet of node {node['name']}" in f["condition"]
    assert "being deleted already" in f["fix"]
    assert f"kubectl delete pod -n {cluster.namespace} db-0" not in commands(report)  # done already
    assert f"kubectl delete pod -n {cluster.namespace} db-0 --grace-period=0 --force" in commands(report)
    assert placeholders(report) == []
    [row] = [i for i in stuck(cluster)["items"] if i["kind"] == "PersistentVolumeClaim" and i["name"] == "data"]
    assert row["blocker"].startswith(f"pvc-protection: in use by Pod {cluster.namespace}/db-0 (being deleted: ")

    cluster.delete(pod, grace=0)  # the plan's last resort: then the claim goes
    cluster.eventually(lambda: cluster.get(pvc) is None, message="the pvc-protection controller")
