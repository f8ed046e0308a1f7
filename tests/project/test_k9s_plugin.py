"""deploy/k9s/plugins.yaml: kfin in k9s on any resource (issue 28).

k9s validates a plugins file against its JSON schema when it loads it
(github.com/derailed/k9s, internal/config/json/schemas/plugins.json, read at commit 24cf4628). The rules
below are that schema's, restated: a `plugins` map of plugins, each with shortCut, description, scopes and
command, the fields typed as k9s reads them, no field k9s does not know. Then each plugin's command runs in
bash, as k9s runs it, with k9s's environment for a Pod, a cluster-scoped volume and a custom resource."""

import os
import stat
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml
from tests.paths import PROJECT

ROOT = PROJECT
PLUGINS = ROOT / "deploy" / "k9s" / "plugins.yaml"
STRINGS = {"type": "array", "items": {"type": "string"}}
K9S_PLUGIN_RULES = {
    "type": "object",
    "required": ["plugins"],
    "additionalProperties": False,
    "properties": {"plugins": {"type": "object", "additionalProperties": {
        "type": "object",
        "required": ["shortCut", "description", "scopes", "command"],
        "additionalProperties": False,
        "properties": {
            "shortCut": {"type": "string"}, "override": {"type": "boolean"}, "description": {"type": "string"},
            "confirm": {"type": "boolean"}, "dangerous": {"type": "boolean"}, "scopes": STRINGS,
            "command": {"type": "string"}, "background": {"type": "boolean"},
            "overwriteOutput": {"type": "boolean"},
            "args": {"type": "array", "items": {"type": ["string", "number"]}},
            "inputs": {"type": "array"},
        }}}},
}


def plugins() -> dict:
    return yaml.safe_load(PLUGINS.read_text())["plugins"]


def test_the_plugins_file_is_valid_for_k9s():
    document = yaml.safe_load(PLUGINS.read_text())
    jsonschema.validate(document, K9S_PLUGIN_RULES)
    found = plugins()
    assert set(found) == {"kfin-explain", "kfin-graph", "kfin-remove-dry-run", "kfin-remove"}
    assert all(p["scopes"] == ["all"] for p in found.values())  # any resource
    keys = [p["shortCut"] for p in found.values()]
    assert len(set(keys)) == len(keys)
    # only the confirmed removal changes anything, and k9s asks first
    assert found["kfin-remove"]["confirm"] is True and found["kfin-remove"]["args"][-1] == "--confirm"
    assert not any("--confirm" in p["args"] for name, p in found.items() if name != "kfin-remove")


@pytest.fixture
def recorder(tmp_path):
    """`kfin` and `less` stand-ins on PATH: kfin writes its arguments, one per line; less passes through."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kfin").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path / "args"}\necho drawn\n')
    (bin_dir / "less").write_text("#!/bin/sh\ncat\n")
    for tool in ("kfin", "less"):
        (bin_dir / tool).chmod(stat.S_IRWXU)
    return bin_dir, tmp_path / "args"


@pytest.mark.parametrize("resource, expected", [
    ({"RESOURCE_NAME": "pods", "RESOURCE_GROUP": "", "NAME": "web-1", "NAMESPACE": "shop"},
     ["pods/web-1", "-n", "shop"]),
    ({"RESOURCE_NAME": "persistentvolumes", "RESOURCE_GROUP": "", "NAME": "pv-1", "NAMESPACE": "-"},
     ["persistentvolumes/pv-1"]),
    ({"RESOURCE_NAME": "databases", "RESOURCE_GROUP": "acme.io", "NAME": "orders", "NAMESPACE": "team-a"},
     ["databases.acme.io/orders", "-n", "team-a"]),
])
@pytest.mark.parametrize("plugin, command", [("kfin-explain", ["explain"]), ("kfin-graph", ["graph"]),
                                             ("kfin-remove-dry-run", ["remove"]),
                                             ("kfin-remove", ["remove", "--confirm"])])
def test_each_plugin_names_the_selected_object_as_kfin_reads_it(recorder, resource, expected, plugin, command):
    bin_dir, args_file = recorder
    found = plugins()[plugin]
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", CONTEXT="prod", **resource)
    done = subprocess.run([found["command"], *found["args"]], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout == "drawn\n", done.stderr
    sent = args_file.read_text().splitlines()
    extra = command[1:]
    assert sent == [command[0], *expected, "--context", "prod", *extra]


def test_what_the_plugins_send_is_what_kfin_understands():
    from tests.runner import kfin

    example = str(ROOT / "examples" / "stuck-cluster.json")
    for args in (["persistentvolumeclaims/data-postgres-0", "-n", "shop"], ["persistentvolumes/pvc-7f3a91"],
                 ["databases.acme.io/orders", "-n", "team-a"]):
        result = kfin("explain", *args, "--from-snapshot", example)
        assert result.code == 0 and "Terminating for" in result.stdout, (args, result)
