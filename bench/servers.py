"""The API server under test: tests/fakeapi in this process, or a real cluster behind a kubeconfig.

Requests and bytes are counted on the server's side of the wire, the same way for every tool: the
fake logs each answer; a real cluster is measured through a counting proxy, in a second pass so that
the proxy never adds to the timed runs.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bench.load import GROUP, connect


# After a load the controller manager (garbage collector, quota monitor, namespace controller...) works through the
# new objects for a while, and etcd and kube-apiserver with it: scans timed then move with that work. It finds new
# CRDs only when it next polls discovery (every 30 s: `go garbageCollector.Sync(ctx, discoveryClient,
# 30*time.Second)` in cmd/kube-controller-manager/app), then lists and watches their objects: measured here, 1,000
# objects were quiet 1 s after the load and busy (0.2-0.3 of a core for 5 s) 26 s later. So the plane is settled once
# it watches every type of the data set and then its processes' summed CPU stays under QUIET_CORES of one core for
# QUIET_WINDOWS windows of WINDOW_S in a row (idle, the three use about 0.05 together on this kind of machine),
# waited for at most LONGEST_S.
WINDOW_S = 1.0
QUIET_CORES = 0.10
QUIET_WINDOWS = 2
LONGEST_S = 120.0


def busy_cores(samples: list[tuple[float, float]]) -> list[float]:
    """The CPU use, in cores, over each window between consecutive samples (seconds, CPU seconds so far)."""
    return [(cpu - cpu_before) / (at - at_before) if at > at_before else 0.0
            for (at_before, cpu_before), (at, cpu) in zip(samples, samples[1:])]


def is_quiet(samples: list[tuple[float, float]], cores: float = QUIET_CORES, windows: int = QUIET_WINDOWS) -> bool:
    """Whether the last `windows` windows of these samples each used less than `cores` of CPU."""
    used = busy_cores(samples)
    return len(used) >= windows and all(u < cores for u in used[-windows:])


def cpu_seconds(pids) -> float:
    """User and system CPU seconds of these processes so far (/proc/PID/stat fields 14 and 15); a process that
    has gone counts nothing."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # from field 3, after the name (which may hold spaces)
        total += int(fields[11]) + int(fields[12])
    return total / tick


def watched_resources(metrics: str, group: str) -> set[str]:
    """The resources of `group` that some client watches, from kube-apiserver's /metrics
    (apiserver_longrunning_requests, the WATCH requests open now)."""
    out = set()
    for line in metrics.splitlines():
        if line.startswith("apiserver_longrunning_requests{") and 'verb="WATCH"' in line \
                and f'group="{group}"' in line and float(line.rsplit(" ", 1)[1]) > 0:
            out.add(line.split('resource="', 1)[1].split('"', 1)[0])
    return out


def wait_until_quiet(read_cpu, watching=lambda: True, longest: float = LONGEST_S, clock=time.monotonic,
                     sleep=time.sleep) -> dict:
    """Sample read_cpu() (CPU seconds so far) every WINDOW_S until watching() holds and the samples since are
    is_quiet, at most `longest` seconds: how long that took, whether it settled, whether watching() held at
    the end, and the last window's CPU use in cores."""
    begun = clock()
    samples = [(begun, read_cpu())]
    watched = watching()
    while not (watched and is_quiet(samples)) and samples[-1][0] - begun < longest:
        sleep(WINDOW_S)
        samples.append((clock(), read_cpu()))
        if not watched:
            watched = watching()
            samples = samples[-1:]  # what was quiet before the controllers found the new types does not count
    last = busy_cores(samples)[-1:] or [0.0]
    return {"settle_seconds": round(samples[-1][0] - begun, 1), "settled": watched and is_quiet(samples),
            "settle_watching": watched, "settle_cores": round(last[0], 3)}


@dataclass
class Counts:
    requests: int = 0
    bytes: int = 0  # response bodies received by the tool


class FakeServer:
    """tests/fakeapi, started in this (the benchmark's) process: tools run as other processes."""

    counts_in_timed_run = True
    needs_cleanup = False  # it ends with the benchmark

    def __init__(self, workdir: Path):
        from tests.fakeapi import FakeAPIServer
        from tests.fakeapi.tls import self_signed

        from tests.fakeapi.server import Watch

        # kube-apiserver keeps a watch open for the timeoutSeconds the client asks (apiserver's
        # endpoints/handlers/get.go; minRequestTimeout only when none is asked): the fake's one-minute cap,
        # which ends forgotten watches in tests, would make kfin serve watch again every minute here.
        Watch.LONGEST = 3600.0
        # Over HTTPS like a real server (kubectl sends no token over plain HTTP).
        self.fake = FakeAPIServer().start(tls=self_signed(workdir))
        self.kubeconfig = self.fake.kubeconfig(workdir / "fake-kubeconfig")
        self.context = "fake"
        self.kube = connect(str(self.kubeconfig), self.context)

    def describe(self) -> str:
        return f"tests/fakeapi (Python, in the benchmark's process), Kubernetes {self._version()}"

    def settle(self) -> dict:
        """After loading: set the stored objects aside from Python's collector, which would otherwise walk
        all of them again and again while the fake serves (kube-apiserver's Go GC runs beside its work)."""
        import gc
        gc.collect()
        gc.freeze()
        return {}

    def _version(self) -> str:
        return self.kube.server_version().get("gitVersion", "?")

    @contextmanager
    def counting(self):
        counts = Counts()
        self.fake.requests.clear()
        try:
            yield counts
        finally:
            logged = list(self.fake.requests)
            counts.requests = len(logged)
            counts.bytes = sum(r.response_bytes or 0 for r in logged)
            self.fake.requests.clear()

    def close(self) -> None:
        self.fake.stop()


