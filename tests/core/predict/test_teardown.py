"""A teardown of many objects (kfin/core/predict/teardown.py, manifests.py, helm.py): kubectl's order of the manifests,
Helm's uninstall order and release records, and what each step does to the next."""

import base64
import gzip
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import msgspec
import pytest

from kfin.commands.preflight import _uninstall
from kfin.core.predict import helm
from kfin.core.predict import manifests
from kfin.core.predict.guard import Guard
from kfin.core.predict.manifests import Manifest
from kfin.core.predict.teardown import from_manifests, from_release, of_deletion, preflight_of
from kfin.errors import ExitCode, UsageError
from kfin.render.teardown import teardown_dot, teardown_report
from kfin.render.terminal import Console
from tests.runner import kfin
from tests.values import custom_type, facts, obj
from tests.paths import PROJECT

EXAMPLE = PROJECT / "examples" / "stuck-cluster.json"


def doc(kind: str, name: str, api_version: str = "v1", namespace: str = "app", **more) -> dict:
    meta = {"name": name, "namespace": namespace} if namespace else {"name": name}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **more}


def as_manifest(o: dict, source: str = "-") -> Manifest:
    m = o["metadata"]
    return Manifest(o["apiVersion"], o["kind"], m["name"], m.get("namespace", ""), source, o)


# ----- kubectl's order -------------------------------------------------------------------------------------
def test_a_directory_is_read_in_lexical_order_its_subdirectories_only_with_R(tmp_path):
    (tmp_path / "b.yaml").write_text("kind: ConfigMap\napiVersion: v1\nmetadata: {name: b}\n")
    (tmp_path / "a.json").write_text(json.dumps(doc("ConfigMap", "a")))
    (tmp_path / "notes.txt").write_text("not a manifest")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "z.yml").write_text("kind: ConfigMap\napiVersion: v1\nmetadata: {name: nested}\n")
    names = [m.name for m in manifests.read([str(tmp_path)])]
    assert names == ["a", "b"]  # .txt skipped, subdirectory not walked
    # filepath.Walk: entries lexically, "a" (the directory) before "a.json"
    assert [m.name for m in manifests.read([str(tmp_path)], recursive=True)] == ["nested", "a", "b"]
    # a file named explicitly is read whatever its extension; -f in the order given
    (tmp_path / "extra.txt").write_text("kind: Secret\napiVersion: v1\nmetadata: {name: s}\n")
    both = manifests.read([str(tmp_path / "extra.txt"), str(tmp_path / "b.yaml")])
    assert [(m.kind, m.name) for m in both] == [("Secret", "s"), ("ConfigMap", "b")]


def test_documents_lists_and_json_arrays_are_flattened_in_order():
    text = "\n---\n".join([
        "kind: ConfigMap\napiVersion: v1\nmetadata: {name: one}",
        "",  # an empty document
        json.dumps({"kind": "List", "apiVersion": "v1", "items": [doc("Secret", "two"), doc("Secret", "three")]}),
        "kind: ServiceList\napiVersion: v1\nitems:\n- {kind: Service, apiVersion: v1, metadata: {name: four}}",
    ])
    assert [m.name for m in manifests.read(["-"], stdin_text=text)] == ["one", "two", "three", "four"]
    assert [m.name for m in manifests.parse(json.dumps([doc("Secret", "x"), doc("Secret", "y")]), "-")] == ["x", "y"]


@pytest.mark.parametrize("text", ["kind: [", "- 1\n- 2", "kind: ConfigMap\napiVersion: v1\nmetadata: {}"])
def test_what_is_not_a_manifest_is_one_usage_error(text):
    with pytest.raises(UsageError):
        manifests.parse(text, "x.yaml")


def test_a_missing_path_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        manifests.read([str(tmp_path / "nope")])


# ----- Helm ------------------------------------------------------------------------------------------------
def test_helm_3_deletes_webhook_configurations_last_helm_4_first():
    objs = [as_manifest(doc(k, n, namespace="")) for k, n in [
        ("ValidatingWebhookConfiguration", "v"), ("Widget", "w"), ("Deployment", "op"), ("Service", "hook"),
        ("MutatingWebhookConfiguration", "m"), ("Deployment", "second"), ("CustomResourceDefinition", "c")]]
    three = [m.name for m in helm.uninstall_order(objs, 3)]
    four = [m.name for m in helm.uninstall_order(objs, 4)]
    # unknown kinds last, alphabetically by kind; a kind's objects in manifest order (sort.SliceStable)
    assert three == ["hook", "op", "second", "c", "m", "v", "w"]
    assert four == ["v", "m", "hook", "op", "second", "c", "w"]
    assert helm.batches(helm.uninstall_order(objs, 4)) == [1, 2, 3, 4, 4, 5, 6]


def test_a_release_record_decodes_as_helm_writes_it():
    record = {"name": "r", "namespace": "app", "version": 3, "info": {"status": "deployed"},
              "manifest": "---\n# Source: c/templates/cm.yaml\n" + json.dumps(doc("ConfigMap", "cm")),
              "hooks": [{"name": "pre", "kind": "Job", "events": ["pre-delete"]}],
              "chart": {"files": [{"name": "crds/widgets.yaml"}, {"name": "README.md"}]}}
    # as Go writes it: gzip (level 9, magic 1f 8b 08), then base64.StdEncoding
    stored = base64.b64encode(gzip.compress(json.dumps(record).encode(), 9)).decode()
    typed = msgspec.convert(record, helm.Record)  # the fields kfin reads
    assert helm.decode(stored) == typed == helm.decode(helm.encode(record))
    assert helm.decode(base64.b64encode(json.dumps(record).encode())) == typed  # Helm 2-era records: no gzip
    release = helm.release_of(typed, "app")
    assert (release.name, release.version, [m.name for m in release.manifests]) == ("r", 3, ["cm"])
    assert release.chart_crds == ["crds/widgets.yaml"]
    with pytest.raises(UsageError):
        helm.decode("not base64 at all!")


