"""`kfin report -o html` (issue 28): one self-contained page for an incident ticket, opened in a real headless
Chromium (Debian's, driven by Playwright): the graph is drawn, the page logs no error, and cluster data is
escaped as HTML."""

import re
import shutil
from pathlib import Path

import pytest

from kfin.api.target import Target
from kfin.core.explain.report import build
from kfin.core.read.scope import Scope
from kfin.errors import ExitCode
from kfin.render.report import page
from tests.runner import kfin
from tests.paths import PROJECT

ROOT = PROJECT
EXAMPLE = str(ROOT / "examples" / "stuck-cluster.json")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def test_the_report_names_every_stuck_object_its_explanation_and_plan():
    result = kfin("report", "-A", "--from-snapshot", EXAMPLE)
    assert result.code == ExitCode.PARTIAL  # the snapshot's failing group: said on the page too
    html = result.stdout
    assert html.startswith("<!DOCTYPE html>") and 'id="incomplete"' in html
    assert html.count('<tr><td>') == 10  # the ten stuck objects of the example
    assert "stop what uses the claim: delete Pod shop/postgres-0" in html
    assert "<code>kubectl delete pod -n shop postgres-0</code>" in html
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org", "")  # nothing fetched
    shop = kfin("report", "-n", "shop", "--from-snapshot", EXAMPLE).stdout
    assert "<title>Stuck in Terminating: namespace shop</title>" in shop and "team-a" not in shop.split("<h2>")[1]


def test_cluster_data_is_escaped_as_html():
    report = build(Scope(Target(), all_namespaces=True, from_snapshot=EXAMPLE))
    report.entries[0].row.blocker = 'pvc-protection: <img src=x onerror="alert(1)"> & \x1b[31m'
    html = page(report, "t")
    assert "<img src=x" not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; \\x1b[31m" in html


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (Debian: chromium; .ci/run installs it)")
def test_the_page_in_a_real_browser_draws_the_graph_and_logs_no_error(tmp_path):
    from playwright.sync_api import sync_playwright

    path = tmp_path / "report.html"
    path.write_text(kfin("report", "-A", "--from-snapshot", EXAMPLE).stdout)
    problems: list[str] = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        try:
            tab = browser.new_page(viewport={"width": 1400, "height": 1000})
            tab.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
            tab.on("pageerror", lambda error: problems.append(str(error)))
            tab.on("request", lambda request: problems.append(f"fetched {request.url}")
                   if not request.url.startswith("file://") else None)
            tab.goto(path.as_uri())
            graph = tab.locator("#graph svg")
            box = graph.bounding_box()
            nodes = tab.locator("#graph svg g.node").count()
            labels = tab.locator("#graph svg text").all_text_contents()
            tab.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert problems == []
    assert box is not None and box["width"] > 300 and box["height"] > 100
    assert nodes >= 10 and "Node/ip-10-0-2-44" in labels and "root cause: node down" in labels
    png = (tmp_path / "report.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 50_000  # a page with a drawing, not a blank one
    assert re.search(rb"IHDR", png[:40])
