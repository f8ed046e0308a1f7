"""`kfin stuck --from-snapshot` of a large `kubectl get -o json` List: peak RSS against the file's size.

The file is written here, item by item, as kubectl writes a List (keys sorted, so `kind` after `items`):
ConfigMaps of about 850 bytes with labels, annotations and managedFields, 1% Terminating with a finalizer.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench import measure
from bench.load import HOLD, is_held
from bench.tools import base_environment, kfin_command

FILLER = "log.level=info\nlisten=:8080\nfeature.flags=alpha,beta\n" * 3


def write_list(path: Path, count: int) -> int:
    """Write the List; returns the number of Terminating items."""
    held = 0
    with open(path, "w") as out:
        out.write('{\n    "apiVersion": "v1",\n    "items": [\n')
        for index in range(count):
            name = f"settings-{index:07d}"
            meta = {"name": name, "namespace": f"team-{index // 1000:03d}", "uid": f"7c3e{index:08x}-0000-4000-8000-00000000{index % 9999:04d}",
                    "resourceVersion": str(1000 + index), "creationTimestamp": "2026-11-01T10:00:00Z",
                    "labels": {"app.kubernetes.io/name": f"app-{index // 40:05d}", "app.kubernetes.io/part-of": "shop"},
                    "annotations": {"meta.helm.sh/release-name": f"app-{index // 40:05d}"},
                    "managedFields": [{"manager": "helm", "operation": "Update", "apiVersion": "v1",
                                       "time": "2026-11-01T10:00:00Z", "fieldsType": "FieldsV1",
                                       "fieldsV1": {"f:data": {".": {}, "f:app.properties": {}},
                                                    "f:metadata": {"f:labels": {".": {}}}}}]}
            if is_held(name):
                held += 1
                meta.update(finalizers=[HOLD], deletionTimestamp="2026-11-20T10:00:00Z", deletionGracePeriodSeconds=0)
            item = {"apiVersion": "v1", "data": {"app.properties": FILLER}, "kind": "ConfigMap", "metadata": meta}
            text = json.dumps(item, indent=4, sort_keys=True).replace("\n", "\n        ")
            out.write("        " + text + (",\n" if index < count - 1 else "\n"))
        out.write('    ],\n    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n')
    return held


def measure_list(workdir: Path, count: int) -> dict:
    path = workdir / "kubectl-list.json"
    held = write_list(path, count)
    out = workdir / "list-stuck.json"
    ran = measure.run(kfin_command() + ["stuck", "--from-snapshot", str(path), "-o", "json"], base_environment(),
                      out, workdir / "list-stuck.err")
    found = len(json.loads(out.read_text())["items"]) if ran.exit_code == 0 else -1
    figures = {"objects": count, "file_bytes": path.stat().st_size, "wall": ran.wall, "peak_rss_mb": ran.peak_rss_mb,
               "found": found, "expected": held, "exit_code": ran.exit_code}
    path.unlink()
    out.unlink(missing_ok=True)
    return figures
