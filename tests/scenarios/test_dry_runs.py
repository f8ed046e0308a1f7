"""Issue 40, item 2: kfin asks the server, as the actor who must act. The writes a deletion still needs are sent as
dry runs (dryRun=All, stored nowhere), as the namespace controller's ServiceAccount when kfin's user may impersonate
it; a rejection is named with the object behind it. Reading commands send no other write, and --no-dry-run none."""

import json
import re

import pytest

from kfin.api.connection import Kube
from kfin.api.dryrun import may_impersonate, send
from kfin.model import Write
from kfin.api.target import Target
from kfin.model import ResourceType
from tests.runner import kfin
from tests.scenarios.test_explain import RBAC, running_deployment

CONFIGMAPS = ResourceType("", "v1", "configmaps", "ConfigMap", True)
NAMESPACE_CONTROLLER = "system:serviceaccount:kube-system:namespace-controller"


def test_a_delete_with_options_is_a_dry_run_only_when_its_body_says_so(cluster):
    """kube-apiserver reads a DELETE's query parameters only when it has no body: DELETE ?dryRun=All with
    DeleteOptions deletes for real (seen on the real tier; apiserver's endpoints/handlers/delete.go). kfin's dry
    runs say dryRun in the DeleteOptions."""
    for name in ("real", "dry"):
        cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    path = f"/api/v1/namespaces/{cluster.namespace}/configmaps"
    code, _ = cluster.api.send("DELETE", f"{path}/real?dryRun=All", {"propagationPolicy": "Background"})
    assert code == 200 and cluster.get(f"{path}/real") is None  # the query was not read: deleted
    kube = Kube.connect(Target(str(cluster.kubeconfig)))
    kube.delete_object(CONFIGMAPS, cluster.namespace, "dry", {"propagationPolicy": "Background"}, dry_run=True)
    assert cluster.get(f"{path}/dry") is not None


def test_a_dry_run_is_sent_as_the_actor_when_kfin_may_impersonate_it(cluster):
    """Impersonate-User of a ServiceAccount (its groups follow, as kube-apiserver gives them), allowed by a
    SelfSubjectAccessReview of verb impersonate; a user who may not impersonate asks as itself."""
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"}})
    admin = Kube.connect(Target(str(cluster.kubeconfig)))
    assert may_impersonate(admin, NAMESPACE_CONTROLLER)
    write = Write.delete(CONFIGMAPS, cluster.namespace, "target", {"propagationPolicy": "Background"},
                         NAMESPACE_CONTROLLER)
    answer = send(admin, write, impersonate=True)
    assert answer.accepted and answer.sent_as == NAMESPACE_CONTROLLER, answer
    reader = Kube.connect(Target(str(cluster.read_only_kubeconfig())))
    assert not may_impersonate(reader, NAMESPACE_CONTROLLER)
    answer = send(reader, write, impersonate=False)  # as the reader itself: RBAC says no, and says who asked
    assert answer.code == 403 and answer.sent_as is None and "reader" in answer.message, answer
    assert cluster.get(f"/api/v1/namespaces/{cluster.namespace}/configmaps/target") is not None


def keep_policy(cluster, namespace: str) -> tuple[dict, dict]:
    """A ValidatingAdmissionPolicy that denies the namespace controller alone the DELETE of a ConfigMap holding a
    `keep` key, bound to one namespace: kfin's rules cannot tell (the policy reads the ConfigMap's data, which kfin
    does not hold, and asks who deletes); a dry run as the namespace controller can."""
    group = "admissionregistration.k8s.io/v1"
    policy = cluster.create({
        "apiVersion": group, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": cluster.name("keep")},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                         "operations": ["DELETE"], "resources": ["configmaps"]}]},
                 "matchConditions": [{"name": "namespace-controller",
                                      "expression": f"request.userInfo.username == '{NAMESPACE_CONTROLLER}'"}],
                 "validations": [{"expression": "!has(oldObject.data) || !('keep' in oldObject.data)",
                                  "message": "kept ConfigMaps are deleted by hand"}]}})
    binding = cluster.create({
        "apiVersion": group, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": cluster.name("keep")},
        "spec": {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"],
                 "matchResources": {"namespaceSelector": {
                     "matchLabels": {"kubernetes.io/metadata.name": namespace}}}}})
    return policy, binding


