"""The layers of kfin/ and the rules between them, checked on the source (README: Architecture).

Each rule is also shown failing on a small made-up tree, so that a checker that finds nothing cannot pass
for one that works.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from tests.paths import PROJECT

ROOT = PROJECT / "kfin"

# Layer of a module: the first prefix that matches (a package and everything in it).
LAYERS = [("kfin.__main__", "entry"), ("kfin.api.paths", "paths"), ("kfin.api", "api"),
          ("kfin.core.read", "read"), ("kfin.core.explain.causes", "causes"), ("kfin.core.explain", "explain"),
          ("kfin.core.predict", "predict"), ("kfin.core.remove", "remove"), ("kfin.core", "core"),
          ("kfin.render", "render"),
          ("kfin.serve", "serve"), ("kfin.mcp", "mcp"), ("kfin.commands", "commands"), ("kfin.util", "base"), ("kfin.errors", "base"),
          ("kfin.model", "base"), ("kfin.names", "base"), ("kfin.settings", "base"), ("kfin", "base")]
# kfin.core is rooms named for their job, and their arrows run one way: read (the reader, what the causes may ask,
# the scope, the catalog) <- explain (its causes first, then blocking chains, stuck objects, root causes) <- predict
# (preflight, the teardowns of manifests and Helm releases, the guard's answer) and remove (plans, the guarded
# writes, the audit log), neither of which imports the other. kfin.core itself is only the package.
CORE_ROOMS = ("read", "causes", "explain", "predict", "remove")
# What each layer may import (besides itself): commands -> core's rooms -> api; commands -> render and serve;
# render sees core's values and the model, never api; everything sees the small shared base. The causes reason on
# what the read room answers, never on api; they may name a path in a step they suggest (kfin.api.paths builds the
# string, percent-encoded; it sends nothing).
MAY_IMPORT = {
    "base": {"base"},
    "paths": {"base"},
    "api": {"base", "paths"},
    "read": {"base", "paths", "api"},
    "causes": {"base", "paths", "read"},
    "explain": {"base", "paths", "api", "read", "causes"},
    "predict": {"base", "paths", "api", "read", "causes", "explain"},
    "remove": {"base", "paths", "api", "read", "causes", "explain"},
    "core": {"base"},
    "render": {"base", "read", "causes", "explain", "predict", "remove"},
    "serve": {"base", "render"},
    # kfin mcp's server answers with kfin's own commands (handed the Click group, never importing it) and removes
    # through core, as kfin remove does
    "mcp": {"base", "read", "causes", "explain", "predict", "remove", "render", "serve"},
    "commands": {"base", "paths", "api", "read", "causes", "explain", "predict", "remove", "render", "serve", "mcp"},
    "entry": {"base", "commands"},
}
# Imported inside a function only where start-up needs it: heavy packages, never kfin's own modules.
LAZY_ALLOWED = {"networkx", "rich", "kubernetes", "yaml", "urllib3", "ssl", "importlib.metadata", "cel", "jsonschema", "jsonpath_ng",
                # RFC 6902 (10 ms): only to apply a MutatingAdmissionPolicy's JSON Patch
                "jsonpatch", "jsonpointer",
                # the MCP SDK and what it brings (an extra): imported by kfin mcp alone
                "mcp", "pydantic", "anyio",
                # cryptography (the guard extra): imported by kfin guard --self-signed alone
                "cryptography"}
PATH_LITERAL = re.compile(r"^/apis?(/|$)")


@dataclass
class Module:
    name: str
    tree: ast.Module
    # (imported module, line, at top level, names imported from it)
    imports: list[tuple[str, int, bool, list[str]]] = field(default_factory=list)


def layer_of(name: str) -> str:
    return next(layer for prefix, layer in LAYERS if name == prefix or name.startswith(prefix + "."))


def parse(sources: dict[str, str]) -> dict[str, Module]:
    """Modules by dotted name, with every import they make (relative ones resolved)."""
    modules = {}
    for name, source in sources.items():
        module = Module(name, ast.parse(source))
        top = set(_top_level_nodes(module.tree))
        is_package = source is not None and name in _packages(sources)
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    module.imports.append((alias.name, node.lineno, node in top, []))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".") if is_package else name.split(".")[:-1]
                    parts = parts[:len(parts) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                names = [alias.name for alias in node.names]
                module.imports.append((base, node.lineno, node in top, names))
        modules[name] = module
    return modules


def _packages(sources: dict[str, str]) -> set[str]:
    return {n for n in sources if any(other.startswith(n + ".") for other in sources)}


def _top_level_nodes(tree: ast.Module):
    """Statements at module level, including those in module-level `if` (TYPE_CHECKING) and `try` blocks."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.If, ast.Try)):
            stack += node.body + node.orelse + getattr(node, "finalbody", []) + \
                [child for handler in getattr(node, "handlers", []) for child in handler.body]