def test_kept_objects_are_left_out_and_hooks_named():
    keep = doc("ConfigMap", "kept")
    keep["metadata"]["annotations"] = {"helm.sh/resource-policy": " Keep "}
    odd = doc("ConfigMap", "odd")  # any other value: filterManifestsToKeep drops it from both lists
    odd["metadata"]["annotations"] = {"helm.sh/resource-policy": "retain"}
    release = helm.Release("r", "app", 1, "deployed",
                           [as_manifest(keep), as_manifest(doc("ConfigMap", "gone")), as_manifest(odd)],
                           [{"name": "pre", "kind": "Job", "events": ["pre-delete"], "path": "x"},
                            {"name": "install", "kind": "Job", "events": ["post-install"], "path": "y"}])
    result = from_release(facts(), release, 3, "helm uninstall r -n app")
    assert [d.manifest.name for d in result.steps] == ["gone"]
    assert [m.name for m in result.kept] == ["kept", "odd"]
    assert [h["name"] for h in result.hooks] == ["pre"]
    assert result.steps[0].obj is None  # not in the cluster: said so


# ----- each step's effect on the next ----------------------------------------------------------------------
def webhook_set():
    """A webhook failing closed on DELETE of ConfigMaps, healthy now (its Service has a ready endpoint)."""
    hook = {"name": "check.example.com", "failurePolicy": "Fail",
            "rules": [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "clientConfig": {"service": {"namespace": "app", "name": "checker"}}}
    config = obj("validatingwebhookconfigurations.admissionregistration.k8s.io", "checker", webhooks=[hook])
    service = obj("svc", "checker", "app")
    endpoints = obj("endpointslices.discovery.k8s.io", "checker-1", "app",
                    labels={"kubernetes.io/service-name": "checker"}, endpoints=[{"conditions": {"ready": True}}])
    cm = obj("cm", "settings", "app")
    return facts(config, service, endpoints, cm), {
        "service": as_manifest(doc("Service", "checker")),
        "cm": as_manifest(doc("ConfigMap", "settings")),
        "config": as_manifest(doc("ValidatingWebhookConfiguration", "checker", "admissionregistration.k8s.io/v1", "")),
    }


def test_a_webhooks_service_deleted_first_makes_it_reject_the_deletes_after():
    f, m = webhook_set()
    result = from_manifests(f, [m["service"], m["cm"], m["config"]], "app", "kubectl delete -f x.yaml")
    [rejected] = result.steps[1].rejected
    assert "fails closed: its Service app/checker is deleted at step 1" in rejected.reason
    assert result.clean is False
    assert result.steps[2].rejected == []  # the configuration itself: not matched by its own rules
    assert result.plan[0].actions[0].command == "kubectl delete validatingwebhookconfiguration checker"
    # the configuration, in x.yaml, is deleted by the step before: kubectl passes over it rather than fail NotFound
    assert result.plan[-1].actions[0].command == "kubectl delete -f x.yaml --ignore-not-found"


def test_the_webhook_configuration_first_or_helm_4_order_rejects_nothing():
    f, m = webhook_set()
    assert from_manifests(f, [m["config"], m["service"], m["cm"]], "app", "kubectl delete -f x").clean
    release = helm.Release("r", "app", 1, "deployed", [m["service"], m["cm"], m["config"]])
    assert from_release(f, release, 4, "helm uninstall r").clean  # webhook configurations first
    three = from_release(f, release, 3, "helm uninstall r")  # Service, ConfigMap, then the configuration
    assert [d.manifest.kind for d in three.steps] == ["Service", "ConfigMap", "ValidatingWebhookConfiguration"]
    assert three.steps[1].rejected and not three.clean


# ----- the command's bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [["-f", "/nonexistent/dir"], ["-f", "-", "deploy", "x"], ["helm"],
                                  ["helm", "r", "-f", "x.yaml"], ["deploy", "x", "--helm", "3"],
                                  ["deploy", "x", "-o", "dot"], ["deploy", "x", "-o", "svg"]])
def test_bad_teardown_input_is_one_error_line_and_exit_2(args, tmp_path):
    result = kfin("preflight", *args, "--kubeconfig", str(tmp_path / "none"))
    assert result.code == ExitCode.USAGE, result
    assert result.stderr.startswith("error:") and len(result.stderr.strip().splitlines()) == 1, result.stderr


# ----- an operator deleted before its custom resources -------------------------------------------------------
def operator_release(ready: bool = True):
    """An operator (Deployment, its ReplicaSet and Pod, running as ServiceAccount operator, granted update on
    Widgets), its CRD and a Widget with its finalizer; and the release's manifests."""
    widgets = custom_type()
    deploy = obj("deploy.apps", "op", "app", spec={"template": {"spec": {"serviceAccountName": "operator"}}})
    rs = obj("rs.apps", "op-1", "app", owners=(deploy,))
    ready_status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    pod = obj("pods", "op-1-x", "app", owners=(rs,), spec={"serviceAccountName": "operator", "nodeName": "n1"},
              status=ready_status)
    role = obj("roles.rbac.authorization.k8s.io", "op", "app",
               rules=[{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["update"]}])
    binding = obj("rolebindings.rbac.authorization.k8s.io", "op", "app",
                  roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "op"},
                  subjects=[{"kind": "ServiceAccount", "name": "operator", "namespace": "app"}])
    crd = obj("crd.apiextensions.k8s.io", "widgets.example.com",
              spec={"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"}})
    widget = obj(widgets, "w1", "app", finalizers=("example.com/cleanup",))
    f = facts(deploy, rs, pod, role, binding, crd, widget, extra_types=(widgets,))
    files = [as_manifest(doc("Deployment", "op", "apps/v1")),
             as_manifest(doc("CustomResourceDefinition", "widgets.example.com", "apiextensions.k8s.io/v1", "")),
             as_manifest(doc("Widget", "w1", "example.com/v1"))]
    return f, files


