"""Issue 29: what kubectl users type without thinking, on `kfin stuck` with the shipped snapshot: -l and
--field-selector (kubectl's grammar, apimachinery's labels and fields packages), --sort-by, --no-headers,
-o jsonpath= and -o custom-columns=."""

from pathlib import Path

import pytest

from kfin.core.explain.selectors import label_selector
from kfin.errors import ExitCode
from tests.runner import kfin
from tests.paths import PROJECT

EXAMPLE = str(PROJECT / "examples" / "stuck-cluster.json")


def names(*args):
    result = kfin("stuck", "-A", "--from-snapshot", EXAMPLE, "-o", "name", *args)
    assert result.code == ExitCode.PARTIAL, result  # the snapshot's failing metrics.k8s.io
    return result.stdout.split()


@pytest.mark.parametrize("selector, expected", [
    ("app=web", ["pod/web-6d4b9c-q8w4n", "pod/web-6d4b9c-x2k9p"]),
    ("app in (web, db)", ["pod/web-6d4b9c-q8w4n", "pod/web-6d4b9c-x2k9p"]),
    ("kubernetes.io/metadata.name", ["namespace/team-a", "namespace/monitoring-old"]),
    ("app=web,app!=web", []),
])
def test_a_label_selector_chooses_stuck_objects(selector, expected):
    assert names("-l", selector) == expected


def test_label_selector_semantics_are_the_api_servers():
    """An object without the label meets !=, notin and !key (labels.Requirement.Matches)."""
    assert label_selector("app!=web")({}) and label_selector("app notin (web)")({}) and label_selector("!app")({})
    assert not label_selector("app in (web)")({}) and not label_selector("app")({})
    assert label_selector("tier=db,app")({"tier": "db", "app": "x"}) and not label_selector("tier==db")({"tier": "x"})


def test_a_field_selector_on_name_and_namespace():
    assert names("--field-selector", "metadata.namespace=team-a") == ["database.acme.io/orders"]
    assert names("--field-selector", "metadata.name=web") == ["deployment.apps/web"]
    refused = kfin("stuck", "-A", "--from-snapshot", EXAMPLE, "--field-selector", "spec.nodeName=x")
    assert refused.code == ExitCode.USAGE and "field label not supported" in refused.stderr
    junk = kfin("stuck", "-A", "--from-snapshot", EXAMPLE, "-l", "a b")
    assert junk.code == ExitCode.USAGE and junk.stderr.startswith("error: -l: cannot parse 'a b'")


def test_the_selection_never_changes_a_verdict():
    """Chosen among what was found: the claim's Pod (unlabelled) still holds it."""
    shown = kfin("stuck", "-A", "--from-snapshot", EXAMPLE, "--field-selector", "metadata.name=data-postgres-0")
    assert "HOLDING" in shown.stdout and "in use by Pod shop/postgres-0" in shown.stdout


def test_sort_by_a_json_path_and_no_headers():
    rows = kfin("stuck", "-A", "--from-snapshot", EXAMPLE, "--sort-by", ".metadata.name", "--no-headers").stdout
    first = [line.split()[2] for line in rows.splitlines()]
    assert first == sorted(first) and "NAMESPACE" not in rows
    newest = names("--sort-by", "{.terminatingSeconds}")
    assert newest[-1] == "persistentvolumeclaim/data-postgres-0" == names()[0]  # ascending, as kubectl's


def test_jsonpath_and_custom_columns_as_kubectl_prints_them():
    result = kfin("stuck", "-A", "--from-snapshot", EXAMPLE, "--field-selector", "metadata.namespace=shop",
                  "-o", 'jsonpath={range .items[*]}{.metadata.name}={.verdict}{"\\n"}{end}')
    assert result.stdout.splitlines()[:2] == ["data-postgres-0=HOLDING", "frontend=UNKNOWN"]
    flat = kfin("stuck", "-A", "--from-snapshot", EXAMPLE, "-l", "app", "-o", "jsonpath={.items[*].metadata.name}")
    assert flat.stdout == "web-6d4b9c-q8w4n web-6d4b9c-x2k9p"
    columns = kfin("stuck", "-A", "--from-snapshot", EXAMPLE, "-l", "app",
                   "-o", "custom-columns=NAME:.metadata.name,NODE:.rootCauses[0].object")
    assert columns.stdout.splitlines() == ["NAME              NODE", "web-6d4b9c-q8w4n  Node/ip-10-0-2-44",
                                           "web-6d4b9c-x2k9p  Node/ip-10-0-2-44"]
    bad = kfin("stuck", "-A", "--from-snapshot", EXAMPLE, "-o", "custom-columns=NAME")
    assert bad.code == ExitCode.USAGE and "is not HEADER:.json.path" in bad.stderr


