"""Malformed protobuf list pages (kfin.api.protobuf): decoded exactly as a strict decoder decodes them, or
refused with kfin's malformed-answer error (a ShapeError: the scan is then incomplete, exit 8), never another
exception, never an item dropped or changed silently.

The strict decoder here is written from the wire format (protobuf's encoding spec) and Kubernetes' generated
decoders (k8s.io/apimachinery/pkg/apis/meta/v1/generated.pb.go): a field of a declared number that arrives
with another wire type is refused ("proto: wrong wireType"), as are truncated messages and lengths past the
end; fields of numbers nobody declares are skipped. On top of that, what kfin documents that it refuses: a
string it declares that is not UTF-8, an item without a name, a deletionTimestamp outside the years 1 to 9999.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from google.protobuf.descriptor import FieldDescriptor
from hypothesis import given, settings
from hypothesis import strategies as st

from kfin.api import protobuf
from kfin.api.proto import metadata_pb2
from kfin.api.shapes import ShapeError
from kfin.errors import ExitCode
from tests.fakeapi import Fault
from tests.fakeapi.rawclient import RawClient
from tests.runner import kfin

WHERE = "GET /api/v1/pods"
FIRST, LAST = -62_135_596_800, 253_402_300_799  # 0001-01-01T00:00:00Z, 9999-12-31T23:59:59Z


class StrictRefusalError(Exception):
    """What the strict decoder refuses."""


# ---- the wire format, written out ---------------------------------------------------------------------------


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s are ten bytes, as Go writes them
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class Node:
    """One field on the wire: `value` is an int (wire type 0), bytes (1, 2, 5) or a list of Nodes (a message,
    written as wire type 2, or a group, 3). `extra`: added to a length (past the end); `cut`: a message's bytes
    cut to this many."""

    def __init__(self, number: int, wire: int, value: Any):
        self.number, self.wire, self.value = number, wire, value
        self.extra, self.cut = 0, None

    def encode(self) -> bytes:
        key = varint(self.number << 3 | self.wire)
        if self.wire == 0:
            return key + varint(self.value)
        if self.wire == 3:
            return key + b"".join(n.encode() for n in self.value) + varint(self.number << 3 | 4)
        body = b"".join(n.encode() for n in self.value) if isinstance(self.value, list) else self.value
        if self.wire in (1, 5):
            return key + body
        if self.cut is not None:
            body = body[: self.cut]
        return key + varint(len(body) + self.extra) + body


def string(number: int, text: str) -> Node:
    return Node(number, 2, text.encode())


def time_node(number: int, seconds: int) -> Node:
    return Node(number, 2, [Node(1, 0, seconds)])


def item_node(item: dict) -> Node:
    meta = [string(1, item["name"]), string(3, item["namespace"]), string(5, item["uid"])]
    if item["created"] is not None:
        meta.append(time_node(8, item["created"]))
    if item["deleted"] is not None:
        meta.append(time_node(9, item["deleted"]))
    for owner in item["owners"]:
        fields = [
            string(5, owner["apiVersion"]),
            string(1, owner["kind"]),
            string(3, owner["name"]),
            string(4, owner["uid"]),
        ]
        fields += [Node(6, 0, int(owner["controller"]))] if owner["controller"] is not None else []
        meta.append(Node(13, 2, fields))
    meta += [string(14, f) for f in item["finalizers"]]
    return Node(2, 2, [Node(1, 2, meta)])


def page_node(items: list[dict], token: str) -> Node:
    """The whole answer after the magic: runtime.Unknown{typeMeta, raw: PartialObjectMetadataList}, as a message
    (number 0: the root, never written itself)."""
    listed = [Node(1, 2, [string(2, "7"), string(3, token)] if token else [string(2, "7")])]
    listed += [item_node(i) for i in items]
    type_meta = Node(1, 2, [string(1, "meta.k8s.io/v1"), string(2, "PartialObjectMetadataList")])
    return Node(0, 2, [type_meta, Node(2, 2, listed)])


def page_bytes(root: Node) -> bytes:
    return protobuf.MAGIC + b"".join(n.encode() for n in root.value)


# ---- the strict decoder -------------------------------------------------------------------------------------


def _varint_at(data: bytes, at: int) -> tuple[int, int]:
    value = 0
    for shift in range(0, 70, 7):
        if at >= len(data):
            raise StrictRefusalError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if shift == 63 and byte > 1:
                raise StrictRefusalError("varint past 64 bits")
            return value, at
    raise StrictRefusalError("varint longer than ten bytes")


def _fields(data: bytes, at: int = 0, end: int | None = None, group: int | None = None):
    """(number, wire type, value) of each field; a group's fields are skipped, as unknown groups are."""
    end = len(data) if end is None else end
    while at < end:
        key, at = _varint_at(data, at)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise StrictRefusalError("field number 0")
        if wire == 0:
            value, at = _varint_at(data, at)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if at + size > end:
                raise StrictRefusalError("truncated fixed field")
            value, at = data[at : at + size], at + size
        elif wire == 2:
            length, at = _varint_at(data, at)
            if at + length > end:
                raise StrictRefusalError("length past the end")
            value, at = data[at : at + length], at + length
        elif wire == 3:
            value, at = None, _skip_group(data, at, end, number)
        elif wire == 4:
            if group == number:
                return at
            raise StrictRefusalError("end of a group never started")
        else:
            raise StrictRefusalError(f"wire type {wire}")
        yield number, wire, value
    if group is not None:
        raise StrictRefusalError("group not ended")
    return at


