"""kfin mcp from a snapshot, through the SDK's own client over stdio: its tools and their schemas, answers that are
the commands' -o json, errors as one line, the root-cause resource, the prompts; and kfin without the SDK."""

import json
import subprocess
import sys

import pytest

from kfin.errors import ExitCode
from tests.runner import kfin

pytest.importorskip("mcp", reason="kfin mcp's extra (pip install -e '.[test]' installs it)")

from tests.mcp_client import ROOT, document, error_line, text, with_kfin_mcp  # noqa: E402

SNAPSHOT = ROOT / "examples" / "stuck-cluster.json"
SHOP = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n"
TOOLS = {
    "stuck": {"namespace", "all_namespaces", "kinds", "verdicts", "label_selector", "finalizer", "older_than"},
    "explain": {"kind", "name", "namespace"},
    "graph": {"kind", "name", "namespace", "only_stuck", "owners_only"},
    "preflight": {"kind", "name", "namespace", "manifests", "filenames", "recursive", "helm_release", "helm_major"},
    "catalog_lookup": {"finalizer"},
    "wait": {"kind", "name", "namespace", "timeout_seconds", "uid"},
    "plan_removal": {"kind", "name", "namespace", "finalizers"},
    "apply_removal": {"digest"},
}


def cli_json(*args):
    result = kfin(*args, "--from-snapshot", str(SNAPSHOT), "-o", "json")
    assert result.code in (0, ExitCode.PARTIAL), result.stderr
    answer = json.loads(result.stdout)
    warnings = [line for line in result.stderr.splitlines() if line.strip()]
    return dict(answer, warnings=warnings) if warnings else answer  # kfin mcp's one document holds them


def same_graph(one, other):
    """Equal but for the order of nodes and edges (a set's, which differs between processes)."""
    def key(graph):
        return dict(graph, nodes=sorted(graph["nodes"], key=json.dumps), edges=sorted(graph["edges"], key=json.dumps))
    return key(one) == key(other)


