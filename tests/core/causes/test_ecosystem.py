"""Ecosystem finalizers through the catalog (kfin/data/catalog.yaml, kfin/core/explain/causes/ecosystem.py), on plain
values shaped as each project writes its objects (field names from its source)."""

from datetime import timedelta

import pytest

from kfin.model import Answer, Write
from kfin.core.explain.causes import Verdict, explain_object
from kfin.core.read.catalog import Catalog
from kfin.core.explain.causes.registry import family
from kfin.model import ResourceType
from tests.values import custom_type, facts, obj, pod

DELETING = timedelta(hours=1)
APPLICATION = ResourceType("argoproj.io", "v1alpha1", "applications", "Application", True)
KUSTOMIZATION = ResourceType("kustomize.toolkit.fluxcd.io", "v1", "kustomizations", "Kustomization", True)
PROVIDER_CONFIG = ResourceType("aws.upbound.io", "v1beta1", "providerconfigs", "ProviderConfig", False)
USAGE = ResourceType("aws.upbound.io", "v1beta1", "providerconfigusages", "ProviderConfigUsage", False)
NODECLAIM = ResourceType("karpenter.sh", "v1", "nodeclaims", "NodeClaim", False)
CHALLENGE = ResourceType("acme.cert-manager.io", "v1", "challenges", "Challenge", True)
ISSUER = ResourceType("cert-manager.io", "v1", "issuers", "Issuer", True)


def controller(name: str, namespace: str, ready: int, labels: dict | None = None, kind: str = "deploy.apps"):
    status = {"readyReplicas": ready} if kind != "ds.apps" else {"numberReady": ready}
    return obj(kind, name, namespace, labels=labels, spec={"replicas": 1, "template": {"spec": {}}}, status=status)


@pytest.mark.parametrize("finalizer, entry", [
    ("resources-finalizer.argocd.argoproj.io", "argocd-application"),
    ("resources-finalizer.argocd.argoproj.io/foreground", "argocd-application"),
    ("post-delete-finalizer.argocd.argoproj.io/cleanup", "argocd-hooks"),
    ("finalizers.fluxcd.io", "flux"), ("finalizer.managedresource.crossplane.io", "crossplane-managed"),
    ("in-use.crossplane.io", "crossplane-in-use"), ("lock.pkg.crossplane.io", "crossplane-core"),
    ("finalizer.acme.cert-manager.io", "cert-manager-acme"), ("acme.cert-manager.io/finalizer", "cert-manager-acme"),
    ("karpenter.sh/termination", "karpenter"), ("machine.cluster.x-k8s.io", "cluster-api"),
    ("cluster.x-k8s.io/machineset", "cluster-api"), ("service.k8s.aws/resources", "aws-load-balancer-controller"),
    ("group.ingress.k8s.aws/shared", "aws-load-balancer-controller"), ("elbv2.k8s.aws/resources",
                                                                     "aws-load-balancer-controller"),
    ("istio-finalizer.install.istio.io", "istio-operator"), ("longhorn.io", "longhorn"),
    ("cephcluster.ceph.rook.io", "rook-ceph"), ("ceph.rook.io/disaster-protection", "rook-ceph"),
    ("controller.cattle.io/cluster-agent", "rancher"), ("wrangler.cattle.io/app", "rancher"),
    ("velero.io/pod-volume-finalizer", "velero"), ("kopf.zalando.org/KopfFinalizerMarker", "kopf"),
    # COSI is out of tree (kubernetes-sigs), though its names are in a k8s.io domain: a catalog entry, no cause
    ("objectstorage.k8s.io/protection", "cosi"), ("cosi.objectstorage.k8s.io/bucket-protection", "cosi-v1alpha1"),
])
def test_each_family_is_known_by_name(finalizer, entry):
    fam = family(finalizer, Catalog())
    assert fam.entry is not None and fam.entry.name == entry


