"""The catalog of ecosystem finalizers, as data: shipped in kfin/data/catalog.yaml, extended (and overridden by
entry name) by $XDG_CONFIG_HOME/kfin/catalog.d/*.yaml and --catalog FILE, each validated against
kfin/data/catalog.schema.json when read. What each operator's finalizer means lives here; the logic that reads
its holders lives in kfin.core.explain.causes.ecosystem.

A command's catalog is one value (Catalog), made by the command from its --catalog files and carried by its Scope
to the Facts that explain with it: nothing of it is kept in this module, so one command's entries never reach the
next in the same process (kfin serve, kfin mcp, a test session)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Hashable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from msgspec import Struct, field

from kfin.errors import UsageError
from kfin.util.globs import glob_match

DATA = Path(__file__).resolve().parents[2] / "data"
SHIPPED = DATA / "catalog.yaml"
# the shipped catalog as kfin reads it: generated from SHIPPED by scripts/generate_catalog.py
# (tests/core/read/test_catalog.py fails when it is out of date), since parsing the YAML took 12 ms of every scan that
# explains a custom finalizer
SHIPPED_JSON = DATA / "catalog.json"
SCHEMA = DATA / "catalog.schema.json"
MAX_FILE_BYTES = 1 << 20  # a catalog is a few kilobytes: a larger file is a mistake, not a catalog
T = TypeVar("T")


class Controller(Struct, frozen=True):
    """How a catalog entry's controller is recognised in a cluster: its workloads' names, labels, namespaces and
    ServiceAccounts."""

    name: str
    workloads: tuple[str, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    label_keys: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    service_accounts: tuple[str, ...] = ()
    # the field managers its writes carry whatever its workload is named (a framework's own: kopf's User-Agent), so
    # that a finalizer one of them added is shown to be this controller's
    field_managers: tuple[str, ...] = ()
    # where it records its own work on each object, when not in Events or conditions: annotations of a prefix
    # holding JSON (`annotationPrefix`, and the fields of its words, of "done", of its retries)
    reports_in: tuple[tuple[str, str], ...] = ()

    @property
    def searchable(self) -> bool:
        return bool(self.workloads or self.labels or self.label_keys or self.service_accounts)


class CatalogEntry(Struct, frozen=True):
    """One finalizer family of the catalog (kfin/data/catalog.yaml): its finalizers, what they protect, the
    controller that removes them and what to do when it is gone."""

    name: str
    project: str
    finalizers: tuple[str, ...]
    controller: Controller
    protects: str
    on_deletion: str
    risk: str
    fix: str
    checked_against: str = ""
    docs: str = ""
    kinds: tuple[tuple[str, str], ...] = ()
    holders: tuple[dict[str, Any], ...] = ()
    source: str = ""
    # what outside the cluster the finalizer guards (a cloud load balancer, a disk, a bucket, a DNS record, a VM):
    # forcing it leaves that behind, so a bulk removal takes it only with --force; "" when it guards none
    infrastructure: str = ""
    # where else its controller may run (a managed control plane) and the sign kfin reads of it: an API group
    # served or a node label; while one shows, or cannot be read, "no controller found" is not "not installed"
    elsewhere: tuple[dict[str, Any], ...] = ()

    # holders and elsewhere are dicts, which a Struct would hash: an entry (and a Family holding it) stays hashable
    def __hash__(self) -> int:
        return hash((self.name, self.finalizers, self.source))

    def matches(self, finalizer: str) -> bool:
        return any(glob_match(finalizer, pattern) for pattern in self.finalizers)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "project": self.project,
            "checkedAgainst": self.checked_against,
            "finalizers": list(self.finalizers),
            "kinds": [{"group": g, "kind": k} for g, k in self.kinds],
            "controller": {
                "name": self.controller.name,
                "workloads": list(self.controller.workloads),
                "labels": dict(self.controller.labels),
                "labelKeys": list(self.controller.label_keys),
                "namespaces": list(self.controller.namespaces),
                "serviceAccounts": list(self.controller.service_accounts),
                "fieldManagers": list(self.controller.field_managers),
                # absent when it keeps no record of its own: the schema wants its annotations and words named
                **({"reportsIn": dict(self.controller.reports_in)} if self.controller.reports_in else {}),
            },
            "protects": self.protects,
            "onDeletion": self.on_deletion,
            "risk": self.risk,
            "fix": self.fix,
            "infrastructure": self.infrastructure or False,
            "elsewhere": list(self.elsewhere),
            "docs": self.docs,
            "holders": list(self.holders),
            "source": self.source,
        }


class Catalog(Struct, frozen=True):
    """The catalog one command explains with: its --catalog files (`files`), then $XDG_CONFIG_HOME/kfin/catalog.d,
    then the shipped one. Read when first asked (a command that explains nothing never reads it), once; what it
    works out is kept in the value itself, so that it lives and dies with the command."""

    files: tuple[str, ...] = ()  # --catalog FILE: read after catalog.d, so their entries win
    # what was read and worked out, per value: the entries, the fields they keep, each finalizer's entry
    _memo: dict[str, Any] = field(default_factory=dict)

    # the value is its files: what it worked out is not (a Struct would compare and hash the memo too)
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Catalog) and other.files == self.files

    def __hash__(self) -> int:
        return hash(self.files)

    def entries(self) -> list[CatalogEntry]:
        """Every entry, the user's first: --catalog files, then catalog.d (in name order), then the shipped ones;
        an entry's name given again replaces the earlier one."""
        loaded: list[CatalogEntry] | None = self._memo.get("entries")
        if loaded is None:
            seen: dict[str, CatalogEntry] = {}
            for path in [*reversed([Path(p) for p in self.files]), *sorted(user_dir().glob("*.yaml"), reverse=True)]:
                for entry in read_file(path):
                    seen.setdefault(entry.name, entry)
            for entry in shipped():
                seen.setdefault(entry.name, entry)
            loaded = list(seen.values())
            self._memo["kept"] = _holder_fields(loaded)
            self._memo["entries"] = loaded  # last: another thread sees the entries only with their fields
        return loaded

    def match(self, finalizer: str) -> CatalogEntry | None:
        """The first entry whose patterns match the finalizer. Kept per name: a watching serve explains the same
        few finalizers at every answer, and each is matched against every pattern of every entry."""
        matched: dict[str, CatalogEntry | None] = self._memo.setdefault("matched", {})
        if finalizer not in matched:
            matched[finalizer] = next((entry for entry in self.entries() if entry.matches(finalizer)), None)
        return matched[finalizer]

    def kept_fields(self, group: str, resource: str) -> tuple[str, ...]:
        """The fields its related holders match and describe, to keep too when objects of the type are read
        whole (kfin.api.scan): those of entries naming the group, then those of entries naming any group."""
        self.entries()
        kept: dict[tuple[str, str], tuple[str, ...]] = self._memo["kept"]
        return tuple(dict.fromkeys((*kept.get((group, resource), ()), *kept.get(("*", resource), ()))))

    def remembered(self, key: Hashable, work: Callable[[], T]) -> T:
        """`work()`, worked out once per key for this catalog (kfin.core.explain.causes.registry.family)."""
        memo: dict[Hashable, T] = self._memo.setdefault("remembered", {})
        if key not in memo:
            memo[key] = work()
        return memo[key]


