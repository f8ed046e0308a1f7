"""kubectl's -v: at 6 and above a line per request (method, URL, status, time), at 8 and above the request
headers (credentials masked) and the first KiB of each answer. On stderr, made printable; a password in the
server URL is never shown. The level is the command's (kfin.settings.Settings.trace), handed in with each request
by the connection it was given to."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Mapping
from datetime import datetime

from kfin.util.text import printable, redact_url

BODY_SHOWN = 1024
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
_WRITING = threading.Lock()


def request(
    level: int, method: str, url: str, status: int, reason: str, started: float, headers: Mapping[str, str], body: bytes
) -> None:
    """One answered request, traced at `level` (nothing below 6)."""
    if level < 6:
        return
    took = (time.monotonic() - started) * 1000
    stamp = datetime.now().strftime("I%m%d %H:%M:%S.%f")
    lines = [f"{stamp} kfin] {method} {redact_url(url)} {status} {reason} in {took:.0f} milliseconds"]
    if level >= 8:
        for name, value in headers.items():
            shown = "<masked>" if name.lower() in SECRET_HEADERS else value
            title = "-".join(part.capitalize() for part in name.split("-"))
            lines.append(f"{stamp} kfin]     {title}: {shown}")
        if body:
            more = f" ... ({len(body)} bytes)" if len(body) > BODY_SHOWN else ""
            text = body[:BODY_SHOWN].decode(errors="replace")
            lines.append(f"{stamp} kfin] Response Body: {text}{more}")
    # one write per request, under a lock: requests answered at once on several threads never share a line
    block = "".join(printable(line, one_line=True) + "\n" for line in lines)
    with _WRITING:
        sys.stderr.write(block)
