"""Big inputs read from files: manifests given to `kfin preflight -f` (YAML, and a JSON List), and kfin stuck's table
of many stuck objects against its JSON. Each against a floor measured in the same run, so that the ratio, not the
seconds, is compared between machines and runs:

- manifests: a fresh Python that only parses the same file (yaml.safe_load_all with libyaml's CSafeLoader where
  PyYAML has it, json.load for the List): what reading the input costs at best;
- the table: the same `kfin stuck --from-snapshot` with -o json, which finds and explains the same objects.

Commands run as a user runs them, their output to a file (a pipe's layout: the table as wide as its rows).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

from bench import measure
from bench.tools import base_environment, kfin_command

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "examples" / "stuck-cluster.json"  # the cluster the manifests are checked against
PROPERTIES = "log.level=info\nlisten=:8080\nfeature.flags=alpha,beta\n"
SETTINGS = {f"key{index:02d}.properties": PROPERTIES for index in range(24)}


def configmap(index: int, data: dict) -> dict:
    name = f"settings-{index:07d}"
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": f"team-{index // 1000:03d}",
                         "labels": {"app.kubernetes.io/name": f"app-{index // 40:05d}",
                                    "app.kubernetes.io/part-of": "shop"},
                         "annotations": {"meta.helm.sh/release-name": f"app-{index // 40:05d}"}},
            "data": data}


def write_yaml(path: Path, megabytes: float) -> int:
    """YAML documents (ConfigMaps of about 2.5 kB, block style, as charts render them) up to `megabytes`;
    returns how many."""
    import yaml

    count, size = 0, 0
    with open(path, "w") as out:
        while size < megabytes * 2**20:
            text = "---\n" + yaml.safe_dump(configmap(count, SETTINGS), default_flow_style=False, sort_keys=False)
            out.write(text)
            size += len(text)
            count += 1
    return count


def write_list(path: Path, items: int) -> None:
    """A JSON List as `kubectl get -o json` writes it (indented), of small ConfigMaps."""
    with open(path, "w") as out:
        json.dump({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                   "items": [configmap(index, {"app.properties": "log.level=info\n"}) for index in range(items)]},
                  out, indent=4)


def write_stuck(path: Path, objects: int) -> None:
    """examples/stuck-cluster.json with `objects` more Databases stuck on the finalizer of a controller that is
    gone: one root cause holding them all, as after an operator is uninstalled first."""
    snapshot = json.loads(EXAMPLE.read_text())
    database = next(o for o in snapshot["objects"] if o["kind"] == "Database")
    for index in range(objects):
        more = copy.deepcopy(database)
        more["metadata"].update(name=f"orders-{index:06d}", uid=f"0287658f-beae-4486-8e28-{index:012d}")
        snapshot["objects"].append(more)
    path.write_text(json.dumps(snapshot))


FLOOR = {
    "yaml": "import sys, yaml\n"
            "loader = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)\n"
            "with open(sys.argv[1], 'rb') as f: print(sum(1 for _ in yaml.load_all(f, Loader=loader)))",
    "json": "import sys, json\nwith open(sys.argv[1], 'rb') as f: print(len(json.load(f)['items']))",
}


def _run(command: list[str], workdir: Path, name: str) -> dict:
    out, err = workdir / f"{name}.out", workdir / f"{name}.err"
    ran = measure.run(command, base_environment(), out, err)
    figures = {"wall": ran.wall, "peak_rss_mb": ran.peak_rss_mb, "exit_code": ran.exit_code,
               "output_bytes": out.stat().st_size}
    if ran.exit_code not in (0, 8):  # 8: the example snapshot's failed list, said
        figures["note"] = f"exit code {ran.exit_code}: {err.read_text()[-300:].strip()}"
    out.unlink(missing_ok=True)
    return figures


def preflight(workdir: Path, path: Path, floor: str, name: str) -> dict:
    """kfin preflight -f as a user runs it (its table), -o json, and the floor that only parses the file."""
    base = kfin_command() + ["preflight", "-f", str(path), "--from-snapshot", str(EXAMPLE)]
    figures = {"file_bytes": path.stat().st_size,
               "floor": _run([sys.executable, "-c", FLOOR[floor], str(path)], workdir, f"{name}-floor"),
               "table": _run(base, workdir, f"{name}-table"),
               "json": _run(base + ["-o", "json"], workdir, f"{name}-json")}
    for output in ("table", "json"):
        figures[output]["ratio_to_floor"] = figures[output]["wall"] / max(figures["floor"]["wall"], 1e-9)
    return figures


def measure_yaml(workdir: Path, megabytes: float) -> dict:
    path = workdir / "manifests.yaml"
    documents = write_yaml(path, megabytes)
    try:
        return dict(preflight(workdir, path, "yaml", "manifests-yaml"), documents=documents)
    finally:
        path.unlink()


def measure_list(workdir: Path, items: int) -> dict:
    path = workdir / "manifests-list.json"
    write_list(path, items)
    try:
        return dict(preflight(workdir, path, "json", "manifests-list"), items=items)
    finally:
        path.unlink()


def measure_table(workdir: Path, objects: int) -> dict:
    """kfin stuck -A's table against its -o json, of the same snapshot."""
    path = workdir / "stuck-many.json"
    write_stuck(path, objects)
    base = kfin_command() + ["stuck", "-A", "--from-snapshot", str(path)]
    try:
        figures = {"objects": objects, "json": _run(base + ["-o", "json"], workdir, "stuck-json"),
                   "table": _run(base, workdir, "stuck-table")}
    finally:
        path.unlink()
    figures["ratio"] = figures["table"]["wall"] / max(figures["json"]["wall"], 1e-9)
    return figures


