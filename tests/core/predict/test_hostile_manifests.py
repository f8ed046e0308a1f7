"""Manifests nobody vetted, read by `kfin preflight -f` (and kfin delete -f, kfin mcp's preflight, a Helm record's
manifest): each malformed shape is one line and exit 2 naming the file and the object's place in it; size, depth
and YAML alias expansion are bounded (kfin.util.documents), a directory's FIFO or device is refused, and names,
namespaces and kinds are checked as the API server checks them before anything is sent."""

import io
import json
import os
import sys
import threading
from pathlib import Path

import pytest

from kfin.core.predict import manifests
from kfin.errors import ExitCode, UsageError
from kfin.util.documents import MAX_ALIAS_ENTRIES, MAX_BYTES, MAX_DEPTH
from tests.runner import kfin
from tests.paths import PROJECT

SNAPSHOT = str(PROJECT / "examples" / "stuck-cluster.json")
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: team-a}\n"


def preflight(*paths: str):
    files = [arg for path in paths for arg in ("-f", path)]
    return kfin("preflight", *files, "--from-snapshot", SNAPSHOT, "-o", "json")


def refused(result, *said: str) -> str:
    """Exit 2 and one line on stderr, `error: ...`, that says each of `said`."""
    lines = result.stderr.strip().splitlines()
    assert result.code == ExitCode.USAGE, result
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.stderr, result.stderr
    for part in said:
        assert part in lines[0], lines[0]
    return lines[0]


def read_as_kubectl(result, *names: str) -> None:
    """The manifests were read: the teardown names `names`, in that order (the snapshot has none of them)."""
    assert result.code in (ExitCode.OK, ExitCode.PARTIAL) and "error:" not in result.stderr, result
    assert [step["object"]["name"] for step in json.loads(result.stdout)["steps"]] == list(names)


def write(tmp_path: Path, name: str, content: str | bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(path)


# ----- malformed shapes: exit 2 naming the item, never exit 70 ---------------------------------------------------
@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: foo\n", 'm.yaml: metadata is the text "foo", not a map'),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: [1]\n", "metadata is a list, not a map"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [1, 2]}\n", "metadata.name is a list, not a string"),
        ("apiVersion: v1\nkind: {a: b}\nmetadata: {name: x}\n", "kind is a map, not a string"),
        ("apiVersion: 1\nkind: ConfigMap\nmetadata: {name: x}\n", "apiVersion is a number, not a string"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: true}\n", "metadata.namespace is true or"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, annotations: foo}\n", "metadata.annotations is not"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, annotations: {a: 1}}\n", "a map of strings to strings"),
        ("- 5\n", "m.yaml: [0]: it is a number, not an object"),
        # the item is named: its document, its place in a List
        (CONFIGMAP + "---\n" + CONFIGMAP.replace("name: x", "name: {a: 1}"), "document 2: metadata.name is a map"),
        (
            "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"
            "- {apiVersion: [v1], kind: ConfigMap, metadata: {name: b}}\n",
            "m.yaml: items[1]: apiVersion is a list, not a string",
        ),
    ],
)
def test_a_malformed_object_is_one_line_naming_it(tmp_path, text, said):
    refused(preflight(write(tmp_path, "m.yaml", text)), said)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"caf\xe9", "it is not UTF-8 text (byte 3 cannot be decoded)"),  # Latin-1
        (b"\x7fELF\x02\x01\x01\x00\xff\xfe\x00", "it is not UTF-8 text"),  # binary
        (b"\xff\xfea\x00\x00\xd8", "it is not UTF-16 text"),  # a UTF-16 mark, then half a character
    ],
)
def test_a_file_that_is_not_text_is_refused(tmp_path, content, said):
    refused(preflight(write(tmp_path, "m.yaml", content)), "error reading", said)


def test_utf16_with_its_byte_order_mark_is_read_as_kubectl_reads_it(tmp_path):
    """cli-runtime's FileVisitor reads through unicode.BOMOverride: UTF-16 with a BOM, either order, and UTF-8's."""
    little = write(tmp_path, "le.yaml", CONFIGMAP.encode("utf-16"))
    big = write(tmp_path, "be.yaml", b"\xfe\xff" + CONFIGMAP.replace("name: x", "name: y").encode("utf-16-be"))
    marked = write(tmp_path, "u8.yaml", b"\xef\xbb\xbf" + CONFIGMAP.replace("name: x", "name: z").encode())
    read_as_kubectl(preflight(little, big, marked), "x", "y", "z")


# ----- depth -----------------------------------------------------------------------------------------------------
def nested_list(depth: int) -> str:
    """A ConfigMap inside lists: `depth` maps and lists deep in all (the ConfigMap and its metadata are two)."""
    return "- " * (depth - 2) + "{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n"


