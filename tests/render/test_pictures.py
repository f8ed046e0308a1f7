"""Issue 41, item 12: the pictures of the graph (`kfin graph -o dot/svg/png/mermaid`, and the graph on `kfin report`'s
page). Each says what it is of, from which context, as of when; each stuck object shows its verdict in the VERDICT
column's colour and how long it has been Terminating; each root cause is drawn as what it is (a running Pod that
mounts a claim is not a dead node), with a small legend, last, of what appears; a namespace's graph holds the
volumes its claims are bound to; and the report's graph reads at 1280 pixels (no text under 11 px). Checked by
Graphviz (installed by .ci/run) and in a real Chromium where they are installed; narrower without them."""

import html
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import pydot
import pytest

from kfin.api.target import Target
from kfin.core.explain.report import build
from kfin.core.read.scope import Scope
from kfin.render.graph import to_dot
from kfin.render.report import page
from tests.runner import kfin
from tests.paths import PROJECT

ROOT = PROJECT
EXAMPLE = ROOT / "examples" / "stuck-cluster.json"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DOT = shutil.which("dot")
SVG = "{http://www.w3.org/2000/svg}"
TITLE = "context prod-eu, observed 2026-11-23 02:05:01 UTC"
needs_dot = pytest.mark.skipif(DOT is None, reason="Graphviz not installed (Debian: graphviz; .ci/run installs it)")
needs_chromium = pytest.mark.skipif(CHROMIUM is None or DOT is None,
                                    reason="Chromium or Graphviz not installed (.ci/run installs both)")


def drawn(*subject: str, fmt: str = "dot", snapshot: Path = EXAMPLE) -> str:
    return kfin("graph", *subject, "-o", fmt, "--from-snapshot", str(snapshot)).stdout


def nodes_of(dot: str) -> dict[str, dict[str, str]]:
    """Each drawn node's attributes, by its label's first line (Graphviz's own parser reads the DOT)."""
    [graph] = pydot.graph_from_dot_data(dot)
    out = {}
    for node in graph.get_nodes():
        attrs = {k: v.strip('"') for k, v in node.get_attributes().items()}
        if "label" in attrs:
            out[attrs["label"].split("\\n")[0]] = attrs
    return out


def report_dot() -> str:
    report = build(Scope(Target(), all_namespaces=True, from_snapshot=str(EXAMPLE)))
    report.graph.graph.update(title="t")
    return to_dot(report.graph)


def plain_layout(dot: str) -> dict[str, tuple[float, float, float, float]]:
    """Graphviz's layout of each node: (x, y, width, height) in inches, y upwards."""
    out = subprocess.run([DOT, "-Tplain"], input=dot, capture_output=True, text=True, timeout=60, check=True).stdout
    return {parts[1]: tuple(map(float, parts[2:6])) for parts in map(shlex.split, out.splitlines())
            if parts[0] == "node"}


def test_each_picture_says_what_it_is_of_from_which_context_and_when(tmp_path):
    dot = drawn("namespace", "shop")
    assert f'labelloc="t"; fontsize=14; fontname="Helvetica"; label="namespace shop, {TITLE}";' in dot
    mermaid = drawn("namespace", "shop", fmt="mermaid")
    assert mermaid.startswith(f'---\ntitle: "namespace shop, {TITLE}"\n---\ngraph LR\n')
    assert f'label="graph of Pod/shop/postgres-0, {TITLE}"' in drawn("pod/postgres-0", "-n", "shop")
    heading = json.loads(drawn("namespace", "shop", fmt="json"))["graph"]
    assert heading == {"title": "namespace shop", "context": "prod-eu", "observedAt": "2026-11-23T02:05:01Z"}
    # a context name is cluster data too: escaped, never markup nor a way out of the string
    document = json.loads(EXAMPLE.read_text())
    document["context"] = 'prod "eu" <b>\x1b[31m'
    (tmp_path / "hostile.json").write_text(json.dumps(document))
    hostile = drawn("namespace", "shop", snapshot=tmp_path / "hostile.json")
    assert 'label="namespace shop, context prod \\"eu\\" <b>\\\\x1b[31m, observed' in hostile
    assert 'title: "namespace shop, context prod \\"eu\\" <b>\\\\x1b[31m, observed' in drawn(
        "namespace", "shop", fmt="mermaid", snapshot=tmp_path / "hostile.json")
    if DOT:  # Graphviz draws the title above everything else
        svg = ElementTree.fromstring(drawn("namespace", "shop", fmt="svg", snapshot=tmp_path / "hostile.json"))
        texts = [(float(t.get("y")), t.text) for t in svg.iter(f"{SVG}text")]
        assert min(texts)[1] == 'namespace shop, context prod "eu" <b>\\x1b[31m, observed 2026-11-23 02:05:01 UTC'
        report = kfin("report", "-A", "--from-snapshot", str(EXAMPLE)).stdout
        assert f"the whole cluster, {TITLE}</text>" in html.unescape(report)


