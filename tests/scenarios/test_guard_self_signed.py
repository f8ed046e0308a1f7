"""kfin guard --self-signed (issue 42, item 5) called by the API server: kfin makes its CA and serving certificate,
keeps them in a Secret of its own, and writes the CA into a webhook configuration whose caBundle is empty; then
kube-apiserver (and the fake, which verifies a webhook against its caBundle too) calls it over TLS and the DELETE
carries kfin's warning, which proves the CA it wrote is the one it serves with. A second guard started against the
same Secret serves the same CA and writes nothing."""

import base64
import copy
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
import yaml

from tests.scenario import until
from tests.scenarios.test_guard import WEBHOOK, team, warned_when_ready
from tests.serve.test_serve import ROOT, _free_port


def start_guard(cluster, port: int, secret: str, configuration: str, log) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "kfin", "guard", "--self-signed", "--listen", f"127.0.0.1:{port}",
         "--service-namespace", cluster.namespace, "--tls-secret", secret, "--webhook-configuration", configuration,
         "--tls-san", "127.0.0.1", "--kubeconfig", str(cluster.kubeconfig)],
        env=dict(os.environ, PYTHONPATH=str(ROOT)), stderr=log)


def serves_with(url: str, trust: ssl.SSLContext) -> bool:
    """The guard at `url` is ready, and its certificate verifies against `trust` (hostname 127.0.0.1 included)."""
    try:
        return urllib.request.urlopen(f"{url}/readyz", context=trust, timeout=2).status == 200
    except (OSError, urllib.error.URLError):
        return False


@pytest.mark.controllers
def test_a_self_signed_guard_fills_the_ca_bundle_and_the_api_server_trusts_it(cluster, tmp_path):
    group, ns = team(cluster)
    path = f"/api/v1/namespaces/{ns}"
    port, second_port = _free_port(), _free_port()
    secret, name = "kfin-guard-ca", cluster.name("kfin-guard")
    config = copy.deepcopy(yaml.safe_load(WEBHOOK.read_text()))
    config["metadata"] = {"name": name}  # no cert-manager annotation: nothing else writes the caBundle
    [hook] = config["webhooks"]
    hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}/validate"}  # the caBundle empty
    hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": ns}}
    config = cluster.create(config)
    config_path = cluster.path_of(config)
    assert not config["webhooks"][0]["clientConfig"].get("caBundle")
    log_path, second_log_path = tmp_path / "guard.log", tmp_path / "second.log"
    processes = []
    try:
        with open(log_path, "wb") as log:
            processes.append(start_guard(cluster, port, secret, name, log))

        def ca_bundle() -> bytes:
            written = cluster.get(config_path)["webhooks"][0]["clientConfig"].get("caBundle")
            return base64.b64decode(written) if written else b""

        ca = until(ca_bundle, "kfin guard to write the caBundle")
        stored = cluster.get(f"/api/v1/namespaces/{cluster.namespace}/secrets/{secret}")
        assert stored["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "kfin-guard"}
        assert base64.b64decode(stored["data"]["ca.crt"]) == ca
        [owner] = stored["metadata"]["ownerReferences"]  # the configuration it fills: deleted, the Secret goes too
        assert (owner["kind"], owner["name"], owner["uid"]) == (
            "ValidatingWebhookConfiguration", name, config["metadata"]["uid"])
        trust = ssl.create_default_context(cadata=ca.decode())
        until(lambda: serves_with(f"https://127.0.0.1:{port}", trust), "kfin guard to serve with its CA")

        # the API server calls it with the caBundle it wrote: the deletion carries kfin's warning
        expected = (f"kfin: deleting namespace {ns} leaves 2 Widgets stuck ({group}/cleanup): their controller is "
                    f"deleted with it; delete them first: kubectl delete widgets.{group} -n {ns} --all")
        warned_when_ready(cluster, path, expected)

        # a second replica: the same Secret, the same CA; it writes neither the Secret nor the caBundle
        with open(second_log_path, "wb") as log:
            processes.append(start_guard(cluster, second_port, secret, name, log))
        until(lambda: serves_with(f"https://127.0.0.1:{second_port}", trust), "the second guard to serve")
        assert cluster.get(f"/api/v1/namespaces/{cluster.namespace}/secrets/{secret}")["metadata"][
            "resourceVersion"] == stored["metadata"]["resourceVersion"]
        assert ca_bundle() == ca
        served = ssl.get_server_certificate(("127.0.0.1", second_port)).encode()
        first = ssl.get_server_certificate(("127.0.0.1", port)).encode()
        assert served == first  # the one serving pair of the Secret
    finally:
        for process in processes:
            process.terminate()
            process.wait(10)
        cluster.api.delete(config_path)
    # what an uninstall leaves of the guard: nothing, its Secret deleted by the garbage collector with its owner
    cluster.eventually(lambda: cluster.get(f"/api/v1/namespaces/{cluster.namespace}/secrets/{secret}") is None,
                       message="the garbage collector to delete the guard's Secret with its webhook configuration")
    logs = log_path.read_text() + second_log_path.read_text()
    assert f"caBundle of ValidatingWebhookConfiguration {name} written" in logs
    assert "new CA and serving certificate" in log_path.read_text()
    assert "written" not in second_log_path.read_text() and "new CA" not in second_log_path.read_text()
    assert "PRIVATE KEY" not in logs and stored["data"]["tls.key"] not in logs  # nothing secret logged


def test_a_ca_bundle_written_over_a_change_made_meanwhile_is_refused_and_written_at_the_next_look(cluster):
    """The caBundle's JSON Patch tests the resourceVersion kfin read: when the configuration changed since (another
    writer, another replica), the server refuses it (422, a failed test) and kfin tries again from a new read."""
    from kfin.api.connection import Kube
    from kfin.api.target import Target
    from kfin.serve.guard_tls import SelfSignedTLS

    config = copy.deepcopy(yaml.safe_load(WEBHOOK.read_text()))
    config["metadata"] = {"name": cluster.name("kfin-guard")}
    [hook] = config["webhooks"]
    hook["clientConfig"] = {"url": "https://127.0.0.1:1/validate"}
    hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": cluster.name("nothing")}}
    config_path = cluster.path_of(cluster.create(config))
    logs: list[str] = []
    kube = Kube.connect(Target(kubeconfig=str(cluster.kubeconfig)))
    tls = SelfSignedTLS(kube, cluster.namespace, "kfin-guard-ca", config["metadata"]["name"], ["a.svc"], logs.append)
    material = tls.ensure()
    stale = kube.get(config_path)
    cluster.api.merge_patch(config_path, {"metadata": {"labels": {"changed": "meanwhile"}}})
    read = kube.read_object
    kube.read_object = lambda *args, **kwargs: stale
    assert tls.publish(material) is False
    assert not cluster.get(config_path)["webhooks"][0]["clientConfig"].get("caBundle")
    kube.read_object = read
    assert tls.publish(material) is True
    written = cluster.get(config_path)
    assert base64.b64decode(written["webhooks"][0]["clientConfig"]["caBundle"]) == material.ca_bundle
    assert written["metadata"]["labels"] == {"changed": "meanwhile"}  # the other change kept
