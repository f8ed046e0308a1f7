"""Answers that point to where the stuck objects are, on both tiers: kfin stuck in a namespace where nothing is
stuck counts what is stuck in the others (a ghost of a namespace that is gone included), kfin explain of an Active
namespace names what is stuck inside it, and kfin explain of an object not where it was looked for says where it
is, or the name or namespace one typo away."""

from kfin.errors import ExitCode
from tests.runner import kfin
from tests.scenarios.test_ghosts import never_deleted_ghost


def in_default(cluster):
    """A kubeconfig whose namespace is default (where this scenario makes nothing), as a user's often is."""
    return cluster.write_kubeconfig(cluster.workdir / "kubeconfig-default", cluster.token, "admin", namespace="default")


def test_stuck_where_nothing_is_counts_what_is_stuck_in_other_namespaces(cluster):
    finalizer = f"{cluster.suffix}.example.com/hold"  # what only this scenario's objects carry
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": [finalizer]}})
    cluster.delete(f"/api/v1/namespaces/{cluster.namespace}/configmaps/held")
    ghost_namespace = never_deleted_ghost(cluster, finalizer)
    config = in_default(cluster)
    result = kfin("stuck", "--finalizer", f"{cluster.suffix}.example.com/*", "--kubeconfig", str(config))
    assert result.code == ExitCode.OK and result.stdout == "", result
    assert result.stderr.strip().splitlines()[-2:] == [
        "No stuck objects found in namespace default.",
        f"2 objects are stuck in 2 other namespaces ({ghost_namespace}, {cluster.namespace}): kfin stuck -A "
        f"--kubeconfig {config} --finalizer '{cluster.suffix}.example.com/*'",
    ], result.stderr
    listed = kfin("stuck", "-A", "--finalizer", f"{cluster.suffix}.example.com/*", "-o", "name", "--kubeconfig",
                  str(config))
    assert sorted(listed.stdout.split()) == ["configmap/held", "configmap/left"], listed  # the command said shows them
    inside = kfin("explain", "ns", cluster.namespace, "--kubeconfig", str(config))
    assert inside.code == ExitCode.OK and inside.stdout.splitlines()[:2] == [
        f"Namespace/{cluster.namespace}  not being deleted",
        f"1 object in it is stuck: ConfigMap/held (what holds each: kfin stuck -n {cluster.namespace})",
    ], inside


def test_explain_says_where_an_object_is_and_what_a_typo_meant(cluster):
    name = f"settings-{cluster.suffix}"
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    base = ("--kubeconfig", str(in_default(cluster)))
    elsewhere = kfin("explain", "cm", name, *base)
    assert elsewhere.code == ExitCode.NOT_FOUND and elsewhere.stdout == "", elsewhere
    assert elsewhere.stderr.strip() == (
        f'error: configmaps "{name}" not found in namespace "default"; it exists in namespace {cluster.namespace}: '
        f"kfin explain cm {name} -n {cluster.namespace}")
    typo = f"setitngs-{cluster.suffix}"
    misspelt = kfin("explain", "cm", typo, "-n", cluster.namespace, *base)
    assert misspelt.code == ExitCode.NOT_FOUND
    assert misspelt.stderr.strip() == (
        f'error: configmaps "{typo}" not found in namespace "{cluster.namespace}" (did you mean {name}? '
        f"kfin explain cm {name} -n {cluster.namespace})")
    namespace_typo = "kfni-" + cluster.namespace.removeprefix("kfin-")
    absent = f"absent-{cluster.suffix}"
    wrong_namespace = kfin("explain", "cm", absent, "-n", namespace_typo, *base)
    assert wrong_namespace.code == ExitCode.NOT_FOUND
    assert wrong_namespace.stderr.strip() == (
        f'error: configmaps "{absent}" not found in namespace "{namespace_typo}": namespace "{namespace_typo}" does '
        f"not exist (did you mean {cluster.namespace}? kfin explain cm {absent} -n {cluster.namespace})")
