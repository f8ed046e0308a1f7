"""Plans you can paste (issue 41, item 7): each step's command alone on its line, never wrapped, its condition and
note on lines of their own, no line ending in a space; in JSON `command` (null for an action outside kubectl),
`when` and `note`; in the HTML report each command in a block of its own. The example cluster's Deployment held by
a node that stopped reporting: the out-of-service taint once it is shut down, then each Pod's force deletion only
if it lingers, was one string wrapped across four lines with trailing spaces."""

import json
import re
from pathlib import Path

from kfin.errors import ExitCode
from tests.runner import kfin
from tests.commands.test_terminal import run_in_window
from tests.paths import PROJECT

ROOT = PROJECT
EXAMPLE = str(ROOT / "examples" / "stuck-cluster.json")
TAINT = "kubectl taint nodes ip-10-0-2-44 node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"
FORCE = [f"kubectl delete pod -n shop web-6d4b9c-{name} --grace-period=0 --force" for name in ("q8w4n", "x2k9p")]


def plan(lines: list[str]) -> list[str]:
    start = lines.index("Plan, in order (kfin runs only `kfin remove`; the other steps are yours):")
    return lines[start + 1 :]


def test_on_an_80_column_terminal_each_command_is_one_line_and_no_line_ends_in_a_space():
    code, lines = run_in_window(["explain", "deploy", "web", "-n", "shop", "--from-snapshot", EXAMPLE], 80)
    assert code == ExitCode.OK, lines
    steps = plan(lines)
    assert steps[:9] == [
        f"  1. {TAINT}",  # 91 columns: longer than the terminal, still one line to copy
        "       when: once it is shut down",
        "       note: Kubernetes then deletes its Pods and detaches their volumes",
        f"     {FORCE[0]}",
        "       when: only if Pod/shop/web-6d4b9c-q8w4n lingers after that",
        f"     {FORCE[1]}",
        "       when: only if Pod/shop/web-6d4b9c-x2k9p lingers after that",
        "     root cause: Node/ip-10-0-2-44: node ip-10-0-2-44 is not Ready since",
        "     2026-11-22T23:53:01Z",
    ]
    assert [line for line in steps if line.endswith(" ")] == []
    # kfin's own words wrap at the terminal's width; only a command may be longer
    assert [line for line in steps if len(line) > 80 and line.strip().removeprefix("1. ") not in [TAINT, *FORCE]] == []


def test_piped_at_a_narrow_width_the_words_wrap_and_the_commands_do_not(monkeypatch):
    monkeypatch.setenv("COLUMNS", "50")
    result = kfin("explain", "deploy", "web", "-n", "shop", "--from-snapshot", EXAMPLE)
    steps = plan(result.stdout.splitlines())
    assert steps[0] == f"  1. {TAINT}" and f"     {FORCE[0]}" in steps and f"     {FORCE[1]}" in steps
    assert steps[1:3] == ["       when: once it is shut down", "       note: Kubernetes then deletes its"]
    assert "             Pods and detaches their volumes" in steps  # wrapped between words, under its label
    assert all(len(line) <= 50 for line in steps if not line.strip().startswith(("1. kubectl", "kubectl")))
    assert [line for line in steps if line.endswith(" ")] == []


def test_in_json_a_step_is_a_command_its_condition_and_note_and_its_last_resorts():
    report = json.loads(kfin("explain", "deploy", "web", "-n", "shop", "--from-snapshot", EXAMPLE, "-o", "json").stdout)
    [step] = report["plan"]["steps"]
    assert step == {
        "command": TAINT,
        "when": "once it is shut down",
        "note": "Kubernetes then deletes its Pods and detaches their volumes",
        "more": [
            {"command": FORCE[0], "when": "only if Pod/shop/web-6d4b9c-q8w4n lingers after that", "note": None},
            {"command": FORCE[1], "when": "only if Pod/shop/web-6d4b9c-x2k9p lingers after that", "note": None},
        ],
        "resolves": "Node/ip-10-0-2-44",
        "why": "node ip-10-0-2-44 is not Ready since 2026-11-22T23:53:01Z",
        "type": "operator",
    }


