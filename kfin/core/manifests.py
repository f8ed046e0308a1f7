"""The objects a `kubectl delete -f` of manifests deletes, in the order kubectl sends the deletes.

kubectl's order (kubernetes/kubectl pkg/cmd/delete/delete.go, DeleteResult at b9c42c1d: one DELETE after the other
in the builder's visit order, the --wait for all of them only after the last; the builder is ContinueOnError, so a
rejected DELETE does not stop the next ones): each -f in the order given; a directory walked by filepath.Walk,
its entries in lexical order, files ending .json, .yaml or .yml only, subdirectories only with -R; a file named
explicitly whatever its extension; `-` for stdin (kubernetes/cli-runtime pkg/resource/visitor.go,
ExpandPathsToFileVisitors); each file's documents in order; a List's items in order (the builder's Flatten)."""

from __future__ import annotations

import json
import os
import sys

from msgspec import Struct

from kfin.errors import UsageError
from kfin.model import JSON

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
            raise UsageError(f'the path "{path}" does not exist')
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
        out += [os.path.join(root, f) for root, f in sorted(found, key=lambda rf: _walk_key(path, rf))]
        if not found:
            raise UsageError(f"error reading {path}: recognized file extensions are {list(EXTENSIONS)}")
    return out


def _walk_key(top: str, root_file: tuple[str, str]) -> list[str]:
    root, name = root_file
    relative = os.path.relpath(os.path.join(root, name), top)
    return relative.split(os.sep)


def read(paths: list[str], recursive: bool = False, stdin_text: str | None = None) -> list[Manifest]:
    """Every object of the manifests, Lists flattened, in kubectl's order."""
    out: list[Manifest] = []
    for path in files_of(paths, recursive):
        if path == "-":
            text = stdin_text if stdin_text is not None else sys.stdin.read()
        else:
            try:
                with open(path, encoding="utf-8-sig") as handle:
                    text = handle.read()
            except OSError as failure:
                raise UsageError(f"cannot read {path}: {failure.strerror}") from None
        out += parse(text, path)
    return out


def parse(text: str, source: str) -> list[Manifest]:
    """The objects of one file or stream: YAML documents (JSON is YAML) in order, Lists flattened."""
    import yaml

    try:
        documents = [json.loads(text)] if text.lstrip().startswith(("{", "[")) else list(yaml.safe_load_all(text))
    except (ValueError, yaml.YAMLError) as failure:
        raise UsageError(f"error parsing {source}: {str(failure).splitlines()[0]}") from None
    out: list[Manifest] = []
    for document in documents:
        out += _objects(document, source)
    return out


def _objects(document: object, source: str) -> list[Manifest]:
    if document is None:
        return []
    if isinstance(document, list):  # a JSON array of objects
        return [m for each in document for m in _objects(each, source)]
    if not isinstance(document, dict):
        raise UsageError(f"error parsing {source}: a document is not an object")
    kind, api_version = str(document.get("kind") or ""), str(document.get("apiVersion") or "")
    if kind.endswith("List") and isinstance(document.get("items"), list):
        return [m for item in document["items"] for m in _objects(item, source)]
    meta = document.get("metadata") or {}
    if not kind or not api_version or not meta.get("name"):
        raise UsageError(f"error parsing {source}: an object without apiVersion, kind or metadata.name")
    return [Manifest(api_version, kind, str(meta["name"]), str(meta.get("namespace") or ""), source, document)]