def writes(cluster) -> list:
    """What reached the fake other than reads."""
    return [r for r in cluster.fake.requests if r.method not in ("GET", "HEAD")]


@pytest.mark.controllers
def test_the_namespace_controller_is_asked_as_itself(cluster):
    ns = cluster.name("kept")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "precious", "namespace": ns},
                    "data": {"keep": "yes"}})
    policy, binding = keep_policy(cluster, ns)
    name, bound = policy["metadata"]["name"], binding["metadata"]["name"]
    base = ("--kubeconfig", str(cluster.kubeconfig))
    try:
        # the user may delete it: the policy binds only the namespace controller. kube-apiserver enforces a new
        # policy a moment after it is created (seen on the real tier): preflight is asked until it is
        def gate_of_namespace():
            predicted = json.loads(kfin("preflight", "ns", ns, "-o", "json", *base).stdout)
            gates = [s for s in predicted["wouldBeStuck"] if s["object"]["kind"] == "Namespace"]
            return gates if any("(impersonated)" in g["reason"] for g in gates) else None

        [gate] = cluster.eventually(gate_of_namespace, message="the policy to be enforced")
        assert gate["verdict"] == "BLOCKED" and f"ValidatingAdmissionPolicy {name} (binding {bound})" in gate["reason"]
        assert f"as {NAMESPACE_CONTROLLER} (impersonated)" in gate["reason"], gate

        cluster.delete(f"/api/v1/namespaces/{ns}")
        cluster.eventually(lambda: "ValidatingAdmissionPolicy" in next(
            (c["message"] for c in (cluster.get(f"/api/v1/namespaces/{ns}") or {}).get("status", {}).get(
                "conditions", []) if c["type"] == "NamespaceDeletionContentFailure" and c["status"] == "True"), ""),
            message="the namespace controller to be denied")
        if cluster.is_fake:
            cluster.fake.requests.clear()
        explained = json.loads(kfin("explain", "ns", ns, "-o", "json", *base).stdout)
        [finding] = explained["findings"]
        assert finding["verdict"] == "BLOCKED", finding
        assert f"ValidatingAdmissionPolicy {name} (binding {bound}) denies the DELETE of configmaps by " \
               f"{NAMESPACE_CONTROLLER}: kept ConfigMaps are deleted by hand" in finding["condition"], finding
        assert f"dry run (dryRun=All) of DELETE configmaps/precious in namespace {ns} as {NAMESPACE_CONTROLLER} " \
               "(impersonated): 422 Invalid" in " ".join(finding["evidence"]), finding["evidence"]
        [root] = explained["chain"]["rootCauses"]
        assert root["object"] == f"ValidatingAdmissionPolicy.admissionregistration.k8s.io/{name}"
        assert explained["plan"]["steps"][0]["note"].startswith(f"change ValidatingAdmissionPolicy {name}")
        if cluster.is_fake:  # the dry run reached the server as the namespace controller, and stored nothing
            sent = writes(cluster)
            deletes = [r for r in sent if r.method == "DELETE"]
            assert {(r.user, r.dry_run) for r in deletes} == {(NAMESPACE_CONTROLLER, True)}
            assert f"/api/v1/namespaces/{ns}/configmaps/precious" in [r.path for r in deletes]
            assert all(r.dry_run for r in sent), [(r.method, r.path, r.query) for r in sent]
        assert cluster.get(f"/api/v1/namespaces/{ns}/configmaps/precious") is not None

        # --no-dry-run: nothing is sent, and nothing is claimed from a dry run (the rules and the controller's
        # condition may still name the policy)
        if cluster.is_fake:
            cluster.fake.requests.clear()
        unasked = json.loads(kfin("explain", "ns", ns, "-o", "json", "--no-dry-run", *base).stdout)
        [finding] = unasked["findings"]
        assert "dry run" not in json.dumps(finding) and "kept ConfigMaps are deleted by hand" not in \
            finding["condition"].split("NamespaceDeletionContentFailure")[0] or finding["verdict"] != "BLOCKED", finding
        if cluster.is_fake:
            assert writes(cluster) == []
    finally:
        cluster.api.delete(cluster.path_of(binding))  # the namespace controller then carries on
    cluster.eventually(lambda: cluster.get(f"/api/v1/namespaces/{ns}") is None, message="the namespace to go")


