"""One command's choices stay with that command (issue 46): in one process (a test session, kfin serve, kfin mcp,
a fleet worker), a command run after another sees neither the other's --catalog entries nor its -v trace level.
Commands run both ways kfin is run in-process: through kfin.commands.app.main (as the executable does, -v taken
out of the line first) and through typer's CliRunner on the Click app (where -v is the root option)."""

import json

import yaml
from typer.testing import CliRunner

from kfin.commands.app import app
from tests.runner import kfin

FINALIZER = "widgets.acme.example/cleanup"
TRACE = " kfin] GET "  # a traced request's line (kfin.api.trace)


def catalog_file(tmp_path, entry_name: str):
    """A catalog of one entry for FINALIZER, named `entry_name`, whose holders are ConfigMaps naming the object."""
    entry = {
        "name": entry_name, "project": "Acme", "finalizers": [FINALIZER],
        "controller": {"name": f"the {entry_name} controller"},
        "protects": "widgets", "onDeletion": "deletes the widgets", "risk": "widgets are left behind",
        "fix": "run the controller",
        "holders": [{"from": "related", "resource": "configmaps", "group": "",
                     "match": {"field": "data.widget", "equals": "name"},
                     "describe": "ConfigMap {metadata.name}", "effect": "holds", "meaning": "still uses it"}],
    }
    path = tmp_path / f"{entry_name}.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "kfin.dev/v1", "kind": "FinalizerCatalog", "entries": [entry]}))
    return path


def with_click(*args: str):
    """kfin run by typer's CliRunner on the Click app itself, not through main."""
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def with_main(*args: str):
    result = kfin(*args)
    return result.code, result.stdout, result.stderr


def test_a_command_sees_neither_the_catalog_nor_the_trace_level_of_the_command_before_it(cluster, tmp_path):
    held = cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": cluster.name("held"), "namespace": cluster.namespace, "finalizers": [FINALIZER]}})
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": cluster.name("user"), "namespace": cluster.namespace}, "data": {"widget": held["metadata"]["name"]}})
    cluster.delete(held)
    cluster.eventually(lambda: (cluster.get(held) or {}).get("metadata", {}).get("deletionTimestamp"),
                       message="the ConfigMap Terminating")
    widgets, gadgets = catalog_file(tmp_path, "acme-widgets"), catalog_file(tmp_path, "acme-gadgets")
    explain = ("--kubeconfig", str(cluster.kubeconfig), "explain", "configmap", held["metadata"]["name"],
               "-n", cluster.namespace, "-o", "json")

    def family(stdout: str) -> str:
        [finding] = json.loads(stdout)["findings"]
        return finding["family"]

    runs = [  # (runner, --catalog, -v, the family it must name)
        (with_main, widgets, ["-v=6"], "acme-widgets"),
        (with_click, None, [], "custom"),
        (with_click, gadgets, ["-v", "6"], "acme-gadgets"),
        (with_main, None, [], "custom"),
        (with_click, widgets, [], "acme-widgets"),
        (with_main, gadgets, ["-v=6"], "acme-gadgets"),
    ]
    for at, (run, catalog, verbose, expected) in enumerate(runs):
        code, stdout, stderr = run(*(["--catalog", str(catalog)] if catalog else []), *verbose, *explain)
        assert code == 0, (at, stdout, stderr)
        assert family(stdout) == expected, (at, stdout)
        traced = [line for line in stderr.splitlines() if TRACE in line]
        assert bool(traced) == bool(verbose), (at, stderr)
    cluster.strip_finalizers(held)
