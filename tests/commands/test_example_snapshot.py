"""The newcomer's first run: kfin stuck on the shipped example snapshot, right after installing."""

import json
from pathlib import Path

from kfin.errors import ExitCode
from tests.runner import kfin
from tests.paths import PROJECT

EXAMPLE = PROJECT / "examples" / "stuck-cluster.json"


def test_the_example_shows_each_classic_blocker():
    result = kfin("stuck", "--from-snapshot", str(EXAMPLE))
    assert result.code == ExitCode.PARTIAL  # the snapshot records that metrics.k8s.io could not be read
    assert "warning: discovery of metrics.k8s.io/v1beta1 failed" in result.stderr
    lines = result.stdout.splitlines()
    # issue 41: the five things to deal with lead, then the ten objects they hold
    assert lines[0] == "5 root causes hold the 10 stuck objects below:"
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["NAMESPACE", "KIND", "NAME"])
    first = lines[header + 1].split()
    assert first[:4] == ["shop", "PersistentVolumeClaim", "data-postgres-0", "3d"]  # oldest first
    text = result.stdout
    assert "pvc-protection: in use by Pod shop/postgres-0 (on node ip-10-0-1-17)" in text
    assert "pv-protection: still Bound to claim shop/data-postgres-0 (reclaim policy Delete)" in text
    # team-a: its Database, then the APIService that keeps the namespace controller from finishing
    assert ("namespace: 1 object remains (1 terminating); and discovery of metrics.k8s.io/v1beta1 fails"
            in " ".join(text.split()))
    assert "custom: acme.io/database-cleanup" in text
    assert "foregroundDeletion: waiting for 1 blocking dependent (ReplicaSet.apps/shop/web-6d4b9c)" in text


def test_the_example_narrows_like_a_live_cluster():
    names = kfin("stuck", "--from-snapshot", str(EXAMPLE), "-n", "team-a", "-o", "name").stdout.split()
    assert names == ["namespace/team-a", "database.acme.io/orders"]
    only = kfin("stuck", "--from-snapshot", str(EXAMPLE), "--kind", "db", "-o", "json")
    assert [i["name"] for i in json.loads(only.stdout)["items"]] == ["orders"]


def test_the_example_holds_no_secret_data_nor_container_specs():
    snapshot = json.loads(EXAMPLE.read_text())
    assert snapshot["kind"] == "Snapshot"
    for obj in snapshot["objects"]:
        assert "data" not in obj and "stringData" not in obj
        assert "containers" not in json.dumps(obj.get("spec", {}))


def test_a_live_namespace_is_quiet_no_red_verdict_no_risk():
    """Issue 29: `kfin explain ns shop` on an Active namespace showed a red HOLDING panel with "Risk if forced"
    for the finalizer every namespace carries."""
    result = kfin("explain", "ns", "shop", "--from-snapshot", str(EXAMPLE))
    # the namespace is not stuck, what is in it is: named, not "Nothing is stuck"
    assert result.stdout.splitlines()[0] == "Namespace/shop  not being deleted"
    assert result.stdout.splitlines()[1].startswith("6 objects in it are stuck: PersistentVolumeClaim/data-postgres-0,")
    assert "Nothing is stuck" not in result.stdout and "Its finalizers act only once it is deleted:" in result.stdout
    assert "HOLDING" not in result.stdout and "Risk if forced" not in result.stdout
    assert "What deleting it would leave stuck: kfin preflight namespace shop" in result.stdout
    as_json = json.loads(kfin("explain", "ns", "shop", "-o", "json", "--from-snapshot", str(EXAMPLE)).stdout)
    assert [f["finalizer"] for f in as_json["findings"]] == ["kubernetes"]  # the data is all still there


def test_a_graceful_deletion_panel_is_titled_by_its_family():
    result = kfin("explain", "pod", "web-6d4b9c-q8w4n", "-n", "shop", "--from-snapshot", str(EXAMPLE))
    assert result.stdout.splitlines()[1].startswith("╭─ graceful deletion (no finalizer)  WAITING ─")


def test_every_blocking_dependent_is_named():
    text = kfin("stuck", "-A", "--from-snapshot", str(EXAMPLE)).stdout
    assert "waiting for 2 blocking dependents (Pod/shop/web-6d4b9c-q8w4n, Pod/shop/web-6d4b9c-x2k9p)" in text