def test_an_operator_deleted_first_strands_its_custom_resources_a_race_while_it_runs():
    f, files = operator_release()
    result = from_manifests(f, files, "app", "kubectl delete -f op/")
    [stranded] = [s for s in result.steps[1].stuck if s.obj.name == "w1"]
    assert (stranded.verdict, stranded.certain) == ("ORPHANED", False)
    assert "Deployment app/op is deleted at step 1" in stranded.reason and "race" in stranded.reason
    assert result.steps[2].note == "already deleted with CustomResourceDefinition/widgets.example.com at step 2"
    assert result.plan[0].actions[0].command == "kubectl delete widgets.example.com w1 -n app --wait --timeout=10m"
    # the custom resource first in the files: still a race, kubectl does not wait for it before the operator
    first = from_manifests(f, [files[2], files[0], files[1]], "app", "kubectl delete -f op/")
    [racing] = first.steps[0].stuck
    assert not racing.certain and "deleted at step 2, moments later" in racing.reason
    # the CRD finds it deleted already (said once, at step 1), and waits for it
    assert [(s.obj.name, s.verdict) for s in first.steps[2].stuck] == [("widgets.example.com", "HOLDING")]
    # the plan's order: the custom resource deleted and gone (--wait) first, then the teardown finds nothing to race
    after = facts(*[o for o in f.everything(None) if o.name != "w1"], extra_types=(custom_type(),))
    assert from_manifests(after, files, "app", "kubectl delete -f op/").clean


def test_with_cascade_orphan_the_operators_pods_keep_running_and_strand_nothing():
    f, files = operator_release()
    result = from_manifests(f, files, "app", "kubectl delete -f op/ --cascade=orphan", cascade="orphan")
    assert result.steps[0].cascade == [] and result.clean


def test_an_operator_not_running_now_is_said_so_whatever_the_order():
    f, files = operator_release(ready=False)
    result = from_manifests(f, [files[2], files[0], files[1]], "app", "kubectl delete -f op/")
    [stuck] = [s for s in result.steps[0].stuck if s.obj.name == "w1"]
    assert stuck.verdict == "STALLED" and stuck.certain


def test_a_namespace_in_the_manifests_deletes_its_content_pods_first_and_the_steps_after_find_it_deleted():
    f, files = operator_release()
    ns = as_manifest(doc("Namespace", "app", namespace=""))
    result = from_manifests(f, [ns, *files], "app", "kubectl delete -f op/")
    kinds = [o.type.kind for o in result.steps[0].cascade]
    assert kinds[0] == "Pod" and "Widget" in kinds  # the namespace controller's order: Pods first
    assert [d.note for d in result.steps[1:]] == [
        "already deleted with Namespace/app at step 1", "", "already deleted with Namespace/app at step 1"]
    # the operator lives in the namespace: its Widget is ORPHANED by the namespace's own deletion (foresee's answer)
    [w1] = [s for s in result.steps[0].stuck if s.obj.name == "w1"]
    assert w1.verdict == "ORPHANED" and "lives in namespace app" in w1.reason


def test_the_operators_serviceaccount_role_or_binding_deleted_first_strands_them_for_certain():
    f, files = operator_release()
    sa = obj("sa", "operator", "app")
    role = next(o for o in f.everything(None) if o.type.resource == "roles")
    f = facts(*f.everything(None), sa, extra_types=(custom_type(),))
    for first, why in ((as_manifest(doc("ServiceAccount", "operator")), "ServiceAccount app/operator is deleted"),
                       (as_manifest(doc("Role", role.name, "rbac.authorization.k8s.io/v1")),
                        "right to update widgets (Role app/op) is deleted"),
                       (as_manifest(doc("RoleBinding", "op", "rbac.authorization.k8s.io/v1")),
                        "right to update widgets (Role app/op) is deleted")):
        result = from_manifests(f, [first, files[1], files[0]], "app", "kubectl delete -f op/")
        [stranded] = [s for s in result.steps[1].stuck if s.obj.name == "w1"]
        assert stranded.certain and why + " at step 1" in stranded.reason, stranded.reason


def test_a_crd_deleted_before_its_namespace_is_said_once_and_holds_the_namespace_too():
    widgets = custom_type()
    crd = obj("crd.apiextensions.k8s.io", "widgets.example.com",
              spec={"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"}})
    widget = obj(widgets, "w1", "app", finalizers=("example.com/gone-operator",))
    f = facts(crd, widget, extra_types=(widgets,))
    files = [as_manifest(doc("CustomResourceDefinition", "widgets.example.com", "apiextensions.k8s.io/v1", "")),
             as_manifest(doc("Namespace", "app", namespace=""))]
    result = from_manifests(f, files, "app", "kubectl delete -f x")
    assert [(s.obj.name, s.verdict) for s in result.steps[0].stuck] == [
        ("w1", "ORPHANED"), ("widgets.example.com", "HOLDING")]
    assert result.steps[1].cascade == []  # w1: deleted at step 1 already
    [held] = result.steps[1].stuck
    assert (held.obj.name, held.finalizer, held.reason) == ("app", "kubernetes", "it waits for its content to go: w1 left stuck")


