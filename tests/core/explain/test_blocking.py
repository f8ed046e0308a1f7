"""Blocking chains (kfin/core/explain/blocking.py): from a stuck object down to its root causes, and the plan that
takes the deepest first."""

from datetime import timedelta

from kfin.core.explain.blocking import follow, node_id, root_summary
from tests.values import facts, lease, node, obj, pod

DELETING = timedelta(hours=1)


def storage_chain():
    """A volume bound to a claim that a Pod on a live node still mounts."""
    claim = obj("pvc", "data", "shop", finalizers=("kubernetes.io/pvc-protection",), deleting_for=DELETING,
                spec={"volumeName": "pv-1"})
    volume = obj("pv", "pv-1", finalizers=("kubernetes.io/pv-protection",), deleting_for=DELETING,
                 spec={"persistentVolumeReclaimPolicy": "Delete", "claimRef": {"name": "data", "namespace": "shop"}},
                 status={"phase": "Bound"})
    user = pod("db-0", "shop", claims=("data",))
    return volume, facts(volume, claim, user, node("node-1"), lease())


def test_the_chain_goes_to_the_root_cause_and_the_plan_starts_there():
    volume, known = storage_chain()
    chain = follow(volume, known)
    assert [chain.label(r) for r in chain.roots] == ["Pod/shop/db-0"]
    assert chain.depth[chain.roots[0]] == 2  # volume -> claim -> pod
    [step] = chain.steps
    assert step.actions[0].command == "kubectl delete pod -n shop db-0" and not step.by_kfin
    # then, by themselves, deepest first: the claim, then the volume (and its disk, reclaim policy Delete)
    assert chain.afterwards[0].startswith("PersistentVolumeClaim/shop/data goes by itself")
    assert "disk is deleted with it" in chain.afterwards[1]
    assert root_summary(chain) == "root cause: Pod/shop/db-0"


def test_a_direct_cause_is_no_deeper_root():
    claim = obj("pvc", "data", "shop", finalizers=("kubernetes.io/pvc-protection",), deleting_for=DELETING)
    known = facts(claim, pod("db-0", "shop", claims=("data",)), lease())
    assert root_summary(follow(claim, known)) is None  # the Pod holds it directly: the blocker line says so


def test_roots_are_ordered_deepest_first():
    deploy = obj("deploy.apps", "web", "shop", finalizers=("foregroundDeletion",), deleting_for=DELETING)
    replicas = obj("rs.apps", "web-1", "shop", owners=(deploy,), finalizers=("foregroundDeletion",),
                   deleting_for=DELETING)
    stuck_pod = pod("web-1-a", "shop", owners=(replicas,), node_name="gone", deleting_for=DELETING, grace_seconds=30)
    idle = obj("cm", "web-settings", "shop", owners=(deploy,))  # blocking, not deleted yet: a root at depth 1
    chain = follow(deploy, facts(deploy, replicas, stuck_pod, idle, lease()))
    depths = [chain.depth[r] for r in chain.roots]
    assert depths == sorted(depths, reverse=True) and depths[0] == 3  # the gone node, under the Pod
    assert chain.label(chain.roots[0]) == "node gone (gone)"


def test_one_node_id_for_every_graph():
    with_uid = obj("cm", "a", "shop", uid="1234")
    without = obj("cm", "a", "shop", uid="")
    assert node_id(with_uid) == "1234"
    assert node_id(without) == "configmaps/shop/a"


def test_every_culprit_is_named_in_the_plan_not_only_the_first():
    """Issue 29: two Pods of a ReplicaSet on a lost node; the plan's last resort force-deleted only the first,
    and the blocker line named one of the two."""
    from kfin.core.explain.causes import explain_object

    replicas = obj("rs.apps", "web-1", "shop", finalizers=("foregroundDeletion",), deleting_for=DELETING)
    pods = [pod(f"web-1-{s}", "shop", owners=(replicas,), node_name="node-9", deleting_for=DELETING,
                grace_seconds=30) for s in "ab"]
    known = facts(replicas, *pods, node("node-9", ready=False), lease())
    [finding] = explain_object(replicas, known).findings
    assert finding.summary == "waiting for 2 blocking dependents (Pod/shop/web-1-a, Pod/shop/web-1-b)"
    [step] = follow(replicas, known).steps
    # the taint first, then every Pod's last resort, each its own command with its condition (issue 41)
    assert [a.command for a in step.actions] == [
        "kubectl taint nodes node-9 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute",
        "kubectl delete pod -n shop web-1-a --grace-period=0 --force",
        "kubectl delete pod -n shop web-1-b --grace-period=0 --force",
    ]
    assert [a.when for a in step.actions] == [
        "once it is shut down",
        "only if Pod/shop/web-1-a lingers after that",
        "only if Pod/shop/web-1-b lingers after that",
    ]
    assert step.to_dict() == {
        "command": "kubectl taint nodes node-9 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute",
        "when": "once it is shut down",
        "note": "Kubernetes then deletes its Pods and detaches their volumes",
        "more": [
            {"command": f"kubectl delete pod -n shop web-1-{s} --grace-period=0 --force",
             "when": f"only if Pod/shop/web-1-{s} lingers after that", "note": None}
            for s in "ab"
        ],
        "resolves": "Node/node-9",
        "why": step.why,
        "type": "operator",
    }
