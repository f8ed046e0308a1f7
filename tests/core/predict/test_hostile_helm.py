"""A Helm release record kfin cannot trust (kfin preflight helm RELEASE, and kfin mcp's preflight of a release, which
runs it): a record of the wrong shape, broken gzip, a gzip bomb, names the API server would refuse. Each is one
line on stderr naming the record, exit 2 (exit 9 for a Secret or ConfigMap no API server would answer), never a
traceback, never exit 70; a bomb is refused once it inflates past kfin's cap, before it is all in memory."""

import base64
import gzip
import json
import zlib

import pytest

from kfin.core.predict import helm
from kfin.errors import ExitCode
from tests.mcp_client import error_line, with_kfin_mcp
from tests.runner import kfin

NS = "app"
MANIFEST = "---\n# Source: r/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"
GOOD = {"name": "r", "namespace": NS, "version": 3, "info": {"status": "deployed"}, "manifest": MANIFEST,
        "hooks": [{"name": "cleanup", "kind": "Job", "path": "r/templates/job.yaml", "events": ["pre-delete"]}],
        "chart": {"files": [{"name": "crds/widgets.yaml"}, {"name": "README.md"}]}}
WHO = 'release "r" version 3'


def record(**changes) -> dict:
    return {**GOOD, **changes}


def gzipped(raw: bytes) -> bytes:
    return gzip.compress(raw, 9, mtime=0)  # the same bytes in every process: they name its tests


def inflating_to(size: int, text: bytes = b" ") -> bytes:
    """A gzip member whose content is GOOD's JSON padded with `text` (JSON whitespace: still a valid release) to
    `size` bytes, compressed a chunk at a time: it is never all in this test's memory."""
    head = json.dumps(GOOD).encode()
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [packer.compress(head)]
    left = size - len(head)
    chunk = text * (1024 * 1024)
    while left > 0:
        out.append(packer.compress(chunk[:left]))
        left -= min(left, len(chunk))
    out.append(packer.flush())
    return b"".join(out)


@pytest.fixture
def api(fake, fake_kubeconfig):
    fake.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return fake, fake_kubeconfig


def store(fake, stored: str, driver: str = "Secret", version: int = 3) -> None:
    """A record as Helm's Secret (or ConfigMap) driver keeps it: `stored` is what goes under `release` (base64 of
    gzip of JSON), a Secret's data base64 once more."""
    fake.apply({"apiVersion": "v1", "kind": driver, **({"type": "helm.sh/release.v1"} if driver == "Secret" else {}),
                "metadata": {"name": f"sh.helm.release.v1.r.v{version}", "namespace": NS,
                             "labels": {"owner": "helm", "name": "r", "version": str(version)}},
                "data": {"release": base64.b64encode(stored.encode()).decode() if driver == "Secret" else stored}})


def preflight(kubeconfig, name: str = "r"):
    return kfin("preflight", "helm", name, "-n", NS, "-o", "json", "--kubeconfig", str(kubeconfig))


def refused(result, message: str, code: int = ExitCode.USAGE) -> None:
    lines = result.stderr.splitlines()
    assert result.code == code and lines[-1] == f"error: {message}", result
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize("driver", ["Secret", "ConfigMap"])
@pytest.mark.parametrize(("changes", "problem"), [
    ({"version": "x"}, "version must be an integer, not a string"),
    ({"hooks": {}}, "hooks must be a list, not an object"),
    ({"hooks": [1]}, "hooks[0] must be an object, not an integer"),
    ({"hooks": [{"name": "pre", "kind": "Job", "events": 5}]}, "hooks[0].events must be a list, not an integer"),
    ({"hooks": [{"name": "pre", "kind": "Job", "events": [5]}]},
     "hooks[0].events[0] must be a string, not an integer"),
    ({"chart": [1]}, "chart must be an object, not a list"),
    ({"chart": {"files": [1]}}, "chart.files[0] must be an object, not an integer"),
    ({"chart": {"files": [{"name": ["crds/x.yaml"]}]}}, "chart.files[0].name must be a string, not a list"),
    ({"info": "x"}, "info must be an object, not a string"),
    ({"info": {"status": 1}}, "info.status must be a string, not an integer"),
    ({"name": 5}, "name must be a string, not an integer"),
    ({"namespace": ["app"]}, "namespace must be a string, not a list"),
    ({"manifest": {"a": "b"}}, "manifest must be a string, not an object"),
])
def test_a_record_of_the_wrong_shape_is_named_exit_2(api, driver, changes, problem):
    fake, kubeconfig = api
    store(fake, helm.encode(record(**changes)), driver)
    refused(preflight(kubeconfig), f"{WHO}: {problem}")


