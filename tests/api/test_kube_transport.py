"""kfin/api/transport.py: credentials come from the client's refresh hook, but not on every request."""

import json

import pytest

from kfin.errors import ExitCode
from kfin.api.connect import open_transport
from kfin.api.connection import Kube, Target
from kfin.api.transport import Urllib3Transport
from tests.fakeapi import FakeAPIServer
from tests.fakeapi.server import VIEWER_TOKEN
from tests.fakeapi.tls import self_signed
from tests.runner import kfin


def test_credentials_are_refreshed_every_few_seconds_not_on_every_request(fake, fake_kubeconfig, monkeypatch):
    """Credentials that can change (exec plugins, auth providers) come from the kubernetes package."""
    monkeypatch.setattr("kfin.api.connect.load_static", lambda *_: None)
    transport, namespace = open_transport(Target(str(fake_kubeconfig)))
    kube = Kube(transport, namespace, None)
    configuration = transport.configuration
    asked = []
    auth_settings = type(configuration).auth_settings
    monkeypatch.setattr(type(configuration), "auth_settings", lambda self: asked.append(1) or auth_settings(self))
    for _ in range(20):
        kube.request("GET", "/api/v1/namespaces")
    # Each call runs the kubeconfig loader's refresh hook, which re-applies the whole kubeconfig: ~1 ms.
    assert len(asked) <= 1
    assert {r.user for r in fake.requests[-20:]} == {"admin"}

    # Once the window has passed the hook runs again, and what it renews (an expiring token) is used.
    def renewing_hook(config):
        config.api_key["BearerToken"] = f"Bearer {VIEWER_TOKEN}"
    configuration.refresh_api_key_hook = renewing_hook
    transport.auth_refresh_seconds = 0
    kube.request("GET", "/api/v1/namespaces")
    assert fake.requests[-1].user == "viewer"


@pytest.fixture
def tls_fake(tmp_path):
    server = FakeAPIServer().start(tls=self_signed(tmp_path))
    yield server
    server.stop()


def test_a_server_over_tls_is_trusted_through_the_kubeconfig_ca_and_only_through_it(tls_fake, tmp_path):
    kubeconfig = tls_fake.kubeconfig(tmp_path / "kubeconfig")
    tls_fake.apply({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "held", "namespace": "default", "finalizers": ["example.com/x"]}})
    tls_fake.cluster.delete(tls_fake.cluster.types[("", "configmaps")],
                            tls_fake.cluster.find(tls_fake.cluster.types[("", "configmaps")], "default", "held"),
                            None, None)
    found = kfin("stuck", "-A", "-o", "json", "--kubeconfig", str(kubeconfig))
    assert found.code == ExitCode.OK, found.stderr
    assert [i["name"] for i in json.loads(found.stdout)["items"]] == ["held"]

    config = json.loads(kubeconfig.read_text())
    del config["clusters"][0]["cluster"]["certificate-authority-data"]
    untrusted = tmp_path / "untrusted"
    untrusted.write_text(json.dumps(config))
    refused = kfin("stuck", "-A", "--kubeconfig", str(untrusted))
    assert refused.code == ExitCode.AUTH
    assert refused.stderr.startswith("error: TLS handshake with https://127.0.0.1:") and "\n" not in refused.stderr.strip()


def test_every_connection_to_a_server_shares_one_tls_context_its_ca_loaded_once(tls_fake, tmp_path, monkeypatch):
    """urllib3 loads the CA again for each new connection unless it is given a context: a third of a
    connection's CPU, and a scan opens a dozen connections per server (bench/RESULTS.md, fleet)."""
    import ssl

    loaded = []
    real = ssl.SSLContext.load_verify_locations
    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations",
                        lambda self, *args, **kwargs: loaded.append(1) or real(self, *args, **kwargs))
    transport, namespace = open_transport(Target(str(tls_fake.kubeconfig(tmp_path / "kubeconfig"))))
    kube = Kube(transport, namespace, None)
    for _ in range(5):
        transport.pool.clear()  # the next request opens a new connection
        assert kube.request("GET", "/version")["major"] == "1"
    assert len(loaded) == 1


def test_the_systems_certificate_authorities_are_read_only_for_a_server_over_tls(fake, fake_kubeconfig, tls_fake,
                                                                                tmp_path, monkeypatch):
    """Reading the system's CAs costs tens of milliseconds of a core for each command: over plain HTTP they are
    never used, so never read; over TLS without a certificate-authority they are what the server is checked by."""
    import ssl

    read = []
    real = ssl.SSLContext.load_default_certs
    monkeypatch.setattr(ssl.SSLContext, "load_default_certs",
                        lambda self, *args, **kwargs: read.append(1) or real(self, *args, **kwargs))
    transport, namespace = open_transport(Target(str(fake_kubeconfig)))
    assert Kube(transport, namespace, None).request("GET", "/version")["major"] == "1"
    assert json.loads(fake_kubeconfig.read_text())["clusters"][0]["cluster"]["server"].startswith("http://")
    assert read == []

    config = json.loads(tls_fake.kubeconfig(tmp_path / "kubeconfig").read_text())
    del config["clusters"][0]["cluster"]["certificate-authority-data"]
    (tmp_path / "system-cas").write_text(json.dumps(config))
    open_transport(Target(str(tmp_path / "system-cas")))
    assert read == [1]