def _skip_group(data: bytes, at: int, end: int, number: int) -> int:
    walk = _fields(data, at, end, number)
    while True:
        try:
            next(walk)
        except StopIteration as done:
            return done.value


def decode(descriptor: Any, data: bytes) -> dict:
    """A message as {field name: value} (repeated: lists; messages: dicts, merged when repeated on the wire as
    protobuf merges them; scalars: the last one wins)."""
    out: dict = {}
    for number, wire, value in _fields(data):
        field = descriptor.fields_by_number.get(number)
        if field is None:
            continue  # unknown to every decoder: skipped
        length_delimited = field.type in (
            FieldDescriptor.TYPE_MESSAGE,
            FieldDescriptor.TYPE_STRING,
            FieldDescriptor.TYPE_BYTES,
        )
        if wire != (2 if length_delimited else 0):
            raise StrictRefusalError(f"wrong wire type {wire} for {field.name}")
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            value = decode(field.message_type, value)
        elif field.type == FieldDescriptor.TYPE_STRING:
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                raise StrictRefusalError(f"{field.name} is not UTF-8") from None
        elif field.type == FieldDescriptor.TYPE_BOOL:
            value = value != 0
        elif field.type == FieldDescriptor.TYPE_INT64:
            value = value - (1 << 64) if value >= 1 << 63 else value
        elif field.type == FieldDescriptor.TYPE_INT32:
            value &= (1 << 32) - 1
            value = value - (1 << 32) if value >= 1 << 31 else value
        if field.is_repeated:
            out.setdefault(field.name, []).append(value)
        elif field.type == FieldDescriptor.TYPE_MESSAGE and field.name in out:
            out[field.name] = _merged(out[field.name], value)
        else:
            out[field.name] = value
    return out


def _merged(first: dict, second: dict) -> dict:
    out = dict(first)
    for key, value in second.items():
        if isinstance(value, list):
            out[key] = out.get(key, []) + value
        elif isinstance(value, dict) and key in out:
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _stamp(seconds: int) -> str:
    moment = datetime.fromtimestamp(seconds, UTC)
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%SZ}"  # %Y writes the year 1 as "1"


def strict_view(data: bytes) -> tuple[dict, list[tuple]]:
    """(the list's metadata, each item as `seen` gives it) of a page, or StrictRefusalError."""
    if not data.startswith(protobuf.MAGIC):
        raise StrictRefusalError("no magic")
    envelope = decode(metadata_pb2.Unknown.DESCRIPTOR, data[len(protobuf.MAGIC) :])
    kind = envelope.get("typeMeta", {}).get("kind", "")
    if kind and kind != "PartialObjectMetadataList":
        raise StrictRefusalError("not a metadata list")
    listed = decode(metadata_pb2.PartialObjectMetadataList.DESCRIPTOR, envelope.get("raw", b""))
    head = listed.get("metadata", {})
    list_meta = {k: head[k] for k in ("resourceVersion", "continue") if head.get(k)}
    items = []
    for item in listed.get("items", []):
        meta = item.get("metadata", {})
        if not meta.get("name"):
            raise StrictRefusalError("an item without a name")
        deleted = meta.get("deletionTimestamp")
        if deleted is not None and not FIRST <= deleted.get("seconds", 0) <= LAST:
            raise StrictRefusalError("deletionTimestamp out of range")
        owners = []
        for ref in meta.get("ownerReferences", []):
            owner = {k: ref.get(k, "") for k in ("apiVersion", "kind", "name", "uid")}
            owner.update({k: ref[k] for k in ("controller", "blockOwnerDeletion") if k in ref})
            owners.append(owner)
        items.append(
            (
                meta["name"],
                meta.get("namespace", ""),
                meta.get("uid", ""),
                None if deleted is None else _stamp(deleted.get("seconds", 0)),
                tuple(meta.get("finalizers", [])),
                tuple(map(str, owners)),
            )
        )
    return list_meta, items


