"""A real control plane for the scenario tier: etcd, kube-apiserver and kube-controller-manager from
KUBEBUILDER_ASSETS, started on free ports of 127.0.0.1 with the flags of ../shared/control-plane/README.md, so
that they behave like a cluster:

- kube-apiserver serves a certificate of its own CA (kubeconfigs verify it), authorizes with Node,RBAC, admits
  with the webhooks and NodeRestriction besides the defaults, has a service CIDR, and proxies to aggregated APIs
  (APIServices) and calls webhooks as a front proxy (requestheader CA, front-proxy-client certificate);
- kube-controller-manager authenticates as the user system:kube-controller-manager (its rights come from the
  `system:` ClusterRoles, as on a real cluster) and runs each controller as its own ServiceAccount in
  kube-system (--use-service-account-credentials).

No kubelet and no scheduler: Pods stay Pending unless a scenario sets spec.nodeName, and Nodes are what a
scenario creates. Ready when /readyz answers 200, ServiceAccount default/default exists and ClusterRole view
has rules (both show kube-controller-manager's controllers at work).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from tests.fakeapi.rawclient import RawClient

ENV_ASSETS = "KUBEBUILDER_ASSETS"
SERVICE_CIDR = "10.96.0.0/16"
SHARED_CONTROL_PLANE = Path(__file__).resolve().parents[2] / "shared" / "control-plane"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


class Certificates:
    """The PKI of one control plane, made with the openssl command: a cluster CA (serving certificate, cluster
    signing), a front-proxy CA with its client certificate, and the service-account key pair."""

    def __init__(self, directory: Path):
        self.dir = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.ca, self.ca_key = self._ca("ca", "kfin-envtest-ca")
        self.front_proxy_ca, self.front_proxy_ca_key = self._ca("front-proxy-ca", "kfin-envtest-front-proxy-ca")
        self.serving, self.serving_key = self._signed("apiserver", "kube-apiserver", self.ca, self.ca_key,
                                                      "subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.96.0.1,"
                                                      "DNS:kubernetes.default.svc", "serverAuth")
        self.proxy_client, self.proxy_client_key = self._signed(
            "front-proxy-client", "front-proxy-client", self.front_proxy_ca, self.front_proxy_ca_key, None,
            "clientAuth")
        self.sa_key, self.sa_pub = directory / "sa.key", directory / "sa.pub"
        _openssl("genrsa", "-out", str(self.sa_key), "2048")
        _openssl("rsa", "-in", str(self.sa_key), "-pubout", "-out", str(self.sa_pub))

    def _ca(self, name: str, subject: str) -> tuple[Path, Path]:
        cert, key = self.dir / f"{name}.crt", self.dir / f"{name}.key"
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-days", "2", "-subj", f"/CN={subject}", "-keyout", str(key), "-out", str(cert),
                 "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature")
        return cert, key

    def _signed(self, name: str, subject: str, ca: Path, ca_key: Path, san: str | None,
                usage: str) -> tuple[Path, Path]:
        cert, key, csr = self.dir / f"{name}.crt", self.dir / f"{name}.key", self.dir / f"{name}.csr"
        _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-subj", f"/CN={subject}", "-keyout", str(key), "-out", str(csr))
        extensions = self.dir / f"{name}.ext"
        extensions.write_text("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                              f"extendedKeyUsage={usage}\n" + (f"{san}\n" if san else ""))
        _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
                 "-days", "2", "-out", str(cert), "-extfile", str(extensions))
        return cert, key


class EnvtestControlPlane:
    """etcd + kube-apiserver + kube-controller-manager from KUBEBUILDER_ASSETS on 127.0.0.1 (without a
    kube-controller-manager binary, the API server alone: the scenarios marked `controllers` are skipped)."""

    ADMIN_TOKEN = "kfin-envtest-admin"
    CONTROLLER_MANAGER_TOKEN = "kfin-envtest-controller-manager"

    def __init__(self, assets: Path, feature_gates: tuple[str, ...] = (), runtime_config: tuple[str, ...] = ()):
        """`feature_gates` (enabled in kube-apiserver and kube-controller-manager) and `runtime_config` (API
        group versions kube-apiserver serves besides its defaults): for the alpha APIs a scenario needs."""
        self.assets = assets
        self.feature_gates, self.runtime_config = feature_gates, runtime_config
        self.dir = Path(tempfile.mkdtemp(prefix="kfin-envtest-"))
        self.processes: dict[str, subprocess.Popen] = {}
        self.server = ""
        self.etcd = ""  # etcd's client URL (plain http on 127.0.0.1)
        self.certificates: Certificates | None = None
        self.started_in = 0.0  # seconds from start() to ready
        self.cleaning: list = []  # the scenarios whose cleanup has begun, finished before the plane stops

    @property
    def has_controller_manager(self) -> bool:
        return (self.assets / "kube-controller-manager").exists()

    @property
    def ca_file(self) -> str:
        assert self.certificates is not None
        return str(self.certificates.ca)

    def start(self) -> EnvtestControlPlane:
        begun = time.monotonic()
        for binary in ("etcd", "kube-apiserver"):
            if not (self.assets / binary).exists():
                raise RuntimeError(f"{ENV_ASSETS}={self.assets} has no {binary}")
        for attempt in range(3):
            try:
                self._start()
                break
            except BaseException as error:
                self.stop()
                # a free port is free when asked, not when bound: another worker's control plane, or a client's
                # connection, may take it in between; new ports and a new folder, then
                if attempt == 2 or "address already in use" not in str(error):
                    raise
                self.dir = Path(tempfile.mkdtemp(prefix="kfin-envtest-"))
        self.started_in = time.monotonic() - begun
        return self

    def _start(self) -> None:
        pki = self.certificates = Certificates(self.dir / "pki")
        etcd_port, peer_port, api_port = _free_port(), _free_port(), _free_port()
        (self.dir / "tokens.csv").write_text(
            f'{self.ADMIN_TOKEN},admin,admin-uid,"system:masters"\n'
            f"{self.CONTROLLER_MANAGER_TOKEN},system:kube-controller-manager,kube-controller-manager-uid\n")
        self.etcd = f"http://127.0.0.1:{etcd_port}"
        self._spawn("etcd", [str(self.assets / "etcd"), "--data-dir", str(self.dir / "etcd"),
                             "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
                             "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
                             "--listen-peer-urls", f"http://127.0.0.1:{peer_port}", "--unsafe-no-fsync"])
        self._spawn("kube-apiserver", [
            str(self.assets / "kube-apiserver"), f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            f"--secure-port={api_port}", "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--tls-cert-file={pki.serving}", f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca}", "--authorization-mode=Node,RBAC",
            f"--token-auth-file={self.dir / 'tokens.csv'}", "--service-account-issuer=https://kfin.envtest",
            f"--service-account-key-file={pki.sa_pub}", f"--service-account-signing-key-file={pki.sa_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--endpoint-reconciler-type=none",
            "--enable-admission-plugins=NodeRestriction,MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
            f"--requestheader-client-ca-file={pki.front_proxy_ca}", "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={pki.proxy_client}", f"--proxy-client-key-file={pki.proxy_client_key}",
            "--allow-privileged=true", *self._gates(),
            *([f"--runtime-config={','.join(f'{gv}=true' for gv in self.runtime_config)}"] if self.runtime_config else [])])
        self.server = f"https://127.0.0.1:{api_port}"
        admin = RawClient(self.server, self.ADMIN_TOKEN, ca_file=str(pki.ca))
        self._wait(lambda: self._get(admin, "/readyz") is not None, "kube-apiserver to be ready (/readyz)")
        if not self.has_controller_manager:
            return
        kubeconfig = self.kubeconfig(self.dir / "controller-manager.kubeconfig", self.CONTROLLER_MANAGER_TOKEN,
                                     "system:kube-controller-manager")
        self._spawn("kube-controller-manager", [
            str(self.assets / "kube-controller-manager"), f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
            "--controllers=*", "--leader-elect=false", "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki.sa_key}", f"--root-ca-file={pki.ca}",
            f"--cluster-signing-cert-file={pki.ca}", f"--cluster-signing-key-file={pki.ca_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--allocate-node-cidrs=false",
            f"--secure-port={_free_port()}", "--bind-address=127.0.0.1", *self._gates()])
        self._wait(lambda: self._get(admin, "/api/v1/namespaces/default/serviceaccounts/default") is not None,
                   "the serviceaccount controller (ServiceAccount default/default)")
        self._wait(lambda: (self._get(admin, "/apis/rbac.authorization.k8s.io/v1/clusterroles/view") or {})
                   .get("rules"), "the clusterrole-aggregation controller (ClusterRole view with rules)")

    def _gates(self) -> list[str]:
        return [f"--feature-gates={','.join(f'{gate}=true' for gate in self.feature_gates)}"] if self.feature_gates else []

    def etcd_put(self, key: str, value: bytes) -> None:
        """Write `value` under `key` in etcd itself, behind kube-apiserver's back (bytes it cannot decode, as a
        lost encryption key or a bad write leaves them), through etcd's JSON gRPC gateway (POST /v3/kv/put)."""
        self._etcd("/v3/kv/put", {"key": _b64(key.encode()), "value": _b64(value)})

    def etcd_delete(self, key: str) -> None:
        self._etcd("/v3/kv/deleterange", {"key": _b64(key.encode())})

    def _etcd(self, path: str, body: dict) -> dict:
        request = urllib.request.Request(self.etcd + path, json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())

    def kubeconfig(self, path: Path, token: str, user: str) -> Path:
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "envtest", "cluster": {"server": self.server, "certificate-authority": self.ca_file}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": user}}],
            "current-context": "envtest"}))
        return path

    def _wait(self, condition, what: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited with {process.returncode} while waiting for {what}: "
                                       f"{self._log_tail(name)}")
            if time.monotonic() > deadline:  # the folder goes with stop(): the logs' last lines are told here
                tails = "; ".join(f"{name}: {self._log_tail(name)}" for name in self.processes)
                raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}: {tails}")
            time.sleep(0.2)

    @staticmethod
    def _get(client: RawClient, path: str):
        """The answer to a GET when it is 200, else None (also while the server does not listen yet)."""
        try:
            code, answer = client.send("GET", path)
        except OSError:
            return None
        return answer if code == 200 else None

    def _log_tail(self, name: str) -> str:
        lines = (self.dir / f"{name}.log").read_text(errors="replace").splitlines()
        return " | ".join(lines[-5:])

    def _spawn(self, name: str, argv: list[str]) -> None:
        with open(self.dir / f"{name}.log", "wb") as log:
            self.processes[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                                    stdin=subprocess.DEVNULL)

    def stop(self) -> None:
        for process in reversed(list(self.processes.values())):
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()
        shutil.rmtree(self.dir, ignore_errors=True)