def test_reading_commands_send_writes_only_as_dry_runs(cluster):
    """The write guard: explain, stuck, preflight and graph over what makes kfin ask (a Terminating namespace whose
    content the namespace controller may not delete, a webhook failing closed, an object the user may delete) send
    no write the server would store; with --no-dry-run, no write at all. On the fake every request is logged as the
    server took it (a DELETE's dryRun read from its body); on both tiers nothing changed."""
    ns = cluster.name("guarded")
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    held = cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "held", "namespace": ns, "finalizers": ["example.com/hold"]}, "data": {"keep": "yes"}})
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "free", "namespace": ns},
                    "data": {"keep": "yes"}})
    _, binding = keep_policy(cluster, ns)
    base = ("--kubeconfig", str(cluster.kubeconfig))
    commands = [("explain", "cm", "free", "-n", ns), ("stuck", "-A"), ("preflight", "ns", ns), ("preflight", "cm",
                "free", "-n", ns), ("graph", "namespace", ns), ("explain", "ns", ns)]
    try:
        for flags in ((), ("--no-dry-run",)):
            if cluster.is_fake:
                cluster.fake.requests.clear()
            for command in commands:
                assert kfin(*command, *flags, *base).code in (0, 1, 8), command
            assert cluster.get(f"/api/v1/namespaces/{ns}/configmaps/free") is not None
            assert cluster.get(cluster.path_of(held))["metadata"]["finalizers"] == ["example.com/hold"]
            assert "deletionTimestamp" not in cluster.get(f"/api/v1/namespaces/{ns}")["metadata"]
            if cluster.is_fake:
                sent = writes(cluster)
                assert all(r.dry_run for r in sent), [(r.method, r.path, r.query, r.body) for r in sent]
                if flags:
                    assert sent == []
                else:  # the guard guards something: the user's DELETE of what preflight was asked about
                    assert [r.path for r in sent if r.method == "DELETE" and r.user == "admin"]
        cluster.delete(cluster.path_of(held))
        cluster.delete(f"/api/v1/namespaces/{ns}")
        cluster.eventually(lambda: "ValidatingAdmissionPolicy" in json.dumps(cluster.get(
            f"/api/v1/namespaces/{ns}")), message="the namespace controller to be denied")
        if cluster.is_fake:
            cluster.fake.requests.clear()
        for command in commands:
            kfin(*command, *base)
        assert cluster.get(f"/api/v1/namespaces/{ns}/configmaps/free") is not None
        assert cluster.get(cluster.path_of(held))["metadata"]["finalizers"] == ["example.com/hold"]
        if cluster.is_fake:
            sent = writes(cluster)
            assert sent and all(r.dry_run for r in sent), [(r.method, r.path, r.query, r.body) for r in sent]
    finally:
        cluster.api.delete(cluster.path_of(binding))
        cluster.strip_finalizers(held)


