"""Exec credential plugins, run with a deadline and a bound on what they print.

The kubernetes package runs a kubeconfig's exec plugin with no timeout and reads its output whole: a plugin
that hangs (a login waiting for a browser nobody opens) hangs kfin whatever --request-timeout says, and one
that prints without end fills memory. kfin hands its own runner to the package's kubeconfig loading
(`bounded_loader`), which keeps everything else the package does with the credential (client certificates,
expiry and refresh); the package's own modules are left as they are, so each connection has its own deadline.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
import types
from typing import Any, TypeVar

from kfin.api.kubeconfig_types import header_safe

# Without --request-timeout: long enough for an interactive login, short enough that a stuck plugin is seen.
DEFAULT_DEADLINE = 120.0
# An ExecCredential is a token or a client certificate and key: a few KiB. Beyond a MiB it is not one.
MAX_OUTPUT = 1024 * 1024
MAX_STDERR_SHOWN = 300
Provider = TypeVar("Provider")
Loader = TypeVar("Loader")


class PluginError(Exception):
    """What went wrong with a plugin; the package logs it, and kfin reports it as a kubeconfig problem."""


def bounded_loader(base: type[Loader], provider: type[Any], deadline: float | None) -> type[Loader]:
    """A subclass of the package's KubeConfigLoader that runs a kubeconfig's exec plugin with `provider` (its
    ExecProvider) bounded by `deadline` seconds, at load and at each refresh.

    Its exec step is the package's own code, run with the bounded provider in place of the name ExecProvider
    it looks up: what the package does with the credential stays the package's, and nothing of the package
    is changed (another connection, with another deadline, gets a loader of its own)."""
    method = base._load_from_exec_plugin  # type: ignore[attr-defined]
    if "ExecProvider" not in method.__code__.co_names:  # a release that runs plugins otherwise: refuse to go
        raise RuntimeError("the kubernetes package's KubeConfigLoader no longer runs exec plugins by ExecProvider")
    names = dict(method.__globals__, ExecProvider=bounded_provider(provider, deadline))
    bounded = types.FunctionType(method.__code__, names, method.__name__, method.__defaults__, method.__closure__)
    return type("BoundedKubeConfigLoader", (base,), {"_load_from_exec_plugin": bounded})


def bounded_provider(base: type[Provider], deadline: float | None) -> type[Provider]:
    """A subclass of the package's ExecProvider whose `run` is bounded by `deadline` seconds (or the default)."""

    class BoundedExecProvider(base):  # type: ignore[valid-type,misc]
        def run(self, previous_response: Any = None) -> dict[str, Any]:
            interactive = hasattr(sys.stdout, "isatty") and sys.stdout.isatty()
            info: dict[str, Any] = {
                "apiVersion": self.api_version,
                "kind": "ExecCredential",
                "spec": {"interactive": interactive},
            }
            if self.cluster:  # provideClusterInfo, as the package sends it
                info["spec"]["cluster"] = dict(self.cluster.value)
                for extension in self.cluster.value.get("extensions") or []:
                    if isinstance(extension, dict) and extension.get("name") == "client.authentication.k8s.io/exec":
                        info["spec"]["cluster"]["config"] = extension.get("extension")
                        break
            env = dict(self.env, KUBERNETES_EXEC_INFO=json.dumps(info))
            return run_plugin(self.args, env, self.cwd, self.api_version, interactive, deadline or DEFAULT_DEADLINE)

    return BoundedExecProvider


def run_plugin(
    args: list[str], env: dict[str, str], cwd: str | None, api_version: str, interactive: bool, deadline: float
) -> dict[str, Any]:
    """The `status` of the ExecCredential the plugin prints; PluginError when it fails, hangs or floods."""
    command = os.path.basename(str(args[0]))
    try:
        process = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            # An interactive plugin talks to the user on the terminal; any other is read, bounded, for errors.
            stderr=None if interactive else subprocess.PIPE,
            stdin=None if interactive else subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            # its own process group, so that a plugin's children die with it; an interactive one keeps the
            # terminal's group, or it could not read the keyboard
            start_new_session=not interactive,
        )
    except OSError as error:
        raise PluginError(f"exec: cannot run plugin {command}: {error.strerror or error}") from None
    try:
        out, err = _read_bounded(process, command, time.monotonic() + deadline, deadline)
    finally:
        _stop(process, interactive)
    if process.returncode != 0:
        detail = err.decode(errors="replace").strip()[:MAX_STDERR_SHOWN]
        raise PluginError(
            f"exec: plugin {command} exited with {process.returncode}" + (f": {detail}" if detail else "")
        )
    try:
        data = json.loads(out)
    except (ValueError, RecursionError):
        raise PluginError(f"exec: plugin {command} printed something that is not an ExecCredential") from None
    if not isinstance(data, dict) or not isinstance(data.get("status"), dict):
        raise PluginError(f"exec: plugin {command} printed an ExecCredential without a status")
    if data.get("apiVersion") != api_version or data.get("kind") != "ExecCredential":
        raise PluginError(f"exec: plugin {command} answered with another apiVersion or kind than {api_version}")
    status: dict[str, Any] = data["status"]
    for key in ("token", "clientCertificateData", "clientKeyData", "expirationTimestamp"):
        if key in status and not isinstance(status[key], str):
            raise PluginError(f"exec: plugin {command} returned a {key} that is not a string")
    token = status.get("token")
    if token is not None and not header_safe(token.strip()):  # never printed: a credential
        raise PluginError(
            f"exec: plugin {command} returned a token with a line break, a control character or a character "
            "outside Latin-1: it cannot be sent in an HTTP header"
        )
    return status


def _read_bounded(process: subprocess.Popen[bytes], command: str, until: float, deadline: float) -> tuple[bytes, bytes]:
    streams = {process.stdout: bytearray(), process.stderr: bytearray()}
    with selectors.DefaultSelector() as selector:
        for stream in streams:
            if stream is not None:
                selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            left = until - time.monotonic()
            if left <= 0:
                raise PluginError(f"exec: plugin {command} did not finish within {deadline:g} s")
            for key, _ in selector.select(left):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                kept = streams[key.fileobj]  # type: ignore[index]
                kept += chunk
                if len(kept) > MAX_OUTPUT:
                    raise PluginError(f"exec: plugin {command} printed more than {MAX_OUTPUT // 1024} KiB")
    try:
        process.wait(max(0.0, until - time.monotonic()))
    except subprocess.TimeoutExpired:  # closed its output but went on running
        raise PluginError(f"exec: plugin {command} did not finish within {deadline:g} s") from None
    return bytes(streams[process.stdout]), bytes(streams.get(process.stderr) or b"")


def _stop(process: subprocess.Popen[bytes], interactive: bool) -> None:
    """Kill what is left of the plugin (its children too, when it has its own group) and close its pipes."""
    if process.poll() is None:
        try:
            killpg = getattr(os, "killpg", None)  # not on Windows
            if interactive or killpg is None:
                process.kill()
            else:
                killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        process.wait()
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()
