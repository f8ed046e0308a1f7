"""The benchmark's report: Markdown tables, ratios (to the bare-fetch floor and between tools), growth,
and the targets of issue 26 (with the start-up and file targets of those before)."""

from __future__ import annotations

import math
import os
import platform
import re
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from bench import inputs
from bench.servers import QUIET_CORES

START, END = "<!-- bench:results:start -->", "<!-- bench:results:end -->"
FLOORS = ("floor", "floor-pb")  # they fetch and find nothing
NAMES = {"floor": "bare fetch (floor)", "floor-pb": "bare fetch, protobuf (floor)", "kfin": "kfin stuck -A -o json",
         "kfin-json": "kfin stuck -A -o json, JSON lists", "kubectl": "kubectl recipe", "naive": "naive Python loop"}


def environment() -> dict:
    cpu = "unknown"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    memory = ""
    try:
        kb = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal")))
        memory = f"{kb / 1024 / 1024:.0f} GiB"
    except (OSError, StopIteration):
        pass
    versions = {}
    for package in ("kfin", "kubernetes", "urllib3", "networkx", "rich", "typer"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = "not installed"
    from bench.tools import installed_command
    kubectl = installed_command("kubectl")
    if kubectl:
        answer = subprocess.run([kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True)
        match = re.search(r'"gitVersion":\s*"([^"]+)"', answer.stdout)
        versions["kubectl"] = match.group(1) if match else "unknown"
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": memory, "os": platform.platform(),
            "python": platform.python_version(), "versions": versions}


def _table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def exponent(small: float, large: float, n_small: int, n_large: int) -> float | None:
    """b in cost ~ N^b between two sizes: 1 is linear, less is better than linear."""
    if small <= 0 or large <= 0 or n_large == n_small:
        return None
    return math.log(large / small) / math.log(n_large / n_small)


TIER_NAMES = {"fake": "tests/fakeapi", "real": "real server"}


def tiers(results: dict) -> list[str]:
    """The servers the scans ran on, in the order they ran (reports of before had one, untagged: fake)."""
    return results.get("tiers") or ["fake"]


def scan_rows(results: dict, tier: str | None = None) -> list[dict]:
    """The scan rows of one tier (the first by default)."""
    tier = tier or tiers(results)[0]
    return [r for r in results["scan"] if r.get("tier", "fake") == tier]


def ratio(results: dict, size: int, other: str, field: str = "wall", base: str = "kfin",
          tier: str | None = None) -> float | None:
    """other's figure over base's, at one size, on one tier (how many times kfin is faster, by default)."""
    rows = {r["tool"]: r for r in scan_rows(results, tier) if r["size"] == size}
    if base not in rows or other not in rows or not rows[base][field]:
        return None
    return rows[other][field] / rows[base][field]


def paired(results: dict, size: int, tool: str, tier: str | None = None) -> float | None:
    """The median over rounds of tool's wall over the protobuf floor's in the same round (bench/__main__.py
    scan_size), at one size, on one tier; None when not measured so (the floors, reports of before)."""
    row = next((r for r in scan_rows(results, tier) if r["size"] == size and r["tool"] == tool), None)
    return None if row is None else row.get("paired_ratio_to_floor_pb")


def _paired_text(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}×"


def targets(results: dict) -> list[tuple[str, str, bool | None]]:
    """(target, measured, met) for each target of issue 26 (and the start-up and file targets before it);
    met is None when not measured."""
    out = []
    if "real" in tiers(results):  # issue 47: at the physical limit on a real server
        real = {r["size"]: r for r in scan_rows(results, "real") if r["tool"] == "kfin"}
        for size in (1000, 50_000):
            floor = ratio(results, size, "kfin", base="floor-pb", tier="real")
            by_round = paired(results, size, "kfin", tier="real")
            measured = f"{floor:.2f}× (medians)" if floor else "not measured"
            if floor and by_round is not None:
                measured += f", {by_round:.2f}× (paired by round)"
            out.append((f"real server, {size:,} objects: kfin stuck -A wall ≤ 1.1 × the protobuf floor",
                        measured, None if floor is None else floor <= 1.1))
        rss = real[50_000]["peak_rss_mb"] if 50_000 in real else None
        out.append(("real server, 50,000 objects: peak RSS < 100 MB", "not measured" if rss is None else
                    f"{rss:.0f} MB", None if rss is None else rss < 100))
        for figures in results.get("guard", []):
            if figures["objects"] == 50_000:
                p99 = figures["review"]["p99_ms"]
                out.append(("real server, 50,000 objects: kfin guard's review p99 < 50 ms", f"{p99} ms", p99 < 50))
    if "fake" not in tiers(results):
        return out
    kfin = {r["size"]: r for r in scan_rows(results, "fake") if r["tool"] == "kfin"}
    for size, most in ((50_000, 0.7), (1000, 1.2)):
        floor = ratio(results, size, "kfin", base="floor", tier="fake")
        out.append((f"{size:,} objects: kfin stuck -A wall ≤ {most} × the JSON bare-fetch floor",
                    f"{floor:.2f}×" if floor else "not measured", None if floor is None else floor <= most))
    value = ratio(results, 50_000, "kubectl", tier="fake")
    out.append(("50,000 objects: ≥ 15× faster than the kubectl recipe", f"{value:.1f}×" if value else "not measured",
                None if value is None else value >= 15))
    for size, most in ((50_000, 100), (500_000, 250)):
        rss = kfin[size]["peak_rss_mb"] if size in kfin else None
        out.append((f"{size:,} objects: peak RSS < {most} MB", "not measured" if rss is None else f"{rss:.0f} MB",
                    None if rss is None else rss < most))
    serve = results.get("serve")
    if serve:
        watch, rescan = serve["watch"], serve["rescan"]
        share = watch["requests_per_hour"] / max(1, rescan["requests_per_hour"])
        out.append((f"kfin serve at steady state ({serve['size']:,} objects): ≤ 1% of the API requests of a "
                    f"rescan every {watch['interval']} s",
                    f"{watch['requests_per_hour']:,}/h against {rescan['requests_per_hour']:,}/h ({share:.1%})",
                    share <= 0.01))
        cpu = watch["cpu_s_per_hour"] / max(0.01, rescan["cpu_s_per_hour"])
        out.append(("… and ≤ 10% of its CPU", f"{watch['cpu_s_per_hour']} s/h against {rescan['cpu_s_per_hour']} "
                    f"s/h ({cpu:.1%})", cpu <= 0.10))
        slowest = max(watch["latencies"]) if watch["latencies"] else None
        out.append(("… a change visible on /metrics within 5 s", "not measured" if slowest is None else
                    f"at most {slowest:.2f} s ({len(watch['latencies'])} changes)",
                    None if slowest is None else slowest <= 5))
    soak = results.get("soak")
    if soak:
        first, last = soak["rss_mb"][0], soak["rss_mb"][-1]
        out.append((f"kfin serve RSS flat (±10%) over {soak['seconds'] / 60:.0f} min of churn",
                    f"{first:.0f} → {last:.0f} MB (max {max(soak['rss_mb']):.0f})", abs(last - first) <= 0.1 * first))
    listing = results.get("list_file")
    if listing:
        allowed = 1.5 * listing["file_bytes"] / 2**20
        out.append(("--from-snapshot of a kubectl List in RSS < 1.5 × the file",
                    f"{listing['peak_rss_mb']:.0f} MB for {listing['file_bytes'] / 2**20:.0f} MB "
                    f"({listing['peak_rss_mb'] / (listing['file_bytes'] / 2**20):.2f}×)",
                    listing["peak_rss_mb"] < allowed))
    startup = {row["command"]: row["median"] for row in results.get("startup", [])}
    if "kfin --help" in startup:
        helped, plain = startup["kfin --help"], startup["python -c pass"]
        out.append(("kfin --help < 0.3 s", f"{helped:.3f} s", helped < 0.3))
    return out


def growth_rows(results: dict) -> list[list]:
    """[figure, at smallest, at largest, grew, b over the last step, b over the whole range]."""
    sizes = results["sizes"]
    if len(sizes) < 2:
        return []
    small, before, large = sizes[0], sizes[-2], sizes[-1]
    figures: dict[str, dict[int, float]] = {}
    for r in scan_rows(results):
        for field in ("wall", "requests", "bytes", "peak_rss_mb"):
            figures.setdefault(f"{NAMES[r['tool']]}: {field}", {})[r["size"]] = r[field]
    for g in results["graph"]:
        for phase in ("build", "analyse", "tree", "dot", "json"):
            figures.setdefault(f"graph: {phase}", {})[g["size"]] = g["seconds"][phase]
        figures.setdefault("graph: peak_rss_mb", {})[g["size"]] = g["peak_rss_mb"]
    rows = []
    for name, at in figures.items():
        if all(at.get(n) for n in (small, before, large)):
            rows.append([name, _num(at[small]), _num(at[large]), f"{at[large] / at[small]:.1f}×",
                         exponent(at[before], at[large], before, large), exponent(at[small], at[large], small, large)])
    return rows


def _num(value) -> str:
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def markdown(results: dict) -> str:
    env = results["environment"]
    versions = ", ".join(f"{k} {v}" for k, v in env["versions"].items())
    parts = [
        f"Run {results['started']} on {env['cpu']} ({env['cores']} cores, {env['memory']}), {env['os']}, "
        f"Python {env['python']}.",
        f"Versions: {versions}.",
        *[f"Server ({TIER_NAMES.get(tier, tier)}): {results.get('servers', {}).get(tier, results['server'])}."
          for tier in tiers(results)],
        f"Data set: N objects in namespaces of 1,000: of every 40, an app of 25 over {results['types']['populated']} "
        f"kinds (Pods and 5 other built-in kinds, {results['crds']} generated CRDs) linked by ownerReferences, and "
        f"15 Events; labels, annotations and managedFields on every object; about 1% of the apps' objects "
        f"Terminating with a finalizer. Every scan goes through the {results['types'].get('listable', '?')} "
        "listable types.",
    ]
    if results.get("loads"):
        parts.append("Loading (parallel creates, 16 at a time): " + ", ".join(
            f"{TIER_NAMES.get(load['tier'], load['tier'])} to {load['size']:,} objects in {load['seconds']:.0f} s"
            f"{_settling(load)}" for load in results["loads"]) + ". This machine's load average (1 min): "
            f"{results.get('load_average_before', 0):.1f} at the start, "
            f"{results.get('load_average_after', 0):.1f} at the end, "
            f"{min(r.get('load_average', 0) for r in results['scan']):.1f}–"
            f"{max(r.get('load_average', 0) for r in results['scan']):.1f} after the scans "
            "(other work shares its cores: compare ratios within one run, not seconds).")
    for name, why in results.get("skipped", {}).items():
        parts.append(f"Skipped {NAMES[name]}: {why}.")
    for tier in tiers(results):
        rows = []
        for r in scan_rows(results, tier):
            speed = ratio(results, r["size"], r["tool"], tier=tier)
            floor = ratio(results, r["size"], r["tool"], base="floor", tier=tier)
            floor_pb = ratio(results, r["size"], r["tool"], base="floor-pb", tier=tier)
            floor_pb_paired = r.get("paired_ratio_to_floor_pb")
            floor_rss = ratio(results, r["size"], r["tool"], "peak_rss_mb", base="floor", tier=tier)
            spread = f"{r['walls'][0]:.2f}–{r['walls'][-1]:.2f}" if len(r.get("walls", [])) > 1 else ""
            rows.append([f"{r['size']:,}", NAMES[r["tool"]], f"{r['wall']:.2f}", spread,
                         "" if floor is None or r["tool"] == "floor" else f"{floor:.2f}×",
                         "" if floor_pb is None or r["tool"] == "floor-pb" else f"{floor_pb:.2f}×",
                         _paired_text(floor_pb_paired), f"{r['requests']:,}", f"{r['bytes'] / 1e6:.1f}", f"{r['peak_rss_mb']:.0f}",
                         "" if floor_rss is None or r["tool"] == "floor" else f"{floor_rss:.1f}×",
                         "" if r["tool"] in FLOORS else f"{r['found']}/{r['expected']}",
                         "" if r["tool"] in ("kfin", *FLOORS) or speed is None else f"{speed:.1f}×"])
        parts += [f"### Full scan, {TIER_NAMES.get(tier, tier)} (cold: a fresh discovery cache each run)",
                  "The floor fetches every list kfin makes, in parallel, as JSON, and parses nothing "
                  "(bench/bare_fetch.py; the protobuf floor asks as kfin does); × floor is each figure over that "
                  "floor's, at the same size."
                  + (" The tools run in turn, round by round (each once a round), so their medians come from the same "
                     "stretch of time; paired × protobuf floor is the median over the rounds of a tool's wall over "
                     "the protobuf floor's in the same round (beside the ratio of the medians, wall × protobuf floor)."
                     if any("paired_ratio_to_floor_pb" in r for r in scan_rows(results, tier)) else "")
                  + (" On the real control plane each size is timed once it has settled: kube-controller-manager "
                     "watches every type of the data set, then its processes use under "
                     f"{QUIET_CORES:.0%} of a core for two 1 s windows in a row."
                     if any("settled" in load for load in results.get("loads", []) if load["tier"] == tier) else ""),
                  _table(["objects", "tool", "wall s (median)", "min–max s", "wall × floor", "wall × protobuf floor",
                          "paired × protobuf floor", "requests", "MB received", "peak RSS MB", "RSS × floor", "Terminating found",
                          "kfin faster by"], rows)]
    if len(tiers(results)) > 1:
        first, second = tiers(results)[:2]
        rows = []
        for r in scan_rows(results, first):
            other = next((o for o in scan_rows(results, second) if (o["tool"], o["size"]) == (r["tool"], r["size"])),
                         None)
            if other is None:
                continue
            cells = [f"{r['size']:,}", NAMES[r["tool"]]]
            for tier, row in ((first, r), (second, other)):
                floor_pb = ratio(results, row["size"], row["tool"], base="floor-pb", tier=tier)
                cells += [f"{row['wall']:.2f}", "" if floor_pb is None else f"{floor_pb:.2f}×",
                          _paired_text(row.get("paired_ratio_to_floor_pb")), f"{row['peak_rss_mb']:.0f}"]
            rows.append(cells)
        a, b = TIER_NAMES.get(first, first), TIER_NAMES.get(second, second)
        parts += [f"### Side by side: {a} and {b}",
                  "Wall (median), its ratio to the protobuf floor on the same server (of the medians, and paired: "
                  "the median of the rounds' ratios), peak RSS.",
                  _table(["objects", "tool", f"{a} s", "× floor", "paired × floor", "MB", f"{b} s", "× floor",
                          "paired × floor", "MB"], rows)]
    notes = [f"- {NAMES[r['tool']]} at {r['size']:,} ({TIER_NAMES.get(r.get('tier', 'fake'))}): {r['note']}"
             for r in results["scan"] if r.get("note")]
    if notes:
        parts.append("Wrong answers:\n" + "\n".join(notes))
    if results.get("guard"):
        from bench import guard
        parts += ["### kfin guard's review latency on the real server (bench/guard.py)",
                  "Each review is the DELETE of a namespace of 1,000 objects (everything in it, and every object of "
                  "the cluster whose controller it would take away); \"review\" is an AdmissionReview POSTed to kfin "
                  "guard as kube-apiserver posts it, \"DELETE\" a dry-run DELETE through kube-apiserver with "
                  "deploy/guard/webhook.yaml calling kfin guard, and without it.",
                  guard.report(results["guard"], results["servers"].get("real", "")).rstrip("\n")]
    if results.get("startup"):
        parts += ["### Start-up (fresh process each time)", _table(
            ["command", "median s", "min s", "max s", "runs"],
            [[f"`{r['command']}`", f"{r['median']:.3f}", f"{r['min']:.3f}", f"{r['max']:.3f}", r["runs"]]
             for r in results["startup"]])]
    listing = results.get("list_file")
    if listing:
        parts += ["### A kubectl List read with --from-snapshot (kfin stuck -o json, one process)", _table(
            ["items", "file MB", "wall s", "peak RSS MB", "RSS / file", "Terminating found"],
            [[f"{listing['objects']:,}", f"{listing['file_bytes'] / 2**20:.0f}", f"{listing['wall']:.2f}",
              f"{listing['peak_rss_mb']:.0f}", f"{listing['peak_rss_mb'] / (listing['file_bytes'] / 2**20):.2f}",
              f"{listing['found']}/{listing['expected']}"]])]
    parts += inputs.report(results)
    for fleet in results.get("fleets", []):
        parts += [f"### Fleet: kfin stuck -A --all-contexts over {fleet['contexts']} clusters of "
                  f"{fleet['size']:,} objects (each its own tests/fakeapi process){_where(fleet)}",
                  *_fleet_table(fleet)]
    decoders = results.get("decoders")
    if decoders:
        parts += [f"### Reading {decoders['items']:,} listed items (one process, pages of 500; bench/decoders.py)",
                  "JSON is json.loads; protobuf is kfin's reading (the protobuf package's C runtime, objects "
                  "nobody deletes read light); the hand decoder walks the wire format in Python and decodes "
                  "only what a lean scan keeps.",
                  _table(["reading", "MB", "seconds", "× JSON"],
                         [[name, f"{decoders['bytes_' + ('json' if name == 'JSON' else 'protobuf')] / 1e6:.1f}",
                           f"{decoders['seconds_' + key]:.3f}",
                           f"{decoders['seconds_' + key] / decoders['seconds_json']:.2f}×"]
                          for name, key in (("JSON", "json"), ("protobuf (upb)", "protobuf"),
                                            ("hand decoder (Python)", "hand"))])]
    serve = results.get("serve")
    if serve:
        parts += [f"### kfin serve at steady state, {serve['size']:,} objects: by watch against a rescan every "
                  f"{serve['watch']['interval']} s",
                  "Measured over the same window after /readyz, with a change every second that kfin does not "
                  f"read and a new stuck object every {serve.get('every', '?')} s, removed once seen "
                  "(bench/serve.py); per hour from the window.",
                  _table(["mode", "window s", "ready after s", "requests", "lists and reads", "requests/h",
                          "CPU s", "CPU s/h", "to /metrics s (each new stuck object)", "RSS MB"],
                         [[m["mode"], m["seconds"], m["ready_s"], m["requests"], m["gets_not_watches"],
                           f"{m['requests_per_hour']:,}", m["cpu_s"], m["cpu_s_per_hour"],
                           ", ".join(f"{x:.2f}" for x in m["latencies"]), f"{m['rss_mb'][-1]:.0f}"]
                          for m in (serve["watch"], serve["rescan"])])]
    soak = results.get("soak")
    if soak:
        parts += [f"### Soak: kfin serve by watch for {soak['seconds'] / 60:.0f} min at {soak['size']:,} objects",
                  "RSS each minute, MB: " + ", ".join(f"{x:.0f}" for x in soak["rss_mb"])]
    if results["graph"]:
        parts += ["### Owner graph of the whole snapshot (kfin.core.explain.owners, one process)", _table(
            ["objects", "nodes", "edges", "load s", "build s", "analyse s", "tree s (plain)", "DOT s", "JSON s",
             "peak RSS MB", "snapshot s (kfin snapshot -A)"],
            [[f"{g['objects']:,}", f"{g['nodes']:,}", f"{g['edges']:,}", f"{g['seconds']['load']:.2f}",
              f"{g['seconds']['build']:.2f}", f"{g['seconds']['analyse']:.2f}", f"{g['seconds']['tree']:.2f}",
              f"{g['seconds']['dot']:.2f}", f"{g['seconds'].get('json', 0):.2f}", f"{g['peak_rss_mb']:.0f}",
              f"{g['snapshot_wall']:.2f}"]
             for g in results["graph"]])]
    growth = growth_rows(results)
    if growth:
        sizes = results["sizes"]
        parts += [f"### Growth from {sizes[0]:,} to {sizes[-1]:,} objects (exponent b in cost ∝ N^b; 1 is linear)",
                  _table(["figure", f"at {sizes[0]:,}", f"at {sizes[-1]:,}", "grew",
                          f"b {sizes[-2]:,}→{sizes[-1]:,}", f"b {sizes[0]:,}→{sizes[-1]:,}"],
                         [row[:-2] + ["" if b is None else f"{b:.2f}" for b in row[-2:]] for row in growth])]
    marks = {True: "met", False: "**missed**", None: "not measured"}
    parts += ["### Targets", _table(["target", "measured", ""],
                                    [[t, m, marks[ok]] for t, m, ok in targets(results)])]
    return "\n\n".join(parts) + "\n"


def record(path: Path, text: str) -> None:
    """Replace the results between the markers of `path` (or start the file)."""
    block = f"{START}\n{text}{END}"
    old = path.read_text() if path.exists() else f"# Benchmark results\n\n{START}\n{END}\n"
    if START in old and END in old:
        head, rest = old.split(START, 1)
        new = head + block + rest.split(END, 1)[1]
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(new)


def _settling(load: dict) -> str:
    """How long the real control plane took to go quiet after the load (bench/servers.py settle), if it was
    waited for."""
    if "settled" not in load:
        return ""
    if load["settled"]:
        return f" (settled {load['settle_seconds']:.0f} s later)"
    why = (f"at {load['settle_cores']:.0%} of a core" if load.get("settle_watching", True) else
           "kube-controller-manager not watching every type")
    return f" (not settled {load['settle_seconds']:.0f} s later, {why}: timed anyway)"


def _where(fleet: dict) -> str:
    latency = fleet.get("latency") or 0
    return f", each request answered after {latency * 1000:g} ms as across a network" if latency else ""


def _fleet_table(fleet: dict) -> list[str]:
    """kfin's CPU per context and the fleet's wall (issue 47: reported, not a ratio target: fleets are watched
    through Prometheus, kfin serve in each cluster; here the API servers share kfin's cores, a real fleet's do
    not), with whose CPU filled the cores."""
    cores, contexts = fleet["cores"], fleet["contexts"]
    rows = [[label, f"{wall:.2f}", f"{kfin:.2f}", f"{kfin / n:.3f}", f"{servers:.2f}",
             f"{(kfin + servers) / (cores * wall):.0%}"]
            for label, n, wall, kfin, servers in (
                ("one context", 1, fleet["one"], fleet["one_kfin_cpu"], fleet["one_servers_cpu"]),
                (f"{contexts} contexts", contexts, fleet["wall"], fleet["kfin_cpu"], fleet["servers_cpu"]))]
    return [f"kfin's CPU per context: {fleet['kfin_cpu'] / contexts:.3f} s in a fleet of {contexts}, "
            f"{fleet['one_kfin_cpu']:.3f} s alone; the wall of {contexts} contexts {fleet['wall']:.2f} s. CPU is "
            f"user and system seconds: kfin's (its workers included) and the fake API servers' (on a real fleet, "
            f"other machines'); busy is both over the {cores} cores' time during the wall.",
            _table(["run", "wall s", "kfin CPU s", "kfin CPU s per context", "API servers' CPU s", "cores busy"],
                   rows)]


if __name__ == "__main__":
    sys.exit("run python -m bench")