def stuck_widget_of_a_running_operator(cluster, names: list[str]) -> tuple[str, str, str]:
    """(group, Widget path, the operator's user): the widget operator runs (Deployment and ServiceAccount
    widget-operator, its Pod Ready), added the Widget's finalizer (its field manager) and may patch the `names`
    Widgets (a Role with resourceNames); the Widget w1 is being deleted."""
    group = cluster.widget_crd()
    running_deployment(cluster, "widget-operator", "widget-operator")
    cluster.create({"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "widget-writer"}, "rules": [
        {"apiGroups": [group], "resources": ["widgets"], "resourceNames": names, "verbs": ["get", "patch", "update"]}]})
    cluster.create({"apiVersion": RBAC, "kind": "RoleBinding", "metadata": {"name": "widget-writer"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "widget-writer"},
                    "subjects": [{"kind": "ServiceAccount", "name": "widget-operator", "namespace": cluster.namespace}]})
    path = f"/apis/{group}/v1/namespaces/{cluster.namespace}/widgets"
    cluster.api.ok("POST", f"{path}?fieldManager=widget-operator",
                   {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1", "finalizers": [f"{group}/x"]}})
    cluster.delete(f"{path}/w1")
    return group, f"{path}/w1", f"system:serviceaccount:{cluster.namespace}:widget-operator"


def explained_widget(cluster, group: str, *flags: str) -> dict:
    result = kfin("explain", f"widgets.{group}", "w1", "-n", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig),
                  "-o", "json", *flags)
    assert result.code in (0, 1), result.stderr
    return json.loads(result.stdout)


@pytest.mark.controllers
def test_a_running_operators_removal_denied_to_its_service_account_alone_is_blocked(cluster):
    """Issue 40: a ValidatingAdmissionPolicy denies the widget operator's ServiceAccount alone the removal of a
    Widget's finalizer (its matchConditions read request.userInfo.username, which kfin's rules do not hold: a
    possible gate). The dry run of that removal, sent as the operator, settles it: BLOCKED, naming the policy."""
    group, widget, operator = stuck_widget_of_a_running_operator(cluster, ["w1"])
    admission = "admissionregistration.k8s.io/v1"
    policy = cluster.create({
        "apiVersion": admission, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": cluster.name("widget-keep")},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{"apiGroups": [group], "apiVersions": ["v1"],
                                                         "operations": ["UPDATE"], "resources": ["widgets"]}]},
                 "matchConditions": [{"name": "the-operator", "expression": f"request.userInfo.username == '{operator}'"}],
                 "validations": [{"expression": "has(object.metadata.finalizers) && "
                                  "object.metadata.finalizers.size() == oldObject.metadata.finalizers.size()",
                                  "message": "the widget operator may not remove finalizers"}]}})
    binding = cluster.create({
        "apiVersion": admission, "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": cluster.name("widget-keep")},
        "spec": {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"], "matchResources": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": cluster.namespace}}}}})
    name, bound = policy["metadata"]["name"], binding["metadata"]["name"]
    try:
        # kube-apiserver enforces a new policy a moment after it is created (seen on the real tier): asked until it is
        def blocked():
            report = explained_widget(cluster, group)
            return report if report["findings"][0]["verdict"] == "BLOCKED" else None

        if cluster.is_fake:
            cluster.fake.requests.clear()
        report = cluster.eventually(blocked, message="the policy to be enforced")
        [f] = report["findings"]
        assert f["condition"] == (f"ValidatingAdmissionPolicy {name} (binding {bound}) denies the removal of the "
                                  f"finalizer of widgets.{group} by {operator}: the widget operator may not remove "
                                  "finalizers"), f
        assert any(line.startswith(f"dry run (dryRun=All) of PATCH widgets.{group}/w1 in namespace {cluster.namespace}"
                                   f" as {operator} (impersonated): ") and f"ValidatingAdmissionPolicy '{name}'" in line
                   for line in f["evidence"]), f["evidence"]
        assert f["fix"].startswith(f"change ValidatingAdmissionPolicy {name} (or its binding {bound})")
        [root] = report["chain"]["rootCauses"]
        assert root["object"] == f"ValidatingAdmissionPolicy.admissionregistration.k8s.io/{name}"
        if cluster.is_fake:  # sent as the operator, as a dry run
            patches = [r for r in writes(cluster) if r.method == "PATCH"]
            assert patches and {(r.user, r.dry_run) for r in patches} == {(operator, True)}
            assert all(r.dry_run for r in writes(cluster))
        assert cluster.get(widget)["metadata"]["finalizers"] == [f"{group}/x"]

        # --no-dry-run: not claimed; the rules name the policy as a possible gate only
        [f] = explained_widget(cluster, group, "--no-dry-run")["findings"]
        assert f["verdict"] == "WAITING", f
        assert any(line.startswith(f"possible gate: ValidatingAdmissionPolicy {name} (binding {bound}) matches the "
                                   f"removal of {group}/x (it reads 'userInfo', which kfin does not hold)") for line in f["evidence"]), f["evidence"]
        assert "dry run" not in json.dumps(f)
    finally:
        cluster.api.delete(cluster.path_of(binding))
        cluster.strip_finalizers(widget)


