"""A real Prometheus (Debian's prometheus package; .ci/run installs it) scrapes kfin serve pointed at
tests/fakeapi: `kfin_stuck_objects` answers with the fake's stuck object, and an alert of
deploy/prometheus-rules.yaml fires."""

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.serve.test_serve import _free_port, stuck_configmap
from tests.paths import PROJECT

ROOT = PROJECT
PROMETHEUS = shutil.which("prometheus")

pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason="no prometheus binary on PATH: .ci/run installs Debian's "
                                                           "prometheus package; apt-get install prometheus")


def _get(url: str):
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.loads(answer.read())


def _until(what, check, timeout: float = 90):
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout} s (last answer: {last!r})")


def test_prometheus_scrapes_kfin_serve_and_the_orphaned_finalizer_alert_fires(fake, fake_kubeconfig, tmp_path):
    stuck_configmap(fake)
    kfin_port, prometheus_port = _free_port(), _free_port()
    rules = yaml.safe_load((ROOT / "deploy" / "prometheus-rules.yaml").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            rule["for"] = "0s"  # the shipped rules wait minutes before firing; the expressions are the same
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules))
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(tmp_path / "rules.yml")],
        "scrape_configs": [{"job_name": "kfin", "static_configs": [{"targets": [f"127.0.0.1:{kfin_port}"]}]}]}))
    serve = subprocess.Popen([sys.executable, "-m", "kfin", "serve", "--kubeconfig", str(fake_kubeconfig),
                              "--listen", f"127.0.0.1:{kfin_port}", "--interval", "1s"], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "KFIN_CACHE_DIR": str(tmp_path / "cache")})
    prometheus = subprocess.Popen([PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
                                   f"--storage.tsdb.path={tmp_path / 'data'}",
                                   f"--web.listen-address=127.0.0.1:{prometheus_port}"],
                                  stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "w"))
    api = f"http://127.0.0.1:{prometheus_port}/api/v1"
    try:
        query = urllib.parse.urlencode({"query": "kfin_stuck_objects"})
        found = _until("kfin_stuck_objects in Prometheus", lambda: _get(f"{api}/query?{query}")["data"]["result"])
        [series] = found
        assert series["metric"]["namespace"] == "apps" and series["metric"]["kind"] == "ConfigMap"
        assert series["metric"]["verdict"] == "ORPHANED" and series["metric"]["job"] == "kfin"
        assert series["value"][1] == "1"

        def firing():
            alerts = _get(f"{api}/alerts")["data"]["alerts"]
            return [a for a in alerts if a["labels"]["alertname"] == "KfinOrphanedFinalizer" and a["state"] == "firing"]
        [alert] = _until("KfinOrphanedFinalizer firing", firing)
        assert alert["labels"]["name"] == "held" and "gone.example.com" in alert["labels"]["root_cause"]
        assert "ConfigMap apps/held" in alert["annotations"]["summary"]
        assert alert["annotations"].get("runbook_url", "") == ""  # no link to nowhere until its URL is set (RUNBOOK.md)
    except AssertionError:
        print((tmp_path / "prometheus.log").read_text()[-3000:])
        raise
    finally:
        for process in (prometheus, serve):
            process.terminate()
        for process in (prometheus, serve):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
