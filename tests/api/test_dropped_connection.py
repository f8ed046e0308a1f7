"""A connection the API server (or what stands in its place) ends without a whole answer: one `error:` line in
kfin's words and exit 4, never urllib3's own text ("('Connection aborted.', RemoteDisconnected(...))")."""

import json
import socket
import struct
import threading

import pytest

from kfin.errors import ExitCode
from tests.fakeapi import Fault
from tests.runner import kfin

URLLIB3_WORDS = (
    "Connection aborted",
    "RemoteDisconnected",
    "Connection broken",
    "IncompleteRead",
    "ProtocolError",
    "ConnectionResetError",
    "(",
)


def _one_kfin_line(stderr: str, said: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert said in lines[0], stderr
    shown = lines[0].split(" (context ")[0]  # kfin's own "(context NAME)" aside
    assert not any(words in shown for words in URLLIB3_WORDS), stderr


def test_a_server_that_closes_without_answering_is_said_in_kfins_words(fake, fake_kubeconfig):
    fake.faults.append(Fault(path=".*", drop=True))
    result = kfin("stuck", "-A", "--kubeconfig", str(fake_kubeconfig))
    assert result.code == ExitCode.UNREACHABLE
    _one_kfin_line(result.stderr, f"the API server at {fake.url} closed the connection without answering")


class _Hangs:
    """A TCP server that reads each request's head and then does `how`: "cut" answers a head promising more
    body than it sends, then closes; "reset" closes with a reset (SO_LINGER 0)."""

    def __init__(self, how: str):
        self.how = how
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    head += chunk
                if self.how == "cut":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
                else:
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def kubeconfig(self, path):
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "hangs",
                    "clusters": [{"name": "hangs", "cluster": {"server": self.url}}],
                    "users": [{"name": "u", "user": {"token": "t"}}],
                    "contexts": [{"name": "hangs", "context": {"cluster": "hangs", "user": "u"}}],
                }
            )
        )
        return path


@pytest.mark.parametrize(
    "how, said",
    [
        ("cut", "closed the connection before its answer was complete"),
        ("reset", "reset the connection before answering"),
    ],
)
def test_a_connection_cut_or_reset_is_said_in_kfins_words(tmp_path, how, said):
    server = _Hangs(how)
    try:
        result = kfin("stuck", "-A", "--kubeconfig", str(server.kubeconfig(tmp_path / "kubeconfig")))
    finally:
        server.sock.close()
    assert result.code == ExitCode.UNREACHABLE
    _one_kfin_line(result.stderr, f"the API server at {server.url} {said}")
