"""Build kfin as one executable that needs no Python on the target (PyInstaller), its krew archive, and the
krew manifest for it.

    python scripts/build_executable.py --uri https://RELEASES/kfin_linux_amd64.tar.gz [--out dist/]

writes OUT/kubectl-kfin (the executable), OUT/kfin_OS_ARCH.tar.gz (it and LICENSE, as krew installs it) and
OUT/kfin.yaml (the krew manifest: the archive's URI as given and its sha256). The executable is built for the
machine it runs on: run it on Linux for linux/amd64, on a Mac for darwin (then add that platform to one
manifest). It is also `kfin` itself: copy or link it under that name.
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kfin import __version__  # noqa: E402  (after the path: run from a checkout)

# Test and build tools that PyInstaller's hooks would pack because installed packages mention them (pydantic's mypy
# and hypothesis plugins, pytest's, setuptools' run-time hook): kfin never imports them. Smaller, and built faster.
NOT_PACKED = "mypy hypothesis pytest _pytest setuptools pkg_resources distutils _distutils_hack pip".split()
ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def build(out: Path) -> Path:
    """The one-file executable: every kfin module (commands are imported by name), its data and metadata."""
    with tempfile.TemporaryDirectory() as work:
        entry = Path(work) / "kubectl_kfin.py"
        entry.write_text("from kfin.commands.app import main\n\nmain()\n")
        subprocess.run(
            [sys.executable, "-m", "PyInstaller", "--onefile", "--name", "kubectl-kfin", "--paths", str(ROOT),
             "--collect-submodules", "kfin", "--collect-data", "kfin", "--copy-metadata", "kfin",
             "--distpath", str(out), "--workpath", str(Path(work) / "build"), "--specpath", work,
             "--log-level", "ERROR", "--noconfirm", *(f"--exclude-module={name}" for name in NOT_PACKED), str(entry)],
            check=True,
        )
    return out / "kubectl-kfin"


def archive(executable: Path, out: Path, os_name: str, arch: str) -> Path:
    path = out / f"kfin_{os_name}_{arch}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.add(executable, arcname="kubectl-kfin")
        tar.add(ROOT / "LICENSE", arcname="LICENSE")
    return path


def manifest(archive_path: Path, uri: str, os_name: str, arch: str) -> dict:
    """krew's Plugin manifest (krew.sigs.k8s.io/docs/developer-guide/plugin-manifest)."""
    return {
        "apiVersion": "krew.googlecontainertools.github.com/v1alpha2",
        "kind": "Plugin",
        "metadata": {"name": "kfin"},
        "spec": {
            "version": f"v{__version__}",
            "homepage": uri.rsplit("/releases/", 1)[0] if "/releases/" in uri else uri.rsplit("/", 1)[0],
            "shortDescription": "Find why objects are stuck in Terminating; unstick them safely",
            "description": (
                "kfin finds every object stuck in Terminating, names the finalizer that blocks it, what it\n"
                "protects and what still holds it, follows the chain to its root cause, and removes a\n"
                "finalizer only with a guarded, race-safe, recorded patch.\n"
            ),
            "caveats": "Nothing changes without --confirm. Try: kubectl kfin stuck -A\n",
            "platforms": [
                {
                    "selector": {"matchLabels": {"os": os_name, "arch": arch}},
                    "uri": uri,
                    "sha256": hashlib.sha256(archive_path.read_bytes()).hexdigest(),
                    "bin": "kubectl-kfin",
                    "files": [{"from": "kubectl-kfin", "to": "."}, {"from": "LICENSE", "to": "."}],
                }
            ],
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uri", required=True, help="where the archive will be downloaded from (https)")
    parser.add_argument("--out", default=str(ROOT / "dist"), help="output folder (dist/)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os_name, arch = platform.system().lower(), ARCH.get(platform.machine().lower(), platform.machine().lower())
    executable = build(out)
    packed = archive(executable, out, os_name, arch)
    (out / "kfin.yaml").write_text(yaml.safe_dump(manifest(packed, args.uri, os_name, arch), sort_keys=False))
    print(f"{executable}\n{packed}\n{out / 'kfin.yaml'}")


if __name__ == "__main__":
    main()