def failed(results: dict) -> list[dict]:
    """The runs of these cases that did not answer (their notes)."""
    runs = [results[key][output] for key in ("manifests_yaml", "manifests_list", "stuck_table") if key in results
            for output in ("floor", "table", "json") if output in results[key]]
    return [run for run in runs if run.get("note")]


def report(results: dict) -> list[str]:
    """The Markdown of these cases (bench.report)."""
    parts: list[str] = []
    rows = []
    for key, what in (("manifests_yaml", "YAML manifests"), ("manifests_list", "a JSON List")):
        figures = results.get(key)
        if not figures:
            continue
        size = f"{figures.get('documents', figures.get('items', 0)):,}"
        mb = f"{figures['file_bytes'] / 2**20:.1f}"
        for output, label in (("floor", "parsing alone (floor)"), ("table", "kfin preflight -f"),
                              ("json", "kfin preflight -f -o json")):
            run = figures[output]
            ratio = "" if output == "floor" else f"{run['ratio_to_floor']:.1f}×"
            rows.append([what, size, mb, label, f"{run['wall']:.2f}", ratio, f"{run['peak_rss_mb']:.0f}",
                         run.get("note", "")])
    if rows:
        parts += ["### Manifests read by kfin preflight -f (bench/inputs.py)",
                  "Against examples/stuck-cluster.json; the floor is a fresh Python that only parses the file "
                  "(libyaml's CSafeLoader, json.load).",
                  _table(["input", "objects", "MB", "run", "wall s", "× floor", "peak RSS MB", "note"], rows)]
    table = results.get("stuck_table")
    if table:
        parts += [f"### kfin stuck's table of {table['objects']:,} stuck objects against its JSON (bench/inputs.py)",
                  "One root cause holds them all (a controller uninstalled first); output to a file (a pipe's "
                  "layout).",
                  _table(["run", "wall s", "× JSON", "peak RSS MB", "output MB"],
                         [[label, f"{table[key]['wall']:.2f}", f"{table[key]['wall'] / table['json']['wall']:.2f}×",
                           f"{table[key]['peak_rss_mb']:.0f}", f"{table[key]['output_bytes'] / 2**20:.1f}"]
                          for key, label in (("json", "kfin stuck -A -o json"), ("table", "kfin stuck -A"))])]
    return parts


def _table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows])
