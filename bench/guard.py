"""python -m bench.guard: kfin guard's review latency, with a real kube-apiserver calling it.

    python -m bench.guard                          # 1,000 and 50,000 objects, 200 reviews each
    python -m bench.guard --sizes 1000 --reviews 50   # a smoke run

A real control plane (tests/control_plane.py, KUBEBUILDER_ASSETS or ../shared/control-plane) is loaded with the
benchmark's objects (bench/load.py: apps of 25 objects and their Events, 1,000 to a namespace, some of them held
Terminating by a finalizer), then kfin guard is started over TLS and deploy/guard/webhook.yaml is installed,
calling it at https://127.0.0.1:PORT/validate. Measured, for the DELETE of a namespace (the largest prediction:
everything in it, and every object of the cluster whose controller it would take away):

- the review itself: an AdmissionReview POSTed to kfin guard as kube-apiserver POSTs it (its p50 and p99);
- the DELETE through kube-apiserver (dryRun=All, so nothing is deleted), with kfin guard's webhook and without
  it: what the webhook adds to a deletion;
- kfin guard's memory (RSS) once its watch cache is filled.

The report (Markdown) goes to stdout, progress to stderr; --json FILE keeps the raw figures.
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from bench.load import Loader, connect, namespace_of

ROOT = Path(__file__).resolve().parents[1]
WEBHOOK = ROOT / "deploy" / "guard" / "webhook.yaml"


def progress(text: str) -> None:
    print(f"[bench.guard {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Guard:
    """kfin guard over TLS on 127.0.0.1, as a process of its own."""

    def __init__(self, kubeconfig: Path, workdir: Path):
        from tests.control_plane import _free_port
        from tests.fakeapi.tls import self_signed

        workdir.mkdir(parents=True, exist_ok=True)
        self.cert, key = self_signed(workdir)
        self.port = _free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.trust = ssl.create_default_context(cafile=str(self.cert))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kfin", "guard", "--listen", f"127.0.0.1:{self.port}", "--tls-cert-file",
             str(self.cert), "--tls-private-key-file", str(key), "--kubeconfig", str(kubeconfig)],
            env=dict(os.environ, PYTHONPATH=str(ROOT)), stderr=subprocess.DEVNULL)

    def wait_ready(self, seconds: float = 900) -> float:
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            try:
                if urllib.request.urlopen(f"{self.url}/readyz", context=self.trust, timeout=5).status == 200:
                    return time.monotonic() - started
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.2)
        raise RuntimeError("kfin guard was not ready in time")

    def review(self, request: dict) -> tuple[float, dict]:
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
        started = time.perf_counter()
        answer = urllib.request.urlopen(urllib.request.Request(
            f"{self.url}/validate", data=body.encode(), headers={"Content-Type": "application/json"}),
            context=self.trust, timeout=30).read()
        return time.perf_counter() - started, json.loads(answer)["response"]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def webhook(guard: Guard, name: str) -> dict:
    config = copy.deepcopy(yaml.safe_load(WEBHOOK.read_text()))
    config["metadata"] = {"name": name}
    [hook] = config["webhooks"]
    hook["clientConfig"] = {"url": f"{guard.url}/validate",
                            "caBundle": base64.b64encode(guard.cert.read_bytes()).decode()}
    return config


def dry_run_delete(kube, namespace: str) -> tuple[float, list[str]]:
    """Seconds for kube-apiserver to answer a dry-run DELETE of the namespace, and its Warning headers."""
    from kfin.api.transport import warnings_of

    started = time.perf_counter()
    answer = kube.send("DELETE", f"/api/v1/namespaces/{namespace}", {"dryRun": "All"},
                       body={"apiVersion": "v1", "kind": "DeleteOptions", "dryRun": ["All"]})
    return time.perf_counter() - started, warnings_of(answer.headers)


def summary(values: list[float]) -> dict:
    return {"p50_ms": round(statistics.median(values) * 1000, 1), "p99_ms": round(percentile(values, 0.99) * 1000, 1),
            "max_ms": round(max(values) * 1000, 1), "n": len(values)}


def measure(kube, loader: Loader, size: int, reviews: int, workdir: Path, kubeconfig: Path) -> dict:
    loader.grow(size)
    namespaces = sorted({namespace_of(i) for i in range(size)})
    guard = Guard(kubeconfig, workdir / f"guard-{size}")
    try:
        ready_in = guard.wait_ready()
        memory = rss_mb(guard.process.pid)
        progress(f"{size:,} objects: kfin guard ready in {ready_in:.1f} s, {memory:.0f} MB")
        requests = []
        for ns in namespaces:
            old = kube.request("GET", f"/api/v1/namespaces/{ns}")
            requests.append({"uid": "", "kind": {"group": "", "version": "v1", "kind": "Namespace"},
                             "resource": {"group": "", "version": "v1", "resource": "namespaces"}, "name": ns,
                             "namespace": ns, "operation": "DELETE", "oldObject": old, "dryRun": True,
                             "userInfo": {"username": "admin", "groups": ["system:masters"]}})
        direct, words = [], []
        for i in range(reviews):
            request = dict(requests[i % len(requests)], uid=f"bench-{i}")
            took, answer = guard.review(request)
            direct.append(took)
            words = answer.get("warnings") or words
        config = kube.request("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
                              body=webhook(guard, "kfin-guard-bench"))
        try:
            deadline = time.monotonic() + 60  # kube-apiserver calls a new webhook a moment after it is made
            while not dry_run_delete(kube, namespaces[0])[1] and time.monotonic() < deadline:
                time.sleep(0.2)
            through = [dry_run_delete(kube, namespaces[i % len(namespaces)])[0] for i in range(reviews)]
        finally:
            kube.request("DELETE", f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"
                                   f"{config['metadata']['name']}")
        time.sleep(2)  # kube-apiserver stops calling a deleted webhook a moment after
        without = [dry_run_delete(kube, namespaces[i % len(namespaces)])[0] for i in range(reviews)]
        return {"objects": size, "namespaces": len(namespaces), "ready_s": round(ready_in, 1),
                "rss_mb": round(memory), "review": summary(direct), "delete_with_guard": summary(through),
                "delete_without": summary(without), "warnings": words}
    finally:
        guard.stop()


def report(results: list[dict], server: str) -> str:
    lines = [f"kfin guard, reviewing the DELETE of a namespace of 1,000 objects; {server}; kfin guard on the same "
             "machine, over TLS.", "",
             "| objects | review p50 | review p99 | DELETE with guard p50 / p99 | without p50 / p99 | RSS | ready in |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        d, w = r["delete_with_guard"], r["delete_without"]
        lines.append(f"| {r['objects']:,} | {r['review']['p50_ms']} ms | {r['review']['p99_ms']} ms | "
                     f"{d['p50_ms']} / {d['p99_ms']} ms | {w['p50_ms']} / {w['p99_ms']} ms | {r['rss_mb']} MB | "
                     f"{r['ready_s']} s |")
    if results and results[-1]["warnings"]:
        lines += ["", "What it said (largest size, first namespace):", ""]
        lines += [f"    Warning: {w}" for w in results[-1]["warnings"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.guard", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,50000", help="object counts, comma-separated")
    parser.add_argument("--reviews", type=int, default=200, help="reviews timed at each size")
    parser.add_argument("--crds", type=int, default=5, help="generated CRDs (besides 5 built-in kinds)")
    parser.add_argument("--json", help="write the raw figures there")
    args = parser.parse_args(argv)
    from tests.control_plane import EnvtestControlPlane, find_assets

    assets, why = find_assets()
    if assets is None:
        raise SystemExit(f"error: no real control plane: {why}")
    workdir = Path(tempfile.mkdtemp(prefix="kfin-bench-guard-"))
    plane = EnvtestControlPlane(assets).start()
    try:
        kubeconfig = plane.kubeconfig(workdir / "admin.kubeconfig", plane.ADMIN_TOKEN, "admin")
        kube = connect(str(kubeconfig), None)
        server = f"kube-apiserver {kube.server_version().get('gitVersion', '?')} (tests/control_plane.py)"
        loader = Loader(kube, crds=args.crds, log=progress)
        loader.prepare()
        results = []
        for size in sorted(int(s) for s in args.sizes.split(",")):
            progress(f"loading {size:,} objects")
            results.append(measure(kube, loader, size, args.reviews, workdir, kubeconfig))
            progress(json.dumps(results[-1]))
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
        sys.stdout.write(report(results, server))
    finally:
        plane.stop()


if __name__ == "__main__":
    main()
