"""Answers that point to where the stuck objects are: kfin stuck in a quiet namespace counts what is stuck in the
others, kfin explain of an object not where it was looked for says where it is (or the name or namespace one typo
away), and kfin explain of an Active namespace names what is stuck inside it."""

import io
import json
import sys

from kfin.errors import ExitCode
from tests.fakeapi.rawclient import RawClient
from tests.runner import kfin
from tests.commands.test_trust_all_clear import widget_crd


def stuck_configmap(api, namespace, name, finalizer="example.com/x"):
    api.create(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": name, "finalizers": [finalizer]}})
    api.delete(f"/api/v1/namespaces/{namespace}/configmaps/{name}")


def namespaces(api, *names):
    for name in names:
        api.create("/api/v1/namespaces", {"metadata": {"name": name}})


def lines(text):
    return text.strip().splitlines()


def test_stuck_in_a_quiet_namespace_counts_what_is_stuck_in_the_others_and_gives_the_command(fake, fake_kubeconfig):
    api = RawClient(fake.url, "admin-token")
    namespaces(api, "shop", "billing")
    stuck_configmap(api, "shop", "held")
    stuck_configmap(api, "shop", "kept", finalizer="other.io/y")
    stuck_configmap(api, "billing", "held")
    base = ("--kubeconfig", str(fake_kubeconfig))
    seen = len(fake.requests)
    result = kfin("stuck", *base)  # the kubeconfig's namespace: default
    assert result.code == ExitCode.OK and result.stdout == "", result
    assert lines(result.stderr) == [
        "No stuck objects found in namespace default.",
        f"3 objects are stuck in 2 other namespaces (billing, shop): kfin stuck -A --kubeconfig {fake_kubeconfig}",
    ]
    across = [r for r in fake.requests[seen:] if r.method == "GET" and r.path.startswith("/api/v1/configmaps")]
    assert across and all(r.metadata_only for r in across)  # read across namespaces, metadata-only

    narrowed = kfin("stuck", "--finalizer", "other.io/*", *base)
    assert lines(narrowed.stderr)[1] == (
        f"1 object is stuck in 1 other namespace (shop): kfin stuck -A --kubeconfig {fake_kubeconfig} "
        "--finalizer 'other.io/*'"
    ), narrowed
    none = kfin("stuck", "--kind", "pvc", *base)
    assert lines(none.stderr) == ["No stuck objects found in namespace default.",
                                  "No stuck objects elsewhere in the cluster either."], none
    assert kfin("stuck", "-n", "shop", *base).stderr.count("other namespace") == 0  # found some: nothing more said
    roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    api.create(roles, {"metadata": {"name": "held", "finalizers": ["example.com/x"]}, "rules": []})
    api.delete(f"{roles}/held")
    both = kfin("stuck", *base)
    assert lines(both.stderr)[1] == (
        "4 objects are stuck: 3 in 2 other namespaces (billing, shop), 1 cluster-scoped: kfin stuck -A --kubeconfig "
        f"{fake_kubeconfig}"), both
    cluster_only = kfin("stuck", "--kind", "clusterroles.rbac.authorization.k8s.io", *base)
    assert lines(cluster_only.stderr)[1] == (
        f"1 cluster-scoped object is stuck: kfin stuck -A --kubeconfig {fake_kubeconfig} --kind "
        "clusterroles.rbac.authorization.k8s.io"), cluster_only
    seen = len(fake.requests)
    cron = kfin("stuck", "--exit-code", *base)  # a script's check: no list across the cluster at every run
    assert cron.code == ExitCode.OK and lines(cron.stderr) == ["No stuck objects found in namespace default."], cron
    assert not [r for r in fake.requests[seen:] if r.path.startswith("/api/v1/configmaps")]


def test_stuck_says_it_did_not_look_elsewhere_when_it_may_not_list_across_namespaces(fake, tmp_path):
    api = RawClient(fake.url, "admin-token")
    namespaces(api, "shop")
    stuck_configmap(api, "shop", "held")
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    api.create("/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "local"}})
    api.create(f"{rbac}/roles", {"metadata": {"name": "read"},
                                 "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list"]}]})
    api.create(f"{rbac}/rolebindings", {
        "metadata": {"name": "read"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read"},
        "subjects": [{"kind": "ServiceAccount", "name": "local", "namespace": "default"}]})
    api.create("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
        "metadata": {"name": "get-namespaces"},
        "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]}]})
    api.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "metadata": {"name": "get-namespaces"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "get-namespaces"},
        "subjects": [{"kind": "ServiceAccount", "name": "local", "namespace": "default"}]})
    token = api.create("/api/v1/namespaces/default/serviceaccounts/local/token", {"spec": {}})["status"]["token"]
    config = fake.kubeconfig(tmp_path / "local", user="local", token=token)
    result = kfin("stuck", "--kubeconfig", str(config))
    said = lines(result.stderr)
    assert "No stuck objects found in namespace default." in said, result
    assert said[-1] == (
        "kfin could not look in other namespaces (listing namespaces: Forbidden): "
        f"kfin stuck -A --kubeconfig {config} would, with the right to list across namespaces."), result
    assert "either" not in result.stderr and "are stuck" not in result.stderr


