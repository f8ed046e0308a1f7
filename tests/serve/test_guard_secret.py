"""kfin guard --self-signed and a Secret of its own that it cannot use (labelled as its own, but garbage, PEM-shaped
garbage, not base64, keys missing or of the wrong type, a key that is not its certificate's, a serving certificate
no CA of the Secret signed): at start, one error line naming the Secret and what is wrong, exit 3, nothing
written; while it runs, one log line, not ready (/readyz, kfin_guard_ready), the last good certificate still
served, the keeper still looking, and ready again once the Secret is good. An ended CA or serving certificate is
kfin's to rotate, never a refusal. Against tests/fakeapi."""

import base64
import datetime
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from kfin.api.connection import Kube
from kfin.api.target import Target
from kfin.errors import UnreachableError
from kfin.serve.admission import HeldCertificate
from kfin.serve.guard_tls import CA_VALIDITY, RETRY_FIRST, SECRETS, SERVING_VALIDITY, Material, SelfSignedTLS, renewed
from tests.serve.test_serve import ROOT, _free_port

NAMESPACE, NAME = "kfin-system", "kfin-guard-ca"
NAMES = ["kfin-guard.kfin-system.svc", "kfin-guard.kfin-system.svc.cluster.local"]
LABELS = {"app.kubernetes.io/managed-by": "kfin-guard"}
NOW = datetime.datetime.now(datetime.UTC)
GOOD = renewed(None, "create", NAMES, NOW)
OTHER = renewed(None, "create", NAMES, NOW)  # another CA, another serving pair
REFUSED = (
    f"error: the Secret {NAMESPACE}/{NAME} (labelled app.kubernetes.io/managed-by=kfin-guard) cannot be "
    "used: {}; kfin guard does not replace it: delete it (kubectl delete secret -n kfin-system kfin-guard-ca) "
    "and kfin guard makes a new CA and certificate and writes the CA into the caBundle"
)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def data_of(material: Material, **changed) -> dict:
    data = {
        "ca.crt": b64(material.ca_bundle),
        "ca.key": b64(material.ca_key),
        "tls.crt": b64(material.cert),
        "tls.key": b64(material.key),
    }
    data.update({key.replace("_", "."): value for key, value in changed.items()})
    return {k: v for k, v in data.items() if v is not None}


PEM_GARBAGE = b"-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n"
ENCRYPTED = serialization.load_pem_private_key(GOOD.key, None).private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"pw")
)
ED25519 = ed25519.Ed25519PrivateKey.generate().private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
)

BAD = {  # what the Secret holds: what the error line says is wrong
    "garbage": (data_of(GOOD, ca_crt=b64(b"garbage")), "its ca.crt holds no PEM certificate"),
    "pem-shaped garbage": (
        data_of(GOOD, tls_crt=b64(PEM_GARBAGE)),
        "its tls.crt holds a certificate that cannot be read",
    ),
    "not base64": (data_of(GOOD, tls_key="not base64!"), "its tls.key is not base64"),
    "a key missing": (data_of(GOOD, ca_key=None), "it has no ca.key"),
    "a value not a string": (data_of(GOOD, tls_crt=5), "its tls.crt is not a string"),
    "data not an object": ("tls.crt", "its data is not an object"),
    "no data": (None, "it has no data"),
    "garbage key": (
        data_of(GOOD, ca_key=b64(b"-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n")),
        "its ca.key is not a PEM private key without a password",
    ),
    "an encrypted key": (
        data_of(GOOD, tls_key=b64(ENCRYPTED)),
        "its tls.key is not a PEM private key without a password",
    ),
    "a key kfin cannot sign with": (
        data_of(GOOD, ca_key=b64(ED25519)),
        "its ca.key is neither an EC nor an RSA key (kfin signs with SHA-256)",
    ),
    "a serving key not its certificate's": (
        data_of(GOOD, tls_key=b64(OTHER.key)),
        "its tls.key is not the key of the certificate in its tls.crt",
    ),
    "a CA key not its CA's": (
        data_of(GOOD, ca_key=b64(OTHER.ca_key)),
        "its ca.key is not the key of the CA in its ca.crt",
    ),
    "a serving certificate another CA signed": (
        data_of(GOOD, tls_crt=b64(OTHER.cert), tls_key=b64(OTHER.key)),
        "its tls.crt is not signed by a CA of its ca.crt",
    ),
    "a CA that is not a CA": (
        data_of(GOOD, ca_crt=b64(GOOD.cert), ca_key=b64(GOOD.key)),
        "the first certificate of its ca.crt is not a CA",
    ),
    "two serving certificates": (
        data_of(GOOD, tls_crt=b64(GOOD.cert + OTHER.cert)),
        "its tls.crt holds more than one certificate",
    ),
}


