"""kfin guard --self-signed (issue 42, item 5): the CA and serving certificate kfin makes (names, validity, the chain a
client verifies), when it rotates them (kfin.serve.guard_tls.decide), and how it keeps them in its one Secret and
writes the caBundle (against tests/fakeapi: replicas sharing a CA, a race between them, a Secret that is not its
own). The real API server calling a guard that made its own certificate: tests/scenarios/test_guard_self_signed.py."""

import base64
import datetime
import socket
import ssl
import sys
import threading

import pytest
from cryptography import x509

from kfin.api.connection import Kube
from kfin.api.target import Target
from kfin.errors import ConfigError
from kfin.serve.admission import HeldCertificate
from kfin.serve.guard_tls import (
    CA_RENEW_BEFORE,
    CA_SETTLE,
    CA_VALIDITY,
    SERVING_RENEW_BEFORE,
    SERVING_VALIDITY,
    Material,
    SelfSignedTLS,
    decide,
    renewed,
    sans_of,
)
from tests.runner import kfin

NAMES = ["kfin-guard.kfin-system.svc", "kfin-guard.kfin-system.svc.cluster.local", "127.0.0.1"]
T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def cas(material: Material) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(material.ca_bundle)


def serving(material: Material) -> x509.Certificate:
    return x509.load_pem_x509_certificate(material.cert)


def test_the_serving_certificate_names_the_services_dns_names_and_is_signed_by_the_ca():
    material = renewed(None, "create", NAMES, T0)
    [ca], cert = cas(material), serving(material)
    assert sans_of(material.cert) == NAMES
    assert cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName) == NAMES[:2]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    cert.verify_directly_issued_by(ca)
    assert cert.not_valid_after_utc == T0 + SERVING_VALIDITY and ca.not_valid_after_utc == T0 + CA_VALIDITY
    assert cert.not_valid_before_utc < T0  # backdated: a node whose clock is a little behind accepts it


