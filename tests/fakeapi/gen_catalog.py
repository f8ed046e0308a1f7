"""Regenerate builtin_resources.json from the captures of a real kube-apiserver.

The fake serves discovery for built-in resources exactly as the captured server did:
core v1 and the group list verbatim, and each group version's APIResourceList derived
from the captured aggregated discovery (the legacy form the fake serves holds the same facts).

    python tests/fakeapi/gen_catalog.py ../shared/k8s-reference
"""

import json
import sys
from pathlib import Path


def _body(reference: Path, name: str) -> dict:
    return json.loads((reference / name).read_text())["response"]["body"]


def legacy_resources(aggregated_version: dict) -> list[dict]:
    """Turn one apidiscovery.k8s.io/v2 version entry into APIResourceList.resources."""
    out = []
    for r in aggregated_version["resources"]:
        entry = {
            "name": r["resource"],
            "singularName": r.get("singularResource", ""),
            "namespaced": r["scope"] == "Namespaced",
            "kind": r["responseKind"]["kind"],
            "verbs": r["verbs"],
        }
        if r.get("shortNames"):
            entry["shortNames"] = r["shortNames"]
        if r.get("categories"):
            entry["categories"] = r["categories"]
        out.append(entry)
        for sub in r.get("subresources") or []:
            kind = sub["responseKind"]
            s = {"name": f"{r['resource']}/{sub['subresource']}", "singularName": "",
                 "namespaced": entry["namespaced"]}
            if kind.get("group"):
                s["group"], s["version"] = kind["group"], kind["version"]
            s["kind"] = kind["kind"]
            s["verbs"] = sub["verbs"]
            out.append(s)
    return sorted(out, key=lambda e: e["name"])


def build(reference: Path) -> dict:
    aggregated = _body(reference, "06-apis-aggregated.json")
    group_versions = {}
    for group in aggregated["items"]:
        for version in group["versions"]:
            gv = f"{group['metadata']['name']}/{version['version']}"
            group_versions[gv] = legacy_resources(version)
    core = _body(reference, "03-api-v1.json")
    return {
        "version": _body(reference, "01-version.json"),
        "core": [{k: v for k, v in r.items() if k != "storageVersionHash"} for r in core["resources"]],
        "groups": _body(reference, "04-apis.json")["groups"],
        "groupVersions": group_versions,
    }


if __name__ == "__main__":
    ref = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[3] / "shared" / "k8s-reference")
    out = Path(__file__).with_name("builtin_resources.json")
    out.write_text(json.dumps(build(ref), indent=1, sort_keys=False) + "\n")
    print(f"wrote {out}")
