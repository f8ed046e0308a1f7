"""Run the fake API server on its own: python -m tests.fakeapi --kubeconfig PATH [--port N] [--tls].

Handy to try kfin by hand, and how the harness tests pose it as "a real cluster behind a kubeconfig".
"""

import argparse
import signal
import threading
from pathlib import Path

from tests.fakeapi import FakeAPIServer


def main():
    parser = argparse.ArgumentParser(prog="python -m tests.fakeapi")
    parser.add_argument("--kubeconfig", required=True, type=Path, help="where to write the admin kubeconfig")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tls", action="store_true", help="serve HTTPS (kubectl sends no token over HTTP)")
    parser.add_argument("--latency", type=float, default=0.0,
                        help="seconds each request waits before it is served, as across a network")
    args = parser.parse_args()
    tls = None
    if args.tls:
        import tempfile

        from tests.fakeapi.tls import self_signed
        tls = self_signed(Path(tempfile.mkdtemp(prefix="fakeapi-tls-")))
    fake = FakeAPIServer()
    fake.latency = args.latency
    fake.start(args.port, tls=tls)
    fake.kubeconfig(args.kubeconfig)
    print(fake.url, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    fake.stop()


if __name__ == "__main__":
    main()