def seen(page: dict) -> tuple[dict, list[tuple]]:
    """What kfin decoded, as strict_view gives it."""
    items = []
    for item in page["items"]:
        meta = item["metadata"]
        items.append(
            (
                meta["name"],
                meta.get("namespace", ""),
                meta["uid"],
                meta.get("deletionTimestamp"),
                tuple(meta.get("finalizers", [])),
                tuple(map(str, meta.get("ownerReferences", []))),
            )
        )
    return page["metadata"], items


def decoded_by_kfin(data: bytes, light: bool) -> tuple[dict, list[tuple]] | ShapeError:
    try:
        return seen(protobuf.metadata_list(data, WHERE, light))
    except ShapeError as error:
        return error


# ---- pages made and broken ----------------------------------------------------------------------------------

SECONDS = st.one_of(
    st.integers(0, 4_000_000_000), st.sampled_from([2**62, -(2**63), 2**63 - 1, LAST, LAST + 1, FIRST, FIRST - 1, -1])
)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6)
OWNERS = st.fixed_dictionaries(
    {"apiVersion": TEXT, "kind": TEXT, "name": TEXT, "uid": TEXT, "controller": st.none() | st.booleans()}
)
ITEMS = st.lists(
    st.fixed_dictionaries(
        {
            "name": TEXT,
            "namespace": TEXT,
            "uid": TEXT,
            "created": st.none() | SECONDS,
            "deleted": st.none() | SECONDS,
            "finalizers": st.lists(TEXT, max_size=2),
            "owners": st.lists(OWNERS, max_size=2),
        }
    ),
    max_size=4,
)


def _all_nodes(node: Node) -> list[Node]:
    out = [node]
    if isinstance(node.value, list):
        for child in node.value:
            out += _all_nodes(child)
    return out


def _payload(draw: Any, wire: int) -> Any:
    if wire == 0:
        return draw(st.integers(0, 2**64 - 1))
    if wire == 1:
        return draw(st.binary(min_size=8, max_size=8))
    if wire == 5:
        return draw(st.binary(min_size=4, max_size=4))
    if wire == 3:
        return []
    return draw(st.binary(max_size=6))


def broken(draw: Any, root: Node) -> Node:
    """`root` with a few of the ways a page breaks, each somewhere drawn."""
    root = copy.deepcopy(root)
    for _ in range(draw(st.integers(0, 3))):
        nodes = _all_nodes(root)[1:]
        if not nodes:
            break
        node = draw(st.sampled_from(nodes))
        how = draw(
            st.sampled_from(
                ["wire type", "not UTF-8", "unknown field", "cut", "length past the end", "twice", "out of range"]
            )
        )
        if how == "wire type":
            node.wire = draw(st.sampled_from([w for w in (0, 1, 2, 3, 5) if w != node.wire]))
            node.value = _payload(draw, node.wire)
        elif how == "not UTF-8" and isinstance(node.value, bytes):
            node.value = node.value + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]))
        elif how == "unknown field" and isinstance(node.value, list):
            wire = draw(st.sampled_from([0, 1, 2, 3, 5]))
            node.value.insert(
                draw(st.integers(0, len(node.value))), Node(draw(st.integers(18, 40)), wire, _payload(draw, wire))
            )
        elif how == "cut" and node.wire == 2:
            node.cut = draw(st.integers(0, 8))
        elif how == "length past the end" and node.wire == 2:
            node.extra = draw(st.integers(1, 3))
        elif how == "twice":
            parents = [p for p in _all_nodes(root) if isinstance(p.value, list) and node in p.value]
            parents[0].value.append(copy.deepcopy(node))
        elif how == "out of range" and node.wire == 0:
            node.value = draw(SECONDS)
    return root


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.data(), ITEMS, st.sampled_from(["", "next"]))
def test_a_page_is_read_as_a_strict_decoder_reads_it_or_refused(data, items, token):
    page = page_bytes(broken(data.draw, page_node(items, token)))
    try:
        expected: Any = strict_view(page)
    except StrictRefusalError as why:
        expected = why
    token = protobuf.continue_of(page)  # read off the wire ahead of the parse: never raises, never another token
    assert token is None or isinstance(expected, StrictRefusalError) or token == expected[0].get("continue")
    for light in (False, True):
        got = decoded_by_kfin(page, light)
        if isinstance(expected, StrictRefusalError):
            assert isinstance(got, ShapeError), (expected, got, page)
            assert WHERE in str(got) and "\n" not in str(got)
        else:
            assert not isinstance(got, ShapeError), (got, page)
            assert got == expected


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.binary(max_size=200))
def test_bytes_of_any_kind_decode_or_are_refused(raw):
    for data in (protobuf.MAGIC + raw, protobuf.MAGIC + metadata_pb2.Unknown(raw=raw).SerializeToString()):
        for light in (False, True):
            got = decoded_by_kfin(data, light)
            try:
                expected: Any = strict_view(data)
            except StrictRefusalError:
                assert isinstance(got, ShapeError), (got, data)
            else:
                assert got == expected, data


