"""The catalog of ecosystem finalizers as data (kfin/data/catalog.yaml): valid against its schema, listed by
`kfin catalog`, checked by `kfin catalog check`, and extended by users (catalog.d and --catalog) without code."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from kfin.core.read import catalog
from kfin.errors import ExitCode
from tests.runner import kfin
from tests.paths import PROJECT

ROOT = PROJECT
SNAPSHOT = str(ROOT / "examples" / "stuck-cluster.json")


def test_the_shipped_catalog_is_valid_and_every_entry_is_listed():
    checked = kfin("catalog", "check", str(ROOT / "kfin" / "data" / "catalog.yaml"))
    assert checked.code == ExitCode.OK and "valid, 49 entries" in checked.stdout
    listed = json.loads(kfin("catalog", "-o", "json").stdout)
    names = [e["name"] for e in listed["entries"]]
    assert len(names) == len(set(names)) == 49
    assert all(e["checkedAgainst"] and e["project"] and e["risk"] for e in listed["entries"])
    assert {"Argo CD", "Flux", "Crossplane", "cert-manager", "Karpenter", "Cluster API", "AWS Load Balancer Controller",
            "Istio", "Longhorn", "Rook", "Rancher (and Harvester)", "Velero", "COSI (kubernetes-sigs)",
            "Operator Lifecycle Manager (OLM)", "Strimzi", "KEDA", "Kueue", "Calico (Tigera operator)", "KubeVirt",
            "Prometheus Operator", "External Secrets Operator", "Karmada", "Config Connector (Google Cloud)",
            "AWS Controllers for Kubernetes (ACK)", "Karpenter (AWS provider)", "Karpenter (Azure provider)",
            "OpenShift Machine API", "HyperShift (hosted control planes)", "Knative Serving", "Tekton Chains",
            "Gateway API (kubernetes-sigs)", "Gardener"} <= {e["project"] for e in listed["entries"]}


def test_kfin_reads_the_shipped_catalog_as_its_yaml_says(tmp_path):
    """Issue 47: kfin reads the shipped catalog from kfin/data/catalog.json (JSON parses in a fraction of the YAML's
    12 ms), generated from catalog.yaml by scripts/generate_catalog.py. An edit of the YAML without regenerating
    fails here, and the entries kfin works with are those of the YAML, each naming the YAML as its source."""
    fresh = tmp_path / "catalog.json"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "generate_catalog.py"), str(fresh)], check=True, cwd=ROOT)
    committed = (ROOT / "kfin" / "data" / "catalog.json").read_text(encoding="utf-8")
    assert committed == fresh.read_text(encoding="utf-8"), (
        "kfin/data/catalog.json is out of date: python scripts/generate_catalog.py"
    )
    assert list(catalog.shipped()) == catalog.read_file(catalog.SHIPPED)  # validated against the schema too
    assert {e.source for e in catalog.shipped()} == {str(catalog.SHIPPED)}


def test_a_catalog_is_the_value_of_its_files_whatever_it_has_worked_out():
    """What a command's catalog has read and worked out is kept in it, but is not part of its value: one that has
    read its entries equals, and hashes as, a fresh one of the same files (it can stay a key while it works)."""
    worked = catalog.Catalog(("a.yaml",))
    key = {worked: "kept"}
    worked.remembered(("family", "example.com/x"), lambda: "found")
    assert worked == catalog.Catalog(("a.yaml",)) and worked != catalog.Catalog()
    assert key[catalog.Catalog(("a.yaml",))] == "kept" and key[worked] == "kept"


def test_an_entry_with_holders_and_signs_elsewhere_is_a_value_as_any_other():
    """Entries compare by every field, and hash although their holders and signs elsewhere are dicts (a Family
    holding one is a key, kfin.core.explain.causes.registry)."""
    entry = next(e for e in catalog.shipped() if e.holders)
    assert {entry: 1}[catalog.read_file(catalog.SHIPPED)[catalog.shipped().index(entry)]] == 1  # read twice: equal
    assert entry != replace(entry, holders=())


def test_every_shipped_entry_says_what_it_guards_outside_the_cluster(monkeypatch):
    """Issue 44: whether forcing a finalizer leaves infrastructure behind (a cloud load balancer, a disk, a bucket,
    a DNS record, a VM) is part of every shipped entry: a text naming it, or false; each checked against a
    tagged version (or, for a project that tags none, a branch and commit)."""
    raw = yaml.safe_load((ROOT / "kfin" / "data" / "catalog.yaml").read_text())["entries"]
    assert all("infrastructure" in e for e in raw), [e["name"] for e in raw if "infrastructure" not in e]
    guarded = {e["name"]: e["infrastructure"] for e in raw if e["infrastructure"] is not False}
    assert {"crossplane-managed", "karpenter", "cluster-api", "aws-load-balancer-controller", "config-connector",
            "aws-controllers-k8s", "capi-provider-aws", "external-secrets-push",
            "openshift-machine-api"} <= set(guarded)
    assert all(isinstance(what, str) and what for what in guarded.values())
    assert not {"argocd-application", "keda", "kueue", "prometheus-operator", "gateway-api"} & set(guarded)
    listed = {e["name"]: e for e in json.loads(kfin("catalog", "-o", "json").stdout)["entries"]}
    assert listed["config-connector"]["infrastructure"] == "the Google Cloud resource it represents"
    assert listed["keda"]["infrastructure"] is False
    # kfin catalog, as people read it: each entry with what it guards outside and the version it was read at
    monkeypatch.setenv("COLUMNS", "120")  # a block per entry at this width
    shown = " ".join(kfin("catalog").stdout.split())
    assert "GUARDS OUTSIDE: the Google Cloud resource it represents CHECKED AGAINST: v1.155.1 (pkg/k8s/constants.go, " \
           "operator/pkg/k8s/constants.go)" in shown


def test_a_catalog_entry_with_a_wrong_infrastructure_value_is_refused(tmp_path):
    bad = tmp_path / "acme.yaml"
    entry = json.loads(json.dumps(ACME))
    entry["entries"][0]["infrastructure"] = True  # a text naming what, or false: true says nothing of what
    bad.write_text(yaml.safe_dump(entry))
    result = kfin("catalog", "check", str(bad))
    assert result.code == ExitCode.USAGE and "entries[0].infrastructure" in result.stderr
    entry["entries"][0]["infrastructure"] = "the Acme cloud database"
    bad.write_text(yaml.safe_dump(entry))
    assert kfin("catalog", "check", str(bad)).code == ExitCode.OK


def test_the_catalog_is_readable_in_a_pipe(monkeypatch):
    """Issue 41: `kfin catalog | less` was laid out 544 columns wide (every cell on one line); in a pipe it is laid
    out for $COLUMNS, or 120, as on a terminal: every entry named, every finalizer there, no line wider."""
    monkeypatch.delenv("COLUMNS", raising=False)
    piped = kfin("catalog").stdout
    listed = json.loads(kfin("catalog", "-o", "json").stdout)["entries"]
    assert max(len(line) for line in piped.splitlines()) <= 120
    flat = " ".join(piped.split())
    assert all(e["name"] in flat and all(f in flat for f in e["finalizers"]) for e in listed)
    monkeypatch.setenv("COLUMNS", "400")
    assert max(len(line) for line in kfin("catalog").stdout.splitlines()) <= 400


def test_a_malformed_catalog_is_one_line_naming_the_file_and_the_field(tmp_path):
    bad = tmp_path / "acme.yaml"
    bad.write_text("apiVersion: kfin.dev/v1\nkind: FinalizerCatalog\nentries:\n- name: acme\n  project: Acme\n"
                   "  finalizers: [acme.io/x]\n  controller: {name: acme, workloads: [5]}\n  protects: a\n"
                   "  onDeletion: b\n  risk: c\n  fix: d\n")
    result = kfin("catalog", "check", str(bad))
    assert result.code == ExitCode.USAGE and "Traceback" not in result.stderr
    assert result.stderr.strip() == f"error: catalog {bad}: entries[0].controller.workloads[0]: 5 is not of type " \
                                    "'string'"
    not_yaml = tmp_path / "broken.yaml"
    not_yaml.write_text("entries: [\n")
    assert kfin("catalog", "check", str(not_yaml)).code == ExitCode.USAGE


ACME = {"apiVersion": "kfin.dev/v1", "kind": "FinalizerCatalog", "entries": [{
    "name": "acme-databases", "project": "Acme DB operator", "checkedAgainst": "acme-operator v2",
    "finalizers": ["acme.io/database-cleanup"],
    "controller": {"name": "the Acme DB operator", "workloads": ["acme-operator"], "namespaces": ["acme-system"]},
    "protects": "a Database until its cloud database is dropped",
    "onDeletion": "drops the cloud database and its backups",
    "risk": "removing it leaves the Acme cloud database running and billed",
    "fix": "reinstall the Acme operator (helm install acme-operator)"}]}


def test_a_user_catalog_changes_the_explanation(tmp_path, monkeypatch):
    args = ("explain", "databases.acme.io", "orders", "-n", "team-a", "-o", "json", "--from-snapshot", SNAPSHOT)
    before = json.loads(kfin(*args).stdout)["findings"][0]
    assert before["family"] == "custom"
    config = tmp_path / "config"
    (config / "kfin" / "catalog.d").mkdir(parents=True)
    (config / "kfin" / "catalog.d" / "acme.yaml").write_text(yaml.safe_dump(ACME))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    after = json.loads(kfin(*args).stdout)["findings"][0]
    assert after["family"] == "acme-databases" and after["risk"] == ACME["entries"][0]["risk"]
    assert after["controller"] == "the Acme DB operator" and after["fix"] == ACME["entries"][0]["fix"]
    assert any("catalog: Acme DB operator, checked against acme-operator v2" in e for e in after["evidence"])
    # --catalog FILE wins over catalog.d, by name
    override = tmp_path / "mine.yaml"
    mine = json.loads(json.dumps(ACME))
    mine["entries"][0]["risk"] = "my own words"
    override.write_text(yaml.safe_dump(mine))
    again = json.loads(kfin("--catalog", str(override), *args).stdout)["findings"][0]
    assert again["risk"] == "my own words"
    listed = json.loads(kfin("--catalog", str(override), "catalog", "-o", "json").stdout)["entries"]
    assert [e["source"] for e in listed if e["name"] == "acme-databases"] == [str(override)]


def test_a_broken_user_catalog_stops_commands_with_one_line(tmp_path, monkeypatch):
    (tmp_path / "kfin" / "catalog.d").mkdir(parents=True)
    (tmp_path / "kfin" / "catalog.d" / "x.yaml").write_text("apiVersion: kfin.dev/v1\nkind: FinalizerCatalog\n"
                                                            "entries: [{name: Bad_Name}]\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    result = kfin("stuck", "-A", "--from-snapshot", SNAPSHOT)
    assert result.code == ExitCode.USAGE and result.stderr.startswith("error: catalog ")
    assert "x.yaml: entries[0]" in result.stderr and len(result.stderr.strip().splitlines()) == 1


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab*?[]!-./", max_size=8), st.text(alphabet="ab*?[]!-./", max_size=8))
def test_finalizer_patterns_match_as_fnmatch_does(name, pattern):
    """Plain names are compared as strings (no regular expression compiled); wildcards still as fnmatch."""
    import fnmatch

    from kfin.util.globs import glob_match

    assert glob_match(name, pattern) == fnmatch.fnmatchcase(name, pattern)


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet="ab.*", max_size=10), st.text(alphabet="ab.*", max_size=8))
def test_patterns_whose_only_wildcard_is_a_star_match_as_fnmatch_does_without_it(name, pattern):
    """Issue 47: `k8s.io/*`, `*.k8s.io/*`, `pre-delete-finalizer.argocd.argoproj.io/*`: matched piece by piece,
    never compiled into a regular expression (fnmatch's cost a process's first explanation 1.4 ms)."""
    import fnmatch

    from kfin.util import globs

    expected = fnmatch.fnmatchcase(name, pattern)
    original = globs.fnmatch.fnmatchcase
    globs.fnmatch.fnmatchcase = lambda *_: pytest.fail("compiled a pattern with no wildcard but *")
    try:
        assert globs.glob_match(name, pattern) == expected
    finally:
        globs.fnmatch.fnmatchcase = original


def test_an_elsewhere_sign_is_checked_against_the_schema(tmp_path):
    """Issue 44, item 3: where else a controller may run is said with one sign kfin can read (an API group or a
    node label) and its source."""
    entry = json.loads(json.dumps(ACME))
    entry["entries"][0]["elsewhere"] = [{"where": "Acme Cloud's managed control plane", "apiGroup": "acme.cloud",
                                         "nodeLabel": "acme.cloud/managed", "source": "Acme's docs"}]
    bad = tmp_path / "acme.yaml"
    bad.write_text(yaml.safe_dump(entry))
    result = kfin("catalog", "check", str(bad))
    assert result.code == ExitCode.USAGE and "entries[0].elsewhere[0]" in result.stderr
    del entry["entries"][0]["elsewhere"][0]["nodeLabel"]
    bad.write_text(yaml.safe_dump(entry))
    assert kfin("catalog", "check", str(bad)).code == ExitCode.OK
    listed = json.loads(kfin("--catalog", str(bad), "catalog", "-o", "json").stdout)["entries"]
    assert [e["elsewhere"] for e in listed if e["name"] == "acme-databases"] == [entry["entries"][0]["elsewhere"]]


def test_every_shipped_entry_as_kfin_catalog_gives_it_is_a_valid_catalog_of_ones_own(tmp_path):
    """`kfin catalog -o yaml` gives entries a user copies into catalog.d: each must read back as it was."""
    import yaml

    from kfin.core.read import catalog as finalizer_catalog
    entries = [e.to_dict() for e in finalizer_catalog.read_file(finalizer_catalog.SHIPPED)]
    for entry in entries:
        entry.pop("source")
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "kfin.dev/v1", "kind": "FinalizerCatalog", "entries": entries}))
    again = finalizer_catalog.read_file(path)
    assert [e.to_dict() | {"source": ""} for e in again] == [e | {"source": ""} for e in entries]


def test_kfin_catalog_name_shows_one_entry_by_its_name_or_a_finalizer_it_covers(tmp_path):
    """`kfin catalog NAME` was 'No such command': an entry's name, or a finalizer as objects carry it (matched by
    the entry's patterns, as explanations match them), shows that entry alone, in each of catalog's formats."""
    listed = {e["name"]: e for e in json.loads(kfin("catalog", "-o", "json").stdout)["entries"]}
    by_name = kfin("catalog", "argocd-application")
    assert by_name.code == ExitCode.OK, by_name
    lines = by_name.stdout.splitlines()
    assert lines[0].split() == ["Name:", "argocd-application"] and lines[1].split() == ["Project:", "Argo", "CD"]
    assert any(line.startswith("Risk:") and "leaves every resource it deployed running" in line for line in lines)
    for args in (["catalog", "argocd-application", "-o", "json"],
                 ["catalog", "-o", "json", "resources-finalizer.argocd.argoproj.io/foreground"]):
        one = kfin(*args)
        assert one.code == ExitCode.OK, one
        assert json.loads(one.stdout)["entries"] == [listed["argocd-application"]]
    # a pattern of the entry (pre-delete-finalizer.argocd.argoproj.io/*) matches the finalizer an object carries
    hooks = json.loads(kfin("catalog", "pre-delete-finalizer.argocd.argoproj.io/cleanup", "-o", "json").stdout)
    assert [e["name"] for e in hooks["entries"]] == ["argocd-hooks"]
    # -o yaml reads back as a catalog of one's own, once the file it came from is left out (as the whole listing)
    shown = yaml.safe_load(kfin("catalog", "flux", "-o", "yaml").stdout)
    [entry] = shown["entries"]
    assert entry.pop("source") == str(ROOT / "kfin" / "data" / "catalog.yaml")
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump(shown))
    checked = kfin("catalog", "check", str(mine))
    assert checked.code == ExitCode.OK and "valid, 1 entry (flux)" in checked.stdout, checked


def test_kfin_catalog_name_shows_a_control_plane_finalizer_as_kfin_knows_it():
    table = kfin("catalog", "kubernetes.io/pvc-protection")
    assert table.code == ExitCode.OK, table
    assert "kube-controller-manager (pvc-protection controller)" in table.stdout
    assert "a claim still used by a Pod" in table.stdout
    document = json.loads(kfin("catalog", "kubernetes.io/pvc-protection", "-o", "json").stdout)
    assert document["kind"] == "BuiltInFinalizer" and document["finalizer"] == "kubernetes.io/pvc-protection"
    assert document["removedBy"] == "kube-controller-manager (pvc-protection controller)"


def test_kfin_catalog_of_an_unknown_name_is_one_line_with_the_nearest_entry():
    typo = kfin("catalog", "argocd-aplication")
    assert typo.code == ExitCode.NOT_FOUND and typo.stdout == ""
    assert typo.stderr.splitlines() == ['error: no catalog entry "argocd-aplication": neither an entry\'s name nor a '
                                        'finalizer one covers (did you mean argocd-application?)']
    finalizer = kfin("catalog", "resources-finalizer.argocd.argoproj.io/foregruond")
    assert "did you mean resources-finalizer.argocd.argoproj.io/foreground?" in finalizer.stderr
    unknown = kfin("catalog", "example.com/mine", "-o", "json")
    assert unknown.code == ExitCode.NOT_FOUND and unknown.stdout == "" and len(unknown.stderr.splitlines()) == 1