@pytest.mark.controllers
def test_a_running_operator_that_rbac_refuses_the_removal_is_stalled_with_the_grant_it_lacks(cluster):
    """Issue 40: the operator's Role names other Widgets only (resourceNames), which kfin's reading of RBAC does not
    weigh: by the rules it may update Widgets and is WAITING. The dry runs of its removal of the finalizer (patched,
    then updated), sent as its ServiceAccount, are refused by RBAC: STALLED, with the grant it lacks, in the words of a
    grant kfin finds missing."""
    group, widget, operator = stuck_widget_of_a_running_operator(cluster, ["another"])
    try:
        [f] = explained_widget(cluster, group)["findings"]
        assert f["verdict"] == "STALLED" and f["controllerAlive"] is True, f
        assert f"but is forbidden to update widgets.{group}" in f["condition"]
        assert f["fix"].startswith(f"grant ServiceAccount {cluster.namespace}/widget-operator update and patch on "
                                   f"widgets.{group}")
        assert any(line.startswith(f"dry run (dryRun=All) of PATCH widgets.{group}/w1 in namespace {cluster.namespace}"
                                   f" as {operator} (impersonated): 403 Forbidden") for line in f["evidence"])
        # a controller may update instead of patching, and RBAC grants the two apart: both were asked
        assert any(line.startswith(f"dry run (dryRun=All) of PUT widgets.{group}/w1 in namespace {cluster.namespace}"
                                   f" as {operator} (impersonated): 403 Forbidden") for line in f["evidence"])
        [f] = explained_widget(cluster, group, "--no-dry-run")["findings"]
        assert f["verdict"] == "WAITING" and "dry run" not in json.dumps(f), f
    finally:
        cluster.strip_finalizers(widget)


def test_a_step_the_user_may_not_run_says_who_must_run_it(cluster):
    """A user who may only read: the dry run of kfin's own removal is refused by RBAC, in the authorizer's words
    (cannot patch resource "configmaps"), so the plan's `kfin remove` step says who must run it; an admin's does
    not. Nothing is said where the server said nothing."""
    cm = cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "held", "finalizers": ["example.com/x"]}})
    cluster.delete(cm)
    reader = cluster.read_only_kubeconfig()
    needs = f"note: needs someone who may patch configmaps in namespace {cluster.namespace}"
    for command in ("explain", "stuck"):
        subject = ("cm", "held") if command == "explain" else ()
        read = kfin(command, *subject, "-n", cluster.namespace, "--kubeconfig", str(reader))
        assert read.code in (0, 1, 8), read
        lines = read.stdout.splitlines()
        step = next(i for i, line in enumerate(lines)  # the plan's step (explain numbers it), not the panel's row
                    if re.match(rf"\s*(\d+\. )?kfin remove configmaps held -n {cluster.namespace} ", line))
        assert any(line.strip().startswith(needs) for line in lines[step + 1:step + 4]), read.stdout
        admin = kfin(command, *subject, "-n", cluster.namespace, "--kubeconfig", str(cluster.kubeconfig))
        assert "kfin remove configmaps held" in admin.stdout and "needs someone who may" not in admin.stdout