def find_assets() -> tuple[Path | None, str]:
    """(the folder of the real control plane's binaries, "") from KUBEBUILDER_ASSETS, else from
    ../shared/control-plane, unpacked on first use; (None, why not) when there is none beside the checkout or it
    cannot be unpacked."""
    if os.environ.get(ENV_ASSETS):
        return Path(os.environ[ENV_ASSETS]), ""
    unpack = SHARED_CONTROL_PLANE / "unpack.sh"
    if not unpack.exists():
        return None, f"{SHARED_CONTROL_PLANE} not found and {ENV_ASSETS} not set"
    # one unpacking at a time: pytest-xdist's workers each start a control plane, and one still unpacking must not
    # overwrite the binaries another already runs
    with open(Path(tempfile.gettempdir()) / "kfin-control-plane-unpack.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = subprocess.run(["bash", str(unpack)], capture_output=True, text=True)
    if done.returncode != 0:
        return None, f"{unpack} failed: {done.stderr.strip() or done.returncode}"
    return Path(done.stdout.strip()), ""


def main() -> None:
    """`python -m tests.control_plane --kubeconfig PATH`: start a control plane by hand (as a scenario would get
    it), write an admin kubeconfig, and stop it at Ctrl-C or SIGTERM."""
    import argparse
    import signal

    def interrupt(*_):
        raise KeyboardInterrupt

    parser = argparse.ArgumentParser(prog="python -m tests.control_plane", description=main.__doc__)
    parser.add_argument("--kubeconfig", required=True, type=Path)
    args = parser.parse_args()
    assets, why = find_assets()
    if assets is None:
        raise SystemExit(f"error: {why}")
    plane = EnvtestControlPlane(assets).start()
    signal.signal(signal.SIGTERM, interrupt)
    try:
        plane.kubeconfig(args.kubeconfig.resolve(), plane.ADMIN_TOKEN, "admin")
        print(f"{plane.server} ready in {plane.started_in:.1f} s; kubeconfig {args.kubeconfig}", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        plane.stop()


if __name__ == "__main__":
    main()