def test_a_teardown_from_a_snapshot_through_the_command(tmp_path):
    """kfin preflight -f reads the snapshot as preflight does: the CRD's instance ORPHANED, the ConfigMap not found,
    --exit-code 1 (a definite finding wins over the discovery failure's 8)."""
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: databases.acme.io}\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: nothere, namespace: team-a}\n")
    result = kfin("preflight", "-f", str(manifest), "--from-snapshot", str(EXAMPLE), "-o", "json",
                  "--exit-code")
    assert result.code == ExitCode.FOUND, result.stderr
    report = json.loads(result.stdout)
    assert report["kind"] == "TeardownPreflight" and report["clean"] is False
    assert [(n["kind"], n["name"]) for n in report["notFound"]] == [("ConfigMap", "nothere")]
    [orders] = [s for s in report["steps"][0]["wouldBeStuck"] if s["object"]["kind"] == "Database"]
    assert (orders["object"]["name"], orders["verdict"]) == ("orders", "ORPHANED")
    assert report["plan"][-1]["command"] == f"kubectl delete -f {manifest}"


def test_each_delete_hook_is_said_what_it_would_have_to_do_drawn_from_the_model(capsys):
    """Issue 43: a delete hook is named "and what it would have to do": the safe order's steps before the
    uninstall, for what would be left stuck without them; a pre-delete hook can (the operator still runs), a
    post-delete one comes after the last DELETE; a teardown that leaves nothing stuck asks nothing of them."""
    f, files = operator_release()
    hooks = [{"name": "cleanup", "kind": "Job", "events": ["pre-delete"], "path": "x"},
             {"name": "after", "kind": "Job", "events": ["post-delete"], "path": "y"}]
    release = helm.Release("op", "app", 1, "deployed", files, hooks)
    result = from_release(f, release, 4, "helm uninstall op -n app")
    pre, post = (h["wouldHaveTo"] for h in result.hooks)
    assert pre == ("without it Widget w1, CustomResourceDefinition widgets.example.com would be left stuck or not "
                   "deleted: it would have to kubectl delete widgets.example.com w1 -n app --wait --timeout=10m "
                   "(first, while their controller still runs: it removes their finalizers before it goes)")
    assert post == ("it runs after the last DELETE, the teardown's controllers and webhook Services deleted by then: "
                    "the safe order's steps come before the uninstall: kubectl delete widgets.example.com w1 -n app "
                    "--wait --timeout=10m (first, while their controller still runs: it removes their finalizers "
                    "before it goes); without a pre-delete hook (or you) doing them, Widget w1, "
                    "CustomResourceDefinition widgets.example.com would be left stuck or not deleted")
    assert release.hooks == hooks  # the release as read stays as read
    teardown_report(Console.of_process(), result)
    shown = " ".join(capsys.readouterr().out.split())
    assert "Hook Job cleanup (pre-delete) runs before the first DELETE: kfin does not run it" in shown
    assert f"For nothing to be left stuck: {pre}." in shown
    # nothing stuck: nothing asked of them
    after = facts(*[o for o in f.everything(None) if o.name != "w1"], extra_types=(custom_type(),))
    clean = from_release(after, release, 4, "helm uninstall op -n app")
    assert [h["wouldHaveTo"] for h in clean.hooks] == ["nothing would be left stuck without it"] * 2


# ----- the picture: -o dot|svg|png ----------------------------------------------------------------------------
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed (.ci/run installs it)")


def graphviz_reads(dot: str) -> tuple[dict[str, str], list[tuple[str, str, str, str]]]:
    """Graphviz's own reading of the DOT (`dot -Tplain`): each node's label by name, each edge's (tail, head, label,
    style), a label's line breaks as newlines."""
    out = subprocess.run(["dot", "-Tplain"], input=dot, capture_output=True, text=True, timeout=60, check=True).stdout
    nodes, edges = {}, []
    for line in out.replace("\\\n", "").splitlines():  # a long line goes on after a backslash
        if line.startswith("node legend "):  # its label: an HTML table
            nodes["legend"] = line
            continue
        words = shlex.shlex(line, posix=True)
        words.whitespace_split, words.quotes = True, '"'
        parts = [p.replace("\\n", "\n") for p in words]
        if parts[0] == "node":
            nodes[parts[1]] = parts[6]
        elif parts[0] == "edge":
            points = int(parts[3])
            rest = parts[4 + 2 * points :]
            label = rest[0] if len(rest) == 5 else ""
            edges.append((parts[1], parts[2], label, rest[-2]))
    return nodes, edges