def test_v6_traces_each_request_and_v8_masks_the_credentials(fake, fake_kubeconfig):
    """kubectl's -v=6 / -v=8, before or after the command."""
    quiet = kfin("stuck", "-A", "--kubeconfig", str(fake_kubeconfig))
    assert " kfin] GET " not in quiet.stderr
    fake.requests.clear()
    traced = kfin("-v=6", "stuck", "-A", "--kubeconfig", str(fake_kubeconfig))
    lines = [line for line in traced.stderr.splitlines() if " kfin] " in line]
    assert traced.code == ExitCode.OK and traced.stdout == quiet.stdout
    assert any(line.endswith("milliseconds") and f" GET {fake.url}/api/v1/namespaces" in line and " 200 OK in "
               in line for line in lines), lines
    assert len(lines) == len(fake.requests)  # one line per request, none left out
    detailed = kfin("stuck", "-A", "--kubeconfig", str(fake_kubeconfig), "-v", "8")
    assert "Authorization: <masked>" in detailed.stderr and "admin-token" not in detailed.stderr
    assert "Response Body: {" in detailed.stderr
    bad = kfin("stuck", "--v=loud")
    assert bad.code == ExitCode.USAGE and bad.stderr.startswith('error: -v: "loud" is not a level')
    assert kfin("stuck", "--verdict", "ORPHANED", "--kubeconfig", str(fake_kubeconfig)).code == ExitCode.OK


def test_watch_prints_a_line_per_change_on_a_pipe_until_ctrl_c(fake, fake_kubeconfig):
    """Issue 28: `kfin stuck --watch`, like `kubectl get -w`: on a pipe one line per change; Ctrl-C ends it
    (exit 130, as `kubectl get -w` ends by the signal: issue 41 found exit 0 read as a watch that had finished). From watches: a change shows within seconds, however long
    --interval is, and nothing is listed again."""
    import select
    import signal
    import subprocess
    import sys
    import time

    from tests.fakeapi.rawclient import RawClient

    process = subprocess.Popen([sys.executable, "-m", "kfin", "stuck", "-w", "--interval", "60s",
                                "--kubeconfig", str(fake_kubeconfig)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def next_line(timeout=5.0):
        ready, _, _ = select.select([process.stdout], [], [], timeout)
        assert ready, "no line in time"
        return process.stdout.readline().rstrip("\n")

    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any("watch" in r.query for r in list(fake.requests)):
            time.sleep(0.1)  # listed, and watching: nothing stuck, no line
        time.sleep(0.5)

        def kfins_reads():
            return [r.path for r in list(fake.requests) if "watch" not in r.query and r.user != "admin"]

        listed = kfins_reads()
        api = RawClient(fake.url, "admin-token")
        api.create("/api/v1/namespaces/default/configmaps", {"metadata": {
            "name": "held", "finalizers": ["example.com/x"]}})
        api.delete("/api/v1/namespaces/default/configmaps/held")
        added = next_line()
        assert added.startswith("ADDED    ConfigMap/default/held  ") and "example.com/x" in added, added
        api.json_patch("/api/v1/namespaces/default/configmaps/held",
                       [{"op": "remove", "path": "/metadata/finalizers"}])
        assert next_line().startswith("DELETED  ConfigMap/default/held  ")
        assert kfins_reads() == listed  # the watches told: nothing was listed or read again
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=15)
    assert process.returncode == 130 and stderr == "error: interrupted\n", stderr


def test_a_traced_request_is_written_whole_so_parallel_requests_never_share_a_line(monkeypatch):
    """-v 6 and 8 trace requests answered at once on several threads: each request's lines go out in one
    write (print's separate write of the newline let two threads' lines run together)."""
    import io
    import time

    from kfin.api import trace

    writes: list[str] = []

    class Recording(io.StringIO):
        def write(self, text):
            writes.append(text)
            return len(text)

    monkeypatch.setattr("sys.stderr", Recording())
    for level in (6, 8):
        writes.clear()
        trace.request(level, "GET", "https://h/api/v1/pods", 200, "OK", time.monotonic(),
                      {"Accept": "application/json", "Authorization": "Bearer x"}, b'{"kind":"PodList"}')
        assert len(writes) == 1 and writes[0].endswith("\n"), writes
        lines = writes[0].splitlines()
        assert all(line.startswith("I") and line.count(" kfin] ") == 1 for line in lines), lines
        assert len(lines) == (1 if level == 6 else 4)