def test_stuck_with_a_verdict_says_it_did_not_look_elsewhere(fake, fake_kubeconfig):
    api = RawClient(fake.url, "admin-token")
    namespaces(api, "shop")
    stuck_configmap(api, "shop", "held")
    result = kfin("stuck", "--verdict", "orphaned", "--kubeconfig", str(fake_kubeconfig))
    assert lines(result.stderr)[-1] == (
        "kfin did not look in other namespaces for what --verdict, -l or --field-selector select: "
        f"kfin stuck -A --kubeconfig {fake_kubeconfig} --verdict orphaned would."
    ), result


def test_remove_all_stuck_names_the_namespace_it_looked_in(fake, fake_kubeconfig, monkeypatch):
    api = RawClient(fake.url, "admin-token")
    namespaces(api, "shop", "quiet")
    stuck_configmap(api, "shop", "held")
    base = ("remove", "--all-stuck", "--kubeconfig", str(fake_kubeconfig))
    nothing = kfin(*base, "-n", "quiet")
    assert nothing.code == ExitCode.OK
    assert lines(nothing.stderr) == ["Nothing to remove: no stuck object matches in namespace quiet."], nothing
    plan = kfin(*base, "-n", "shop")
    assert lines(plan.stderr)[0] == "Stuck objects in namespace shop of context fake, and what kfin would do to each:"
    everywhere = kfin(*base, "-A")
    assert lines(everywhere.stderr)[0].startswith("Stuck objects in every namespace of context fake")

    class NoAnswer(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", NoAnswer(""))
    asked = kfin(*base, "-n", "shop", "--confirm")
    assert asked.code == ExitCode.REFUSED and "in namespace shop of context fake? [y/N]" in asked.stdout, asked


def test_explain_of_an_object_in_another_namespace_says_where_it_is(fake, fake_kubeconfig):
    api = RawClient(fake.url, "admin-token")
    namespaces(api, "shop", "billing", "team-a")
    api.create("/api/v1/namespaces/shop/configmaps", {"metadata": {"name": "settings"}})
    base = ("--kubeconfig", str(fake_kubeconfig))
    result = kfin("explain", "cm", "settings", *base)
    assert result.code == ExitCode.NOT_FOUND and result.stdout == ""
    assert lines(result.stderr) == [
        'error: configmaps "settings" not found in namespace "default"; it exists in namespace shop: '
        "kfin explain cm settings -n shop"]
    for namespace in ("billing", "team-a"):
        api.create(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "settings"}})
    several = kfin("explain", "configmap/settings", *base)
    assert lines(several.stderr) == [
        'error: configmaps "settings" not found in namespace "default"; it exists in namespaces billing, shop, '
        "team-a: kfin explain configmap settings -n billing"]
    removal = kfin("remove", "cm", "settings", *base)
    assert removal.code == ExitCode.NOT_FOUND and "kfin remove cm settings -n billing" in removal.stderr


