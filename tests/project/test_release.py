"""Issue 28: a release that installs anywhere. The sdist and the wheel are built as `python -m build` builds
them (offline here: --no-isolation, with the test extra's setuptools), `twine check` accepts both, and the
wheel, installed into a fresh virtual environment, runs `kfin --version` and a scan of the shipped snapshot
from its own files."""

import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

import kfin
from tests.paths import PROJECT

ROOT = PROJECT


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    [wheel] = out.glob("*.whl")
    [sdist] = out.glob("*.tar.gz")
    return wheel, sdist


def test_twine_accepts_the_sdist_and_the_wheel(built):
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, built)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.count("PASSED") == 2, done.stdout + done.stderr


def test_the_wheel_carries_kfins_data_licence_and_metadata(built):
    wheel, sdist = built
    assert wheel.name == f"kfin-{kfin.__version__}-py3-none-any.whl"
    names = zipfile.ZipFile(wheel).namelist()
    assert {"kfin/data/catalog.yaml", "kfin/data/catalog.json"} <= set(names) and any(n.endswith("/licenses/LICENSE") for n in names)
    assert f"kfin-{kfin.__version__}.data/data/share/man/man1/kfin.1" in names  # `man kfin` once installed
    metadata = zipfile.ZipFile(wheel).read(f"kfin-{kfin.__version__}.dist-info/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata and "Classifier: Environment :: Console" in metadata
    assert "Description-Content-Type: text/markdown" in metadata and "# kfin" in metadata
    entry_points = zipfile.ZipFile(wheel).read(f"kfin-{kfin.__version__}.dist-info/entry_points.txt").decode()
    assert "kfin = kfin.commands.app:main" in entry_points and "kubectl-kfin = " in entry_points
    members = tarfile.open(sdist).getnames()
    assert any(m.endswith("/LICENSE") for m in members) and any(m.endswith("/README.md") for m in members)


def test_the_installed_wheel_runs_from_a_fresh_environment(built, tmp_path):
    wheel, _ = built
    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    # kfin's dependencies come from the test environment (no network here); kfin itself only from the wheel:
    # a path in a .pth file is added to sys.path, but the .pth files found there (the editable install) are not run
    site = next((env_dir / "lib").glob("python3*/site-packages"))
    outer = next(p for p in sys.path if p.endswith("site-packages"))
    (site / "zz-test-dependencies.pth").write_text(outer + "\n")
    where = subprocess.run([str(python), "-c", "import kfin; print(kfin.__file__)"], capture_output=True, text=True,
                           cwd=tmp_path, timeout=60)
    assert where.stdout.startswith(str(site)), where.stdout + where.stderr
    version = subprocess.run([str(env_dir / "bin" / "kfin"), "--version"], capture_output=True, text=True,
                             cwd=tmp_path, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith(f"kfin {kfin.__version__}"), version
    scan = subprocess.run([str(env_dir / "bin" / "kfin"), "stuck", "-o", "name", "--from-snapshot",
                           str(ROOT / "examples" / "stuck-cluster.json")], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert scan.returncode == 8 and "persistentvolumeclaim/data-postgres-0" in scan.stdout.split(), scan
    plugin = subprocess.run([str(env_dir / "bin" / "kubectl-kfin"), "--version"], capture_output=True, text=True,
                            cwd=tmp_path, timeout=60)
    assert plugin.returncode == 0