def test_an_action_outside_kubectl_has_no_command_and_says_it_in_its_note():
    """The example's Database, whose operator is gone: kfin remove once what it guarded is cleaned up, or instead
    reinstall the controller (no command for that)."""
    report = json.loads(
        kfin("explain", "databases.acme.io", "orders", "-n", "team-a", "--from-snapshot", EXAMPLE, "-o", "json").stdout
    )
    [step] = report["plan"]["steps"]
    assert step["command"] == (
        "kfin remove databases.acme.io orders -n team-a --finalizer acme.io/database-cleanup --confirm"
    )
    assert step["when"] == "after cleaning up what it guarded" and step["type"] == "kfin"
    assert step["more"] == [{"command": None, "when": "instead", "note": "reinstall the controller"}]


def test_the_html_report_gives_each_command_a_block_of_its_own():
    html = kfin("report", "-A", "--from-snapshot", EXAMPLE).stdout
    # the root cause's item (issue 41, item 6: each root cause's step once, at the top of the page)
    item = re.search(r"<li id=\"r\d+\">((?!</li>).)*?<pre class=\"command\"><code>kubectl taint nodes ip-10-0-2-44 .*?</li>",
                     html, re.S)
    assert item is not None, html
    blocks = re.findall(r"<pre class=\"command\"><code>(.*?)</code></pre>", item.group())
    assert blocks == [TAINT, *FORCE]
    assert "<b>when:</b> once it is shut down<br>" in item.group()
    assert "<b>note:</b> Kubernetes then deletes its Pods and detaches their volumes<br>" in item.group()
    assert "<b>when:</b> only if Pod/shop/web-6d4b9c-q8w4n lingers after that<br>" in item.group()


def test_preflight_gives_each_command_a_line_of_its_own(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    result = kfin("preflight", "crd", "databases.acme.io", "--from-snapshot", EXAMPLE)
    lines = result.stdout.splitlines()
    steps = lines[lines.index("Plan, in order (kfin preflight deletes nothing; the steps are yours):") + 1 :]
    wait = "kfin wait customresourcedefinitions.apiextensions.k8s.io databases.acme.io --timeout 10m"
    assert any(line.endswith(f". {wait}") for line in steps), steps  # 85 columns, on one line
    assert [line for line in steps if line.endswith(" ")] == []
    plan_json = json.loads(kfin("preflight", "crd", "databases.acme.io", "--from-snapshot", EXAMPLE, "-o",
                                "json").stdout)["plan"]
    assert plan_json[-1] == {"command": wait, "when": None, "note": None, "more": [], "why": plan_json[-1]["why"]}


def test_kfin_stucks_root_causes_give_each_command_a_line_of_its_own():
    code, lines = run_in_window(["stuck", "--from-snapshot", EXAMPLE], 80)
    node = lines.index("1. Node/ip-10-0-2-44 WAITING: node ip-10-0-2-44 is not Ready since")
    block = lines[node : lines.index("", node)]
    assert [line.strip() for line in block if line.strip().startswith("kubectl ")] == [TAINT, *FORCE]
    assert "     when: once it is shut down" in block
    assert [line for line in block if line.endswith(" ")] == []


def test_kfin_wait_from_a_snapshot_gives_each_command_a_line_of_its_own(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    result = kfin("wait", "deploy", "web", "-n", "shop", "--from-snapshot", EXAMPLE)
    lines = result.stdout.splitlines()
    steps = lines[lines.index("It goes once:") + 1 :]
    assert steps[:2] == [f"  1. {TAINT}", "       when: once it is shut down"]
    assert f"     {FORCE[0]}" in steps and f"     {FORCE[1]}" in steps