# ---- the cases the issue found, by name ---------------------------------------------------------------------

HELD = {
    "name": "db",
    "namespace": "shop",
    "uid": "u-1",
    "created": 1_700_000_000,
    "deleted": 1_700_000_100,
    "finalizers": ["example.com/backup"],
    "owners": [],
}


def _held_with(change) -> bytes:
    root = page_node([HELD], "")
    meta = root.value[1].value[1].value[0]  # raw → items[0] → metadata
    change(root, meta)
    return page_bytes(root)


def _field(meta: Node, number: int) -> Node:
    return next(n for n in meta.value if n.number == number)


def _retyped(node: Node, wire: int, value: Any) -> None:
    node.wire, node.value = wire, value


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda root, meta: root.value[1].value.append(Node(2, 0, 5)), "items arrives as a varint, not a message"),
        (
            lambda root, meta: _retyped(_field(meta, 9), 0, 5),
            "item 1 is malformed: metadata.deletionTimestamp arrives as a varint, not a message",
        ),
        (
            lambda root, meta: _retyped(_field(meta, 14), 1, b"\0" * 8),
            "item 1 is malformed: metadata.finalizers arrives as a fixed64, not a length-delimited field",
        ),
        (lambda root, meta: _retyped(root.value[1], 0, 5), "raw arrives as a varint, not a length-delimited field"),
        (
            lambda root, meta: _retyped(_field(_field(meta, 9), 1), 5, b"\0" * 4),
            "item 1 is malformed: metadata.deletionTimestamp.seconds arrives as a fixed32, not a varint",
        ),
    ],
    ids=["items-varint", "deletionTimestamp-varint", "finalizers-fixed64", "raw-varint", "seconds-fixed32"],
)
def test_a_field_with_the_wrong_wire_type_is_refused_and_named(change, message):
    data = _held_with(change)
    for light in (False, True):
        with pytest.raises(ShapeError, match=message.replace("[", r"\[").replace("]", r"\]")):
            protobuf.metadata_list(data, WHERE, light)


@pytest.mark.parametrize(
    "seconds", [2**62, -(2**63), LAST + 1, FIRST - 1], ids=["2^62", "-2^63", "year-10000", "before-year-1"]
)
def test_a_deletion_time_out_of_range_is_refused_and_a_creation_time_left_out(seconds):
    deleting = page_bytes(page_node([dict(HELD, deleted=seconds)], ""))
    for light in (False, True):
        with pytest.raises(
            ShapeError,
            match=r"item 1 is malformed: metadata.deletionTimestamp is .* outside the "
            "years 1 to 9999",
        ):
            protobuf.metadata_list(deleting, WHERE, light)
    # the JSON path reads a creation time it cannot parse as none (kfin.model.parse_time)
    created = page_bytes(page_node([dict(HELD, created=seconds)], ""))
    [item] = protobuf.metadata_list(created, WHERE)["items"]
    assert "creationTimestamp" not in item["metadata"] and item["metadata"]["deletionTimestamp"]