def edges(modules: dict[str, Module]) -> dict[str, set[str]]:
    """module -> kfin modules it imports at top level, or names as a string (a registry loads it by name)."""
    out: dict[str, set[str]] = {}
    for module in modules.values():
        targets = out.setdefault(module.name, set())
        for base, _, at_top, names in module.imports:
            if not at_top or not (base == "kfin" or base.startswith("kfin.")):
                continue
            children = [f"{base}.{n}" for n in names if f"{base}.{n}" in modules]
            targets.update(children or [base])
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in modules \
                    and node.value != module.name and node.value.startswith("kfin."):
                targets.add(node.value)
    return out


def violations(sources: dict[str, str]) -> list[str]:
    """Every broken rule, one line each."""
    modules = parse(sources)
    found = []
    for module in modules.values():
        layer = layer_of(module.name)
        if not ast.get_docstring(module.tree):
            found.append(f"{module.name}: no docstring saying its job")
        for base, line, at_top, names in module.imports:
            own = base == "kfin" or base.startswith("kfin.")
            if not at_top and (own or not any(base == lazy or base.startswith(lazy + ".") for lazy in LAZY_ALLOWED)):
                found.append(f"{module.name}:{line}: imports {base} inside a function (imports go at the top)")
            if not own:
                continue
            target_layer = layer_of(base)
            if target_layer not in MAY_IMPORT[layer] and target_layer != layer:
                found.append(f"{module.name}:{line}: {layer} imports {base} ({target_layer}): against the layers")
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                found.append(f"{module.name}:{line}: imports private {', '.join(private)} from {base}")
        if layer != "api":
            for node in ast.walk(module.tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and PATH_LITERAL.match(node.value):
                    found.append(f"{module.name}:{node.lineno}: builds a request path ({node.value!r}) outside kfin.api")
    found += [f"import circle: {' -> '.join(cycle)}" for cycle in cycles(edges(modules))]
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of more than one module (or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []

    def visit(node: str) -> None:  # Tarjan's, recursive: kfin's import graph is shallow
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for child in sorted(graph.get(node, ())):
            if child not in index:
                visit(child)
                low[node] = min(low[node], low[child])
            elif child in on_stack:
                low[node] = min(low[node], index[child])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1 or node in graph.get(node, ()):
                groups.append(sorted(group))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [group + group[:1] for group in groups]


def kfin_sources() -> dict[str, str]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path.read_text(encoding="utf-8")
    return out


def test_kfin_follows_its_layers():
    assert violations(kfin_sources()) == []


def test_the_folders_are_the_layers():
    names = set(kfin_sources())
    assert {layer_of(n) for n in names} == set(MAY_IMPORT)
    flat = sorted(n for n in names if n.count(".") == 1 and n not in ("kfin.__main__",)
                  and layer_of(n) == "base" and not n.startswith("kfin.util"))
    # kfin.settings: one command's choices, read by api/ and core/ alike
    assert flat == ["kfin.errors", "kfin.model", "kfin.names", "kfin.settings"], \
        "shared values only beside the layer folders"


def test_core_is_rooms_by_job():
    """Nothing lies loose in kfin/core: every module is in one of its rooms."""
    loose = sorted(n for n in kfin_sources() if n.startswith("kfin.core.") and layer_of(n) == "core")
    assert loose == []
    assert {layer_of(n) for n in kfin_sources() if n.startswith("kfin.core.")} == set(CORE_ROOMS)


DOC = '"""A module."""\n'


@pytest.mark.parametrize("sources, broken", [
    ({"kfin.api.x": DOC + "from kfin.core.read import facts\n", "kfin.core.read.facts": DOC},
     "api imports kfin.core.read"),
    ({"kfin.render.x": DOC + "from kfin.api.connection import Kube\n", "kfin.api.connection": DOC},
     "render imports kfin.api.connection"),
    ({"kfin.serve.x": DOC + "import kfin.commands.app\n", "kfin.commands.app": DOC}, "serve imports kfin.commands"),
    ({"kfin.mcp.x": DOC + "import kfin.commands.app\n", "kfin.commands.app": DOC}, "mcp imports kfin.commands"),
    ({"kfin.core.explain.causes.x": DOC + "from kfin.api.scan import CRDS\n", "kfin.api.scan": DOC},
     "causes imports kfin.api.scan"),
    # an arrow back up between core's rooms
    ({"kfin.core.read.x": DOC + "from kfin.core.explain import stuck\n", "kfin.core.explain.stuck": DOC},
     "read imports kfin.core.explain"),
    ({"kfin.core.explain.causes.x": DOC + "from kfin.core.explain.blocking import follow\n",
      "kfin.core.explain.blocking": DOC}, "causes imports kfin.core.explain.blocking"),
    ({"kfin.core.explain.x": DOC + "from kfin.core.predict.preflight import foresee\n",
      "kfin.core.predict.preflight": DOC}, "explain imports kfin.core.predict.preflight"),
    ({"kfin.core.predict.x": DOC + "from kfin.core.remove.plan import plan\n", "kfin.core.remove.plan": DOC},
     "predict imports kfin.core.remove.plan"),
    ({"kfin.core.remove.x": DOC + "from kfin.core.predict.preflight import foresee\n",
      "kfin.core.predict.preflight": DOC}, "remove imports kfin.core.predict.preflight"),
    ({"kfin.core.read.a": DOC + "def f():\n    from kfin.core.read import b\n", "kfin.core.read.b": DOC},
     "inside a function"),
    ({"kfin.core.read.a": DOC + "def f():\n    import json\n"}, "imports json inside a function"),
    ({"kfin.core.read.a": DOC + "from kfin.core.read.b import _helper\n", "kfin.core.read.b": DOC},
     "private _helper"),
    ({"kfin.core.read.a": DOC + "from kfin.core.read import b\n",
      "kfin.core.read.b": DOC + "from kfin.core.read import a\n"},
     "import circle: kfin.core.read.a -> kfin.core.read.b -> kfin.core.read.a"),
    ({"kfin.commands.app": DOC + 'COMMANDS = {"x": "kfin.commands.x"}\n',
      "kfin.commands.x": DOC + "from kfin.commands import app\n"}, "import circle"),
    ({"kfin.core.explain.a": DOC + 'PATH = "/api/v1/namespaces"\n'}, "builds a request path"),
    ({"kfin.core.read.a": "X = 1\n"}, "no docstring"),
])
def test_each_rule_fails_when_broken(sources, broken):
    found = violations(sources)
    assert any(broken in line for line in found), found


def test_what_the_rules_allow_passes():
    allowed = {
        "kfin.commands.x": DOC + "from kfin.core.explain import a\nfrom kfin.render import r\n",
        "kfin.core.explain.a": DOC + "from typing import TYPE_CHECKING\nfrom kfin.api import c\nif TYPE_CHECKING:\n"
                                     "    import networkx as nx\ndef f():\n    import networkx as nx\n"
                                     "from kfin.core.read import facts\nfrom kfin.core.explain.causes import k\n",
        "kfin.core.read.facts": DOC, "kfin.core.explain.causes.k": DOC + "from kfin.api.paths import resource_path\n",
        "kfin.api.paths": DOC,
        "kfin.core.remove.p": DOC + "from kfin.core.explain import a\n",
        "kfin.core.predict.q": DOC + "from kfin.core.explain import a\n",
        "kfin.api.c": DOC + 'from kfin.model import M\nPATH = "/api/v1"\n', "kfin.model": DOC,
        "kfin.render.r": DOC + "from kfin.core.explain import a\nfrom kfin.core.remove import p\n",
    }
    assert violations(allowed) == []
