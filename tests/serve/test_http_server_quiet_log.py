"""kfin guard's and kfin serve's HTTP server (asyncio) says nothing of clients it lets go: a connection closed for
room, past its deadline, reset, not speaking TLS, or still open when the server stops leaves no line in the log
(asyncio logs what goes wrong in its callbacks: a traceback per client would drown kfin guard's log)."""

import logging
import socket
import struct

from tests.serve.test_guard_connections import admission_review, closed_by_server, guard_server, post, self_signed, serving


def test_clients_let_go_leave_nothing_in_the_log(caplog):
    held, client = self_signed()
    caplog.set_level(logging.DEBUG, logger="asyncio")
    with serving(guard_server(tls=held, connections=2, deadline=1.0)) as server:
        port = server.server_port
        evicted = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]  # two closed for room
        stalled = client.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
        stalled.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{")
        assert closed_by_server(stalled, within=10)  # past its deadline
        with socket.create_connection(("127.0.0.1", port)) as plain:  # no TLS
            plain.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert closed_by_server(plain, within=10)
        reset = socket.create_connection(("127.0.0.1", port))
        reset.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        reset.close()
        assert post(port, admission_review(), timeout=10, context=client)[0] == 200
        still_open = client.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
        still_open.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\n")
    for sock in [*evicted, stalled, still_open]:
        sock.close()
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.INFO] == []