def test_documents_nest_at_most_max_depth(tmp_path):
    read_as_kubectl(preflight(write(tmp_path, "ok.yaml", nested_list(MAX_DEPTH))), "x")
    refused(preflight(write(tmp_path, "deep.yaml", nested_list(MAX_DEPTH + 1))), "deep.yaml: it is nested more")
    as_json = "[" * (MAX_DEPTH - 2) + json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    read_as_kubectl(preflight(write(tmp_path, "ok.json", as_json + "]" * (MAX_DEPTH - 2))), "x")
    refused(preflight(write(tmp_path, "deep.json", "[" + as_json + "]" * (MAX_DEPTH - 1))), f"than {MAX_DEPTH} levels")


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,  # JSON: json's decoder recurses
        "- " * 20_000 + "x\n",  # YAML, block style
        "a: " + "[" * 20_000 + "]" * 20_000 + "\n",  # YAML, flow style (libyaml stops at 1000 levels itself)
        "".join("  " * i + "a:\n" for i in range(2_000)),  # YAML, by indentation
    ],
)
def test_far_deeper_documents_are_refused_not_a_recursion_error(tmp_path, text):
    refused(preflight(write(tmp_path, "deep.yaml", text)), f"it is nested more than {MAX_DEPTH} levels deep")


# ----- YAML aliases ----------------------------------------------------------------------------------------------
LAUGHS = "".join(
    [f"- &a0 [{', '.join(['lol'] * 10)}]\n"] + [f"- &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9)]
)


def test_an_alias_bomb_is_refused_wherever_it_is(tmp_path, monkeypatch):
    """A top-level list of nested aliases spun at 100% CPU; in a List's items it grew to GBs; through stdin, a
    Helm record's manifest (parse) and kfin mcp's manifests (stdin as text) the same."""
    # 10 + 110 + ... + 1,111,111,110 entries as expanded, and the 9 of the list; 99 as written
    said = "its YAML aliases expand to 1,234,567,800 more entries, over 100,000: refused"
    refused(preflight(write(tmp_path, "top.yaml", LAUGHS)), "top.yaml: " + said)
    items = "apiVersion: v1\nkind: List\nitems:\n" + LAUGHS + "- *a8\n- *a8\n"
    refused(preflight(write(tmp_path, "items.yaml", items)), "items.yaml: its YAML aliases expand to", "over 100,000")
    with pytest.raises(UsageError, match="aliases expand"):
        manifests.parse(LAUGHS, "release web")
    monkeypatch.setattr(sys, "stdin", io.StringIO(LAUGHS))  # as kfin mcp hands its `manifests`
    refused(preflight("-"), "error parsing -: its YAML aliases")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(LAUGHS.encode())))
    refused(preflight("-"), "error parsing -: its YAML aliases")


def aliased(count: int, extra: int = 0) -> str:
    """A ConfigMap whose aliases add count * 1000 + extra entries: a list of 1000 shared `count` times, and one of
    1 shared `extra` times."""
    thousand = ", ".join(["v"] * 1000)
    more = ", ".join(["*l"] * count + ["*o"] * extra)
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\nl: &l [{thousand}]\no: &o [v]\nmore: [{more}]\n"


def test_aliases_add_at_most_max_alias_entries(tmp_path):
    assert MAX_ALIAS_ENTRIES == 100 * 1000
    read_as_kubectl(preflight(write(tmp_path, "ok.yaml", aliased(100))), "x")
    refused(preflight(write(tmp_path, "over.yaml", aliased(100, extra=1))), "expand to 100,001 more entries")


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path):
    """PyYAML builds a list that contains itself: walking it never ended (a RecursionError, exit 70)."""
    for text in ("apiVersion: v1\nkind: List\nitems: &i [*i]\n", "- &a [*a]\n", "a: &m {b: *m}\n"):
        refused(preflight(write(tmp_path, "loop.yaml", text)), "a YAML alias refers to a node that contains it")


# ----- size ------------------------------------------------------------------------------------------------------
def configmap_of_size(size: int, name: str = "x") -> str:
    """A ConfigMap's JSON of exactly `size` bytes (JSON: read fast, the size being what is tested)."""
    empty = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": ""}})
    return empty.replace('"a": ""', '"a": "' + "x" * (size - len(empty)) + '"')