def test_every_tool_is_listed_with_its_schema_and_answers_as_the_command_does(tmp_path):
    shop_file = tmp_path / "shop.yaml"
    shop_file.write_text(SHOP)
    async def body(session):
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        answers = {
            "stuck": await session.call_tool("stuck", {"all_namespaces": True}),
            "stuck_orphaned": await session.call_tool("stuck", {"all_namespaces": True, "verdicts": ["orphaned"]}),
            "explain": await session.call_tool("explain", {"kind": "databases.acme.io", "name": "orders",
                                                           "namespace": "team-a"}),
            "graph": await session.call_tool("graph", {"kind": "namespace", "name": "shop"}),
            "preflight": await session.call_tool("preflight", {"kind": "ns", "name": "shop"}),
            "teardown": await session.call_tool("preflight", {"manifests": SHOP}),
            "teardown_file": await session.call_tool("preflight", {"filenames": [str(shop_file)]}),
            "both": await session.call_tool("preflight", {"kind": "ns", "name": "shop", "manifests": SHOP}),
            "catalog": await session.call_tool("catalog_lookup",
                                               {"finalizer": "resources-finalizer.argocd.argoproj.io/foreground"}),
            "not_in_catalog": await session.call_tool("catalog_lookup", {"finalizer": "acme.io/database-cleanup"}),
            "wait": await session.call_tool("wait", {"kind": "ns", "name": "team-a", "timeout_seconds": 1}),
            "too_long": await session.call_tool("wait", {"kind": "ns", "name": "team-a", "timeout_seconds": 3600}),
            "typo": await session.call_tool("explain", {"kind": "databses.acme.io", "name": "orders"}),
            "flag_as_name": await session.call_tool("explain", {"kind": "ns", "name": "--all-namespaces"}),
            "root_causes": await session.read_resource("kfin://stuck/root-causes"),
            "prompts": (await session.list_prompts()).prompts,
            "why": await session.get_prompt("why_is_namespace_stuck", {"namespace": "team-a"}),
        }
        return tools, answers

    tools, answers = with_kfin_mcp(["--from-snapshot", SNAPSHOT], body)
    assert set(tools) == set(TOOLS)
    for name, parameters in TOOLS.items():
        schema = tools[name].input_schema
        assert schema["type"] == "object" and set(schema["properties"]) == parameters, name
        assert tools[name].description
    assert tools["wait"].input_schema["properties"]["timeout_seconds"]["maximum"] == 300
    assert tools["explain"].input_schema["required"] == ["kind", "name"]
    assert tools["stuck"].annotations.read_only_hint is True
    assert tools["apply_removal"].annotations.read_only_hint is False

    # the same documents as the commands' -o json
    assert document(answers["stuck"]) == cli_json("stuck", "-A")
    assert document(answers["stuck_orphaned"]) == cli_json("stuck", "-A", "--verdict", "ORPHANED")
    assert {i["verdict"] for i in document(answers["stuck_orphaned"])["items"]} == {"ORPHANED"}
    assert answers["stuck"].meta == {"exitCode": ExitCode.PARTIAL}  # the snapshot's failed list, said
    # one JSON document per answer, its warnings inside: a client that joins the content's text reads valid JSON
    [content] = answers["stuck"].content
    joined = json.loads("".join(item.text for item in answers["stuck"].content))
    assert any(line.startswith("warning:") for line in joined["warnings"])
    assert answers["stuck"].structured_content["warnings"] == joined["warnings"]
    assert document(answers["explain"]) == cli_json("explain", "databases.acme.io", "orders", "-n", "team-a")
    assert same_graph(document(answers["graph"]), cli_json("graph", "namespace", "shop"))
    assert document(answers["preflight"]) == cli_json("preflight", "ns", "shop")
    # a teardown: the manifests given as text are read as `kubectl delete -f -` reads its input
    teardown = document(answers["teardown"])
    assert teardown["kind"] == "TeardownPreflight" and teardown["command"] == "kubectl delete -f -"
    assert teardown["steps"][0]["object"]["name"] == "shop" and teardown["clean"] is False
    assert document(answers["teardown_file"]) == cli_json("preflight", "-f", str(shop_file))
    assert "kind and name, or a teardown" in error_line(answers["both"])
    entries = {e["name"]: e for e in json.loads(kfin("catalog", "-o", "json").stdout)["entries"]}
    assert document(answers["catalog"])["entry"] == entries["argocd-application"]  # as kfin catalog lists it
    assert document(answers["not_in_catalog"])["entry"] is None
    waited = document(answers["wait"])
    assert waited["gone"] is False and waited["exitCode"] == 1 and any("team-a" in line for line in waited["lines"])

    # errors: one line each, as the command line says them
    assert answers["too_long"].is_error
    assert "did you mean" in error_line(answers["typo"]) or "databses" in error_line(answers["typo"])
    # a value that starts with a dash stays a value (never the flag): checked as a name, as the command line does
    assert error_line(answers["flag_as_name"]).startswith('error: invalid namespace "--all-namespaces": ')

    [contents] = answers["root_causes"].contents
    causes = json.loads(contents.text)
    assert causes["rootCauses"] == cli_json("stuck", "-A")["rootCauses"]
    assert {p.name for p in answers["prompts"]} == {"why_is_namespace_stuck", "is_it_safe_to_delete"}
    prompt = answers["why"].messages[0].content.text
    assert "team-a" in prompt and "plan_removal" in prompt and prompt.index("explain") < prompt.index("stuck with")


