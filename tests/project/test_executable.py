"""The single-file executable and its krew manifest (issue 28): built by scripts/build_executable.py with
PyInstaller, it runs without the project's Python environment, and kubectl runs it as a plugin
(`kubectl kfin ...`, found on PATH as kubectl-kfin); the manifest follows krew's format
(krew.sigs.k8s.io/docs/developer-guide/plugin-manifest and krew's validation: name, v-prefixed semantic
version, https URI, sha256 of the archive, bin, a platform selector)."""

import fcntl
import hashlib
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

import kfin
from bench.tools import installed_command
from tests.paths import PROJECT

ROOT = PROJECT
KUBECTL = installed_command("kubectl")
URI = "https://downloads.example/kfin/releases/v0/kfin_linux_amd64.tar.gz"


def session_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the whole pytest session: under pytest-xdist each worker's temporary folder is one of its
    (popen-gwN), without workers it is the session's own."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """The executable, built once per pytest session (two minutes of a core): the first worker to need it builds it
    while holding a lock in the session's folder, the others wait on the lock and take its build, or its failure."""
    pytest.importorskip("PyInstaller", reason="PyInstaller not installed (pip install -e '.[test]')")
    shared = session_folder(tmp_path_factory)
    out, failed = shared / "executable", shared / "executable-build-failed"
    with (shared / "executable.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if failed.exists():
            pytest.fail(failed.read_text())
        if not (out / "kfin.yaml").exists():  # the build script's last file
            try:
                done = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_executable.py"), "--uri", URI,
                                       "--out", str(out)], capture_output=True, text=True, timeout=600)
                why = done.stdout[-2000:] + done.stderr[-2000:] if done.returncode else ""
            except subprocess.TimeoutExpired as timeout:
                why = str(timeout)
            if why:
                failed.write_text(why)
                pytest.fail(why)
    return out


def outside_any_python(out: Path) -> dict:
    """An environment with neither the project's virtual environment nor its sources importable."""
    path = os.pathsep.join([str(out), *(p for p in os.environ["PATH"].split(os.pathsep) if ".venv" not in p)])
    return {"PATH": path, "HOME": str(out), "LANG": "C.UTF-8"}


def test_the_executable_runs_without_the_projects_python(built, tmp_path):
    env = outside_any_python(built)
    version = subprocess.run([str(built / "kubectl-kfin"), "--version"], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith(f"kfin {kfin.__version__}"), version
    scan = subprocess.run([str(built / "kubectl-kfin"), "stuck", "-o", "name", "--from-snapshot",
                           str(ROOT / "examples" / "stuck-cluster.json")], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=60)
    assert scan.returncode == 8 and "database.acme.io/orders" in scan.stdout.split(), scan


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed (pip install -e '.[test]')")
def test_kubectl_runs_it_as_a_plugin(built, tmp_path):
    env = outside_any_python(built)
    listed = subprocess.run([KUBECTL, "plugin", "list"], capture_output=True, text=True, env=env, timeout=60)
    assert str(built / "kubectl-kfin") in listed.stdout, listed.stdout + listed.stderr
    done = subprocess.run([KUBECTL, "kfin", "stuck", "--from-snapshot", str(ROOT / "examples" / "stuck-cluster.json"),
                           "--verdict", "orphaned", "-o", "name"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=60)
    assert done.returncode == 8 and done.stdout == "database.acme.io/orders\n", done


def test_the_executable_packs_kfin_and_none_of_the_test_tools(built):
    """The test environment it is built from holds pytest, hypothesis and mypy, which installed packages' hooks would
    pull in (pydantic's plugins): a download of several megabytes more that kfin never imports."""
    from PyInstaller.archive.readers import CArchiveReader

    packed = CArchiveReader(str(built / "kubectl-kfin"))
    modules = {name.split(".")[0] for name in packed.open_embedded_archive("PYZ.pyz").toc}
    assert {"kfin", "kubernetes", "rich", "networkx", "mcp"} <= modules
    assert not modules & {"pytest", "_pytest", "hypothesis", "mypy", "setuptools", "pip"}, sorted(modules)


def test_the_krew_manifest_follows_krews_format(built):
    plugin = yaml.safe_load((built / "kfin.yaml").read_text())
    assert plugin["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2" and plugin["kind"] == "Plugin"
    assert plugin["metadata"]["name"] == "kfin"
    spec = plugin["spec"]
    assert re.fullmatch(r"v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?", spec["version"]) and spec["version"] == f"v{kfin.__version__}"
    assert spec["shortDescription"] and len(spec["shortDescription"]) <= 80 and spec["homepage"].startswith("https://")
    [platform] = spec["platforms"]
    assert platform["selector"]["matchLabels"]["os"] in ("linux", "darwin")
    assert platform["uri"] == URI and platform["bin"] == "kubectl-kfin"
    archive = built / Path(URI).name if (built / Path(URI).name).exists() else next(built.glob("kfin_*.tar.gz"))
    assert platform["sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert set(tarfile.open(archive).getnames()) == {"kubectl-kfin", "LICENSE"}
    assert {f["from"] for f in platform["files"]} == {"kubectl-kfin", "LICENSE"}