def test_the_graph_of_a_pod_shows_what_it_holds_and_the_pod_once():
    """Issue 29: `graph pod postgres-0` printed the Pod twice and left out the claim it holds."""
    lines = kfin("graph", "pod/postgres-0", "-n", "shop", "--from-snapshot", str(EXAMPLE)).stdout.splitlines()
    assert lines[0] == "graph of Pod/shop/postgres-0"
    assert sum(line.endswith("Pod/shop/postgres-0") for line in lines[1:]) == 1, lines
    assert any("(bound-claim) PersistentVolumeClaim/shop/data-postgres-0" in line for line in lines), lines
    assert lines[-1].endswith("waits for (used-by-pod) Pod/shop/postgres-0")


def test_an_unrelated_failing_group_is_a_warning_before_the_answer_not_exit_8():
    """Issue 29: the snapshot's unavailable metrics.k8s.io turned every exit into 8, so that
    `kfin graph ... -o dot > f && dot ...` stopped; and explain printed its warnings after the answer."""
    claim = kfin("explain", "pvc/data-postgres-0", "-n", "shop", "--from-snapshot", str(EXAMPLE))
    assert claim.code == ExitCode.OK, claim
    assert claim.stderr.startswith("warning: discovery of metrics.k8s.io/v1beta1 failed") and claim.stderr.rstrip(
        "\n").endswith("(unrelated to what was asked: the answer is complete)")
    as_json = json.loads(kfin("explain", "pvc/data-postgres-0", "-n", "shop", "-o", "json", "--from-snapshot",
                              str(EXAMPLE)).stdout)
    assert as_json["complete"] is True and as_json["failures"][0]["target"] == "metrics.k8s.io/v1beta1"
    namespace = json.loads(kfin("explain", "ns", "team-a", "-o", "json", "--from-snapshot", str(EXAMPLE)).stdout)
    assert namespace["complete"] is False
    drawn = kfin("graph", "pod/postgres-0", "-n", "shop", "-o", "dot", "--from-snapshot", str(EXAMPLE))
    assert drawn.code == ExitCode.OK and drawn.stdout.startswith("digraph")
    # where it can hide part of the answer, it still makes the result partial
    for command in (["explain", "ns", "team-a"], ["graph", "namespace", "shop"], ["stuck", "-A"],
                    ["preflight", "ns", "shop"]):
        result = kfin(*command, "--from-snapshot", str(EXAMPLE))
        assert result.code == ExitCode.PARTIAL, (command, result)
        assert "(unrelated" not in result.stderr


def test_explain_warns_before_its_answer(monkeypatch):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "kfin", "explain", "ns", "team-a", "--from-snapshot", str(EXAMPLE)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert done.stdout.startswith("warning: discovery of metrics.k8s.io/v1beta1 failed"), done.stdout[:200]


def test_dot_has_real_line_breaks_a_legend_and_marked_root_causes():
    """Issue 29: DOT labels showed a literal `\\n`; no legend, root causes not marked, edge directions unexplained."""
    import shutil
    import subprocess

    dot = kfin("graph", "namespace", "shop", "-o", "dot", "--from-snapshot", str(EXAMPLE)).stdout
    assert "\\\\n" not in dot  # an escaped backslash: Graphviz would print `\n`
    # issue 41: a long name breaks after a `/`; its verdict and age follow
    assert ('[label="PersistentVolumeClaim/shop/\\ndata-postgres-0\\nkubernetes.io/pvc-protection\\n'
            'HOLDING, Terminating for 3d"') in dot
    # the legend lists what the graph shows: waiting edges, not ownership ones (there are none here)
    assert "subgraph cluster_legend {" in dot and ">waits for<" in dot and ">owns<" not in dot
    root = next(line for line in dot.splitlines() if '"Node/ip-10-0-2-44' in line and "[label=" in line)
    assert "root cause" in root and "peripheries=2" in root
    if shutil.which("dot"):  # Graphviz itself reads it (installed by .ci/run)
        drawn = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True, timeout=60)
        assert drawn.returncode == 0 and "<svg" in drawn.stdout and "\\n" not in drawn.stdout.replace("\n", "")


