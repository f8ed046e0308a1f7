"""The objects a `kubectl delete -f` of manifests deletes, in the order kubectl sends the deletes.

kubectl's order (kubernetes/kubectl pkg/cmd/delete/delete.go, DeleteResult at b9c42c1d: one DELETE after the other
in the builder's visit order, the --wait for all of them only after the last; the builder is ContinueOnError, so a
rejected DELETE does not stop the next ones): each -f in the order given; a directory walked by filepath.Walk,
its entries in lexical order, files ending .json, .yaml or .yml only, subdirectories only with -R; a file named
explicitly whatever its extension; `-` for stdin (kubernetes/cli-runtime pkg/resource/visitor.go,
ExpandPathsToFileVisitors); each file's documents in order; a List's items in order (the builder's Flatten).

Read within bounds (kfin.util.documents): what all files and stdin hold together, each document's depth and what
its YAML aliases expand to; a file a directory holds that is not a regular file (a FIFO, a device, a link to one)
is refused, where kubectl would wait on it or read it without end. The kind, name and namespace of each object
are checked as the API server checks them, before anything is sent."""

from __future__ import annotations

import os
import re
import stat
import sys
from typing import Any, NoReturn

from msgspec import Struct

from kfin.errors import UsageError
from kfin.model import JSON
from kfin.names import namespace_problem, path_segment_problem, quoted
from kfin.util.documents import MAX_BYTES, DocumentError, check_size, load_all, megabytes, text_of
from kfin.util.text import printable

EXTENSIONS = (".json", ".yaml", ".yml")  # cli-runtime's FileExtensions


class Manifest(Struct, frozen=True):
    """One object of the manifests: what kubectl would DELETE, and where it was read."""

    api_version: str
    kind: str
    name: str
    namespace: str  # as written ("" when the manifest has none: the default namespace of the command applies)
    source: str  # file path, or "-" for stdin
    raw: JSON

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def annotations(self) -> dict[str, str]:
        return (self.raw.get("metadata") or {}).get("annotations") or {}

    def to_dict(self) -> JSON:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace or None,
            "name": self.name,
            "source": self.source,
        }


def files_of(paths: list[str], recursive: bool) -> list[str]:
    """The files kubectl reads for `-f PATH...` (with -R), in its order."""
    out: list[str] = []
    for path in paths:
        if path == "-":
            out.append(path)
            continue
        if not os.path.exists(path):
            raise UsageError(f"the path {quoted(path)} does not exist")
        if not os.path.isdir(path):
            out.append(path)
            continue
        found = []
        for root, dirs, files in os.walk(path):
            dirs.sort()
            if not recursive:
                dirs.clear()
            found += [(root, f) for f in sorted(files) if f.endswith(EXTENSIONS)]
        # filepath.Walk visits a directory's entries in lexical order, files and subdirectories mixed
        walked = [os.path.join(root, f) for root, f in sorted(found, key=lambda rf: _walk_key(path, rf))]
        if not walked:
            raise UsageError(f"error reading {_shown(path)}: recognized file extensions are {list(EXTENSIONS)}")
        for each in walked:
            _check_regular(each)
        out += walked
    return out


def _walk_key(top: str, root_file: tuple[str, str]) -> list[str]:
    root, name = root_file
    relative = os.path.relpath(os.path.join(root, name), top)
    return relative.split(os.sep)


def _check_regular(path: str) -> None:
    """A file a directory holds is read only when it is a regular file (a link to one included): a FIFO named
    x.yaml would wait for a writer for ever, /dev/zero would never end. A file named with -f is read whatever it
    is (a pipe of `<(helm template ...)` is one), within the size bound."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # a dangling link: reading it says why
    if not stat.S_ISREG(mode):
        what = "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else None
        raise UsageError(
            f"error reading {_shown(path)}: it is {what or 'not a regular file'}, not a file of manifests "
            "(kfin reads only regular files in a directory; name it with -f to read it)"
        )


def _shown(path: str) -> str:
    """A path in an error line: a file name found in a directory is anybody's, control characters included."""
    return printable(path, one_line=True)


def read(paths: list[str], recursive: bool = False, stdin_text: str | None = None) -> list[Manifest]:
    """Every object of the manifests, Lists flattened, in kubectl's order; at most MAX_BYTES read in all."""
    out: list[Manifest] = []
    left = MAX_BYTES
    for path in files_of(paths, recursive):
        raw = _read_raw(path, left, stdin_text)
        size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
        if size > left:
            together = "" if left == MAX_BYTES else ", with the manifests before it,"
            raise UsageError(
                f"error reading {_shown(path)}: it is{together} larger than {megabytes(MAX_BYTES)}, the most kfin "
                "reads of manifests"
            )
        left -= size
        try:
            text = raw if isinstance(raw, str) else text_of(raw)
        except DocumentError as failure:
            raise UsageError(f"error reading {_shown(path)}: {failure}") from None
        out += parse(text, path)
    return out