def test_argo_cd_names_what_it_will_delete_and_its_controller_that_does_not_run():
    app = obj(APPLICATION, "guestbook", "argocd", finalizers=("resources-finalizer.argocd.argoproj.io",),
              deleting_for=DELETING, status={"resources": [
                  {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "guestbook",
                   "name": "guestbook-ui"},
                  {"version": "v1", "kind": "Service", "namespace": "guestbook", "name": "guestbook-ui"}]})
    down = obj("sts.apps", "argocd-application-controller", "argocd",
               labels={"app.kubernetes.io/name": "argocd-application-controller"},
               spec={"replicas": 1, "template": {"spec": {}}}, status={"readyReplicas": 0})
    [finding] = explain_object(app, facts(app, down, extra_types=(APPLICATION,))).findings
    assert finding.verdict == Verdict.STALLED and finding.controller_alive is False  # someone must act (issue 40)
    assert [link.target.name for link in finding.links] == ["argocd-application-controller"]
    assert "2 Argo CD deletes them when its controller runs: Deployment guestbook/guestbook-ui, Service " \
           "guestbook/guestbook-ui" in finding.evidence
    assert finding.risk.startswith("removing it deletes the Application but leaves every resource it deployed running")
    assert "(2 of them: Deployment guestbook/guestbook-ui" in finding.risk
    assert finding.summary.startswith("Argo CD: the Argo CD application controller is not running")
    assert [h["what"] for h in finding.detail["holders"]] == ["Deployment guestbook/guestbook-ui",
                                                             "Service guestbook/guestbook-ui"]