@pytest.mark.parametrize(("raw", "problem"), [
    (b"[1, 2]", "the record must be an object, not a list"),
    (b'{"name": "r", ', "the record is not JSON"),
    (b'{"name": "\xff"}', "the record is not JSON"),
    (b'{"config": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "the record is nested too deep to be a release"),
])
def test_a_record_that_is_not_a_release_is_named_exit_2(api, raw, problem):
    fake, kubeconfig = api
    store(fake, base64.b64encode(gzipped(raw)).decode())
    refused(preflight(kubeconfig), f"{WHO}: {problem}")


@pytest.mark.parametrize(("stored", "problem"), [
    (helm.GZIP_MAGIC + b"\x00" * 7 + b"\xff" * 64, "the record is not valid gzip: its deflate data is corrupt"),
    (gzipped(json.dumps(GOOD).encode())[:-12], "the record is not valid gzip: it is cut short"),
    (gzipped(json.dumps(GOOD).encode()) + b"garbage", "the record is not valid gzip: data follows its end"),
])
def test_broken_gzip_is_named_exit_2(api, stored, problem):
    fake, kubeconfig = api
    store(fake, base64.b64encode(stored).decode())
    refused(preflight(kubeconfig), f"{WHO}: {problem}")


def test_a_record_that_is_not_base64_is_named_exit_2(api):
    fake, kubeconfig = api
    store(fake, "not base64 at all!")
    refused(preflight(kubeconfig), f"{WHO}: the record is not base64")


BOMB = (f"{WHO}: the record inflates to more than {helm.MAX_RELEASE_JSON // (1024 * 1024)} MiB, kfin's limit on a "
        "release: refused")


@pytest.mark.parametrize("driver", ["Secret", "ConfigMap"])
def test_a_gzip_bomb_is_refused_past_the_cap_and_a_record_at_the_cap_reads(api, driver):
    """Helm inflates a record without limit; kfin stops at MAX_RELEASE_JSON (32 MiB): one byte more is refused."""
    fake, kubeconfig = api
    store(fake, base64.b64encode(inflating_to(helm.MAX_RELEASE_JSON)).decode(), driver)
    at_cap = preflight(kubeconfig)
    assert at_cap.code == 0, at_cap.stderr
    answer = json.loads(at_cap.stdout)
    assert answer["command"] == "helm uninstall r -n app" and answer["chartCRDs"] == ["crds/widgets.yaml"]
    assert [h["name"] for h in answer["hooks"]] == ["cleanup"]
    store(fake, base64.b64encode(inflating_to(helm.MAX_RELEASE_JSON + 1)).decode(), driver, version=4)
    refused(preflight(kubeconfig), BOMB.replace("version 3", "version 4"))


def test_a_bomb_split_in_gzip_members_is_bounded_by_their_total(api):
    """Go's gzip reader reads concatenated members as one stream, and so does kfin: the cap is on all of them."""
    fake, kubeconfig = api
    half = helm.MAX_RELEASE_JSON // 2 + 1
    store(fake, base64.b64encode(inflating_to(half) + inflating_to(half)).decode())
    refused(preflight(kubeconfig), BOMB)


def test_a_huge_manifest_inside_a_small_record_is_refused_by_the_cap(api):
    """A manifest string of 256 MiB (a record of some hundreds of KiB) would take minutes to parse: the cap
    refuses it before it is inflated."""
    fake, kubeconfig = api
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(b'{"name": "r", "version": 3, "manifest": "')]
    parts += [packer.compress(b"a: b\\n" * (1024 * 1024 // 6)) for _ in range(256)]
    parts += [packer.compress(b'"}'), packer.flush()]
    stored = b"".join(parts)
    assert len(stored) < helm.MAX_RECORD_BYTES
    store(fake, base64.b64encode(stored).decode())
    refused(preflight(kubeconfig), BOMB)


def test_a_stored_record_larger_than_kubernetes_allows_is_refused_before_decoding(api):
    """The API server stores no Secret or ConfigMap whose data passes 1 MiB (MaxSecretSize): such an answer is
    refused unread, exit 9. At the limit a record still reads (an uncompressed one, as before Helm gzipped them,
    padded with JSON whitespace)."""
    fake, kubeconfig = api
    raw = json.dumps(GOOD).encode()
    full = raw + b" " * (helm.MAX_RECORD_BYTES * 3 // 4 - len(raw))
    stored = base64.b64encode(full).decode()
    assert len(stored) == helm.MAX_RECORD_BYTES
    store(fake, stored, "ConfigMap")
    assert preflight(kubeconfig).code == 0
    store(fake, stored + "=", "ConfigMap", version=4)
    refused(preflight(kubeconfig), "ConfigMap app/sh.helm.release.v1.r.v4 holds more than 1024 KiB, Kubernetes' "
            "limit on a ConfigMap's data (MaxSecretSize): no API server stores that", ExitCode.API)


def test_a_secret_larger_than_kubernetes_allows_is_refused_before_decoding(api):
    fake, kubeconfig = api
    raw = json.dumps(GOOD).encode()
    stored = base64.b64encode(raw + b" " * (helm.MAX_RECORD_BYTES * 3 // 4 - len(raw))).decode()
    store(fake, stored)  # the Secret's value: exactly 1 MiB once its own base64 is undone
    assert preflight(kubeconfig).code == 0
    fake.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": "sh.helm.release.v1.r.v4", "namespace": NS, "labels": {"owner": "helm", "name": "r", "version": "4"}},
        "data": {"release": base64.b64encode(stored.encode()).decode() + "="}})  # one character over
    refused(preflight(kubeconfig), "Secret app/sh.helm.release.v1.r.v4 holds more than 1024 KiB, Kubernetes' limit on a Secret's data "
            "(MaxSecretSize): no API server stores that", ExitCode.API)


@pytest.mark.parametrize(("changes", "problem"), [
    ({"name": "../r"}, 'invalid release name "../r": not a Helm release name'),
    ({"name": "r; rm -rf ~"}, 'invalid release name "r; rm -rf ~": not a Helm release name'),
    ({"name": "other"}, 'it is the release "other", not "r"'),
    ({"namespace": "../team/secrets"}, 'invalid namespace "../team/secrets": a namespace must be a lowercase RFC '
     "1123 label: lower case alphanumeric characters or '-', starting and ending with an alphanumeric character"),
    ({"namespace": "team"}, 'its namespace is "team", not "app" where its record is'),
    ({"hooks": [{"name": "a/b", "kind": "Job", "events": ["pre-delete"]}]}, "hooks[0].name \"a/b\" may not contain '/'"),
    ({"hooks": [{"name": "ok", "kind": "Job\x1b]0;x\x07", "events": ["pre-delete"]}]},
     'hooks[0].kind "Job\\x1b]0;x\\x07" is not a kind'),
])
def test_the_records_own_names_are_checked_as_the_api_server_and_helm_would(api, changes, problem):
    """The record's name and namespace go into requests and into the `helm uninstall` command kfin prints; its
    hooks are named on the terminal. (The manifest's objects are checked where every manifest is.)"""
    fake, kubeconfig = api
    store(fake, helm.encode(record(**changes)))
    refused(preflight(kubeconfig), f"{WHO}: {problem}")
    assert not [r for r in fake.requests if "team" in r.path]


def test_a_release_name_helm_would_refuse_is_refused_before_any_request(api):
    fake, kubeconfig = api
    seen = len(fake.requests)
    refused(preflight(kubeconfig, "R/x"), "invalid release name \"R/x\": Helm's release names are lowercase DNS "
            "subdomains (a-z, 0-9, '-' and '.') of at most 53 characters")
    assert len(fake.requests) == seen


def test_kfin_mcp_refuses_the_bomb_in_one_line_and_answers_the_next_call(api):
    """kfin mcp's preflight of a release runs the same code: the bomb is its tool's error, and kfin mcp goes on."""
    fake, kubeconfig = api
    store(fake, base64.b64encode(inflating_to(helm.MAX_RELEASE_JSON + 1)).decode())

    async def body(session):
        bomb = await session.call_tool("preflight", {"helm_release": "r", "namespace": NS})
        shape = await session.call_tool("preflight", {"helm_release": "nothing-here", "namespace": NS})
        return bomb, shape

    bomb, after = with_kfin_mcp(["--kubeconfig", kubeconfig], body)
    assert error_line(bomb) == f"error: {BOMB}"
    assert error_line(after).startswith('error: Helm release "nothing-here" not found in namespace "app"')


def test_a_secret_whose_data_is_not_base64_is_what_no_api_server_answers(api):
    fake, kubeconfig = api
    fake.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": "sh.helm.release.v1.r.v3", "namespace": NS, "labels": {"owner": "helm", "name": "r", "version": "3"}},
        "data": {"release": "not base64!"}})
    refused(preflight(kubeconfig), "Secret app/sh.helm.release.v1.r.v3: its data is not base64", ExitCode.API)