def test_the_edges_of_the_years_1_to_9999_are_read():
    for seconds, text in ((FIRST, "0001-01-01T00:00:00Z"), (LAST, "9999-12-31T23:59:59Z")):
        data = page_bytes(page_node([dict(HELD, created=seconds, deleted=seconds)], ""))
        [item] = protobuf.metadata_list(data, WHERE)["items"]
        assert item["metadata"]["creationTimestamp"] == item["metadata"]["deletionTimestamp"] == text


def test_a_page_of_a_million_empty_items_is_refused_at_the_first():
    """Two bytes an item: kfin's answer cap (KFIN_MAX_ANSWER_MB) bounds how many; the first has no name."""
    data = protobuf.MAGIC + metadata_pb2.Unknown(raw=b"\x12\x00" * 1_000_000).SerializeToString()
    for light in (False, True):
        with pytest.raises(ShapeError, match=r"item 1 is malformed: metadata\.name is missing"):
            protobuf.metadata_list(data, WHERE, light)


# ---- end to end: a malformed page makes the scan incomplete, never an all-clear ------------------------------


@pytest.mark.parametrize(
    "change, said",
    [
        (lambda root, meta: _retyped(_field(meta, 9), 0, 5), "metadata.deletionTimestamp arrives as a varint"),
        (lambda root, meta: _retyped(_field(meta, 14), 1, b"\0" * 8), "metadata.finalizers arrives as a fixed64"),
        (lambda root, meta: _retyped(_field(_field(meta, 9), 1), 0, 2**62), "outside the years 1 to 9999"),
    ],
    ids=["deletionTimestamp-varint", "finalizers-fixed64", "deletionTimestamp-2^62"],
)
def test_a_malformed_protobuf_page_is_a_partial_scan_naming_the_resource(fake, fake_kubeconfig, change, said):
    api = RawClient(fake.url, "admin-token")
    api.create("/api/v1/namespaces", {"metadata": {"name": "shop"}})
    fake.faults.append(Fault(path="/api/v1/configmaps$", body=_held_with(change), content_type=protobuf.CONTENT_TYPE))
    result = kfin("stuck", "-A", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.PARTIAL, (result.code, result.stdout, result.stderr)
    assert "No stuck objects" not in result.stdout and "Traceback" not in result.stderr
    assert "/api/v1/configmaps" in result.stderr and said in result.stderr


def test_a_real_api_servers_pages_hold_no_field_kfin_does_not_declare(envtest, tmp_path):
    """The strict check reads a page's unknown fields only when it has some: a real kube-apiserver's pages have
    none (every field it writes is declared in kfin/api/proto/metadata.proto), so they take the cheap path."""
    from kfin.api.connection import Kube
    from kfin.api.target import Target

    kubeconfig = envtest.kubeconfig(tmp_path / "kubeconfig", envtest.ADMIN_TOKEN, "admin")
    kube = Kube.connect(Target(str(kubeconfig)))
    path = "/api/v1/namespaces/default/configmaps"
    held = {"name": "kfin-protobuf-held", "labels": {"a": "b"}, "annotations": {"c": "d"}, "finalizers": ["e.com/f"]}
    kube.request("POST", path, body={"metadata": held, "data": {"k": "v"}})
    try:
        kube.request("DELETE", f"{path}/{held['name']}")
        accept = protobuf.CONTENT_TYPE + protobuf.METADATA_LIST
        for listed in (path, "/api/v1/namespaces", "/apis/rbac.authorization.k8s.io/v1/clusterroles"):
            data = kube.send("GET", listed, {"limit": 3}, accept=accept).body
            envelope = metadata_pb2.Unknown.FromString(data[len(protobuf.MAGIC) :])
            for kind, raw in (
                (metadata_pb2.Unknown, data[len(protobuf.MAGIC) :]),
                (metadata_pb2.PartialObjectMetadataList, envelope.raw),
                (metadata_pb2.PartialObjectMetadataListLight, envelope.raw),
            ):
                message = kind.FromString(raw)
                whole = message.ByteSize()
                message.DiscardUnknownFields()
                assert message.ByteSize() == whole, (listed, kind.__name__)
        page = protobuf.metadata_list(kube.send("GET", path, {}, accept=accept).body, path)
        [item] = [i for i in page["items"] if i["metadata"]["name"] == held["name"]]
        assert item["metadata"]["finalizers"] == ["e.com/f"] and item["metadata"]["deletionTimestamp"]
    finally:
        kube.patch_json(f"{path}/{held['name']}", [{"op": "remove", "path": "/metadata/finalizers"}])