def test_each_stuck_object_shows_its_verdict_in_the_verdict_columns_colour_and_its_age():
    from rich.style import Style
    from rich.terminal_theme import DEFAULT_TERMINAL_THEME

    from kfin.render.explanation import VERDICT_STYLE, verdict_colour  # the VERDICT column's palette

    stuck = {item["kind"] + "/" + item["name"]: item["verdict"]
             for item in json.loads(kfin("stuck", "-A", "-o", "json", "--from-snapshot", str(EXAMPLE)).stdout)["items"]}
    graph = json.loads(drawn("namespace", "shop", fmt="json"))
    shown = {f"{n['kind']}/{n['name']}": n["verdict"] for n in graph["nodes"] if n["terminating"]}
    assert len(shown) == 7 and all(stuck[ref] == verdict for ref, verdict in shown.items())  # VERDICT's answer
    nodes = nodes_of(drawn("namespace", "shop"))
    claim = nodes["PersistentVolumeClaim/shop/"]
    assert claim["label"].endswith("\\nHOLDING, Terminating for 3d")
    waiting = nodes["Pod/shop/web-6d4b9c-q8w4n"]  # its node's kubelet must confirm: it waits
    assert waiting["label"].endswith("\\nWAITING, Terminating for 130m")
    for verdict, colour in (("HOLDING", claim["color"]), ("WAITING", waiting["color"])):
        terminal = Style.parse(VERDICT_STYLE[verdict]).color.get_truecolor(DEFAULT_TERMINAL_THEME).hex
        assert colour == verdict_colour(verdict) == terminal  # the terminal's VERDICT colour, as Rich exports it
    assert claim["color"] != waiting["color"]
    # no cloud controller manager in the snapshot: UNKNOWN (issue 56), drawn in UNKNOWN's plain colour
    assert nodes["Service/shop/frontend"]["label"].endswith("\\nUNKNOWN, Terminating for 26h")
    assert nodes["Service/shop/frontend"]["color"] == verdict_colour("UNKNOWN")
    mermaid = drawn("namespace", "shop", fmt="mermaid")
    assert "classDef verdict_WAITING fill:#ececd9,stroke:#808000" in mermaid
    assert re.search(r'n(\d+)\["Pod/shop/web-6d4b9c-q8w4n<br/>WAITING, Terminating for 130m"\]', mermaid)
    # the report's VERDICT column: the same palette
    page_ = kfin("report", "-A", "--from-snapshot", str(EXAMPLE)).stdout
    assert ".HOLDING{color:#800000}" in page_ and ".WAITING{color:#808000}" in page_
    if DOT:  # and Graphviz draws each border in it
        svg = ElementTree.fromstring(drawn("namespace", "shop", fmt="svg"))
        for group in svg.iter(f"{SVG}g"):
            texts = [t.text for t in group.iter(f"{SVG}text")]
            if group.get("class") == "node" and texts[:1] == ["Pod/shop/web-6d4b9c-q8w4n"]:
                assert {p.get("stroke") for p in group.iter(f"{SVG}path")} == {"#808000"}, texts


