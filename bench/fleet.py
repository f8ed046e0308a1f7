"""Many clusters from one machine: `kfin stuck --all-contexts` over N contexts against one context.

Each cluster is its own tests/fakeapi process (as each real cluster is its own API server), loaded
with the same small data set; one kubeconfig names them all. The figure is the wall time of the
fleet's scan over that of one context's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench import measure
from bench.load import Loader, connect
from bench.tools import base_environment, kfin_command

ROOT = Path(__file__).resolve().parent.parent


class Fleet:
    def __init__(self, workdir: Path, clusters: int, size: int, crds: int, latency: float = 0.0, log=print):
        """`latency`: seconds each fake waits before it answers a request, as a cluster across a network would
        (the waiting costs no CPU, which a real fleet's servers do not take from this machine either)."""
        self.workdir, self.processes, self.configs = workdir, [], []
        paths = [workdir / f"cluster-{number:02d}-{latency:g}.kubeconfig" for number in range(clusters)]
        for path in paths:
            process = subprocess.Popen([sys.executable, "-m", "tests.fakeapi", "--kubeconfig", str(path), "--tls",
                                        "--latency", str(latency)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
            process.stdout.readline()  # its URL: it listens
            self.processes.append(process)
            self.configs.append(json.loads(path.read_text()))

        def load(path: Path) -> None:
            loader = Loader(connect(str(path), "fake"), crds, log=lambda *_: None)
            loader.prepare()
            loader.grow(size)
        # each cluster loaded by a thread of its own when requests wait (the wait costs no CPU)
        with ThreadPoolExecutor(max_workers=clusters if latency else 4) as pool:
            list(pool.map(load, paths))
        log(f"fleet: {clusters} clusters of {size} objects")
        self.kubeconfig = workdir / f"fleet-{latency:g}.kubeconfig"
        self.kubeconfig.write_text(json.dumps(self._merged()))

    def _merged(self) -> dict:
        clusters, users, contexts = [], [], []
        for number, config in enumerate(self.configs):
            name = f"cluster-{number:02d}"
            clusters.append({"name": name, "cluster": config["clusters"][0]["cluster"]})
            admin = next(u for u in config["users"] if u["name"] == "admin")
            users.append({"name": name, "user": admin["user"]})
            contexts.append({"name": name, "context": {"cluster": name, "user": name}})
        return {"apiVersion": "v1", "kind": "Config", "clusters": clusters, "users": users, "contexts": contexts,
                "current-context": contexts[0]["name"]}

    def _servers_cpu(self) -> float:
        """CPU seconds the fakes have used so far (Linux: /proc/PID/stat, utime and stime in clock ticks)."""
        ticks = 0
        for process in self.processes:
            fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")

    def measure(self, repeat: int) -> dict:
        """The median run of one context and of the fleet, each with kfin's CPU seconds (its workers included)
        and the fakes': on this one machine they share the cores, which a real fleet's API servers do not."""
        def timed(extra: list[str]) -> dict:
            runs = []
            for _ in range(repeat):
                cache = Path(tempfile.mkdtemp(prefix="fleet-cache-", dir=self.workdir))
                before = self._servers_cpu()
                ran = measure.run(kfin_command() + ["stuck", "-o", "json", "--kubeconfig", str(self.kubeconfig)] + extra,
                                  {**base_environment(), "KFIN_CACHE_DIR": str(cache)})
                if ran.exit_code not in (0, 8):
                    raise SystemExit(f"kfin stuck {' '.join(extra)} failed with exit code {ran.exit_code}")
                runs.append({"wall": ran.wall, "kfin_cpu": ran.cpu, "servers_cpu": self._servers_cpu() - before})
            return sorted(runs, key=lambda r: r["wall"])[len(runs) // 2]
        one, fleet = timed(["-A", "--context", "cluster-00"]), timed(["-A", "--all-contexts"])
        return {"contexts": len(self.processes), "cores": len(os.sched_getaffinity(0)), "one": one["wall"],
                "one_kfin_cpu": one["kfin_cpu"], "one_servers_cpu": one["servers_cpu"], "wall": fleet["wall"],
                "kfin_cpu": fleet["kfin_cpu"], "servers_cpu": fleet["servers_cpu"]}

    def close(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(timeout=10)