@lru_cache(maxsize=1)
def shipped() -> tuple[CatalogEntry, ...]:
    """The entries of kfin's own catalog: a file shipped with kfin, read once per process (entries are frozen).
    Read from its JSON twin; each entry's source is the YAML, the file people read and edit."""
    document = json.loads(SHIPPED_JSON.read_bytes())
    return tuple(_entry(raw, str(SHIPPED)) for raw in document["entries"])


def user_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path("~/.config").expanduser())
    return Path(base) / "kfin" / "catalog.d"


def _where(path: Iterable[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the document"


def read_file(path: Path) -> list[CatalogEntry]:
    """The entries of one catalog file (a user's), validated; a UsageError naming the file and the field otherwise.
    The shipped catalog is read by shipped() without the schema check, which its tests make
    (tests/core/read/test_catalog.py): the check and jsonschema's import were a fifth of a small cluster's scan."""
    import yaml

    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise UsageError(f"catalog {path}: cannot read it: {error.strerror or error}") from None
    if len(data) > MAX_FILE_BYTES:
        raise UsageError(f"catalog {path}: larger than {MAX_FILE_BYTES} bytes")
    try:  # libyaml's loader where PyYAML has it: ten times the pure-Python one
        document = yaml.load(data.decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise UsageError(f"catalog {path}: not YAML: {' '.join(str(error).split())[:200]}") from None
    import jsonschema  # 0.1 s to import: only when a user's catalog is read

    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    problem = next(iter(sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))), None)
    if problem is not None:
        raise UsageError(f"catalog {path}: {_where(problem.absolute_path)}: {' '.join(problem.message.split())[:300]}")
    return [_entry(raw, str(path)) for raw in document["entries"]]


def _entry(raw: dict[str, Any], source: str) -> CatalogEntry:
    c = raw["controller"]
    controller = Controller(
        c["name"],
        tuple(c.get("workloads") or ()),
        tuple(sorted((c.get("labels") or {}).items())),
        tuple(c.get("labelKeys") or ()),
        tuple(c.get("namespaces") or ()),
        tuple(c.get("serviceAccounts") or ()),
        tuple(c.get("fieldManagers") or ()),
        tuple(sorted((c.get("reportsIn") or {}).items())),
    )
    return CatalogEntry(
        raw["name"],
        raw["project"],
        tuple(raw["finalizers"]),
        controller,
        raw["protects"],
        raw["onDeletion"],
        raw["risk"],
        raw["fix"],
        raw.get("checkedAgainst", ""),
        raw.get("docs", ""),
        tuple((k["group"], k["kind"]) for k in raw.get("kinds") or ()),
        tuple(raw.get("holders") or ()),
        source,
        raw.get("infrastructure") or "",
        tuple(raw.get("elsewhere") or ()),
    )


def _holder_fields(entries: Iterable[CatalogEntry]) -> dict[tuple[str, str], tuple[str, ...]]:
    """(group, or "*" for any, resource) -> the fields related holders match and describe: related holders are
    read from lists of whole objects, reduced to what kfin keeps (kfin.api.scan.REDUCED_FIELDS, and these)."""
    kept: dict[tuple[str, str], tuple[str, ...]] = {}
    for entry in entries:
        for holder in entry.holders:
            if holder.get("from") == "related" and holder.get("resource"):
                fields = [holder["match"]["field"], *field_names(holder.get("describe", ""))]
                key = (holder.get("group") or "*", holder["resource"])
                wanted = [f for f in fields if not f.startswith("metadata.")]
                kept[key] = tuple(dict.fromkeys((*kept.get(key, ()), *wanted)))
    return kept


def field_names(template: str) -> list[str]:
    """The {field.path} placeholders of a describe template."""
    out, rest = [], template
    while "{" in rest and "}" in rest:
        start = rest.index("{")
        end = rest.index("}", start)
        out.append(rest[start + 1 : end])
        rest = rest[end + 1 :]
    return out