def _read_raw(path: str, limit: int, stdin_text: str | None) -> bytes | str:
    """At most `limit` bytes of a file or stdin, and one more to know it holds more."""
    if path == "-":
        if stdin_text is not None:
            return stdin_text
        stream: Any = sys.stdin
        if stream is None:  # started with stdin closed
            return b""
        if getattr(stream, "buffer", None) is None:  # a text stream: kfin mcp hands the manifests so
            text: str = stream.read(limit + 1)
            return text
        data: bytes = stream.buffer.read(limit + 1)
        return data
    try:
        with open(path, "rb") as handle:
            return handle.read(limit + 1)
    except OSError as failure:
        raise UsageError(f"cannot read {_shown(path)}: {failure.strerror or failure}") from None


def parse(text: str, source: str) -> list[Manifest]:
    """The objects of one file or stream: YAML documents (JSON is YAML) in order, Lists flattened, each checked."""
    try:
        check_size(text)
        documents = load_all(text)
    except DocumentError as failure:
        raise UsageError(f"error parsing {_shown(source)}: {failure}") from None
    out: list[Manifest] = []
    for number, document in enumerate(documents, 1):
        _collect(document, [f"document {number}"] if len(documents) > 1 else [], source, out)
    return out


def _collect(value: object, where: list[str], source: str, out: list[Manifest]) -> None:
    """The objects of a document into `out`: a List's items and a JSON array's elements in order, flattened."""
    if value is None:
        return
    if isinstance(value, list):  # a JSON array of objects
        for index, each in enumerate(value):
            _collect(each, [*where, f"[{index}]"], source, out)
        return
    if not isinstance(value, dict):
        _refuse(source, where, f"it is {_kind_of(value)}, not an object")
    kind = value.get("kind")
    items = value.get("items")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
        for index, item in enumerate(items):
            _collect(item, [*where, f"items[{index}]"], source, out)
        return
    out.append(_manifest(value, where, source))


# What the API server takes (k8s.io/apimachinery/pkg/util/validation): a kind is a DNS-1035 label once lowercased
# (apiextensions' CRD names check), a version a DNS-1035 label, a group a DNS-1123 subdomain.
DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS_1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _manifest(document: dict[str, Any], where: list[str], source: str) -> Manifest:
    meta = document.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        _refuse(source, where, f"metadata is {_kind_of(meta)}, not a map")
    meta = meta or {}
    api_version = _text(document, "apiVersion", where, source)
    kind = _text(document, "kind", where, source)
    name = _text(meta, "name", where, source, "metadata.")
    namespace = _text(meta, "namespace", where, source, "metadata.", required=False)
    group, _, version = api_version.rpartition("/")
    if not DNS_1035.fullmatch(version) or len(version) > 63 or (group and not _subdomain(group)):
        _refuse(
            source, where, f"invalid apiVersion {quoted(api_version)}: it is VERSION or GROUP/VERSION (v1, apps/v1)"
        )
    if len(kind) > 63 or not DNS_1035.fullmatch(kind.lower()):
        _refuse(source, where, f"invalid kind {quoted(kind)}: letters, digits and '-', starting with a letter")
    problem = path_segment_problem(name)
    if problem:
        _refuse(source, where, f"invalid metadata.name {quoted(name)}: {problem}")
    problem = namespace_problem(namespace) if namespace else None
    if problem:
        _refuse(source, where, f"invalid metadata.namespace {quoted(namespace)}: {problem}")
    annotations = meta.get("annotations")
    if annotations is not None and not (
        isinstance(annotations, dict) and all(isinstance(v, str) for v in (*annotations, *annotations.values()))
    ):
        _refuse(source, where, "metadata.annotations is not a map of strings to strings")
    return Manifest(api_version, kind, name, namespace, source, document)


def _subdomain(group: str) -> bool:
    return len(group) <= 253 and bool(DNS_1123_SUBDOMAIN.fullmatch(group))


def _text(
    fields: dict[str, Any], field: str, where: list[str], source: str, prefix: str = "", required: bool = True
) -> str:
    """A field that must be a string (absent: "" when not required); kubectl sends nothing else as a name."""
    value = fields.get(field)
    if value is None or value == "":
        if required:
            _refuse(source, where, f"the object has no {prefix}{field}")
        return ""
    if not isinstance(value, str):
        _refuse(source, where, f"{prefix}{field} is {_kind_of(value)}, not a string")
    return value


def _refuse(source: str, where: list[str], problem: str) -> NoReturn:
    """The one line for a malformed object: its file, its place there (document, item), what is wrong."""
    place = ", ".join(where) + ": " if where else ""
    raise UsageError(f"error parsing {_shown(source)}: {place}{problem}")


def _kind_of(value: object) -> str:
    """What a value is, said without the value (a list or a map could be anything, and long)."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return f"the text {quoted(value)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a map"
    return "a " + type(value).__name__  # YAML's timestamps, dates and binary