def test_a_plan_from_a_snapshot_has_its_digest_but_nothing_is_applied_without_writes():
    async def body(session):
        planned = await session.call_tool("plan_removal", {"kind": "databases.acme.io", "name": "orders",
                                                           "namespace": "team-a"})
        digest = document(planned)["digest"]
        return planned, await session.call_tool("apply_removal", {"digest": digest}), await session.call_tool(
            "apply_removal", {"digest": "sha256:0"})

    planned, applied, forged = with_kfin_mcp(["--from-snapshot", SNAPSHOT], body)
    plan = document(planned)
    assert plan["remove"] == ["acme.io/database-cleanup"] and plan["refused"] is None
    assert plan["patch"][:2] == [{"op": "test", "path": "/metadata/uid", "value": plan["object"]["uid"]},
                                 {"op": "test", "path": "/metadata/finalizers", "value": plan["finalizers"]}]
    assert plan["digest"].startswith("sha256:") and plan["writesAllowed"] is False
    assert plan["risks"][0]["finalizer"] == "acme.io/database-cleanup" and plan["risks"][0]["risk"]
    assert "started without --allow-writes" in error_line(applied)
    assert "no removal was planned with this digest" in error_line(forged)


def test_kfin_without_the_sdk_says_which_extra_to_install():
    code = ("import sys; sys.modules['mcp'] = None\n"
            "from kfin.commands.app import main\n"
            "main(['mcp', '--from-snapshot', sys.argv[1]])")
    done = subprocess.run([sys.executable, "-c", code, str(SNAPSHOT)], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    assert done.returncode == ExitCode.CONFIG
    assert done.stderr == "error: kfin mcp needs the Model Context Protocol SDK, an extra of kfin: " \
                          "pip install 'kfin[mcp]'\n"


def test_other_commands_never_import_the_sdk():
    code = ("import sys\nfrom kfin.commands.app import main\n"
            "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
            "try:\n    main(['catalog', '-o', 'json'])\nexcept SystemExit:\n    pass\n"
            "print('imported:', sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'pydantic'))),"
            " file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and "imported: []" in done.stderr, done.stderr


def test_a_long_list_keeps_its_first_items_and_says_how_many_it_left_out():
    from kfin.mcp.server import CommandRun, document_result

    listed = {"apiVersion": "kfin.dev/v1", "kind": "StuckReport", "items": [{"name": f"o{i}"} for i in range(500)]}
    text = json.dumps(listed, indent=2)
    result = document_result(CommandRun(0, text, "warning: one\n"), 2000)
    assert len(result.text) <= 2000 and not result.error and result.notes == "warning: one"
    shown = json.loads(result.text)
    assert shown["warnings"] == ["warning: one"]
    assert shown["items"] == listed["items"][:len(shown["items"])] and len(shown["items"]) > 10
    assert shown["truncated"]["shown"] == len(shown["items"]) and shown["truncated"]["total"] == 500
    assert document_result(CommandRun(0, text, ""), len(text)).document == listed  # within the limit: untouched
    one = json.dumps({"kind": "Explanation", "findings": ["x" * 3000]})
    assert document_result(CommandRun(0, one, ""), 2000).text.startswith("error: the answer is ")


def test_over_streamable_http_it_answers_read_only():
    """In a Pod: --listen serves the same tools over streamable HTTP at /mcp; writes are refused before it starts."""
    import socket
    import time

    import anyio
    from mcp import Client

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    refused = kfin("mcp", "--listen", f"127.0.0.1:{port}", "--allow-writes")
    assert refused.code == ExitCode.USAGE and refused.stderr.startswith("error: --allow-writes is for stdio only")
    process = subprocess.Popen([sys.executable, "-m", "kfin", "mcp", "--listen", f"127.0.0.1:{port}",
                                "--from-snapshot", str(SNAPSHOT)], cwd=ROOT, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as attempt:
                if attempt.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)

        async def run():
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                return names, await client.call_tool("stuck", {"all_namespaces": True})

        names, listed = anyio.run(run)
        assert names == set(TOOLS)
        assert document(listed) == cli_json("stuck", "-A")
    finally:
        process.terminate()
        process.wait(timeout=30)
