"""kfin/api/kubeconfig.py: common kubeconfigs are read without the kubernetes package, the same way it
reads them; everything else is left to the package."""

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kfin.api.kubeconfig import load_static

CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n").decode()
CERT = base64.b64encode(b"client certificate").decode()
KEY = base64.b64encode(b"client key").decode()


def write(tmp_path, user: dict, cluster: dict | None = None, context: dict | None = None, name="kubeconfig"):
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "main",
              "clusters": [{"name": "c", "cluster": cluster or {"server": "https://10.0.0.1:6443",
                                                                 "certificate-authority-data": CA}}],
              "users": [{"name": "u", "user": user}],
              "contexts": [{"name": "main", "context": context or {"cluster": "c", "user": "u", "namespace": "shop"}},
                           {"name": "other", "context": {"cluster": "c", "user": "u"}}]}
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return path


def package_view(path: Path, context=None):
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=str(path), context=context, client_configuration=configuration,
                            persist_config=False)
    return configuration


@pytest.mark.parametrize("user, cluster", [
    ({"token": "abc"}, None),
    ({"client-certificate-data": CERT, "client-key-data": KEY}, None),
    ({"token": "abc"}, {"server": "https://api.example:6443", "insecure-skip-tls-verify": True,
                        "tls-server-name": "kubernetes"}),
    ({}, {"server": "http://127.0.0.1:8080/"}),
])
def test_a_simple_kubeconfig_reads_as_the_kubernetes_package_reads_it(tmp_path, user, cluster):
    path = write(tmp_path, user, cluster)
    static, context, namespace = load_static([str(path)], None)
    theirs = package_view(path)
    assert (context, namespace) == ("main", "shop")
    assert static.host == theirs.host and static.verify_ssl == theirs.verify_ssl
    assert static.tls_server_name == theirs.tls_server_name
    assert static.auth_settings() == {k: v for k, v in theirs.auth_settings().items()}
    for attribute in ("cert_file", "key_file"):
        mine, package = getattr(static, attribute), getattr(theirs, attribute)
        assert (mine is None) == (package is None)
        if mine:
            assert Path(mine).read_bytes() == Path(package).read_bytes()
    if theirs.ssl_ca_cert:
        assert static.ca_cert_data.encode() == Path(theirs.ssl_ca_cert).read_bytes()


def test_files_named_in_the_kubeconfig_are_relative_to_it(tmp_path):
    (tmp_path / "pki").mkdir()
    path = write(tmp_path, {"client-certificate": "pki/me.crt", "client-key": "pki/me.key"},
                 {"server": "https://10.0.0.1:6443", "certificate-authority": "pki/ca.crt"})
    static, _, _ = load_static([str(path)], "other")
    assert static.ssl_ca_cert == str(tmp_path / "pki/ca.crt") and static.cert_file == str(tmp_path / "pki/me.crt")