def test_a_client_trusting_the_ca_bundle_completes_a_handshake_with_what_the_guard_serves():
    material = renewed(None, "create", NAMES, datetime.datetime.now(datetime.UTC))
    held = HeldCertificate()
    held.load(material.cert, material.key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def answer():
        conn, _ = listener.accept()
        with held.context().wrap_socket(conn, server_side=True) as tls:
            tls.sendall(b"ok")

    thread = threading.Thread(target=answer)
    thread.start()
    client = ssl.create_default_context(cadata=material.ca_bundle.decode())
    with socket.create_connection(("127.0.0.1", port)) as raw, client.wrap_socket(
            raw, server_hostname="kfin-guard.kfin-system.svc") as tls:
        assert tls.recv(2) == b"ok"
    thread.join(5)
    listener.close()


def test_rotation_decisions_over_a_cas_life():
    material = renewed(None, "create", NAMES, T0)
    assert decide(None, NAMES, T0)[0] == "create"
    assert decide(material, NAMES, T0) == ("keep", "")
    # the serving certificate is re-issued SERVING_RENEW_BEFORE its end, by the same CA
    due = T0 + SERVING_VALIDITY - SERVING_RENEW_BEFORE
    assert decide(material, NAMES, due - datetime.timedelta(hours=1))[0] == "keep"
    assert decide(material, NAMES, due)[0] == "reissue"
    reissued = renewed(material, "reissue", NAMES, due)
    assert reissued.ca_bundle == material.ca_bundle and reissued.cert != material.cert
    assert serving(reissued).not_valid_after_utc == due + SERVING_VALIDITY
    # other names (a changed --service-name or --tls-san): re-issued at once
    assert decide(material, NAMES[:2], T0)[0] == "reissue"

    # the CA is replaced CA_RENEW_BEFORE its end: the new one first in the caBundle, the old one still trusted, and
    # the serving certificate still the old CA's until the new CA has been in the caBundle for CA_SETTLE
    ca_due = T0 + CA_VALIDITY - CA_RENEW_BEFORE
    late = renewed(material, "reissue", NAMES, ca_due - datetime.timedelta(days=1))
    assert decide(late, NAMES, ca_due)[0] == "new-ca"
    rotated = renewed(late, "new-ca", NAMES, ca_due)
    new_ca, old_ca = cas(rotated)
    assert old_ca == cas(material)[0] and new_ca != old_ca and rotated.cert == late.cert
    assert decide(rotated, NAMES, ca_due + CA_SETTLE - datetime.timedelta(minutes=6))[0] == "keep"
    settled = ca_due + CA_SETTLE
    assert decide(rotated, NAMES, settled) == ("reissue", "the serving certificate is signed by the previous CA")
    moved = renewed(rotated, "reissue", NAMES, settled)
    serving(moved).verify_directly_issued_by(new_ca)
    assert cas(moved) == [new_ca, old_ca]  # both trusted during the overlap
    # the old CA leaves the caBundle once it has expired
    after = T0 + CA_VALIDITY + datetime.timedelta(minutes=1)
    fresh = renewed(moved, "reissue", NAMES, after - datetime.timedelta(days=1))
    assert cas(fresh) == [new_ca, old_ca]
    assert decide(fresh, NAMES, after) == ("prune", "a previous CA has expired")
    assert cas(renewed(fresh, "prune", NAMES, after)) == [new_ca]


def test_a_serving_certificate_never_outlives_its_ca():
    material = renewed(None, "create", NAMES, T0)
    near_end = T0 + CA_VALIDITY - datetime.timedelta(days=3)
    reissued = renewed(material, "reissue", NAMES, near_end)
    assert serving(reissued).not_valid_after_utc == cas(material)[0].not_valid_after_utc


@pytest.fixture
def fake(tmp_path):
    from tests.fakeapi import FakeAPIServer

    server = FakeAPIServer().start()
    server.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kfin-system"}})
    yield Kube.connect(Target(kubeconfig=str(server.kubeconfig(tmp_path / "kubeconfig")))), server
    server.stop()


def keeper(kube, logs: list, clock=None) -> SelfSignedTLS:
    return SelfSignedTLS(kube, "kfin-system", "kfin-guard-ca", "kfin-guard", NAMES, logs.append,
                         **({"clock": clock} if clock else {}))


def test_replicas_share_one_ca_in_the_secret_and_the_second_writer_of_a_race_reads_the_first(fake):
    kube, _ = fake
    logs: list[str] = []
    first = keeper(kube, logs).ensure()
    secret = kube.get("/api/v1/namespaces/kfin-system/secrets/kfin-guard-ca")
    assert secret["type"] == "kubernetes.io/tls" and secret["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "kfin-guard"}
    assert base64.b64decode(secret["data"]["ca.crt"]) == first.ca_bundle
    assert keeper(kube, logs).ensure() == first  # a second replica: the same CA, the same pair, nothing written
    assert kube.get("/api/v1/namespaces/kfin-system/secrets/kfin-guard-ca")["metadata"]["resourceVersion"] == \
        secret["metadata"]["resourceVersion"]

    late = keeper(kube, logs)  # a replica that read before the first created it: its create answers 409
    real_read = late._read
    reads = iter([(None, None)])
    late._read = lambda: next(reads, None) or real_read()
    assert late.ensure() == first
    assert len(logs) == 1 and "new CA" in logs[0] and "BEGIN" not in "".join(logs)  # nothing secret logged


def test_a_rotation_replaces_the_secret_under_its_resource_version(fake):
    kube, _ = fake
    first = keeper(kube, []).ensure()
    later = datetime.datetime.now(datetime.UTC) + CA_VALIDITY - CA_RENEW_BEFORE + datetime.timedelta(days=1)
    rotated = keeper(kube, [], clock=later.timestamp).ensure()
    assert cas(rotated)[1] == cas(first)[0] and len(cas(rotated)) == 2
    assert keeper(kube, []).ensure().ca_bundle == rotated.ca_bundle  # the other replica follows


def test_a_secret_that_is_not_kfin_guards_is_never_taken_over(fake):
    kube, server = fake
    server.apply({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                  "metadata": {"name": "kfin-guard-ca", "namespace": "kfin-system"},
                  "data": {"tls.crt": "", "tls.key": ""}})
    with pytest.raises(ConfigError, match="is not kfin guard's"):
        keeper(kube, []).ensure()


def test_the_ca_bundle_is_written_by_a_patch_guarded_by_the_resource_version(fake):
    kube, server = fake
    logs: list[str] = []
    tls = keeper(kube, logs)
    material = tls.ensure()
    assert tls.publish(material) is False and "no ValidatingWebhookConfiguration kfin-guard yet" in logs[-1]
    hook = {"name": "guard.kfin.dev", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "failurePolicy": "Ignore", "clientConfig": {"url": "https://127.0.0.1:1/validate"},
            "rules": [{"operations": ["DELETE"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]}
    server.apply({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                  "metadata": {"name": "kfin-guard"}, "webhooks": [hook]})
    path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/kfin-guard"
    sent = []
    patch = kube.patch_object
    kube.patch_object = lambda *args: sent.append(args[3]) or patch(*args)
    assert tls.publish(material) is True
    [hook] = kube.get(path)["webhooks"]
    assert base64.b64decode(hook["clientConfig"]["caBundle"]) == material.ca_bundle
    [operations] = sent
    assert operations[0]["op"] == "test" and operations[0]["path"] == "/metadata/resourceVersion"
    assert [op["path"] for op in operations[1:]] == ["/webhooks/0/clientConfig/caBundle"]
    version = kube.get(path)["metadata"]["resourceVersion"]
    assert tls.publish(material) is True and len(sent) == 1  # already there: nothing written
    assert kube.get(path)["metadata"]["resourceVersion"] == version


def test_without_the_cryptography_package_one_error_line_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "cryptography", None)
    monkeypatch.setitem(sys.modules, "cryptography.x509", None)
    result = kfin("guard", "--self-signed", "--kubeconfig", str(tmp_path / "none"))
    assert result.stderr.splitlines() == [
        "error: kfin guard --self-signed needs the cryptography package, an extra of kfin: pip install 'kfin[guard]'"]
    assert result.code == 3 and result.stdout == ""


def test_self_signed_goes_without_a_certificate_file():
    result = kfin("guard", "--self-signed", "--tls-cert-file", "a", "--tls-private-key-file", "b")
    assert result.code == 2 and "--self-signed makes its own certificate" in result.stderr


def test_kfin_imports_cryptography_only_for_self_signed(tmp_path):
    import subprocess

    code = ("import sys; from kfin.commands.app import main\n"
            "try:\n    main(['guard', '--plain-http', '--kubeconfig', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
            "print('imported:', any(m == 'cryptography' or m.startswith('cryptography.') for m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "none")], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "imported: False", done


def test_self_signed_in_a_namespace_that_does_not_exist_names_the_flag(fake, tmp_path):
    _, server = fake
    kubeconfig = server.kubeconfig(tmp_path / "kubeconfig")
    result = kfin("guard", "--self-signed", "--service-namespace", "nowhere", "--kubeconfig", str(kubeconfig))
    assert result.stderr.splitlines() == [
        "error: namespace nowhere not found: kfin guard --self-signed keeps its Secret kfin-guard-ca in its "
        "Service's namespace (--service-namespace)"], result.stderr
    assert result.code == 7 and result.stdout == ""


def test_the_secret_is_owned_by_the_webhook_configuration_it_fills_and_keeps_its_owner_when_rotated(fake):
    """Deleting the configuration (helm uninstall and kubectl delete -k delete it first) deletes the Secret too."""
    kube, server = fake
    server.apply({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                  "metadata": {"name": "kfin-guard"}, "webhooks": []})
    uid = kube.get("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/kfin-guard")["metadata"][
        "uid"]
    keeper(kube, []).ensure()
    path = "/api/v1/namespaces/kfin-system/secrets/kfin-guard-ca"
    owners = [{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
               "name": "kfin-guard", "uid": uid}]
    assert kube.get(path)["metadata"]["ownerReferences"] == owners
    later = datetime.datetime.now(datetime.UTC) + CA_VALIDITY - CA_RENEW_BEFORE + datetime.timedelta(days=1)
    keeper(kube, [], clock=later.timestamp).ensure()  # rotated: the Secret replaced, its owner kept
    assert len(cas(keeper(kube, []).ensure())) == 2
    assert kube.get(path)["metadata"]["ownerReferences"] == owners


def test_without_its_webhook_configuration_yet_the_secret_is_made_without_an_owner(fake):
    kube, _ = fake
    keeper(kube, []).ensure()
    assert "ownerReferences" not in kube.get("/api/v1/namespaces/kfin-system/secrets/kfin-guard-ca")["metadata"]
