"""Root causes first (issue 41, item 6): the example snapshot has 10 stuck objects and 5 root causes (a node, an
APIService, a Pod, an absent operator, the cloud controller); kfin stuck, graph and report say so once each. Namespace
team-a is held by two of them: the APIService, and the absent operator's Database its conditions name."""

import json
import re
from pathlib import Path

from kfin.errors import ExitCode
from tests.runner import kfin
from tests.paths import PROJECT

EXAMPLE = str(PROJECT / "examples" / "stuck-cluster.json")


def test_stuck_json_leads_with_each_root_cause_once_and_what_it_holds():
    result = kfin("stuck", "--from-snapshot", EXAMPLE, "-o", "json")
    assert result.code == ExitCode.PARTIAL, result.stderr
    report = json.loads(result.stdout)
    assert list(report).index("rootCauses") < list(report).index("items")
    causes = {c["object"] or c["actor"]: c for c in report["rootCauses"]}
    assert list(causes) == [  # most held first
        "Node/ip-10-0-2-44",
        "Pod/shop/postgres-0",
        "APIService.apiregistration.k8s.io/v1beta1.metrics.k8s.io",
        "the controller of acme.io",
        "cloud-controller-manager",
    ]
    assert sorted(causes["Node/ip-10-0-2-44"]["holds"]) == [
        "Deployment.apps/shop/web", "Pod/shop/web-6d4b9c-q8w4n", "Pod/shop/web-6d4b9c-x2k9p",
        "ReplicaSet.apps/shop/web-6d4b9c"]
    assert causes["APIService.apiregistration.k8s.io/v1beta1.metrics.k8s.io"]["holds"] == [
        "Namespace/team-a", "Namespace/monitoring-old"]
    assert causes["the controller of acme.io"]["verdict"] == "ORPHANED"
    # team-a's conditions name the Database's finalizer: two root causes hold it, not the APIService alone
    assert causes["the controller of acme.io"]["holds"] == ["Namespace/team-a", "Database.acme.io/team-a/orders"]
    # every object is held by a root cause the list names, and each appears under it
    for item in report["items"]:
        ref = f"{item['kind']}{'.' + item['group'] if item['group'] else ''}/" + "/".join(
            p for p in (item["namespace"], item["name"]) if p)
        [mine] = item["rootCauses"][:1]
        assert ref in causes[mine["object"] or mine["actor"]]["holds"], ref
    # the node's step names both Pods' last resort, not only the first one's
    step = json.dumps(causes["Node/ip-10-0-2-44"]["step"])
    assert "web-6d4b9c-q8w4n" in step and "web-6d4b9c-x2k9p" in step


def test_stuck_table_leads_with_the_root_causes_then_the_objects():
    result = kfin("stuck", "--from-snapshot", EXAMPLE)
    lines = result.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["NAMESPACE", "KIND"])
    block = lines[:header]
    assert block[0] == "5 root causes hold the 10 stuck objects below:"
    numbered = [line for line in block[1:] if line[:1].isdigit()]
    assert [line.split()[1] for line in numbered] == [
        "Node/ip-10-0-2-44", "Pod/shop/postgres-0", "APIService.apiregistration.k8s.io/v1beta1.metrics.k8s.io",
        "the", "cloud-controller-manager"]
    assert [line.strip().split(":")[0] for line in block if line.strip().startswith("holds ")] == [
        "holds 4", "holds 2", "holds 2", "holds 2", "holds 1"]
    assert len(lines) - header - 1 == 10  # then every object, a line each in a pipe
    # not for scripts: without headers the table alone, as before
    bare = kfin("stuck", "--from-snapshot", EXAMPLE, "--no-headers").stdout.splitlines()
    assert len(bare) == 10 and bare[0].split()[:2] == ["shop", "PersistentVolumeClaim"]


def test_graph_names_each_root_cause_once_instead_of_a_plan_per_object():
    result = kfin("graph", "namespace", "shop", "--from-snapshot", EXAMPLE)
    text = result.stdout
    assert "Before " not in text  # each stuck object's own ordered list repeated the same node 3 times
    roots = text.partition("\nRoot causes (3):\n")[2].splitlines()
    assert roots[0] == "  Node/ip-10-0-2-44: node ip-10-0-2-44 is not Ready since 2026-11-22T23:53:01Z"
    assert roots[1].startswith("    holds 4: Deployment.apps/shop/web, Pod/shop/web-6d4b9c-q8w4n")
    assert text.count("Node/ip-10-0-2-44: ") == 1
    # one object's graph keeps what must go before it, in order
    one = kfin("graph", "deploy", "web", "-n", "shop", "--from-snapshot", EXAMPLE).stdout
    assert "Before Deployment.apps/shop/web can go, in order:" in one


def test_the_report_leads_with_the_root_causes_and_gives_each_step_once():
    html = kfin("report", "-A", "--from-snapshot", EXAMPLE).stdout
    assert html.index("<h2>Root causes</h2>") < html.index("<h2>Stuck objects</h2>") < html.index(
        "<h2>Each stuck object</h2>")
    roots = re.findall(r'<li id="r(\d+)">(.*?)</li>', html, re.S)
    assert [number for number, _ in roots] == ["0", "1", "2", "3", "4"]
    assert "<b>Node/ip-10-0-2-44</b>" in roots[0][1] and "holds 4:" in roots[0][1]
    assert '<a href="#o' in roots[0][1]  # each object it holds, linked to its entry
    # the node's taint once on the page, not under each of the four objects it holds
    assert html.count('<pre class="command"><code>kubectl taint nodes ip-10-0-2-44') == 1
    assert "Plan, in order" not in html
    web = html[html.index("Deployment.apps/shop/web — Terminating"):]
    web = web[: web.index("<h3", 1)]
    assert '<a href="#r0">root cause 1: Node/ip-10-0-2-44</a>' in web
