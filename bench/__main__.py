"""python -m bench: kfin's scan, start-up and graph against what users would use instead.

    python -m bench                         # tests/fakeapi, N = 1,000, 10,000 and 50,000
    python -m bench --servers fake,real --sizes 1000,50000   # and a real control plane, side by side
    python -m bench --kubeconfig K --context C   # a real cluster (objects in kfin-bench-* namespaces)
    python -m bench --sizes 200 --crds 3 --repeat 1 --startup-runs 1 --list-objects 2000 --fleet 2 \
        --serve-seconds 10   # smoke run
    python -m bench --sizes 50000 --tools floor,kfin --serve-seconds 0 --soak 3600   # an hour's soak of serve

The report (Markdown) goes to stdout, progress to stderr; --record FILE puts it into FILE between
its results markers (bench/RESULTS.md), --json FILE keeps the raw figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import inputs, listfile, measure, report
from bench.fleet import Fleet
from bench.load import Loader, object_types
from bench.servers import ControlPlaneServer, FakeServer, RealServer
from bench.tools import TOOLS, base_environment, kfin_command


def progress(text: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,50000", help="object counts, comma-separated")
    parser.add_argument("--crds", type=int, default=20, help="generated CRDs (besides 5 built-in kinds)")
    parser.add_argument("--tools", default="floor,floor-pb,kfin,kfin-json,kubectl,naive", help="which scans to run")
    parser.add_argument("--list-objects", type=int, default=300_000,
                        help="items of the kubectl List read with --from-snapshot (0: skip)")
    parser.add_argument("--manifest-mb", type=float, default=20,
                        help="MB of YAML manifests read by kfin preflight -f, against parsing them alone (0: skip)")
    parser.add_argument("--manifest-items", type=int, default=100_000,
                        help="items of a JSON List read by kfin preflight -f, against json.load alone (0: skip)")
    parser.add_argument("--table-objects", type=int, default=10_000,
                        help="stuck objects of kfin stuck's table, against its -o json (0: skip)")
    parser.add_argument("--fleet", type=int, default=20, help="contexts of the --all-contexts run (0: skip)")
    parser.add_argument("--fleet-size", type=int, default=1000, help="objects in each cluster of the fleet")
    parser.add_argument("--fleet-latencies", default="0.02",
                        help="seconds each fake of the fleet waits before it answers, comma-separated: a fleet each "
                             "(0: on this machine; 0.02: as clusters a network away)")
    parser.add_argument("--graph-max", type=int, default=50_000,
                        help="build the whole owner graph only up to this many objects")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each scan (the median is reported)")
    parser.add_argument("--repeat-large", type=int, default=1,
                        help="runs of each scan above 50,000 objects (each takes minutes for the kubectl recipe)")
    parser.add_argument("--startup-runs", type=int, default=10, help="timed starts of each start-up command (0: skip)")
    parser.add_argument("--decode-items", type=int, default=50_000,
                        help="items of the decoder comparison: JSON, protobuf (upb), a hand decoder (0: skip)")
    parser.add_argument("--serve-seconds", type=float, default=300,
                        help="steady-state window of kfin serve, by watch and by rescan (0: skip; fake only)")
    parser.add_argument("--serve-interval", type=int, default=30, help="kfin serve --interval in that run")
    parser.add_argument("--serve-at", type=int, default=50_000,
                        help="measure kfin serve once this many objects are loaded (the largest size up to it)")
    parser.add_argument("--serve-every", type=float, default=60, help="seconds between new stuck objects then")
    parser.add_argument("--soak", type=float, default=0, help="seconds of kfin serve (by watch) under churn, "
                                                             "its RSS sampled each minute (0: skip; fake only)")
    parser.add_argument("--servers", default="fake",
                        help="where the scans run, comma-separated: fake (tests/fakeapi in this process), real (the "
                             "real control plane of tests/control_plane.py, started here: KUBEBUILDER_ASSETS or "
                             "../shared/control-plane); both are reported side by side")
    parser.add_argument("--guard-reviews", type=int, default=200,
                        help="kfin guard reviews timed at each size on the real control plane (0: skip; "
                             "bench/guard.py)")
    parser.add_argument("--kubeconfig", help="benchmark a real cluster instead of tests/fakeapi")
    parser.add_argument("--context", help="the kubeconfig context (with --kubeconfig)")
    parser.add_argument("--keep", action="store_true", help="leave the loaded objects on the server")
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    parser.add_argument("--record", type=Path, help="put the report into this Markdown file")
    args = parser.parse_args(argv)
    args.sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    args.tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    args.fleet_latencies = [float(t) for t in args.fleet_latencies.split(",") if t.strip()]
    args.servers = [t.strip() for t in args.servers.split(",") if t.strip()]
    if args.kubeconfig:
        args.servers = ["real"]  # the cluster given
    elif not args.servers or set(args.servers) - {"fake", "real"}:
        parser.error("--servers takes fake, real or both")
    unknown = [t for t in args.tools if t not in TOOLS]
    if unknown or "kfin" not in args.tools:
        parser.error(f"--tools takes kfin plus any of {', '.join(TOOLS)}")
    args.tools.sort(key=list(TOOLS).index)  # the floor first: each figure is also given as a ratio to it
    if args.context and not args.kubeconfig:
        parser.error("--context goes with --kubeconfig")
    return args


def scan_size(server, tools: list, workdir: Path, size: int, expected: set, repeats: dict[str, int]) -> list[dict]:
    """Each tool's repeats[name] cold runs (a fresh discovery cache each time), taken in rounds: every round runs
    each tool once, in the order given, and a tool with fewer repeats drops out of the later rounds. So each tool's
    median comes from the same stretch of time as the others', and drift of the server (its controllers' work,
    the machine's other load) falls on all of them alike. A row per tool: the median wall and, for each tool but
    the floors when the protobuf floor ran, the median over the rounds of its wall over the floor's in that round."""
    runs: dict[str, list] = {tool.name: [] for tool in tools}  # (ProcessRun, Counts or None) of each round
    rounds = max(repeats.values(), default=0)
    for turn in range(rounds):
        for tool in tools:
            if turn < repeats[tool.name]:
                runs[tool.name].append(_timed_run(server, tool, workdir, size))
        progress(f"  round {turn + 1} of {rounds}: " + ", ".join(
            f"{tool.name} {runs[tool.name][turn][0].wall:.2f} s" for tool in tools if turn < repeats[tool.name]))
    floor_walls = [ran.wall for ran, _ in runs.get("floor-pb", [])]
    rows = []
    for tool in tools:
        row = _scan_row(server, tool, workdir, size, expected, runs[tool.name])
        if floor_walls and tool.name not in report.FLOORS:
            paired = [ran.wall / floor for (ran, _), floor in zip(runs[tool.name], floor_walls) if floor > 0]
            if paired:
                row["paired_ratios_to_floor_pb"] = paired  # round by round
                row["paired_ratio_to_floor_pb"] = sorted(paired)[len(paired) // 2]  # as the wall's median
        rows.append(row)
    return rows


def _timed_run(server, tool, workdir: Path, size: int) -> tuple:
    stdout, stderr = workdir / f"{tool.name}-{size}.out", workdir / f"{tool.name}-{size}.err"
    cache = Path(tempfile.mkdtemp(prefix=f"{tool.name}-cache-", dir=workdir))
    command, env = tool.command(server.kubeconfig, server.context, cache)
    try:
        if server.counts_in_timed_run:
            with server.counting() as counts:
                return measure.run(command, env, stdout, stderr), counts
        return measure.run(command, env, stdout, stderr), None
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def _scan_row(server, tool, workdir: Path, size: int, expected: set, runs: list) -> dict:
    """One tool's row from its timed runs (the answer checked is the last run's); on a real server, requests and
    bytes are counted in one more run through the counting proxy, untimed."""
    stdout, stderr = workdir / f"{tool.name}-{size}.out", workdir / f"{tool.name}-{size}.err"
    if not server.counts_in_timed_run:
        with server.counting_proxy() as (kubeconfig, context, counts):
            recount = Path(tempfile.mkdtemp(prefix=f"{tool.name}-count-", dir=workdir))
            proxied, proxied_env = tool.command(kubeconfig, context, recount)
            measure.run(proxied, proxied_env)
    else:
        counts = runs[0][1]
    walls = sorted(ran.wall for ran, _ in runs)
    ran = runs[-1][0]
    found = tool.terminating(stdout) if tool.finds else expected
    row = {"tool": tool.name, "size": size, "wall": walls[len(walls) // 2], "walls": walls,
           "peak_rss_mb": max(r.peak_rss_mb for r, _ in runs), "exit_code": ran.exit_code,
           "requests": counts.requests, "bytes": counts.bytes,
           "found": len(found & expected), "expected": len(expected), "extra": len(found - expected)}
    if ran.exit_code not in (0, 8) and not tool.finds:
        row["note"] = f"exit code {ran.exit_code}: {stderr.read_text()[-300:].strip()}"
    if found != expected:
        missing = sorted(expected - found)[:3]
        row["note"] = f"missed {len(expected - found)} (e.g. {missing}), reported {len(found - expected)} others; " \
                      f"stderr: {stderr.read_text()[-300:].strip()}"
    stdout.unlink(missing_ok=True)
    return row


def graph_once(server, workdir: Path, size: int) -> dict:
    snapshot = workdir / f"snapshot-{size}.json"
    cache = Path(tempfile.mkdtemp(prefix="snapshot-cache-", dir=workdir))
    command = kfin_command() + [
        "snapshot", "-A", "-f", str(snapshot), "--kubeconfig", str(server.kubeconfig), "--context", server.context]
    snap = measure.run(command, {**base_environment(), "KFIN_CACHE_DIR": str(cache)})
    if snap.exit_code not in (0, 8):
        raise SystemExit(f"kfin snapshot failed with exit code {snap.exit_code}")
    out = workdir / "graph.json"
    ran = measure.run([sys.executable, "-m", "bench.graph_phase", str(snapshot)], base_environment(), out,
                      workdir / "graph.err")
    if ran.exit_code != 0:
        raise SystemExit(f"graph phase failed: {(workdir / 'graph.err').read_text()[-500:]}")
    figures = json.loads(out.read_text())
    figures.update(size=size, snapshot_wall=snap.wall, snapshot_rss_mb=snap.peak_rss_mb,
                   snapshot_bytes=snapshot.stat().st_size, wall=ran.wall)
    snapshot.unlink()
    return figures


def startup(runs: int) -> list[dict]:
    env = base_environment()
    kfin = kfin_command()
    commands = [("python -c pass", [sys.executable, "-c", "pass"]),
                ('python -c "import kubernetes"', [sys.executable, "-c", "import kubernetes"]),
                ("kfin --help", kfin + ["--help"]), ("kfin --version", kfin + ["--version"])]
    rows = []
    for label, command in commands:
        walls = sorted(measure.repeated(command, env, runs))
        rows.append({"command": label, "runs": runs, "median": walls[len(walls) // 2], "min": walls[0],
                     "max": walls[-1]})
    return rows


def serve_here(args, server, workdir: Path, size: int, results: dict) -> None:
    """kfin serve by watch against a rescan, and the soak, at this size (tests/fakeapi only)."""
    from bench import serve
    if args.serve_seconds:
        progress(f"kfin serve at {size:,} objects: {args.serve_seconds:g} s by watch, "
                 f"then by rescan every {args.serve_interval} s")
        results["serve"] = dict(serve.measure(server, args.serve_seconds, args.serve_interval,
                                              args.serve_every, workdir), size=size, every=args.serve_every)
        for mode in ("watch", "rescan"):
            row = results["serve"][mode]
            progress(f"  {mode}: {row['requests_per_hour']:,} requests/h, {row['cpu_s_per_hour']} CPU s/h, "
                     f"to /metrics in {row['latencies']}")
    if args.soak:
        progress(f"soak: kfin serve by watch for {args.soak:g} s")
        results["soak"] = dict(serve.soak(server, args.soak, args.serve_interval, workdir), size=size)
        progress(f"  RSS {results['soak']['rss_mb']}")


def open_server(args, tier: str, workdir: Path):
    if args.kubeconfig:
        return RealServer(workdir, args.kubeconfig, args.context)
    if tier == "real":
        progress("starting the real control plane (tests/control_plane.py)")
        return ControlPlaneServer(workdir)
    return FakeServer(workdir)


def run_tier(args, tier: str, tools: list, workdir: Path, results: dict) -> None:
    """Load the data set on one server (fake or real) size by size and run every scan there; on the real
    control plane, kfin guard's review latency too."""
    server = open_server(args, tier, workdir)
    results["servers"][tier] = server.describe()
    results.setdefault("server", results["servers"][tier])  # the first tier's (older reports had one)
    loader = Loader(server.kube, args.crds, log=progress)
    measured = [n for n in args.sizes if n <= args.serve_at] or args.sizes[:1]
    serve_size = max(measured) if (args.serve_seconds or args.soak) and tier == "fake" else None
    try:
        progress(f"server ({tier}): {results['servers'][tier]}")
        loader.prepare()
        for size in args.sizes:
            started = time.perf_counter()
            loader.grow(size)
            loaded = time.perf_counter() - started
            settling = server.settle()  # on the real control plane: until its processes are quiet
            results["loads"].append({"tier": tier, "size": size, "seconds": round(loaded, 1), **settling,
                                     "load_average": os.getloadavg()[0]})
            progress(f"loaded {size} objects ({len(loader.held)} Terminating) in {loaded:.1f} s{_settled(settling)}")
            expected = loader.expected_terminating()
            ready = []
            for tool in tools:
                why_not = tool.available()
                if why_not:
                    results["skipped"][tool.name] = why_not
                else:
                    ready.append(tool)
            repeat = args.repeat if size <= 50_000 else args.repeat_large
            for row in scan_size(server, ready, workdir, size, expected, {tool.name: repeat for tool in ready}):
                row["tier"] = tier
                row["load_average"] = os.getloadavg()[0]
                paired = row.get("paired_ratio_to_floor_pb")
                progress(f"  {row['tool']}: {row['wall']:.2f} s, {row['requests']} requests, "
                         f"{row['bytes'] / 1e6:.1f} MB, {row['peak_rss_mb']:.0f} MB RSS, "
                         f"found {row['found']}/{row['expected']}"
                         + ("" if paired is None else f", {paired:.2f}× floor-pb paired by round"))
                results["scan"].append(row)
            if size <= args.graph_max and tier == args.servers[0]:
                figures = graph_once(server, workdir, size)
                progress(f"  graph: {figures['nodes']} nodes, {sum(figures['seconds'].values()):.2f} s")
                results["graph"].append(figures)
            if size == serve_size:
                serve_here(args, server, workdir, size, results)
            if tier == "real" and not args.kubeconfig and args.guard_reviews:
                from bench import guard
                figures = guard.measure(server.kube, loader, size, args.guard_reviews, workdir, server.kubeconfig)
                progress(f"  kfin guard: review p50 {figures['review']['p50_ms']} ms, "
                         f"p99 {figures['review']['p99_ms']} ms")
                results["guard"].append(figures)
        results["types"]["listable"] = len(_listable_types(server))
    finally:
        if not args.keep and server.needs_cleanup:
            progress("removing the benchmark's objects")
            loader.cleanup()
        server.close()


def _settled(settling: dict) -> str:
    """The progress line's account of ControlPlaneServer.settle (nothing for the servers that do not wait)."""
    if "settled" not in settling:
        return ""
    if settling["settled"]:
        return f"; the control plane watched every type and was quiet after {settling['settle_seconds']:.1f} s"
    why = (f"still {settling['settle_cores']:.0%} of a core" if settling["settle_watching"] else
           "kube-controller-manager did not watch every type")
    return f"; the control plane NOT settled after {settling['settle_seconds']:.1f} s ({why}): timed anyway"


def main(argv=None) -> int:
    args = parse_args(argv)
    tools = [TOOLS[name] for name in args.tools]
    results = {"started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "sizes": args.sizes, "crds": args.crds,
               "tiers": args.servers, "servers": {}, "scan": [], "graph": [], "guard": [], "loads": [],
               "skipped": {}, "load_average_before": os.getloadavg()[0]}
    workdir = Path(tempfile.mkdtemp(prefix="kfin-bench-"))
    os.environ["KFIN_CACHE_DIR"] = str(workdir / "discovery-cache")  # never the user's own cache
    results["types"] = {"populated": len(object_types(args.crds)), "crds": args.crds}
    try:
        for tier in args.servers:
            run_tier(args, tier, tools, workdir, results)
        if args.list_objects:
            progress(f"kubectl List of {args.list_objects:,} items, read with --from-snapshot")
            results["list_file"] = listfile.measure_list(workdir, args.list_objects)
            progress(f"  {results['list_file']['file_bytes'] / 2**20:.0f} MB file: "
                     f"{results['list_file']['peak_rss_mb']:.0f} MB RSS, {results['list_file']['wall']:.2f} s")
        if args.manifest_mb:
            progress(f"{args.manifest_mb:g} MB of YAML manifests read by kfin preflight -f")
            results["manifests_yaml"] = inputs.measure_yaml(workdir, args.manifest_mb)
            progress(f"  {_inputs_line(results['manifests_yaml'])}")
        if args.manifest_items:
            progress(f"a JSON List of {args.manifest_items:,} items read by kfin preflight -f")
            results["manifests_list"] = inputs.measure_list(workdir, args.manifest_items)
            progress(f"  {_inputs_line(results['manifests_list'])}")
        if args.table_objects:
            progress(f"kfin stuck's table of {args.table_objects:,} stuck objects against its -o json")
            results["stuck_table"] = inputs.measure_table(workdir, args.table_objects)
            table = results["stuck_table"]
            progress(f"  table {table['table']['wall']:.2f} s, JSON {table['json']['wall']:.2f} s "
                     f"({table['ratio']:.2f}×)")
        if args.decode_items:
            progress(f"decoding {args.decode_items:,} items: JSON, protobuf, hand decoder")
            ran = subprocess.run([sys.executable, "-m", "bench.decoders", str(args.decode_items)],
                                 capture_output=True, text=True, env=base_environment())
            results["decoders"] = json.loads(ran.stdout)
            progress(f"  {results['decoders']}")
        if args.fleet and not args.kubeconfig:
            results["fleets"] = []
            for latency in args.fleet_latencies:
                progress(f"fleet of {args.fleet} clusters, {latency * 1000:g} ms a request")
                fleet = Fleet(workdir, args.fleet, args.fleet_size, min(args.crds, 3), latency, log=progress)
                try:
                    figures = dict(fleet.measure(args.repeat), size=args.fleet_size, latency=latency)
                finally:
                    fleet.close()
                results["fleets"].append(figures)
                progress(f"  {figures['wall']:.2f} s for {args.fleet}, {figures['one']:.2f} s for one")
        if args.startup_runs:
            progress("start-up")
            results["startup"] = startup(args.startup_runs)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results["load_average_after"] = os.getloadavg()[0]
    results["environment"] = report.environment()
    text = report.markdown(results)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.record:
        report.record(args.record, text)
    failed = [row for row in results["scan"] if row.get("note")] + inputs.failed(results)
    return 1 if failed else 0


def _inputs_line(figures: dict) -> str:
    return ", ".join(f"{name} {figures[name]['wall']:.2f} s" for name in ("floor", "table", "json"))


def _listable_types(server) -> list:
    from kfin.api.discovery import discover
    resources, _ = discover(server.kube, True)
    return resources


if __name__ == "__main__":
    sys.exit(main())