def test_each_root_cause_is_drawn_as_what_it_is():
    nodes = nodes_of(report_dot())
    roots = {
        "Node/ip-10-0-2-44": ("box3d", "root cause: node down"),
        "Pod/shop/postgres-0": ("note", "root cause: Pod in use"),
        "APIService.apiregistration.": ("component", "root cause: API unavailable"),
        "Actor/the controller of": ("box", "root cause: controller absent"),
        "Actor/cloud-controller-manager": ("tab", "root cause: cloud"),
    }
    looks = set()
    for name, (shape, line) in roots.items():
        attrs = nodes[name]
        assert attrs["shape"] == shape and attrs["label"].endswith(line) and attrs["peripheries"] == "2", attrs
        looks.add((attrs["shape"], attrs["fillcolor"], attrs["style"]))
    assert len(looks) == len(roots)  # five kinds, five looks: a running Pod is not drawn like a dead node
    assert "dashed" in nodes["Actor/the controller of"]["style"]  # absent, drawn like what is missing
    mermaid = kfin("graph", "namespace", "shop", "-o", "mermaid", "--from-snapshot", str(EXAMPLE)).stdout
    assert re.search(r'n\d+\[\["Node/ip-10-0-2-44<br/>root cause: node down"\]\]', mermaid)
    assert re.search(r'n\d+\(\["Pod/shop/postgres-0<br/>root cause: Pod in use"\]\)', mermaid)
    team = kfin("graph", "namespace", "team-a", "-o", "mermaid", "--from-snapshot", str(EXAMPLE)).stdout
    assert "classDef root_controller_absent fill:#e6d0ec,stroke:#333,stroke-width:4px,stroke-dasharray: 5 5;" in team
    # its waiting edges red, as in the DOT (Mermaid numbers edges as declared: all eight here wait)
    edges = [line for line in mermaid.splitlines() if re.match(r"\s+n\d+ [=-]", line)]
    assert len(edges) == 8 and "  linkStyle 0,1,2,3,4,5,6,7 stroke:#f00,stroke-width:2px;" in mermaid


def test_the_legend_is_small_last_and_lists_only_what_appears():
    shop, team = drawn("namespace", "shop"), drawn("namespace", "team-a")
    legend = lambda dot: dot[dot.index("legend [") : dot.index("</TABLE>>")]  # noqa: E731
    assert all(f">{words}<" in legend(shop) for words in ("waits for", "HOLDING", "WAITING", "root cause: node down",
                                                          "root cause: Pod in use", "root cause: cloud"))
    assert all(f">{words}<" not in legend(shop) for words in
               ("owns", "ORPHANED", "root cause: API unavailable", "root cause: controller absent", "missing"))
    assert ">root cause: API unavailable<" in legend(team) and ">root cause: controller absent<" in legend(team)
    assert ">root cause: node down<" not in legend(team)
    if DOT:  # below every object, and a small part of the picture
        for dot in (shop, report_dot()):
            layout = plain_layout(dot)
            _, y, width, height = layout.pop("legend")
            assert all(y + height / 2 < other[1] - other[3] / 2 for other in layout.values())
            right = max(o[0] + o[2] / 2 for o in layout.values())
            top = max(o[1] + o[3] / 2 for o in layout.values())
            assert width * height < 0.15 * right * top, (width, height, right, top)