def test_a_certificate_authority_that_is_no_certificate_is_a_kubeconfig_error(tls_fake, tmp_path):
    config = json.loads(tls_fake.kubeconfig(tmp_path / "kubeconfig").read_text())
    del config["clusters"][0]["cluster"]["certificate-authority-data"]
    (tmp_path / "ca.pem").write_text("not a certificate\n")
    config["clusters"][0]["cluster"]["certificate-authority"] = str(tmp_path / "ca.pem")
    (tmp_path / "bad").write_text(json.dumps(config))
    refused = kfin("stuck", "-A", "--kubeconfig", str(tmp_path / "bad"))
    assert refused.code == ExitCode.CONFIG, refused
    assert refused.stderr.startswith('error: context "') and "its certificate-authority cannot be used" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


class _FailingOncePool:
    """A urllib3 pool whose first request fails with `error`, the next ones go through: `sent` says how many
    were sent (the transport's own retry policy is what is tested, below the seam)."""

    def __init__(self, pool, error):
        self.pool, self.error, self.sent = pool, error, []

    def request(self, *args, **kwargs):
        self.sent.append(args[0])
        if len(self.sent) == 1:
            raise self.error
        return self.pool.request(*args, **kwargs)


def _failing_once(kubeconfig, error):
    """A connection whose pool fails its first request with `error`, and that pool."""
    transport, namespace = open_transport(Target(str(kubeconfig)))
    pool = _FailingOncePool(transport.pool, error)
    failing = Urllib3Transport(transport.configuration, pool, transport.context, transport.server)
    return Kube(failing, namespace, None), pool


def test_a_tls_decode_alert_from_the_server_is_retried_once_even_for_a_write(tls_fake, tmp_path):
    """The server's TLS layer refused the handshake: it read no request, so repeating it (a POST too) is safe."""
    import urllib3

    alert = urllib3.exceptions.SSLError("[SSL: TLSV1_ALERT_DECODE_ERROR] tlsv1 alert decode error (_ssl.c:2580)")
    kube, pool = _failing_once(tls_fake.kubeconfig(tmp_path / "kubeconfig"), alert)
    kube.request("POST", "/api/v1/namespaces/default/configmaps",
                 body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after-alert"}})
    assert pool.sent == ["POST", "POST"]
    assert tls_fake.cluster.find(tls_fake.cluster.types[("", "configmaps")], "default", "after-alert") is not None


def test_a_certificate_that_fails_verification_is_never_retried(tls_fake, tmp_path):
    import urllib3

    failure = urllib3.exceptions.SSLError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    kube, pool = _failing_once(tls_fake.kubeconfig(tmp_path / "kubeconfig"), failure)
    with pytest.raises(Exception, match="TLS handshake with https://127.0.0.1:"):
        kube.request("GET", "/version")
    assert pool.sent == ["GET"]


def test_kfin_ends_its_process_once_its_output_is_out_and_still_removes_the_files_of_credential_data(
    tls_fake, tmp_path
):
    """As a process of its own, kfin ends once the command's output is written, without the interpreter's
    teardown (kfin.commands.app: it would free every object a scan kept, one by one). What Python's exit would do
    is still done: the output is whole on a pipe (larger or smaller than its buffer), the exit code is the
    command's, and the exit handlers run: the files that the kubeconfig's client certificate and key data were
    written to (TLS libraries read them from files) are gone afterwards."""
    import base64
    import os
    import subprocess
    import sys

    client = tmp_path / "client"
    client.mkdir()
    cert, key = self_signed(client)
    config = json.loads(tls_fake.kubeconfig(tmp_path / "kubeconfig").read_text())
    config["users"][0]["user"].update({
        "client-certificate-data": base64.b64encode(cert.read_bytes()).decode(),
        "client-key-data": base64.b64encode(key.read_bytes()).decode(),
    })
    kubeconfig = tmp_path / "with-client-data"
    kubeconfig.write_text(json.dumps(config))
    configmaps = tls_fake.cluster.types[("", "configmaps")]
    for i in range(300):
        tls_fake.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": f"held-{i:03}", "namespace": "default", "finalizers": ["example.com/x"]}})
        tls_fake.cluster.delete(configmaps, tls_fake.cluster.find(configmaps, "default", f"held-{i:03}"), None, None)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = dict(os.environ, TMPDIR=str(temporary), KFIN_CACHE_DIR=str(tmp_path / "cache"), NO_COLOR="1")
    run = subprocess.run([sys.executable, "-m", "kfin", "stuck", "-A", "-o", "json", "--exit-code",
                          "--kubeconfig", str(kubeconfig)], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == ExitCode.FOUND, run.stderr
    assert len(run.stdout) > 65536
    assert sorted(i["name"] for i in json.loads(run.stdout)["items"]) == [f"held-{i:03}" for i in range(300)]
    assert [r for r in tls_fake.requests if r.path == "/api/v1/configmaps"]  # it did connect with those files
    assert list(temporary.iterdir()) == []
    # an output smaller than the pipe's buffer is not left in it
    names = subprocess.run([sys.executable, "-m", "kfin", "stuck", "-A", "-o", "name", "--kubeconfig", str(kubeconfig)],
                           env=env, capture_output=True, text=True, timeout=120)
    assert names.returncode == ExitCode.OK, names.stderr
    assert names.stdout.splitlines() == [f"configmap/held-{i:03}" for i in range(300)]
    assert list(temporary.iterdir()) == []