@needs_dot
def test_the_teardown_drawn_each_step_a_node_the_stranded_custom_resource_marked_an_edge_from_its_operator():
    f, files = operator_release()
    sa = obj("sa", "operator", "app")
    f = facts(*f.everything(None), sa, extra_types=(custom_type(),))
    account = as_manifest(doc("ServiceAccount", "operator"))
    for order, by, style in (([files[0], files[1], files[2]], "step 1", "dashed"),  # the operator first: a race
                             ([account, files[2], files[1]], "step 1", "solid")):  # its ServiceAccount: certain
        result = from_manifests(f, order, "app", "kubectl delete -f op/")
        nodes, edges = graphviz_reads(teardown_dot(result, {"title": "teardown: kubectl delete -f op/"}))
        assert [n for n in nodes if n.startswith("step ")] == ["step 1", "step 2", "step 3"]
        assert nodes["step 1"].startswith("step 1\n" + order[0].kind)
        [w1] = [n for n, text in nodes.items() if "Widget/app/w1" in text]
        mark = "ORPHANED" if style == "solid" else "ORPHANED (race)"
        assert nodes[w1].endswith(f"\n{mark}\nexample.com/cleanup"), nodes[w1]
        [strands] = [e for e in edges if e[:2] == (by, w1) and e[2]]  # the reason on it
        assert "is deleted at step 1" in strands[2].replace("\n", " ") and strands[3] == style, strands
        assert ("step 1", "step 2", "", "solid") in edges  # the tool's order
        # the CRD waits for the stranded Widget
        crd = next(f"step {d.number}" for d in result.steps if d.manifest.kind == "CustomResourceDefinition")
        assert "HOLDING" in nodes[crd] and (crd, w1, "", "dotted") in edges
        assert "<B>safe order</B>" in nodes["legend"]  # the legend: what is drawn, then the safe order


def test_the_picture_escapes_what_the_cluster_and_the_manifests_say(tmp_path):
    hostile = 'x"\\y\x1b[2J\r\x07'
    result = from_manifests(facts(), [as_manifest(doc("ConfigMap", hostile))], "app", f"kubectl delete -f {hostile}")
    dot = teardown_dot(result, {"title": f"teardown: {result.command}", "context": hostile})
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", dot)
    assert 'ConfigMap/app/x\\"\\\\y\\\\x1b[2J\\\\x0d\\\\x07\\n' in dot and 'style="rounded,dashed"' in dot  # not found
    assert "kubectl delete -f x&quot;\\y\\x1b[2J\\x0d\\x07</TD>" in dot  # the safe order, in the legend's HTML
    if shutil.which("dot"):
        nodes, _ = graphviz_reads(dot)
        assert nodes["step 1"] == 'step 1\nConfigMap/app/x"\\y\\x1b[2J\\x0d\\x07\nnot found: nothing to delete'


@needs_dot
def test_kept_objects_the_charts_crds_and_delete_hooks_are_drawn_apart_from_the_deletes():
    """What Helm's uninstall does not delete (a kept object, the chart's crds/) in a box of its own, and its delete
    hooks, not run by kfin, before the first DELETE or after the last."""
    keep = doc("ConfigMap", "kept")
    keep["metadata"]["annotations"] = {"helm.sh/resource-policy": "keep"}
    release = helm.Release("r", "app", 1, "deployed", [as_manifest(keep), as_manifest(doc("ConfigMap", "gone")),
                                                         as_manifest(doc("Secret", "also-gone"))],
                           [{"name": "pre", "kind": "Job", "events": ["pre-delete"], "path": "x"},
                            {"name": "post", "kind": "Job", "events": ["post-delete"], "path": "y"}],
                           chart_crds=["crds/widgets.yaml"])
    dot = teardown_dot(from_release(facts(), release, 3, "helm uninstall r -n app"), {"title": "teardown"})
    nodes, edges = graphviz_reads(dot)
    assert nodes["kept ConfigMap/app/kept"] == "kept (helm.sh/resource-policy: keep)\nConfigMap/app/kept"
    assert nodes["crds/ crds/widgets.yaml"] == "never deleted (the chart's crds/)\ncrds/widgets.yaml"
    assert nodes["hook Job/pre"] == "pre-delete hook\nJob/pre\nnot run by kfin"
    assert ("hook Job/pre", "step 1", "", "dotted") in edges and ("step 2", "hook Job/post", "", "dotted") in edges
    assert "subgraph cluster_not_deleted {" in dot and "not deleted (kept, crds/)" in nodes["legend"]
    assert "a delete hook runs" in nodes["legend"]


def test_a_teardown_drawn_through_the_command_svg_and_png_or_the_package_named(tmp_path, monkeypatch):
    manifest = tmp_path / "m.yaml"
    manifest.write_text("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
                        "metadata: {name: databases.acme.io}\n")
    args = ["preflight", "-f", str(manifest), "--from-snapshot", str(EXAMPLE)]
    dot = kfin(*args, "-o", "dot")
    assert dot.code == ExitCode.PARTIAL and dot.stdout.startswith("digraph teardown {"), dot
    assert f'label="teardown: kubectl delete -f {manifest}, context prod-eu, observed' in dot.stdout
    # the safe order, last in the legend: an instruction in its words, then the teardown's command as it is pasted
    plan = dot.stdout[dot.stdout.index("<B>safe order</B>") :]
    assert 'BALIGN="LEFT">install what removes acme.io/database-cleanup,' in plan
    assert f'>2.</TD><TD ALIGN="LEFT" BALIGN="LEFT">kubectl delete -f {manifest}</TD>' in plan
    if shutil.which("dot"):
        nodes, edges = graphviz_reads(dot.stdout)
        [orders] = [n for n, text in nodes.items() if "Database.acme.io/team-a/orders" in text]
        assert "ORPHANED" in nodes[orders] and nodes[orders].startswith("deleted with step 1")
        assert any(a == "step 1" and b == orders and "acme.io/database-cleanup" in label.replace("\n", "")
                   for a, b, label, _ in edges), edges
        svg = kfin(*args, "-o", "svg")
        assert svg.code == ExitCode.PARTIAL and "<svg" in svg.stdout[:400], svg.stderr
        root = ElementTree.fromstring(svg.stdout)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        texts = {t.text for t in root.iter("{http://www.w3.org/2000/svg}text")}
        assert {"step 1", "legend", "safe order"} <= texts
        png = subprocess.run([sys.executable, "-m", "kfin", *args, "-o", "png"], capture_output=True, timeout=60,
                             cwd=EXAMPLE.parents[1])
        assert png.stdout.startswith(b"\x89PNG\r\n\x1a\n"), png.stderr
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot here
    missing = kfin(*args, "-o", "svg")
    assert missing.code == ExitCode.USAGE and missing.stdout == ""
    assert "Graphviz's dot, which is not installed (Debian and Ubuntu: apt install graphviz" in missing.stderr