def test_the_namespace_graph_holds_the_volumes_its_claims_are_bound_to(tmp_path):
    graph = json.loads(drawn("namespace", "shop", fmt="json"))
    labels = {n["id"]: f"{n['kind']}/{n['name']}" for n in graph["nodes"]}
    assert "PersistentVolume/pvc-7f3a91" in labels.values()  # Terminating: its own chain leads to the claim
    assert ("PersistentVolume/pvc-7f3a91", "PersistentVolumeClaim/data-postgres-0", "bound-claim") in {
        (labels[e["source"]], labels[e["target"]], e["cause"]) for e in graph["edges"]}

    def claim(name: str, volume: str | None) -> dict:
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {
            "name": name, "namespace": "data", "uid": f"{name}-uid"}, "spec": {"volumeName": volume} if volume else {}}

    def volume(name: str, namespace: str, claim_name: str) -> dict:
        return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "uid": f"{name}-uid"},
                "spec": {"claimRef": {"namespace": namespace, "name": claim_name}}, "status": {"phase": "Bound"}}

    items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "uid": f"{n}-uid"}}
             for n in ("data", "other")]
    items += [claim("bound", "pv-bound"), claim("pending", None), claim("misnamed", "pv-elsewhere"),
              volume("pv-bound", "data", "bound"), volume("pv-elsewhere", "other", "misnamed"),
              volume("pv-other", "other", "x")]
    (tmp_path / "list.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    listed = tmp_path / "list.json"
    graph = json.loads(drawn("namespace", "data", fmt="json", snapshot=listed))
    assert {n["name"] for n in graph["nodes"] if n["kind"] == "PersistentVolume"} == {"pv-bound"}
    assert [(e["source"], e["target"]) for e in graph["edges"] if e.get("binds")] == [("bound-uid", "pv-bound-uid")]
    tree = kfin("graph", "namespace", "data", "--from-snapshot", str(listed)).stdout
    assert "PersistentVolumeClaim/data/bound\n│   └── bound to PersistentVolume/pv-bound\n" in tree
    assert 'label="bound to"' in drawn("namespace", "data", snapshot=listed)
    owners_only = json.loads(kfin("graph", "namespace", "data", "--owners-only", "-o", "json",
                                  "--from-snapshot", str(listed)).stdout)
    assert "PersistentVolume" not in {n["kind"] for n in owners_only["nodes"]}  # not an ownerReference


@needs_dot
def test_the_reports_graph_keeps_its_text_11_pixels_at_the_least():
    """With Graphviz alone: the page lets the graph shrink to its width only down to 11 px text (then it scrolls);
    the example's fits a 1280-pixel window (a page 1120 px wide) unscrolled."""
    report = build(Scope(Target(), all_namespaces=True, from_snapshot=str(EXAMPLE)))
    shown = page(report, "Stuck in Terminating: the whole cluster")
    svg = re.search(r'<svg style="min-width:(\d+)px" width="([\d.]+)pt"', shown)
    assert svg is not None and ".graph{overflow-x:auto}" in shown
    least, width = int(svg.group(1)), float(svg.group(2))
    smallest = min(float(size) for size in re.findall(r'font-size="([\d.]+)"', shown.split('id="graph"')[1]))
    assert least * smallest / width >= 10.99  # px of the smallest text at the least width (pt to px alike)
    assert least <= 1120


@needs_chromium
def test_the_pictures_in_a_real_browser(tmp_path):
    """Chromium: the report's graph at 1280 px has no text under 11 px and needs no scrolling; `-o svg` shows its
    title first, its legend last, and each stuck object's border in its verdict's colour."""
    from playwright.sync_api import sync_playwright

    (tmp_path / "report.html").write_text(kfin("report", "-A", "--from-snapshot", str(EXAMPLE)).stdout)
    (tmp_path / "shop.svg").write_text(drawn("namespace", "shop", fmt="svg"))
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 900})
            tab.goto((tmp_path / "report.html").as_uri())
            sizes = tab.evaluate("""() => [...document.querySelectorAll('#graph svg text')].map(text => {
                const scale = text.getScreenCTM();
                return [text.textContent, parseFloat(getComputedStyle(text).fontSize) * Math.hypot(scale.a, scale.b)];
            })""")
            fits = tab.evaluate("() => { const g = document.getElementById('graph'); "
                                "return [g.scrollWidth, g.clientWidth]; }")
            tab.locator("#graph").screenshot(path=str(tmp_path / "report-graph.png"))
            tab.goto((tmp_path / "shop.svg").as_uri())
            texts = tab.evaluate("""() => [...document.querySelectorAll('text')].map(text => {
                const box = text.getBoundingClientRect(); return [box.top, box.bottom, text.textContent]; })""")
            borders = tab.evaluate("""() => Object.fromEntries([...document.querySelectorAll('g.node')].map(node => {
                const shape = node.querySelector('path, polygon, ellipse');
                return [node.querySelector('text').textContent, shape && getComputedStyle(shape).stroke]; }))""")
            tab.screenshot(path=str(tmp_path / "shop.png"))
        finally:
            browser.close()
    assert len(sizes) > 40 and min(size for _, size in sizes) >= 11, sorted(sizes, key=lambda s: s[1])[:3]
    assert fits[0] <= fits[1]
    assert min(texts)[2].startswith("namespace shop, context prod-eu")  # the title, above all
    last = max(texts, key=lambda t: t[1])
    legend_top = next(top for top, _, text in texts if text == "legend")
    assert all(bottom <= legend_top for _, bottom, text in texts if text.startswith(("Pod/", "Node/", "Service/")))
    assert last[0] >= legend_top  # the legend's last row closes the picture
    assert borders["Pod/shop/web-6d4b9c-q8w4n"] == "rgb(128, 128, 0)"  # WAITING's colour
    assert borders["Deployment.apps/shop/web"] == "rgb(128, 0, 0)"  # HOLDING's
    for png in ("report-graph.png", "shop.png"):
        assert (tmp_path / png).read_bytes().startswith(b"\x89PNG")