def secret(data) -> dict:
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": LABELS},
    }
    return body if data is None else dict(body, data=data)


@pytest.fixture
def cluster(fake, tmp_path):
    fake.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    kubeconfig = fake.kubeconfig(tmp_path / "kubeconfig")
    return fake, kubeconfig, Kube.connect(Target(kubeconfig=str(kubeconfig)))


@pytest.mark.parametrize("shape", list(BAD))
def test_a_secret_it_cannot_use_is_refused_at_start_in_one_line_and_left_as_it_is(cluster, shape):
    fake, kubeconfig, kube = cluster
    data, what = BAD[shape]
    fake.apply(secret(data))
    version = kube.read_object(SECRETS, NAMESPACE, NAME)["metadata"]["resourceVersion"]
    # its own process: a Secret taken as good would have it serve until stopped
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kfin",
            "guard",
            "--self-signed",
            "--listen",
            "127.0.0.1:0",
            "--kubeconfig",
            str(kubeconfig),
        ],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stderr.splitlines() == [REFUSED.format(what)], result.stderr
    assert result.returncode == 3 and result.stdout == ""
    assert kube.read_object(SECRETS, NAMESPACE, NAME)["metadata"]["resourceVersion"] == version  # never replaced
    assert not [r for r in fake.requests if r.method != "GET"]


def keeper(kube, logs: list, clock=None) -> SelfSignedTLS:
    return SelfSignedTLS(kube, NAMESPACE, NAME, "kfin-guard", NAMES, logs.append, **({"clock": clock} if clock else {}))


def test_an_ended_ca_or_serving_certificate_is_rotated_not_refused(cluster):
    fake, _, kube = cluster
    long_ago = NOW - CA_VALIDITY - datetime.timedelta(days=2)
    old = renewed(None, "create", NAMES, long_ago)
    fake.apply(secret(data_of(old)))
    logs: list[str] = []
    fresh = keeper(kube, logs).ensure()
    assert fresh.ca_bundle != old.ca_bundle and len(x509_all(fresh.ca_bundle)) == 1
    assert logs == [
        f"kfin guard: new CA and serving certificate (the CA ended {long_ago + CA_VALIDITY:%Y-%m-%d}): "
        f"CA {fresh.fingerprint()} in Secret {NAMESPACE}/{NAME}"
    ]
    # a serving certificate that has ended, signed by a CA no longer in the caBundle: re-issued at once
    ended = renewed(None, "create", NAMES, NOW - SERVING_VALIDITY - datetime.timedelta(days=1))
    current = renewed(None, "create", NAMES, NOW)
    kube.replace_object(
        SECRETS, NAMESPACE, NAME, secret(data_of(current, tls_crt=b64(ended.cert), tls_key=b64(ended.key)))
    )
    logs.clear()
    reissued = keeper(kube, logs).ensure()
    assert reissued.ca_bundle == current.ca_bundle and reissued.cert not in (ended.cert, current.cert)
    assert "serving certificate re-issued (the serving certificate ended" in logs[0]


def x509_all(bundle: bytes) -> list:
    from cryptography import x509

    return x509.load_pem_x509_certificates(bundle)