def test_mermaid_marks_root_causes_and_warns_beyond_renderers_limits(monkeypatch):
    from kfin.render import graph

    shown = kfin("graph", "namespace", "shop", "-o", "mermaid", "--from-snapshot", str(EXAMPLE))
    assert "root cause" in shown.stdout and "classDef root" in shown.stdout and "Mermaid" not in shown.stderr
    monkeypatch.setattr(graph, "MERMAID_MAX_EDGES", 3)
    large = kfin("graph", "namespace", "shop", "-o", "mermaid", "--from-snapshot", str(EXAMPLE))
    assert large.stdout == shown.stdout
    assert "renderers with Mermaid's default limits (50000 characters, 3 edges) refuse it" in large.stderr


def test_graph_draws_svg_and_png_with_graphviz_or_names_the_package(monkeypatch, tmp_path):
    """Issue 28: pictures of the graph, drawn by Graphviz's dot when it is installed."""
    import shutil
    import subprocess
    import sys
    from xml.etree import ElementTree

    if shutil.which("dot"):
        svg = kfin("graph", "namespace", "shop", "-o", "svg", "--from-snapshot", str(EXAMPLE))
        assert svg.code == ExitCode.PARTIAL, svg  # the namespace's content: the failing group bears on it
        tree = ElementTree.fromstring(svg.stdout)
        texts = {t.text for t in tree.iter("{http://www.w3.org/2000/svg}text")}
        assert "Pod/shop/postgres-0" in texts and "root cause: Pod in use" in texts and "legend" in texts
        png = subprocess.run([sys.executable, "-m", "kfin", "graph", "pod/postgres-0", "-n", "shop", "-o", "png",
                              "--from-snapshot", str(EXAMPLE)], capture_output=True, timeout=60,
                             cwd=EXAMPLE.parents[1])
        assert png.returncode == ExitCode.OK and png.stdout.startswith(b"\x89PNG\r\n\x1a\n"), png.stderr
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot here
    missing = kfin("graph", "namespace", "shop", "-o", "svg", "--from-snapshot", str(EXAMPLE))
    assert missing.code == ExitCode.USAGE and missing.stdout == ""
    assert "Graphviz's dot, which is not installed (Debian and Ubuntu: apt install graphviz" in missing.stderr


def test_a_deployment_held_through_its_pods_by_a_node_that_stopped_reporting():
    """The example cluster: Deployment -> ReplicaSet -> Pods -> the Node whose kubelet is gone (three links)."""
    report = json.loads(kfin("explain", "deploy", "web", "-n", "shop", "--from-snapshot", str(EXAMPLE),
                             "-o", "json").stdout)
    assert {(e["from"].split("/")[0], e["type"], e["to"].split("/")[0]) for e in report["chain"]["edges"]} == {
        ("Deployment.apps", "blocking-dependent", "ReplicaSet.apps"), ("ReplicaSet.apps", "blocking-dependent", "Pod"),
        ("Pod", "kubelet", "Node")}
    assert [r["object"] for r in report["chain"]["rootCauses"]] == ["Node/ip-10-0-2-44"]
    [step] = report["plan"]["steps"]  # the safe path first (issue 23), force last
    assert step["command"] == "kubectl taint nodes ip-10-0-2-44 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"
    assert [more["command"] for more in step["more"]] == [
        f"kubectl delete pod -n shop web-6d4b9c-{name} --grace-period=0 --force" for name in ("q8w4n", "x2k9p")]


def test_a_prediction_from_the_snapshot_dates_and_counts_as_the_snapshot_was():
    # the namespace has been deleted since 17:05 on 22 November; the snapshot was taken nine hours later, whatever
    # the day it is read; it holds two finalizers' rows for the namespace, which is one object
    result = kfin("preflight", "namespace", "team-a", "--from-snapshot", str(EXAMPLE))
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Namespace/team-a is already being deleted (since 2026-11-22T17:05:01Z, 9h ago)")
    assert "2 objects would be left Terminating:" in lines
    rows = [line.split()[:3] for line in lines if line.split()[:2] in (["team-a", "Database.acme.io"], ["-", "Namespace"])]
    assert len(rows) == 3  # three rows, two objects
