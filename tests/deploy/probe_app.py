"""A server that reports its own process, for tests/deploy/test_zygote.py: what it read at
import, where it runs, its command line, and which sockets it holds."""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

# Read when the module is imported, as the payment app reads PAYMENT_DB_URL: a forked server
# must import its app in its own environment, not the zygote's.
PROBE_AT_IMPORT = os.environ.get("PROBE")


def _socket_types() -> list[str]:
    kinds = []
    for name in os.listdir("/proc/self/fd"):
        try:
            sock = socket.socket(fileno=os.dup(int(name)))
        except OSError:  # not a socket (or the listing's own descriptor, closed by now)
            continue
        with sock:
            kinds.append(f"{sock.family.name}/{sock.type.name}")
    return sorted(kinds)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    body = {
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "probe_at_import": PROBE_AT_IMPORT,
        "google": sorted(k for k in os.environ if k.startswith("GOOGLE_")),
        "argv": sys.argv,
        "path0": sys.path[0],
        "sockets": _socket_types(),
    }
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})
