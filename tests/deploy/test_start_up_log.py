"""What ``prepare()`` picked is shown by plain ``uvicorn``: its log config gives the ``adk_asgi``
logger no handler, so the line went nowhere; now it goes through uvicorn's own logger then."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.servers import ROOT


def test_the_start_up_line_is_shown_by_plain_uvicorn(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    env = {
        **os.environ,
        "PAYMENT_DB_URL": f"sqlite-native:{db}",
        "PAYMENT_LOCKS": "default",
        "PAYMENT_LEDGER": str(tmp_path / "ledger"),
    }
    command = [sys.executable, "-m", "uvicorn", "tests.deploy.payment_app:app", "--port", "0"]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        assert server.stderr is not None
        for line in server.stderr:
            lines.append(line.rstrip("\n"))
            if "Application startup complete" in line:
                break
    finally:
        server.terminate()
        server.communicate(timeout=10)  # (and its stderr closed)
    chosen = f"SqliteChatLocks ({db}); answers are claimed with SqliteClaims ({db})"
    assert f"INFO:     adk_asgi: chats are locked with {chosen}" in lines, "\n".join(lines)