def flux_grant():
    """Flux's kustomize-controller runs as ServiceAccount flux-system/kustomize-controller, bound to cluster-admin
    by Flux's own install (manifests/rbac/reconciler.yaml: ClusterRoleBinding cluster-reconciler)."""
    admin = obj("clusterroles.rbac.authorization.k8s.io", "cluster-admin",
                rules=[{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])
    bound = obj("clusterrolebindings.rbac.authorization.k8s.io", "cluster-reconciler-flux-system",
                roleRef={"kind": "ClusterRole", "name": "cluster-admin"},
                subjects=[{"kind": "ServiceAccount", "name": "kustomize-controller", "namespace": "flux-system"}])
    return admin, bound


def kustomize_controller(ready: int):
    return obj("deploy.apps", "kustomize-controller", "flux-system", spec={"replicas": 1, "template": {"spec": {
        "serviceAccountName": "kustomize-controller"}}}, status={"readyReplicas": ready})


def test_flux_reads_its_inventory_and_waits_for_a_running_controller():
    kustomization = obj(KUSTOMIZATION, "apps", "flux-system", finalizers=("finalizers.fluxcd.io",),
                        deleting_for=DELETING, status={"inventory": {"entries": [
                            {"id": "shop_web_apps_Deployment", "v": "v1"}]}})
    running = kustomize_controller(1)
    known = facts(kustomization, running, *flux_grant(), extra_types=(KUSTOMIZATION,))
    [finding] = explain_object(kustomization, known).findings
    assert finding.verdict == Verdict.WAITING and finding.controller_alive is True
    assert any("Deployment shop/web" in e for e in finding.evidence)


def test_a_running_flux_that_reports_it_cannot_prune_is_stalled_with_its_condition_named():
    """Owned by the catalog's entry, running, but Flux writes Ready False with PruneFailed (fluxcd/pkg's
    PruneFailedReason) on the Kustomization being deleted: it cannot finish, STALLED naming the condition."""
    failed = {"type": "Ready", "status": "False", "reason": "PruneFailed",
              "message": "failed to delete Deployment/shop/web: forbidden"}
    kustomization = obj(KUSTOMIZATION, "apps", "flux-system", finalizers=("finalizers.fluxcd.io",),
                        deleting_for=DELETING, status={"conditions": [failed]})
    known = facts(kustomization, kustomize_controller(1), *flux_grant(), extra_types=(KUSTOMIZATION,))
    [finding] = explain_object(kustomization, known).findings
    assert finding.verdict == Verdict.STALLED and finding.controller_alive is True
    assert finding.condition.endswith("reports it cannot finish: condition Ready False (PruneFailed): failed to "
                                      "delete Deployment/shop/web: forbidden")
    assert any(e.endswith("names it its remover") for e in finding.evidence)


def test_a_catalog_controller_that_runs_but_may_not_update_its_objects_is_stalled_with_the_missing_grant():
    """Issue 40: running is not acting. Without a grant of update or patch on kustomizations to its ServiceAccount
    (here: none at all), it cannot remove the finalizer until someone grants it."""
    kustomization = obj(KUSTOMIZATION, "apps", "flux-system", finalizers=("finalizers.fluxcd.io",),
                        deleting_for=DELETING)
    [finding] = explain_object(kustomization, facts(kustomization, kustomize_controller(1),
                                                    extra_types=(KUSTOMIZATION,))).findings
    assert finding.verdict == Verdict.STALLED and finding.controller_alive is True
    assert "forbidden to update kustomizations.kustomize.toolkit.fluxcd.io" in finding.condition
    assert finding.fix.startswith("grant ServiceAccount flux-system/kustomize-controller update and patch on "
                                  "kustomizations.kustomize.toolkit.fluxcd.io")
    assert finding.summary.startswith("Flux: the Flux ") and "runs but is forbidden to update it" in finding.summary
    assert [link.kind for link in finding.links] == ["forbidden"]


def test_crossplane_in_use_is_held_by_its_usages():
    config = obj(PROVIDER_CONFIG, "default", finalizers=("in-use.crossplane.io",), deleting_for=DELETING)
    usage = obj(USAGE, "u-1", providerConfigRef={"name": "default"},
                resourceRef={"apiVersion": "s3.aws.upbound.io/v1beta1", "kind": "Bucket", "name": "logs"})
    other = obj(USAGE, "u-2", providerConfigRef={"name": "other"}, resourceRef={"kind": "Bucket", "name": "x"})
    [finding] = explain_object(config, facts(config, usage, other, extra_types=(PROVIDER_CONFIG, USAGE))).findings
    assert finding.verdict == Verdict.HOLDING
    assert finding.condition.startswith("1 still uses it: Bucket logs (ProviderConfigUsage u-1)")
    assert [link.target.name for link in finding.links] == ["u-1"]


def test_karpenter_names_what_stops_the_drain():
    node = obj("nodes", "ip-10-0-1-7", finalizers=("karpenter.sh/termination",), deleting_for=DELETING)
    guarded = pod("db-0", "shop", node_name="ip-10-0-1-7", labels={"app": "db"})
    pinned = pod("batch-1", "shop", node_name="ip-10-0-1-7")
    pinned.raw["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    free = pod("web-1", "shop", node_name="ip-10-0-1-7", labels={"app": "web"})
    budget = obj("pdb.policy", "db", "shop", spec={"selector": {"matchLabels": {"app": "db"}}},
                 status={"disruptionsAllowed": 0})
    [finding] = explain_object(node, facts(node, guarded, pinned, free, budget)).findings
    assert finding.verdict == Verdict.HOLDING
    assert "Pod shop/db-0 is covered by PodDisruptionBudget db, which allows no disruption" in finding.condition
    assert "Pod shop/batch-1 is annotated karpenter.sh/do-not-disrupt" in finding.condition
    assert {link.target.name for link in finding.links} == {"db", "batch-1"}
    assert any("1 evicted by the drain: Pod shop/web-1" in e for e in finding.evidence)


def test_cert_manager_says_when_the_issuer_it_needs_is_gone():
    challenge = obj(CHALLENGE, "site-1", "web", finalizers=("finalizer.acme.cert-manager.io",), deleting_for=DELETING,
                    spec={"issuerRef": {"name": "letsencrypt", "kind": "Issuer", "group": "cert-manager.io"}})
    [finding] = explain_object(challenge, facts(challenge, extra_types=(CHALLENGE, ISSUER))).findings
    # it cannot finish until someone recreates the Issuer or cleans up by hand: STALLED (issue 40)
    assert finding.verdict == Verdict.STALLED and "Issuer web/letsencrypt is gone" in finding.condition
    issuer = obj(ISSUER, "letsencrypt", "web")
    [finding] = explain_object(challenge, facts(challenge, issuer, extra_types=(CHALLENGE, ISSUER))).findings
    assert "Issuer web/letsencrypt is gone" not in finding.condition


def test_without_its_controller_nor_any_grant_an_ecosystem_finalizer_is_orphaned_with_the_projects_risk():
    app = obj(APPLICATION, "guestbook", "argocd", finalizers=("resources-finalizer.argocd.argoproj.io",),
              deleting_for=DELETING)
    [finding] = explain_object(app, facts(app, extra_types=(APPLICATION,))).findings
    assert finding.verdict == Verdict.ORPHANED and finding.family == "argocd-application"
    assert finding.condition.startswith("the Argo CD application controller is not installed")
    assert finding.risk.startswith("removing it deletes the Application but leaves")
    assert any(e.startswith("the catalog's the Argo CD application controller was looked for in argocd")
               for e in finding.evidence)


FLUX_USER = "system:serviceaccount:flux-system:kustomize-controller"


def flux_removal_answered(code: int, reason: str, message: str, *more, updated: tuple = ()):
    """A Terminating Kustomization whose running controller may update it (by RBAC as kfin reads it), explained with
    the server's answer to the dry run of that controller's removal of finalizers.fluxcd.io, sent as it: to its JSON
    patch, and (`updated`: code, reason, message) to its UPDATE, which kfin sends when RBAC forbids the patch."""
    kustomization = obj(KUSTOMIZATION, "apps", "flux-system", finalizers=("finalizers.fluxcd.io",),
                        deleting_for=DELETING, spec={"path": "./apps"})
    known = facts(kustomization, kustomize_controller(1), *flux_grant(), *more, extra_types=(KUSTOMIZATION,))
    ops = [{"op": "test", "path": "/metadata/finalizers", "value": ["finalizers.fluxcd.io"]},
           {"op": "remove", "path": "/metadata/finalizers/0"}]
    write = Write.patch(KUSTOMIZATION, "flux-system", "apps", ops, FLUX_USER)
    known.reader.answers.dry_runs[write] = Answer(code, reason, message, FLUX_USER, {})
    if updated:
        after = dict(kustomization.raw, metadata=dict(kustomization.raw["metadata"], finalizers=[]))
        update = Write.update(KUSTOMIZATION, "flux-system", "apps", after, FLUX_USER)
        known.reader.answers.dry_runs[update] = Answer(*updated, FLUX_USER, {})
    [finding] = explain_object(kustomization, known).findings
    return finding


def test_a_running_catalog_controllers_removal_denied_as_itself_is_blocked_by_what_denies_it():
    """Issue 40: a ValidatingAdmissionPolicy for the controller's ServiceAccount alone (its matchConditions read
    request.userInfo.username: kfin's rules cannot tell) denies the dry run of its removal, sent as it: BLOCKED, the
    policy its root cause, as a gate kfin's rules proved would be."""
    policy = obj("validatingadmissionpolicies.admissionregistration.k8s.io", "flux-keeps", spec={
        "matchConstraints": {"resourceRules": [{"apiGroups": ["kustomize.toolkit.fluxcd.io"], "apiVersions": ["v1"],
                                                "operations": ["UPDATE"], "resources": ["kustomizations"]}]},
        "matchConditions": [{"name": "flux", "expression": f"request.userInfo.username == '{FLUX_USER}'"}],
        "validations": [{"expression": "false", "message": "kustomizations are pruned by hand"}]})
    binding = obj("validatingadmissionpolicybindings.admissionregistration.k8s.io", "flux-keeps",
                  spec={"policyName": "flux-keeps", "validationActions": ["Deny"]})
    denial = ("kustomizations.kustomize.toolkit.fluxcd.io \"apps\" is forbidden: ValidatingAdmissionPolicy "
              "'flux-keeps' with binding 'flux-keeps' denied request: kustomizations are pruned by hand")
    finding = flux_removal_answered(422, "Invalid", denial, policy, binding)
    assert finding.verdict == Verdict.BLOCKED and finding.family == "admission-policy"
    assert finding.condition == ("ValidatingAdmissionPolicy flux-keeps (binding flux-keeps) denies the removal of the "
                                 "finalizer of kustomizations.kustomize.toolkit.fluxcd.io by "
                                 f"{FLUX_USER}: kustomizations are pruned by hand")
    [link] = finding.links
    assert link.target is not None and link.target.name == "flux-keeps" and link.gates("finalizers.fluxcd.io")
    assert finding.fix.startswith("change ValidatingAdmissionPolicy flux-keeps (or its binding flux-keeps)")
    assert f"dry run (dryRun=All) of PATCH kustomizations.kustomize.toolkit.fluxcd.io/apps in namespace flux-system " \
           f"as {FLUX_USER} (impersonated): 422 Invalid: {denial}" in finding.evidence
    assert finding.evidence[0].startswith("before: WAITING: the Flux")
    assert finding.remove_command is None


def test_a_running_catalog_controller_that_rbac_refuses_as_itself_is_stalled_with_the_grant_it_lacks():
    forbidden = (f'kustomizations.kustomize.toolkit.fluxcd.io "apps" is forbidden: User "{FLUX_USER}" cannot patch '
                 'resource "kustomizations" in API group "kustomize.toolkit.fluxcd.io" in the namespace "flux-system"')
    updating = forbidden.replace("cannot patch", "cannot update")
    finding = flux_removal_answered(403, "Forbidden", forbidden, updated=(403, "Forbidden", updating))
    assert finding.verdict == Verdict.STALLED and finding.controller_alive is True
    assert "runs (Deployment flux-system/kustomize-controller, 1/1 ready) but is forbidden to update " \
           "kustomizations.kustomize.toolkit.fluxcd.io" in finding.condition
    assert finding.fix.startswith("grant ServiceAccount flux-system/kustomize-controller update and patch on "
                                  "kustomizations.kustomize.toolkit.fluxcd.io")
    assert finding.summary.startswith("Flux: the Flux ") and "runs but is forbidden to update it" in finding.summary
    assert [link.kind for link in finding.links] == ["forbidden"]
    assert f"dry run (dryRun=All) of PUT kustomizations.kustomize.toolkit.fluxcd.io/apps in namespace flux-system " \
           f"as {FLUX_USER} (impersonated): 403 Forbidden: {updating}" in finding.evidence


def test_a_forbidden_patch_is_no_proof_while_the_controller_may_update_instead():
    """A controller may remove its finalizer with an UPDATE as well as a patch, and RBAC grants the two apart: a
    forbidden patch whose UPDATE is accepted leaves the controller able to act (WAITING, both answers quoted)."""
    forbidden = (f'kustomizations.kustomize.toolkit.fluxcd.io "apps" is forbidden: User "{FLUX_USER}" cannot patch '
                 'resource "kustomizations" in API group "kustomize.toolkit.fluxcd.io" in the namespace "flux-system"')
    finding = flux_removal_answered(403, "Forbidden", forbidden, updated=(200, "", ""))
    assert finding.verdict == Verdict.WAITING
    assert f"dry run (dryRun=All) of PUT kustomizations.kustomize.toolkit.fluxcd.io/apps in namespace flux-system " \
           f"as {FLUX_USER} (impersonated): accepted" in finding.evidence


def test_a_running_catalog_controllers_removal_accepted_as_itself_stays_waiting_with_that_evidence():
    finding = flux_removal_answered(200, "", "")
    assert finding.verdict == Verdict.WAITING
    assert f"dry run (dryRun=All) of PATCH kustomizations.kustomize.toolkit.fluxcd.io/apps in namespace flux-system " \
           f"as {FLUX_USER} (impersonated): accepted" in finding.evidence


# Issue 44: the operators added to the catalog, each known by a name read in its source at a tagged version.
@pytest.mark.parametrize("finalizer, entry", [
    ("operators.coreos.com/csv-cleanup", "olm-csv"), ("strimzi.io/topic-operator", "strimzi-topic"),
    ("finalizer.keda.sh", "keda"), ("kueue.x-k8s.io/resource-in-use", "kueue"),
    ("tigera.io/operator-cleanup", "tigera-operator"), ("kubevirt.io/virtualMachineControllerFinalize", "kubevirt"),
    ("kubevirt.io/virtOperatorFinalizer", "kubevirt-operator"),
    ("monitoring.coreos.com/status-cleanup", "prometheus-operator"),
    ("externalsecrets.external-secrets.io/externalsecret-cleanup", "external-secrets"),
    ("pushsecret.externalsecrets.io/finalizer", "external-secrets-push"),
    ("karmada.io/execution-controller", "karmada"), ("cnrm.cloud.google.com/finalizer", "config-connector"),
    ("finalizers.s3.services.k8s.aws/Bucket", "aws-controllers-k8s"),
    ("awsmachine.infrastructure.cluster.x-k8s.io", "capi-provider-aws"),
    ("azuremachine.infrastructure.cluster.x-k8s.io", "capi-provider-azure"),
    ("vspherevm.infrastructure.cluster.x-k8s.io", "capi-provider-vsphere"),
    ("metal3machine.infrastructure.cluster.x-k8s.io", "capi-provider-metal3"),
    ("openstackmachine.infrastructure.cluster.x-k8s.io", "capi-provider-openstack"),
    ("karpenter.k8s.aws/termination", "karpenter-aws-nodeclass"),
    ("karpenter.azure.com/termination", "karpenter-azure-nodeclass"),
    ("machine.machine.openshift.io", "openshift-machine-api"), ("hypershift.openshift.io/finalizer", "hypershift"),
    ("routes.serving.knative.dev", "knative-serving"), ("cns.vmware.com/pvc-protection", "vsphere-csi"),
    ("zfs.openebs.io/finalizer", "openebs-zfs"), ("lvm.openebs.io/finalizer", "openebs-lvm"),
    ("chains.tekton.dev/pipelinerun", "tekton-chains"), ("extensions.gardener.cloud/worker", "gardener-extensions"),
    ("gateway-exists-finalizer.gateway.networking.k8s.io", "gateway-api"),
    ("wrangler.cattle.io/harvester-vm-controller", "rancher"), ("gardener", "gardener-core"),
    ("usage.apiextensions.crossplane.io", "crossplane-usage"),
])
def test_each_new_family_is_known_by_name(finalizer, entry):
    fam = family(finalizer, Catalog())
    assert fam.entry is not None and fam.entry.name == entry


ACK_BUCKET = ResourceType("s3.services.k8s.aws", "v1alpha1", "buckets", "Bucket", True,
                          ("list", "get", "update", "patch"))


def test_an_orphaned_ack_bucket_leads_its_risk_with_the_aws_resource_it_leaves_behind():
    bucket = obj(ACK_BUCKET, "logs", "shop", finalizers=("finalizers.s3.services.k8s.aws/Bucket",),
                 deleting_for=DELETING)
    [f] = explain_object(bucket, facts(bucket, extra_types=(ACK_BUCKET,))).findings
    assert f.family == "aws-controllers-k8s" and f.verdict == Verdict.ORPHANED
    assert f.infrastructure == "the AWS resource it represents"
    assert f.risk.startswith("it guards infrastructure outside the cluster (the AWS resource it represents): "
                             "forced, that is left behind")
    assert f.to_dict()["infrastructure"] == "the AWS resource it represents"


def test_a_finalizer_that_guards_nothing_outside_says_none():
    keda = obj(custom_type("scaledobjects", "keda.sh", "ScaledObject"), "web", "shop",
               finalizers=("finalizer.keda.sh",), deleting_for=DELETING)
    [f] = explain_object(keda, facts(keda, extra_types=(keda.type,))).findings
    assert f.family == "keda" and f.infrastructure == "" and f.to_dict()["infrastructure"] is None
    assert not f.risk.startswith("it guards infrastructure")


def test_an_ec2_nodeclass_is_held_by_the_nodeclaims_that_use_it():
    nodeclass_type = ResourceType("karpenter.k8s.aws", "v1", "ec2nodeclasses", "EC2NodeClass", False)
    nodeclass = obj(nodeclass_type, "default", finalizers=("karpenter.k8s.aws/termination",), deleting_for=DELETING)
    claim = obj(NODECLAIM, "default-x7k2p", spec={"nodeClassRef": {"group": "karpenter.k8s.aws",
                                                                    "kind": "EC2NodeClass", "name": "default"}})
    other = obj(NODECLAIM, "gpu-9f3sd", spec={"nodeClassRef": {"name": "gpu"}})
    [f] = explain_object(nodeclass, facts(nodeclass, claim, other, extra_types=(nodeclass_type, NODECLAIM))).findings
    assert f.family == "karpenter-aws-nodeclass" and f.verdict == Verdict.HOLDING
    assert f.condition.startswith("1 still uses it (Karpenter waits for it to terminate): NodeClaim default-x7k2p")
    assert f.infrastructure.startswith("the IAM instance profiles and EC2 launch templates")


def test_a_gateway_class_is_held_by_its_gateways_in_any_namespace():
    gateway_class_type = ResourceType("gateway.networking.k8s.io", "v1", "gatewayclasses", "GatewayClass", False)
    gateway_type = ResourceType("gateway.networking.k8s.io", "v1", "gateways", "Gateway", True)
    gc = obj(gateway_class_type, "envoy", finalizers=("gateway-exists-finalizer.gateway.networking.k8s.io",),
             deleting_for=DELETING)
    gw = obj(gateway_type, "public", "edge", spec={"gatewayClassName": "envoy"})
    [f] = explain_object(gc, facts(gc, gw, extra_types=(gateway_class_type, gateway_type))).findings
    assert f.family == "gateway-api" and f.verdict == Verdict.HOLDING
    assert f.condition == "1 still uses it: Gateway edge/public" and f.infrastructure == ""


# Issue 44, item 3: a controller that may run outside the cluster (Karpenter under EKS Auto Mode or AKS node
# auto-provisioning): no Pod of it in the cluster is not "not installed".
EKS_NODECLASS = ResourceType("eks.amazonaws.com", "v1", "nodeclasses", "NodeClass", False)


def stranded_nodeclaim():
    return obj(NODECLAIM, "default-x7k2p", finalizers=("karpenter.sh/termination",), deleting_for=DELETING)


def test_a_nodeclaim_without_karpenter_and_without_a_managed_sign_is_orphaned_saying_it_looked():
    claim = stranded_nodeclaim()
    [f] = explain_object(claim, facts(claim, extra_types=(NODECLAIM,))).findings
    assert f.family == "karpenter" and f.verdict == Verdict.ORPHANED
    [line] = [e for e in f.evidence if e.startswith("no sign that it runs outside the cluster: ")]
    assert "EKS Auto Mode, where AWS runs Karpenter outside the cluster (no API group eks.amazonaws.com)" in line
    assert "(no node labelled kubernetes.azure.com/cluster)" in line


def test_under_eks_auto_mode_a_nodeclaim_without_karpenter_in_the_cluster_is_unknown_not_orphaned():
    claim = stranded_nodeclaim()
    [f] = explain_object(claim, facts(claim, extra_types=(NODECLAIM, EKS_NODECLASS))).findings
    assert f.family == "karpenter" and f.verdict == Verdict.UNKNOWN and f.remove_command is None
    assert f.condition == (
        "no Karpenter runs in the cluster, but it may run outside it, which kfin cannot see: EKS Auto Mode, where AWS "
        "runs Karpenter outside the cluster: the cluster serves the API group eks.amazonaws.com (the Amazon EKS user "
        "guide, Create a Node Class: Auto Mode's NodeClass is eks.amazonaws.com/v1)")
    assert f.fix.startswith("check whether Karpenter runs outside the cluster (EKS Auto Mode, where AWS runs Karpenter "
                            "outside the cluster)")


def test_on_aks_a_nodeclaim_without_karpenter_in_the_cluster_is_unknown_not_orphaned():
    claim = stranded_nodeclaim()
    aks = obj("node", "aks-nodepool1-12345678-vmss000000", labels={"kubernetes.azure.com/cluster": "MC_rg_aks"})
    [f] = explain_object(claim, facts(claim, aks, extra_types=(NODECLAIM,))).findings
    assert f.verdict == Verdict.UNKNOWN
    assert "Node aks-nodepool1-12345678-vmss000000 is labelled kubernetes.azure.com/cluster" in f.condition


# Issue 44, item 4: blockers that are not finalizers. Cluster API's delete hooks are annotations
# (<prefix>/<hook-name>: <owner>) the Machine controller waits on before the drain and before deleting the
# infrastructure; each is named with its owner, as what holds the Machine.
MACHINE = ResourceType("cluster.x-k8s.io", "v1beta2", "machines", "Machine", True)


def test_a_machine_is_held_by_its_delete_hooks_each_named_with_its_owner():
    machine = obj(MACHINE, "worker-a1", "fleet", finalizers=("machine.cluster.x-k8s.io",), deleting_for=DELETING,
                  spec={"clusterName": "prod"})
    machine.meta["annotations"] = {
        "pre-drain.delete.hook.machine.cluster.x-k8s.io/migrate-storage": "storage-operator",
        "pre-terminate.delete.hook.machine.cluster.x-k8s.io/backup": "",
        "cluster.x-k8s.io/cloned-from-name": "workers"}
    [f] = explain_object(machine, facts(machine, extra_types=(MACHINE,))).findings
    assert f.family == "cluster-api" and f.verdict == Verdict.HOLDING
    assert f.condition == (
        "2 hold the Machine's deletion (its drain, then its infrastructure's) until their owner removes them: "
        "pre-drain delete hook migrate-storage (owned by storage-operator); pre-terminate delete hook backup (owned "
        "by an owner the annotation does not name)")
    assert f.fix.startswith("let storage-operator finish its pre-drain work and remove the annotation "
                            "pre-drain.delete.hook.machine.cluster.x-k8s.io/migrate-storage")
    assert [link.actor for link in f.links] == [
        "pre-drain delete hook migrate-storage (owned by storage-operator)",
        "pre-terminate delete hook backup (owned by an owner the annotation does not name)"]


# Issue 44, item 4: Crossplane's Usage. A Usage composed by a composite (labelled crossplane.io/composite) is
# deleted only after the resource that uses (spec.by) is gone: that resource holds it.
PROTECTION_USAGE = ResourceType("protection.crossplane.io", "v1beta1", "usages", "Usage", True)
APP = ResourceType("example.org", "v1", "apps", "App", True)


def usage(composed: bool):
    return obj(PROTECTION_USAGE, "db-used-by-web", "shop", finalizers=("usage.apiextensions.crossplane.io",),
               deleting_for=DELETING, labels={"crossplane.io/composite": "shop-xyz"} if composed else None,
               spec={"of": {"apiVersion": "example.org/v1", "kind": "Database", "resourceRef": {"name": "db"}},
                     "by": {"apiVersion": "example.org/v1", "kind": "App", "resourceRef": {"name": "web"}}})


def test_a_composed_usage_is_held_by_the_resource_that_still_uses():
    u, web = usage(composed=True), obj(APP, "web", "shop")
    [f] = explain_object(u, facts(u, web, extra_types=(PROTECTION_USAGE, APP))).findings
    assert f.family == "crossplane-usage" and f.verdict == Verdict.HOLDING
    assert f.condition == ("1 still uses what the Usage protects (Crossplane deletes the Usage only after it): "
                           "App shop/web")
    assert [link.target.ref for link in f.links if link.target is not None] == [web.ref]


def test_a_usage_not_composed_or_whose_user_is_gone_is_not_held():
    lone, web = usage(composed=False), obj(APP, "web", "shop")
    [f] = explain_object(lone, facts(lone, web, extra_types=(PROTECTION_USAGE, APP))).findings
    assert f.family == "crossplane-usage" and f.verdict != Verdict.HOLDING  # Crossplane does not wait on it then
    gone = usage(composed=True)
    [f] = explain_object(gone, facts(gone, extra_types=(PROTECTION_USAGE, APP))).findings
    assert f.verdict != Verdict.HOLDING