# ----- one DELETE that deletes many objects (kfin guard's model of a Namespace's or a CRD's deletion) -----------
def test_a_namespaces_deletion_is_the_teardown_of_its_content_in_the_words_of_preflight_f():
    f, files = operator_release()
    [namespace] = [o for o in f.everything(None) if o.type.resource == "namespaces" and o.name == "app"]
    result = of_deletion(f, namespace)
    kinds = [o.type.kind for o in result.steps[0].cascade]
    assert kinds[0] == "Pod" and "Widget" in kinds  # the namespace controller's order: Pods first
    [w1] = [s for s in result.stuck if s.obj.name == "w1"]
    assert (w1.verdict, w1.certain) == ("ORPHANED", True) and "lives in namespace app" in w1.reason
    [held] = [s for s in result.stuck if s.obj is namespace]
    assert (held.finalizer, held.reason) == ("kubernetes", "it waits for its content to go: w1 left stuck")
    assert result.command == "kubectl delete namespaces app"
    # the same situation through kubectl delete -f of a manifest holding the Namespace: the same words
    same = from_manifests(f, [as_manifest(doc("Namespace", "app", namespace=""))], "app", "kubectl delete -f ns.yaml")
    assert [(s.obj.name, s.finalizer, s.reason, s.verdict) for s in same.stuck] == [
        (s.obj.name, s.finalizer, s.reason, s.verdict) for s in result.stuck]


def test_a_crds_deletion_deletes_its_custom_resources_and_waits_for_those_that_stick():
    widgets = custom_type()
    crd = obj("crd.apiextensions.k8s.io", "widgets.example.com",
              spec={"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"}})
    stuck = obj(widgets, "w1", "app", finalizers=("example.com/gone-operator",))
    free = obj(widgets, "w2", "app")
    result = of_deletion(facts(crd, stuck, free, extra_types=(widgets,)), crd)
    assert [o.name for o in result.steps[0].cascade] == ["w1", "w2"]
    assert [(s.obj.name, s.verdict) for s in result.stuck] == [("w1", "ORPHANED"), ("widgets.example.com", "HOLDING")]
    assert result.stuck[1].finalizer == "customresourcecleanup.apiextensions.k8s.io"
    assert result.stuck[1].reason == "it waits for its custom resources to go: w1 left stuck"


