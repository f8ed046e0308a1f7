"""A Namespace named as a command's positional KIND NAME is checked as `-n` checks one (a lowercase RFC 1123
label), before any request: `kfin graph namespace 'team?x=1'` had sent 63 requests before its exit 7."""

import pytest

from kfin.errors import ExitCode
from tests.runner import kfin

COMMANDS = ["explain", "graph", "remove", "wait", "preflight", "delete"]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    "words",
    [("namespace", "team?x=1"), ("ns/team?x=1",), ("Namespace", "Team"), ("namespaces", "a" * 64)],
    ids=["query", "slash", "upper-case", "too-long"],
)
def test_a_namespace_name_that_is_no_label_is_refused_before_any_request(fake, fake_kubeconfig, command, words):
    result = kfin(command, *words, "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.USAGE, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: invalid namespace "), result.stderr
    assert fake.requests == []


@pytest.mark.parametrize("command", COMMANDS)
def test_the_same_check_as_dash_n(fake, fake_kubeconfig, command):
    """-n says the same of the same name."""
    by_flag = kfin("stuck", "-n", "team?x=1", "--kubeconfig", str(fake_kubeconfig))
    by_word = kfin(command, "namespace", "team?x=1", "--kubeconfig", str(fake_kubeconfig))
    assert by_flag.code == by_word.code == ExitCode.USAGE
    assert by_flag.stderr == by_word.stderr
