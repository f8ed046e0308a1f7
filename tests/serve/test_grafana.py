"""deploy/grafana/kfin.json (issue 28): every query names only metrics kfin serve really exports (scraped
from its exporter after a scan of the shipped snapshot), and promtool parses every query."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kfin.api.target import Target
from kfin.core.read.scope import Scope
from kfin.core.explain.stuck import find_all
from kfin.serve.exporter import Exporter
from tests.paths import PROJECT

ROOT = PROJECT
DASHBOARD = json.loads((ROOT / "deploy" / "grafana" / "kfin.json").read_text())
QUERIES = [t["expr"] for p in DASHBOARD["panels"] for t in p["targets"]]


def served_metrics() -> set[str]:
    scope = Scope(Target(), all_namespaces=True, from_snapshot=str(ROOT / "examples" / "stuck-cluster.json"))

    def scan():
        rows, sources = find_all(scope)
        return rows, [f.inventory for f in sources]

    exporter = Exporter(scan, log=lambda _: None)
    assert exporter.scan_once()
    text = exporter.exposition()
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}


def test_every_query_names_a_metric_kfin_serve_exports():
    exported = served_metrics()
    used = {name for q in QUERIES for name in re.findall(r"\bkfin_[a-z_]+", q)}
    assert used and used <= exported, used - exported
    # what an operator looks for: by namespace, family and verdict; the oldest; scan health; the alerts
    titles = " / ".join(p["title"] for p in DASHBOARD["panels"])
    for wanted in ("by namespace", "by family", "by verdict", "Oldest", "Scan health", "last good result",
                   "alerts firing"):
        assert wanted in titles, wanted
    assert any("kfin_stuck_object_deletion_timestamp_seconds" in q for q in QUERIES)
    assert any(q.startswith("ALERTS{") for q in QUERIES)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (Debian: prometheus)")
def test_promtool_parses_every_query(tmp_path):
    # as recording rules: `promtool check rules` parses each expression; Grafana's variables stand for regexes
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"kfin:dashboard_query:{n}", "expr": q.replace("$context", ".*")}
        for n, q in enumerate(QUERIES)]}]}
    path = tmp_path / "dashboard-rules.yaml"
    path.write_text(yaml.safe_dump(rules))
    done = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and f"{len(QUERIES)} rules found" in done.stdout, done.stdout + done.stderr
