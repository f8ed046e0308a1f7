"""tests/helm.py's skip: where helm-sdkpy is installed but its Helm library does not load (its one wheel carries
Linux x86-64's only, and importing helm_sdkpy loads nothing), the chart's tests are skipped with that reason instead
of failing at their first Helm action."""

import json
import os
import subprocess
import sys

import pytest

from tests import helm
from tests.paths import PROJECT

# what a machine the wheel has no library for looks like: helm-sdkpy's own override of where its library is
NOWHERE = "/nonexistent/libhelm_sdkpy.so"


@helm.needs_helm
def test_a_helm_library_that_does_not_load_skips_the_charts_tests_saying_so():
    probe = ("import json, helm_sdkpy._ffi\n"
             f"helm_sdkpy._ffi.configure({NOWHERE!r})\n"
             "from tests.helm import needs_helm\n"
             "print(json.dumps([needs_helm.args[0], needs_helm.kwargs['reason']]))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(PROJECT)))
    assert done.returncode == 0, done.stderr
    skipped, reason = json.loads(done.stdout)
    assert skipped is True
    assert reason.startswith("helm-sdkpy's Helm library does not load on this machine: ") and NOWHERE in reason


def test_where_it_loads_the_charts_tests_run():
    if helm.helm_sdkpy is None:
        pytest.skip(helm.HELM_ABSENT)
    assert helm.needs_helm.args[0] is False and helm.HELM_ABSENT == ""