def handshake(port: int, ca_bundle: bytes) -> bytes:
    """The serving certificate (DER) a client trusting `ca_bundle` gets, the handshake verified."""
    client = ssl.create_default_context(cadata=ca_bundle.decode())
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        client.wrap_socket(raw, server_hostname=NAMES[0]) as tls,
    ):
        return tls.getpeercert(binary_form=True)


def serving_der(material: Material) -> bytes:
    from cryptography import x509

    return x509.load_pem_x509_certificate(material.cert).public_bytes(serialization.Encoding.DER)


def test_corrupted_while_kept_it_is_said_once_the_last_certificate_serves_and_it_recovers(cluster):
    _, _, kube = cluster
    logs: list[str] = []
    tls = keeper(kube, logs)
    good = tls.ensure()
    held = HeldCertificate()
    held.load(good.cert, good.key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve_tls():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                with held.context().wrap_socket(conn, server_side=True):
                    pass
            except (OSError, ssl.SSLError):
                pass

    threading.Thread(target=serve_tls, daemon=True).start()
    served = []
    tls.served = good
    assert tls.look(served.append, every=60) == RETRY_FIRST  # no webhook configuration yet: sooner
    assert tls.problem == "" and served == []
    logs.clear()

    stored = kube.read_object(SECRETS, NAMESPACE, NAME)
    corrupt = secret(data_of(good, tls_crt=b64(PEM_GARBAGE)))
    corrupt["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
    kube.replace_object(SECRETS, NAMESPACE, NAME, corrupt)
    waits = [tls.look(served.append, every=60) for _ in range(6)]
    assert waits == [RETRY_FIRST, 2 * RETRY_FIRST, 4 * RETRY_FIRST, 8 * RETRY_FIRST, 60, 60]  # backoff, at most every
    assert tls.problem.startswith(f"the Secret {NAMESPACE}/{NAME} (labelled") and served == []
    [line] = logs  # once, not at every retry
    assert line.startswith("kfin guard: not ready: its TLS could not be kept: the Secret kfin-system/kfin-guard-ca")
    assert "its tls.crt holds a certificate that cannot be read" in line and "serving the last good certificate" in line
    assert handshake(port, good.ca_bundle) == serving_der(good)  # still served, still trusted
    assert kube.read_object(SECRETS, NAMESPACE, NAME)["data"] == corrupt["data"]  # never replaced

    stored = kube.read_object(SECRETS, NAMESPACE, NAME)
    repaired = secret(data_of(good))
    repaired["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
    kube.replace_object(SECRETS, NAMESPACE, NAME, repaired)
    assert tls.look(served.append, every=60) == RETRY_FIRST
    assert tls.problem == "" and served == []  # the same pair: nothing to load again
    assert logs[-1:] == [
        f"kfin guard: ready again: its TLS is kept (CA {good.fingerprint()} in Secret {NAMESPACE}/{NAME})"
    ]
    stop.set()
    listener.close()


def test_whatever_fails_in_a_look_is_one_escaped_line_and_the_keeper_goes_on(cluster):
    _, _, kube = cluster
    logs: list[str] = []
    tls = keeper(kube, logs)
    tls.ensure()
    looks = []
    real = tls.ensure

    def failing():
        looks.append(1)
        if len(looks) <= 3:
            raise RuntimeError("boom\n2099-01-01T00:00:00Z kfin guard: stopped\x1b]0;pwned\x07")
        return real()

    tls.ensure = failing
    stop = threading.Event()
    thread = threading.Thread(target=tls.keep, args=(stop, lambda m: None, 0.01), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while (len(looks) < 5 or tls.problem) and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    thread.join(10)
    assert len(looks) >= 5 and tls.problem == ""
    said = [line for line in logs if "not ready" in line]
    assert len(said) == 1 and "\n" not in said[0] and "\x1b" not in said[0] and "\x07" not in said[0]
    assert "internal error in kfin: RuntimeError(" in said[0]
    assert any(line.startswith("kfin guard: ready again") for line in logs)


def _status(url: str) -> int:
    try:
        return urllib.request.urlopen(url, timeout=5).status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def _until(condition, what: str, seconds: float = 60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"never: {what}")


def test_a_running_guard_whose_secret_is_corrupted_is_not_ready_serves_on_and_recovers(cluster, tmp_path):
    _, kubeconfig, kube = cluster
    port, metrics_port = _free_port(), _free_port()
    # kfin guard with its keeper looking every 0.2 s instead of every minute (CHECK_EVERY)
    code = (
        "import sys; import kfin.serve.guard_tls as tls; tls.CHECK_EVERY = 0.2\n"
        "from kfin.commands.app import main; main(sys.argv[1:])"
    )
    log = tmp_path / "guard.log"
    with open(log, "w") as stderr:
        process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                code,
                "guard",
                "--self-signed",
                "--tls-san",
                "127.0.0.1",
                "--listen",
                f"127.0.0.1:{port}",
                "--metrics-listen",
                f"127.0.0.1:{metrics_port}",
                "--kubeconfig",
                str(kubeconfig),
            ],
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            stderr=stderr,
            stdout=subprocess.DEVNULL,
        )
    readyz, metrics = f"http://127.0.0.1:{metrics_port}/readyz", f"http://127.0.0.1:{metrics_port}/metrics"
    try:
        _until(lambda: _status(readyz) == 200, "ready")
        stored = kube.read_object(SECRETS, NAMESPACE, NAME)
        good = base64.b64decode(stored["data"]["ca.crt"])
        first = handshake(port, good)
        corrupt = dict(stored, data=dict(stored["data"], **{"tls.key": b64(OTHER.key)}))
        kube.replace_object(SECRETS, NAMESPACE, NAME, corrupt)
        _until(lambda: _status(readyz) == 503, "not ready")
        assert "kfin_guard_ready 0" in urllib.request.urlopen(metrics, timeout=5).read().decode()
        assert handshake(port, good) == first  # the last good certificate, still served
        said = [line for line in log.read_text().splitlines() if "not ready" in line]
        assert len(said) == 1 and "its tls.key is not the key of the certificate in its tls.crt" in said[0]

        now = kube.read_object(SECRETS, NAMESPACE, NAME)
        kube.replace_object(SECRETS, NAMESPACE, NAME, dict(now, data=stored["data"]))
        _until(lambda: _status(readyz) == 200, "ready again")
        assert "kfin_guard_ready 1" in urllib.request.urlopen(metrics, timeout=5).read().decode()
        assert handshake(port, good) == first
    finally:
        process.terminate()
        process.wait(10)
    text = log.read_text()
    assert "kfin guard: ready again: its TLS is kept" in text and "Traceback" not in text, text


def test_a_server_away_for_now_keeps_the_guard_ready_while_its_certificate_holds(cluster):
    """An API server that cannot be reached (or answers 5xx) for a while is no reason to take the guard out of its
    Service: the certificate it serves still holds. Said once in the log; not ready only once that certificate
    has ended."""
    _, _, kube = cluster
    logs: list[str] = []
    tls = keeper(kube, logs)
    tls.served = tls.ensure()
    logs.clear()

    def away():
        raise UnreachableError("the API server at https://127.0.0.1:1 cannot be reached: connection refused")

    tls.ensure = away
    assert tls.look(lambda m: None, every=60) == RETRY_FIRST
    assert tls.look(lambda m: None, every=60) == RETRY_FIRST * 2
    assert tls.problem == "" and len(logs) == 1, logs
    assert logs[0].startswith("kfin guard: could not look at its TLS: the API server at https://127.0.0.1:1 cannot "
                              "be reached: connection refused; the certificate it serves still holds (it ends ")
    ended = keeper(kube, logs, clock=lambda: (NOW + SERVING_VALIDITY + datetime.timedelta(days=1)).timestamp())
    ended.served, ended.ensure = tls.served, away
    ended.look(lambda m: None, every=60)
    assert ended.problem.startswith("the API server at https://127.0.0.1:1 cannot be reached")