class RealServer:
    """A cluster given by kubeconfig and context. Tools talk to it directly in timed runs."""

    counts_in_timed_run = False
    needs_cleanup = True

    def __init__(self, workdir: Path, kubeconfig: str, context: str | None):
        self.workdir = workdir
        self.kubeconfig = Path(kubeconfig)
        self.kube = connect(kubeconfig, context)
        self.context = self.kube.context

    def settle(self) -> dict:
        """Nothing to wait for: a cluster's processes are not this machine's to watch."""
        return {}

    def describe(self) -> str:
        return f"{self.kube.server} (context {self.context}), Kubernetes " \
               f"{self.kube.server_version().get('gitVersion', '?')}"

    @contextmanager
    def counting_proxy(self):
        """(kubeconfig, context, Counts) of a plain-HTTP proxy that forwards to the cluster with kfin's
        credentials, like `kubectl proxy`, and counts what passes."""
        proxy = CountingProxy(self.kube)
        try:
            yield proxy.kubeconfig(self.workdir / "proxy-kubeconfig"), "proxy", proxy.counts
        finally:
            proxy.close()

    def close(self) -> None:
        pass


class ControlPlaneServer(RealServer):
    """The real control plane of the scenario tier (tests/control_plane.py: etcd, kube-apiserver and
    kube-controller-manager from KUBEBUILDER_ASSETS or ../shared/control-plane), started for the benchmark on
    this machine and stopped with it: what it holds goes with it, so nothing is cleaned up."""

    needs_cleanup = False

    def __init__(self, workdir: Path):
        from tests.control_plane import EnvtestControlPlane, find_assets

        assets, why = find_assets()
        if assets is None:
            raise SystemExit(f"error: no real control plane: {why}")
        self.plane = EnvtestControlPlane(assets).start()
        try:
            kubeconfig = self.plane.kubeconfig(workdir / "control-plane.kubeconfig", self.plane.ADMIN_TOKEN, "admin")
            super().__init__(workdir, str(kubeconfig), None)
        except BaseException:
            self.plane.stop()
            raise

    def settle(self) -> dict:
        """After a load: wait until kube-controller-manager watches every CRD of the data set, then until the plane's
        processes are quiet (wait_until_quiet)."""
        pids = [process.pid for process in self.plane.processes.values()]
        crds = self.kube.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
        ours = {crd["spec"]["names"]["plural"] for crd in crds if crd["spec"]["group"] == GROUP}

        def watching() -> bool:
            if not self.plane.has_controller_manager:
                return True  # nobody to wait for
            metrics = self.kube.send("GET", "/metrics", accept="text/plain").body
            return ours <= watched_resources(metrics.decode(), GROUP)

        return wait_until_quiet(lambda: cpu_seconds(pids), watching)

    def describe(self) -> str:
        return (f"kube-apiserver {self.kube.server_version().get('gitVersion', '?')} with etcd and "
                f"kube-controller-manager (tests/control_plane.py, on this machine, started in "
                f"{self.plane.started_in:.1f} s)")

    def close(self) -> None:
        self.plane.stop()


class CountingProxy:
    def __init__(self, kube):
        self.kube = kube
        self.counts = Counts()
        lock = threading.Lock()
        counts = self.counts

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() in ("accept", "content-type", "user-agent")}
                headers.update(kube._transport.auth_headers())
                answer = kube._transport.pool.request(self.command, kube.server + self.path, body=body, headers=headers,
                                                retries=False, redirect=False)
                data = answer.data
                with lock:
                    counts.requests += 1
                    counts.bytes += len(data)
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.headers.get("Content-Type", "application/json"))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = forward

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def kubeconfig(self, path: Path) -> Path:
        import json

        host, port = self.httpd.server_address[:2]
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "proxy",
            "clusters": [{"name": "proxy", "cluster": {"server": f"http://{host}:{port}"}}],
            "users": [{"name": "proxy", "user": {}}],
            "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "proxy"}}]}))
        return path

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
