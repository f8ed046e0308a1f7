"""No command writes module-level state (issue 46): once kfin is imported, running commands changes no module's
globals, so that in one process (a test session, kfin serve, kfin guard, kfin mcp, a fleet worker) one command's
choices (--catalog, -v, the fields kept of whole objects) never reach the next. A command's choices are one value
(kfin.settings.Settings, kfin.core.read.catalog.Catalog) built by the command and carried to what it runs.

Each module's globals are recorded (each value's identity, and the contents of dicts, lists, sets and bytearrays),
a few commands run in-process against tests/fakeapi, and the globals are compared. Caches of pure functions
(functools.lru_cache) keep their identity and are not compared: what they hold depends only on their arguments;
they are listed in PURE_CACHES, each with why it is one, as are the few caches of pure functions kept in a dict."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from types import ModuleType

import yaml

import kfin
from tests.runner import kfin as run_kfin

# module.name -> why it is a cache of a pure function (the same argument always gives the same answer)
PURE_CACHES = {
    "kfin.core.explain.causes.registry.control_plane_owned": "whether a finalizer's name matches Kubernetes' own patterns",
    "kfin.core.read.catalog.shipped": "the entries of kfin/data/catalog.yaml, a file of kfin's own (frozen entries)",
    "kfin.api.kubeconfig_types._parsed": "kubeconfig documents by their bytes, which callers only read (a fleet's "
    "contexts share one file)",
    "kfin.util.documents._loader": "the YAML loader class, built once from PyYAML's (it takes no argument)",
    "kfin.commands.app.root_command": "kfin's Click group, built once from the registry of commands (it takes no "
    "argument); a run's choices are in its own Click context, never on the group or its commands",
}


def kfin_modules() -> list[ModuleType]:
    """Every module of kfin that imports without an extra (kfin mcp's SDK, kfin guard's cryptography)."""
    modules = []
    for info in pkgutil.walk_packages(kfin.__path__, "kfin."):
        try:
            modules.append(importlib.import_module(info.name))
        except ImportError:  # an optional extra that is not installed
            continue
    return modules


def recorded(modules: list[ModuleType]) -> dict[tuple[str, str], tuple[int, object]]:
    out: dict[tuple[str, str], tuple[int, object]] = {}
    for module in modules:
        for name, value in list(vars(module).items()):
            if name.startswith("__"):
                continue
            out[(module.__name__, name)] = (id(value), contents(value))
    return out


def contents(value: object) -> object:
    """What a mutable value holds: each key or element, and each value's identity (a dict refilled with equal
    but new values was written)."""
    if isinstance(value, dict):
        return [(key, id(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [id(item) for item in value]
    if isinstance(value, set):
        return sorted(map(repr, value))
    if isinstance(value, bytearray):
        return bytes(value)
    return None


def lru_caches(modules: list[ModuleType]) -> set[str]:
    return {
        f"{module.__name__}.{name}"
        for module in modules
        for name, value in vars(module).items()
        if isinstance(value, functools._lru_cache_wrapper) and value.__module__ == module.__name__
    }


def test_commands_leave_every_module_global_as_import_left_it(fake, fake_kubeconfig, tmp_path):
    from tests.fakeapi.rawclient import RawClient

    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces/default/configmaps", {"metadata": {
        "name": "held", "finalizers": ["widgets.acme.example/cleanup"]}})
    api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "user"}, "data": {"widget": "held"}})
    api.delete("/api/v1/namespaces/default/configmaps/held")
    catalog = tmp_path / "acme.yaml"
    catalog.write_text("""apiVersion: kfin.dev/v1
kind: FinalizerCatalog
entries:
  - name: acme-widgets
    project: Acme
    finalizers: [widgets.acme.example/cleanup]
    controller: {name: the Acme controller}
    protects: widgets
    onDeletion: deletes the widgets
    risk: widgets are left behind
    fix: run the controller
    holders:
      - {from: related, resource: configmaps, group: "", match: {field: data.widget, equals: name},
         describe: "ConfigMap {metadata.name}", effect: holds, meaning: still uses it}
""")
    other = yaml.safe_load(fake_kubeconfig.read_text())  # another kubeconfig: the context names its namespace
    other["contexts"][0]["context"]["namespace"] = "default"
    (tmp_path / "other-kubeconfig").write_text(yaml.safe_dump(other))
    modules = kfin_modules()
    assert lru_caches(modules) <= set(PURE_CACHES)
    base = ("--kubeconfig", str(fake_kubeconfig))
    run_kfin(*base, "stuck", "-A")  # what a first command loads once (imports, the shipped catalog) is loaded
    before = recorded(modules)
    for args in (
        ("--catalog", str(catalog), "-v=8", "explain", "configmap", "held", "-n", "default", "-o", "json"),
        ("--catalog", str(catalog), "stuck", "-A", "-o", "json"),
        ("-v=6", "graph", "configmap", "held", "-n", "default"),
        ("--catalog", str(catalog), "catalog", "-o", "json"),
        ("--request-timeout", "20s", "snapshot", "-A", "-f", str(tmp_path / "snapshot.json")),
        ("-v=6", "preflight", "namespace", "default"),
        ("report",),
        ("version",),
        ("--kubeconfig", str(tmp_path / "other-kubeconfig"), "--catalog", str(catalog), "stuck"),
        ("stuck", "-A"),
    ):
        result = run_kfin(*base, *args)
        assert result.code == 0, (args, result.stderr)
    after = recorded(modules)
    changed = sorted(
        f"{module}.{name}"
        for (module, name), value in after.items()
        if before.get((module, name)) != value and f"{module}.{name}" not in PURE_CACHES
    )
    assert changed == [], f"module state written by commands: {changed}"


def test_connecting_by_exec_plugins_leaves_the_kubernetes_package_as_it_was(fake, tmp_path):
    """kfin's bounded runner of exec plugins is handed to each connection's kubeconfig loader, never patched into the
    package: connections with other deadlines (--request-timeout) each get their own."""
    from kubernetes.config import kube_config

    from tests.api.test_trust_credentials import exec_user, kubeconfig

    path = kubeconfig(tmp_path, fake.url, exec_user(tmp_path, "token"))
    before = recorded([kube_config])
    for timeout in ("5s", "20s"):
        result = run_kfin("--kubeconfig", str(path), "--request-timeout", timeout, "stuck", "-A")
        assert result.code == 0, result
    after = recorded([kube_config])
    changed = sorted(f"{module}.{name}" for (module, name), value in after.items() if before.get((module, name)) != value)
    assert changed == [], f"the kubernetes package changed by kfin: {changed}"