def test_at_most_max_bytes_of_manifests_are_read(tmp_path, monkeypatch):
    read_as_kubectl(preflight(write(tmp_path, "ok.json", configmap_of_size(MAX_BYTES))), "x")
    said = "it is larger than 64 MiB, the most kfin reads of manifests"
    refused(preflight(write(tmp_path, "over.json", configmap_of_size(MAX_BYTES + 1))), "over.json: " + said)
    # all files and stdin together: the one that goes over is named
    half = write(tmp_path, "half.json", configmap_of_size(MAX_BYTES // 2, "a"))
    other = write(tmp_path, "other.json", configmap_of_size(MAX_BYTES // 2 + 1, "b"))
    refused(preflight(half, other), "other.json: it is, with the manifests before it, larger than 64 MiB")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(configmap_of_size(MAX_BYTES + 1).encode())))
    refused(preflight("-"), "error reading -: " + said)
    monkeypatch.setattr(sys, "stdin", io.StringIO(configmap_of_size(MAX_BYTES + 1)))  # kfin mcp's manifests
    refused(preflight("-"), "error reading -: " + said)
    with pytest.raises(UsageError, match="larger than 64 MiB"):  # a Helm record's manifest, however it was inflated
        manifests.parse(configmap_of_size(MAX_BYTES + 1), "release web")


def test_dev_zero_named_or_linked_is_bounded(tmp_path):
    """`-f /dev/zero` read until it was 4 GB; a directory's z.yaml -> /dev/zero too."""
    refused(preflight("/dev/zero"), "error reading /dev/zero: it is larger than 64 MiB")
    (tmp_path / "z.yaml").symlink_to("/dev/zero")
    refused(preflight(str(tmp_path)), "z.yaml: it is a device, not a file of manifests")


def test_a_fifo_in_a_directory_is_refused_one_named_is_read(tmp_path):
    """A FIFO named x.yaml in a directory waited for a writer for ever; one named with -f (as `<(helm template)`
    is) is read as it comes, within the size bound."""
    os.mkfifo(tmp_path / "f.yaml")
    refused(preflight(str(tmp_path)), "f.yaml: it is a FIFO, not a file of manifests")

    def writer():
        with open(tmp_path / "f.yaml", "w") as fifo:
            fifo.write(CONFIGMAP)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    read_as_kubectl(preflight(str(tmp_path / "f.yaml")), "x")
    thread.join(timeout=10)


# ----- names, namespaces, kinds: as the API server checks them -------------------------------------------------
@pytest.mark.parametrize(
    ("metadata", "kind", "api_version", "said"),
    [
        ("{name: x, namespace: ../team/secrets}", "ConfigMap", "v1", 'invalid metadata.namespace "../team/secrets"'),
        ("{name: x, namespace: Team}", "ConfigMap", "v1", "a namespace must be a lowercase RFC 1123 label"),
        ("{name: ../x}", "ConfigMap", "v1", "invalid metadata.name \"../x\": may not contain '/'"),
        ("{name: '..'}", "ConfigMap", "v1", "invalid metadata.name \"..\": may not be '..'"),
        ("{name: x}", "Config/Map", "v1", 'invalid kind "Config/Map"'),
        ("{name: x}", "'Config Map'", "v1", "invalid kind"),
        ("{name: x}", "ConfigMap", "../v1", 'invalid apiVersion "../v1"'),
        ("{name: x}", "ConfigMap", "apps/v1/x", "invalid apiVersion"),
        ("{name: x}", "ConfigMap", "Apps/v1", "invalid apiVersion"),
    ],
)
def test_names_namespaces_and_kinds_are_checked_before_anything_is_sent(tmp_path, metadata, kind, api_version, said):
    text = f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {metadata}\n"
    refused(preflight(write(tmp_path, "m.yaml", text)), "error parsing", said)


def test_names_kubectl_takes_are_taken_and_a_path_in_a_list_item_is_not(tmp_path):
    objects = [
        ("v1", "ConfigMap", "a.b-c"),
        ("apps/v1", "Deployment", "web"),
        ("acme.io/v1alpha1", "Widget", "w1"),
        ("rbac.authorization.k8s.io/v1", "Role", "system:controller:x"),
        ("v1", "Secret", "2024-01-01"),  # text, as kubectl's YAML reads it (PyYAML would make it a date)
    ]
    text = "".join(
        f"---\napiVersion: {v}\nkind: {k}\nmetadata: {{name: {n}, namespace: team-a}}\n" for v, k, n in objects
    )
    read_as_kubectl(preflight(write(tmp_path, "ok.yaml", text)), *[name for _, _, name in objects])
    items = [{"apiVersion": v, "kind": k, "metadata": {"name": n, "namespace": "team-a"}} for v, k, n in objects]
    items[3]["metadata"]["namespace"] = "../team/secrets"
    listed = write(tmp_path, "list.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    refused(preflight(listed), 'list.json: items[3]: invalid metadata.namespace "../team/secrets"')