def test_explain_of_a_typo_of_a_name_or_a_namespace_gets_a_did_you_mean(fake, fake_kubeconfig):
    api = RawClient(fake.url, "admin-token")
    namespaces(api, "shop")
    api.create("/api/v1/namespaces/shop/persistentvolumeclaims", {
        "metadata": {"name": "data-postgres-0"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    base = ("--kubeconfig", str(fake_kubeconfig))
    name = kfin("explain", "pvc", "data-postrges-0", "-n", "shop", *base)
    assert name.code == ExitCode.NOT_FOUND
    assert lines(name.stderr) == [
        'error: persistentvolumeclaims "data-postrges-0" not found in namespace "shop" (did you mean '
        "data-postgres-0? kfin explain pvc data-postgres-0 -n shop)"]
    namespace = kfin("explain", "pvc", "data-postgres-1", "-n", "shpo", *base)
    assert lines(namespace.stderr) == [
        'error: persistentvolumeclaims "data-postgres-1" not found in namespace "shpo": namespace "shpo" does not '
        "exist (did you mean shop? kfin explain pvc data-postgres-1 -n shop)"]
    far = kfin("explain", "pvc", "unrelated", "-n", "shop", *base)
    assert lines(far.stderr) == ['error: persistentvolumeclaims "unrelated" not found in namespace "shop"']


def test_explain_of_a_kind_two_groups_serve_says_under_which_type_the_object_is(fake, fake_kubeconfig):
    api = RawClient(fake.url, "admin-token")
    widget_crd(api, "widgets", "Widget", "a.example.com")
    widget_crd(api, "widgets", "Widget", "b.example.com")
    api.create("/apis/b.example.com/v1/namespaces/default/widgets", {
        "apiVersion": "b.example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}})
    result = kfin("explain", "widget", "w1", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.NOT_FOUND
    assert lines(result.stderr) == [
        'error: widgets.a.example.com "w1" not found in namespace "default"; widgets.b.example.com "w1" exists in '
        'namespace "default": kfin explain widgets.b.example.com w1 -n default'], result
    named = kfin("explain", "widgets.b.example.com", "w1", "--kubeconfig", str(fake_kubeconfig))
    assert named.code == ExitCode.OK and "not being deleted" in named.stdout, named


def test_explain_of_an_active_namespace_names_what_is_stuck_inside_it(fake, fake_kubeconfig):
    api = RawClient(fake.url, "admin-token")
    namespaces(api, "shop", "quiet")
    for name in ("a", "b", "c", "d"):
        stuck_configmap(api, "shop", name)
    base = ("--kubeconfig", str(fake_kubeconfig))
    result = kfin("explain", "ns", "shop", *base)
    assert result.code == ExitCode.OK, result
    assert "Nothing is stuck" not in result.stdout
    assert lines(result.stdout)[:2] == [
        "Namespace/shop  not being deleted",
        "4 objects in it are stuck: ConfigMap/a, ConfigMap/b, ConfigMap/c and 1 more (what holds each: kfin stuck -n "
        "shop)"]
    document = json.loads(kfin("explain", "ns", "shop", "-o", "json", *base).stdout)
    assert [o["name"] for o in document["stuckInside"]["objects"]] == ["a", "b", "c", "d"]
    assert document["stuckInside"]["complete"] is True
    quiet = kfin("explain", "ns", "quiet", *base)
    assert lines(quiet.stdout)[1] == "Nothing is stuck. Its finalizers act only once it is deleted:", quiet