def namespace_with_its_webhook(selector: dict | None):
    """Namespace app holding a webhook's Service (with a selector: its Pods are its endpoints) and a ConfigMap the
    webhook, failing closed, checks on DELETE; its configuration is not in a namespace."""
    hook = {"name": "check.example.com", "failurePolicy": "Fail",
            "rules": [{"operations": ["DELETE", "UPDATE"], "apiGroups": ["", "example.com"], "apiVersions": ["*"],
                       "resources": ["configmaps", "widgets"]}],
            "clientConfig": {"service": {"namespace": "app", "name": "checker"}}}
    config = obj("validatingwebhookconfigurations.admissionregistration.k8s.io", "checker", webhooks=[hook])
    service = obj("svc", "checker", "app", spec={"selector": selector} if selector else {})
    backend = obj("pods", "checker-1", "app", labels={"app": "checker"}, spec={"nodeName": "n1"},
                  status={"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
    pod = {"targetRef": {"kind": "Pod", "namespace": "app", "name": "checker-1"}} if selector else {}
    endpoints = obj("endpointslices.discovery.k8s.io", "checker-1", "app",
                    labels={"kubernetes.io/service-name": "checker"},
                    endpoints=[{"conditions": {"ready": True}, **pod}])
    return [config, service, backend, endpoints, obj("cm", "settings", "app")]


def test_a_namespace_holding_a_webhooks_service_waits_for_good_for_what_the_webhook_checks():
    objects = namespace_with_its_webhook({"app": "checker"})
    f = facts(*objects)
    namespace = f.find("", "namespaces", "", "app", full=True)
    result = of_deletion(f, namespace)
    [blocked] = [s for s in result.stuck if s.obj is namespace and s.verdict == "BLOCKED"]
    assert blocked.certain and blocked.reason == (
        "webhook check.example.com of ValidatingWebhookConfiguration checker fails closed once its Service "
        "app/checker loses its Pods (the namespace's Pods go first): the namespace controller cannot delete "
        "ConfigMap settings")
    assert result.plan[0].actions[0].command == "kubectl delete validatingwebhookconfiguration checker"
    # without a selector its endpoints (not Pods of the namespace) stay until the Service goes, with the rest: a race
    race = of_deletion(facts(*namespace_with_its_webhook(None)), namespace)
    [racing] = [s for s in race.stuck if s.verdict == "BLOCKED"]
    assert not racing.certain and "(a race: those deleted before the Service go)" in racing.reason


def test_a_finalizer_removal_the_webhook_checks_is_rejected_for_good_once_its_service_went_with_the_namespace():
    widgets = custom_type()
    widget = obj(widgets, "w1", "app", finalizers=("example.com/cleanup",))
    # its operator runs elsewhere (namespace ops), allowed to update Widgets everywhere
    operator = obj("pods", "op-1", "ops", spec={"serviceAccountName": "operator", "nodeName": "n1"},
                   status={"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
    role = obj("clusterroles.rbac.authorization.k8s.io", "op",
               rules=[{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["update"]}])
    binding = obj("clusterrolebindings.rbac.authorization.k8s.io", "op",
                  roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "op"},
                  subjects=[{"kind": "ServiceAccount", "name": "operator", "namespace": "ops"}])
    f = facts(*namespace_with_its_webhook({"app": "checker"}), widget, operator, role, binding, extra_types=(widgets,))
    result = of_deletion(f, f.find("", "namespaces", "", "app", full=True))
    rejected = [s for s in result.stuck if s.obj.name == "w1" and s.verdict == "BLOCKED"]
    assert [s.reason for s in rejected] == [
        "webhook check.example.com of ValidatingWebhookConfiguration checker rejects the removal of "
        "example.com/cleanup: its Service is deleted with namespace app, its configuration stays"]


def test_preflight_of_a_crd_names_its_wait_in_the_words_of_the_guard_and_keeps_what_it_said():
    """kfin guard's pointer, `kfin preflight crd NAME`, gives the teardown model's answer too: the CRD waits for the
    custom resources that stick (named, as the guard and preflight -f say it), in JSON and on the table; what
    preflight said of the custom resource and its plan stay as they were."""
    args = ("preflight", "crd", "databases.acme.io", "--from-snapshot", str(EXAMPLE))
    report = json.loads(kfin(*args, "-o", "json").stdout)
    held = "it waits for its custom resources to go: orders left stuck"
    assert [(s["object"]["name"], s["finalizer"], s["verdict"], s["reason"]) for s in report["wouldBeStuck"]] == [
        ("orders", "acme.io/database-cleanup", "ORPHANED",
         "no controller of acme.io/database-cleanup runs or is installed: nothing will remove it"),
        ("databases.acme.io", "customresourcecleanup.apiextensions.k8s.io", "HOLDING", held)]
    assert [s["command"] for s in report["plan"]] == [
        None, "kubectl delete customresourcedefinitions.apiextensions.k8s.io databases.acme.io",
        "kfin wait customresourcedefinitions.apiextensions.k8s.io databases.acme.io --timeout 10m"]
    table = kfin(*args, "-n", "team-a").stdout
    assert "2 objects would be left Terminating:" in table and held in " ".join(table.split())


def test_preflight_of_a_namespace_says_all_the_guard_warns_of():
    """The guard's warnings end with `kfin preflight namespace X`: that answer names each object the guard names
    stuck, the namespace's wait, and a webhook whose Service goes with the namespace, in the same words."""
    f0, _ = operator_release()
    objects = [o for o in f0.everything(None) if o.type.resource != "namespaces"]
    f = facts(*objects, *namespace_with_its_webhook({"app": "checker"}), extra_types=(custom_type(),))
    namespace = f.find("", "namespaces", "", "app", full=True)
    request = {"uid": "1", "operation": "DELETE", "name": "app", "namespace": "app",
               "kind": {"group": "", "version": "v1", "kind": "Namespace"},
               "resource": {"group": "", "version": "v1", "resource": "namespaces"},
               "userInfo": {"username": "admin"}, "oldObject": namespace.raw}
    warnings = Guard(lambda: (f, "")).review(request).warnings
    assert warnings[0] == ("kfin: deleting namespace app leaves Widget w1 stuck (example.com/cleanup): its controller "
                           "is deleted with it; delete first: kubectl delete widgets.example.com w1 -n app")
    assert warnings[-1] == "kfin: the whole answer: kfin preflight namespace app"
    answer = preflight_of(f, namespace)
    said = {(s.obj.name, s.finalizer, s.reason) for s in answer.stuck}
    [w1] = [s for s in answer.stuck if s.obj.name == "w1"]  # foresee's words, as before
    assert (w1.finalizer, w1.verdict) == ("example.com/cleanup", "ORPHANED") and "lives in namespace app" in w1.reason
    head = "kfin: deleting namespace app stays stuck: "
    waits = [w.removeprefix(head) for w in warnings if w.startswith(head)]
    assert len(waits) == 2 and "it waits for its content to go: w1 left stuck" in waits
    for wait in waits:  # the guard's words, whole, or shortened ("…") to keep within kube-apiserver's 256 runes
        reason, _, step = wait.rpartition("; ") if "; kubectl" in wait else (wait, "", "")
        assert any(name == "app" and finalizer == "kubernetes" and (r == reason or r.startswith(reason[:-1]))
                   for name, finalizer, r in said), (reason, said)
        assert not step or step in [s.actions[0].command for s in answer.plan]
    # what preflight said before stays: the Widget first while its operator runs, then the namespace, followed
    commands = [s.actions[0].command for s in answer.plan]
    assert commands[0] == "kubectl delete widgets.example.com w1 -n app"
    assert "kubectl delete validatingwebhookconfiguration checker" in commands
    assert commands[-2:] == ["kubectl delete namespaces app", "kfin wait namespaces app --timeout 10m"]


def test_what_the_namespaces_deletion_strands_by_taking_its_controllers_rights_is_given_its_delete_first():
    """The operator runs elsewhere, its right to update Widgets comes from a Role and RoleBinding of the namespace
    being deleted: the teardown model strands the Widget (the binding goes with the namespace). The guard's warning
    and preflight's answer both say what to do first, the Widget's own DELETE (the guard said "delete first:" and
    nothing more)."""
    widgets = custom_type()
    widget = obj(widgets, "w1", "app", finalizers=("example.com/cleanup",))
    operator = obj("pods", "op-1", "ops", spec={"serviceAccountName": "operator", "nodeName": "n1"},
                   status={"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
    role = obj("roles.rbac.authorization.k8s.io", "op", "app",
               rules=[{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["update"]}])
    binding = obj("rolebindings.rbac.authorization.k8s.io", "op", "app",
                  roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "op"},
                  subjects=[{"kind": "ServiceAccount", "name": "operator", "namespace": "ops"}])
    f = facts(widget, operator, role, binding, extra_types=(widgets,))
    namespace = f.find("", "namespaces", "", "app", full=True)
    request = {"uid": "1", "operation": "DELETE", "name": "app", "kind": {"kind": "Namespace"},
               "resource": {"group": "", "version": "v1", "resource": "namespaces"},
               "userInfo": {"username": "admin"}, "oldObject": namespace.raw}
    warnings = Guard(lambda: (f, "")).review(request).warnings
    assert warnings[0].startswith("kfin: deleting namespace app leaves Widget w1 stuck (example.com/cleanup)")
    assert warnings[0].endswith("; delete first: kubectl delete widgets.example.com w1 -n app"), warnings
    # what goes with the namespace is the operator's right to update Widgets, not the operator: said as it is
    # (one DELETE has no steps to count: "with namespace app", never "at step 1")
    assert "its controller's right to update widgets (Role app/op) is deleted with namespace app" in warnings[0]
    assert "at step" not in warnings[0], warnings
    [w1] = [s for s in preflight_of(f, namespace).stuck if s.obj.name == "w1"]
    assert "right to update widgets (Role app/op) is deleted with namespace app" in w1.reason
    assert w1.to_dict()["step"] == "kubectl delete widgets.example.com w1 -n app"
    # a race (the operator may reconcile first), said so in preflight's JSON as in preflight -f's
    assert "a race it usually loses" in w1.reason and w1.to_dict()["certain"] is False


# ----- a bare --helm: Helm 4 assumed, said -------------------------------------------------------------------
def test_a_bare_helm_assumes_helm_4_and_says_so_on_stderr(tmp_path):
    """`helm get manifest R | kfin preflight -f - --helm`: the installed Helm is not known; kfin takes the current
    major version's order and says so, and whether Helm 3's would differ. --helm goes bare anywhere (before other
    options too); --helm 3 and --helm=4 still take their value."""
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: databases.acme.io}\n")
    for where in (["--helm", "-o", "json"], ["-o", "json", "--helm"]):
        result = kfin("preflight", "-f", str(manifest), "--from-snapshot", str(EXAMPLE), *where)
        assert json.loads(result.stdout)["tool"] == "helm 4 uninstall", result
        assert ("kfin assumes Helm 4's uninstall order (--helm 3 for Helm 3's); Helm 3's order would leave the "
                "same") in result.stderr.splitlines()
    for given, tool in (("3", "helm 3 uninstall"), ("4", "helm 4 uninstall")):
        result = kfin("preflight", "-f", str(manifest), "--from-snapshot", str(EXAMPLE), "--helm", given, "-o", "json")
        assert json.loads(result.stdout)["tool"] == tool and "assumes" not in result.stderr
    bad = kfin("preflight", "-f", str(manifest), "--from-snapshot", str(EXAMPLE), "--helm=5")
    assert bad.code == ExitCode.USAGE and bad.stderr == "error: --helm takes 3 or 4, or nothing (Helm 4)\n"


def test_when_helm_3s_order_would_differ_the_assumption_says_by_how_much(capsys):
    f, m = webhook_set()
    release = helm.Release("r", "app", 1, "deployed", [m["service"], m["cm"], m["config"]])
    assumed = _uninstall(Console.of_process(), f, release, None, "helm uninstall r", "background")
    assert assumed.tool == "helm 4 uninstall" and assumed.clean
    assert capsys.readouterr().err == ("kfin assumes Helm 4's uninstall order (--helm 3 for Helm 3's); Helm 3's order "
                                       "(webhook configurations last) would leave 1 stuck or rejected, not 0\n")


def test_a_verdict_that_is_not_certain_is_marked_with_why_a_race_or_a_rule_only_the_server_decides(capsys):
    """"(race)": its controller may still win (the teardown's races); "(may)": a policy kfin could not evaluate (it
    reads the object's data) may deny the namespace controller's DELETE: only the server's answer decides. Both used
    to be marked "(race)" by kfin preflight -f, and not at all by kfin preflight KIND NAME."""
    from kfin.render.preflight import preflight_report

    group = "admissionregistration.k8s.io"
    policy = obj(f"validatingadmissionpolicies.{group}", "keep-settings", spec={
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"],
                                                "resources": ["configmaps"]}]},
        "validations": [{"expression": "oldObject.data.keep != 'yes'", "message": "kept"}]})
    binding = obj(f"validatingadmissionpolicybindings.{group}", "keep-settings",
                  spec={"policyName": "keep-settings", "validationActions": ["Deny"]})
    f = facts(policy, binding, obj("configmaps", "settings", "app"))
    result = preflight_of(f, f.find("", "namespaces", "", "app", full=True))
    [may] = [s for s in result.stuck if "may deny" in s.reason]
    assert (may.certain, may.to_dict()["race"]) == (False, False)
    preflight_report(Console.of_process(), result)
    [row] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("-          Namespace  app")]
    assert " BLOCKED (may) " in row and "(race)" not in row
    # a teardown's race is still one: the operator deleted with the Widgets it finalizes
    f, files = operator_release()
    racing = [s for s in from_manifests(f, files, "app", "kubectl delete -f app/").stuck if not s.certain]
    assert racing and all(s.race and s.to_dict()["race"] is True for s in racing)