@pytest.mark.parametrize("user, context", [
    ({"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "aws"}}, None),
    ({"auth-provider": {"name": "oidc", "config": {}}}, None),
    ({"tokenFile": "/var/run/token"}, None),
    ({"username": "admin", "password": "secret"}, None),
    ({"token": "abc"}, {"cluster": "c", "user": "u", "as": "someone-else"}),
])
def test_anything_else_is_left_to_the_kubernetes_package(tmp_path, user, context):
    assert load_static([str(write(tmp_path, user, context=context))], None) is None


def test_several_files_proxies_and_unknown_contexts_are_left_to_the_package(tmp_path, monkeypatch):
    one, two = write(tmp_path, {"token": "a"}), write(tmp_path, {"token": "b"}, name="second")
    assert load_static([str(one), str(two)], None) is None
    assert load_static([str(one)], "prod") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    assert load_static([str(one)], None) is None


def test_a_scan_with_a_simple_kubeconfig_never_imports_the_kubernetes_package_nor_pydantic(fake, fake_kubeconfig):
    """Each costs a fifth of a small cluster's scan in start-up alone (bench/RESULTS.md, start-up)."""
    configmaps = fake.cluster.types[("", "configmaps")]
    fake.apply({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "held", "namespace": "default", "finalizers": ["example.com/x"]}})
    fake.cluster.delete(configmaps, fake.cluster.find(configmaps, "default", "held"), None, None)
    code = ("import sys\nfrom kfin.commands.app import main\ntry:\n main(['stuck', '-A', '--kubeconfig', sys.argv[1]])\n"
            "except SystemExit: pass\nprint('kubernetes' in sys.modules, 'pydantic' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, str(fake_kubeconfig)], capture_output=True, text=True)
    assert done.stderr.strip().splitlines()[-1] == "False False", done.stderr
    assert "held" in done.stdout and "example.com/x" in done.stdout


# ----- hostile kubeconfigs (issue 27): every field read by its type, bounded, before anything connects -----
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(12))


@pytest.mark.parametrize("user, cluster, context, says", [
    ({"token": "abc"}, {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": "false"}, None,
     'clusters["c"].cluster.insecure-skip-tls-verify must be a boolean (true or false), not the string "false"'),
    ({"token": "abc"}, {"server": 6443}, None, 'clusters["c"].cluster.server must be a string, not int 6443'),
    ({"token": "abc\r\nX-Injected: 1"}, None, None, 'users["u"].user.token holds a line break'),
    ({"token": "tok\u2713en"}, None, None, 'users["u"].user.token holds a line break, a control character or a '
                                           "character outside Latin-1"),
    ({"token": 12345}, None, None, 'users["u"].user.token must be a string, not a value of type int'),  # unshown
    ({"exec": {"command": "kubelogin", "args": ["get-token", 7]}}, None, None,
     'users["u"].user.exec.args must be a list of strings'),
    ({"exec": {"command": "kubelogin", "env": [{"name": "A", "value": 1}]}}, None, None,
     'users["u"].user.exec.env[0].value must be a string, not int 1'),
    ({"token": "abc"}, None, {"cluster": "c", "user": "u", "namespace": 5},
     'contexts["main"].context.namespace must be a string, not int 5'),
])
def test_a_field_of_the_wrong_type_is_a_kubeconfig_error_naming_it(tmp_path, user, cluster, context, says):
    """YAML is loose and Python truthy: a string "false" would turn TLS verification off. kubectl's decoder is
    strict; so is kfin, before any connection (exit 3, one line, the field named)."""
    from tests.runner import kfin

    path = write(tmp_path, user, cluster, context)
    result = kfin("stuck", "--kubeconfig", str(path))
    assert result.code == 3, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: kubeconfig {path}: ") and says in line
    assert "\r" not in result.stderr and "X-Injected" not in result.stderr and "12345" not in result.stderr


@pytest.mark.parametrize("content, says", [
    (BOMB, "YAML aliases: refused"),
    ("a: " + "[" * 20000 + "]" * 20000, "kubeconfig"),
    ("clusters: [", "is not valid YAML"),
    ("- just\n- a list\n", "is not a map of clusters, users and contexts"),
])
def test_a_kubeconfig_that_is_not_one_is_refused_in_bounded_time(tmp_path, content, says):
    from tests.runner import kfin

    path = tmp_path / "kubeconfig"
    path.write_text(content)
    result = kfin("stuck", "--kubeconfig", str(path))
    assert result.code == 3, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ") and says in line


def test_a_kubeconfig_of_gigabytes_is_not_read_whole(tmp_path, monkeypatch):
    from kfin.api import kubeconfig_types
    from kfin.errors import ConfigError

    path = tmp_path / "kubeconfig"
    path.write_text("clusters: []\n" + "#" * 2048)
    monkeypatch.setattr(kubeconfig_types, "MAX_BYTES", 1024)
    with pytest.raises(ConfigError, match="is larger than"):
        kubeconfig_types.check_kubeconfig([str(path)])


@pytest.mark.parametrize("user, cluster", [
    ({"token": "abc"}, {"server": "https://api.example:6443", "insecure-skip-tls-verify": True}),
    ({"exec": {"command": "kubelogin", "args": ["get-token"], "env": [{"name": "A", "value": "b"}],
               "apiVersion": "client.authentication.k8s.io/v1", "provideClusterInfo": False}}, None),
    ({"client-certificate-data": CERT, "client-key-data": KEY, "as-groups": ["ops"]}, None),
])
def test_well_typed_kubeconfigs_pass(tmp_path, user, cluster):
    from kfin.api.kubeconfig_types import check_kubeconfig

    check_kubeconfig([str(write(tmp_path, user, cluster))])


def test_an_unknown_auth_provider_is_a_kubeconfig_problem_not_a_credentials_failure(tmp_path):
    """Issue 27: the kubernetes package ignores an auth provider it does not know and sends no credentials; the
    401 that follows was reported as a credentials failure (exit 5). It is the kubeconfig's (exit 3)."""
    from tests.runner import kfin

    path = write(tmp_path, {"auth-provider": {"name": "weird", "config": {}}},
                 {"server": "https://127.0.0.1:1"})
    result = kfin("stuck", "--kubeconfig", str(path))
    assert result.code == 3, result
    assert result.stderr == ('error: context "main": its user names auth provider "weird", which kfin does not know '
                             "(oidc, gcp, azure): use an exec credential plugin\n")
    other = write(tmp_path, {"token": "t"}, {"server": "https://127.0.0.1:1"}, name="other")
    config = json.loads(other.read_text())  # the same provider on a user no context uses: not kfin's business
    config["users"].append({"name": "unused", "user": {"auth-provider": {"name": "weird"}}})
    other.write_text(json.dumps(config))
    assert kfin("stuck", "--kubeconfig", str(other)).code == 4  # on to the (unreachable) server


def test_a_kubeconfig_is_parsed_once_per_content_and_again_when_it_changes(tmp_path, monkeypatch):
    """A fleet connects to each of its contexts through one file: it is parsed once (bench/RESULTS.md, fleet), and
    a file that changed is read as it is now."""
    from kfin.api import kubeconfig_types
    from kfin.api.connection import Kube
    from kfin.api.target import Target

    parsed = []
    real = kubeconfig_types._parse
    monkeypatch.setattr(kubeconfig_types, "_parse", lambda path, raw: parsed.append(path) or real(path, raw))
    path = write(tmp_path, {"token": "abc"}, {"server": "https://10.0.0.1:6443", "insecure-skip-tls-verify": True})
    servers = {Kube.connect(Target(str(path), name)).server for name in ("main", "other", "main")}
    assert servers == {"https://10.0.0.1:6443"} and len(parsed) == 1
    path.write_text(path.read_text().replace("10.0.0.1", "10.0.0.2"))  # same size, same inode
    assert Kube.connect(Target(str(path), "main")).server == "https://10.0.0.2:6443" and len(parsed) == 2
