"""kfin serve at steady state: by watch against a full rescan every --interval, on the same loaded server.

Each mode runs as its own `kfin serve` process. Once /readyz answers (every type listed, the first answer
out), a window of `seconds` is measured while a steady trickle of changes goes on: every second a ConfigMap's
data changes (a change kfin never reads), and every `every` seconds a ConfigMap is left Terminating by a
finalizer, its time until it shows on /metrics is taken, and the finalizer is removed. In the window, the
requests kfin made (counted by the fake, by User-Agent) and the CPU seconds of its process (/proc) are taken;
both are given per hour. `soak` runs the watching mode longer with more churn and samples its RSS.

tests/fakeapi only: a real cluster's requests would need the counting proxy, which does not hold watches.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

from bench.tools import base_environment, kfin_command

NAMESPACE = "kfin-bench-serve"
TICKS = os.sysconf("SC_CLK_TCK")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except OSError as error:
        return getattr(error, "code", 0) or 0, ""


class Churn:
    """The steady trickle of changes, through the fake's HTTP API (as another client, not kfin)."""

    def __init__(self, fake, every: float, metrics_url: str):
        from tests.fakeapi.rawclient import RawClient
        from tests.fakeapi.server import ADMIN_TOKEN

        self.api = RawClient(fake.url, ADMIN_TOKEN, insecure=True)
        self.every, self.metrics_url = every, metrics_url
        self.latencies: list[float] = []
        self.changes = 0
        self.stop = threading.Event()
        if self.api.send("GET", f"/api/v1/namespaces/{NAMESPACE}")[0] == 404:
            self.api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        code, _ = self.api.send("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps/churn")
        if code == 404:
            self.api.ok("POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps", {"metadata": {"name": "churn"}})

    def run(self) -> None:
        tick, due = 0, time.monotonic() + self.every
        while not self.stop.wait(1.0):
            tick += 1
            self.api.send("PATCH", f"/api/v1/namespaces/{NAMESPACE}/configmaps/churn", {"data": {"n": str(tick)}},
                          content_type="application/merge-patch+json")
            self.changes += 1
            if time.monotonic() >= due:
                self._stuck_one(tick)
                due = time.monotonic() + self.every

    def _stuck_one(self, tick: int) -> None:
        name = f"held-{tick}"
        path = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
        self.api.ok("POST", path, {"metadata": {"name": name, "finalizers": ["bench.kfin.dev/serve"]}})
        self.api.send("DELETE", f"{path}/{name}")
        changed = time.monotonic()
        while time.monotonic() - changed < 30 and not self.stop.is_set():
            if f'name="{name}"' in _get(self.metrics_url)[1]:
                self.latencies.append(time.monotonic() - changed)
                break
            time.sleep(0.05)
        self.api.send("PATCH", f"{path}/{name}", [{"op": "remove", "path": "/metadata/finalizers"}],
                      content_type="application/json-patch+json")
        self.changes += 3


def run_mode(server, rescan: bool, seconds: float, interval: int, every: float, workdir: Path,
             rss_every: float = 0.0) -> dict:
    """One `kfin serve` process measured over `seconds` of steady state."""
    port = _port()
    url = f"http://127.0.0.1:{port}"
    command = kfin_command() + ["serve", "--listen", f"127.0.0.1:{port}", "--interval", f"{interval}s",
                                "--kubeconfig", str(server.kubeconfig), "--context", server.context]
    if rescan:
        command.append("--rescan")
    log = (workdir / f"serve-{'rescan' if rescan else 'watch'}.log").open("w")
    process = subprocess.Popen(command, env={**base_environment(), "KFIN_CACHE_DIR": str(workdir / "serve-cache")},
                               stdout=subprocess.DEVNULL, stderr=log)
    try:
        started = time.monotonic()
        while _get(url + "/readyz")[0] != 200:
            if process.poll() is not None or time.monotonic() - started > 600:
                raise SystemExit(f"kfin serve did not become ready: see {log.name}")
            time.sleep(0.2)
        ready = time.monotonic() - started
        time.sleep(2)  # the first answer's leftovers
        churn = Churn(server.fake, every, url + "/metrics")
        before_requests = len(server.fake.requests)
        before_cpu = _cpu_seconds(process.pid)
        rss = [_rss_mb(process.pid)]
        worker = threading.Thread(target=churn.run, daemon=True)
        window = time.monotonic()
        sample = window + rss_every
        worker.start()
        while time.monotonic() - window < seconds:
            time.sleep(1.0)
            if rss_every and time.monotonic() >= sample:
                rss.append(_rss_mb(process.pid))
                sample += rss_every
        churn.stop.set()
        worker.join(timeout=35)
        elapsed = time.monotonic() - window
        cpu = _cpu_seconds(process.pid) - before_cpu
        rss.append(_rss_mb(process.pid))
        ours = [r for r in list(server.fake.requests)[before_requests:] if r.agent.startswith("kfin/")]
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
    lists = [r for r in ours if r.method == "GET" and "watch" not in r.query]
    per_hour = 3600 / elapsed
    return {"mode": "rescan" if rescan else "watch", "seconds": round(elapsed, 1), "interval": interval,
            "ready_s": round(ready, 2), "requests": len(ours), "gets_not_watches": len(lists),
            "get_paths": sorted({r.path for r in lists}),
            # how often each was read: a stuck object new to the watch is read whole once, never again unchanged
            "gets_by_path": dict(sorted(Counter(r.path for r in lists).items())),
            "requests_per_hour": round(len(ours) * per_hour), "cpu_s": round(cpu, 2),
            "cpu_s_per_hour": round(cpu * per_hour, 1), "changes": churn.changes,
            "latencies": [round(x, 3) for x in churn.latencies], "rss_mb": [round(x, 1) for x in rss]}


def measure(server, seconds: float, interval: int, every: float, workdir: Path) -> dict:
    return {"watch": run_mode(server, False, seconds, interval, every, workdir),
            "rescan": run_mode(server, True, seconds, interval, every, workdir)}


def soak(server, seconds: float, interval: int, workdir: Path) -> dict:
    """The watching mode for `seconds`, a stuck object every 10 s and a change every second, RSS each minute."""
    return run_mode(server, False, seconds, interval, 10.0, workdir, rss_every=60.0)
