"""docs/mounting.md's Next.js server component that loads a chat's history, without Next.js:
its ``history.ts``, taken from the page (types stripped), runs under Node against the Starlette
recipe under uvicorn, given the Cookie header a browser sent the Next server, as the page hands
it on (``headers().get("cookie")``). The browser is the real ai@7 client.

What the component gets must be what the browser's own ``GET /agent/chat/{id}/messages`` gets;
the real client, started with it (``useChat({messages})``), goes on with the chat; another
browser's cookie, and none, get the agent's ``404``, which the component makes an empty chat.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from adk_asgi.wire.values import CHAT_ID_RULE
from tests.e2e.node_client import NODE_DIR, drive_chat

pytestmark = pytest.mark.e2e

DOCS = Path(__file__).resolve().parents[2] / "docs" / "mounting.md"
HISTORY_TS = "// app/chat/[id]/history.ts"
"""The first line of the page's code block this test runs."""
RUN = """
const [module, id, cookie] = process.argv.slice(1).map((a, i) => (i ? JSON.parse(a) : a));
const seen = [];
const fetchOf = globalThis.fetch;
globalThis.fetch = async (url, init) => {  // watched, not changed: what the component sent
  const response = await fetchOf(url, init);
  const sent = new Headers(init?.headers).get("cookie");
  seen.push({ url: String(url), cookie: sent, status: response.status });
  return response;
};
const { loadHistory } = await import(module);
try {
  console.log(JSON.stringify({ messages: await loadHistory(id, cookie), seen }));
} catch (error) {  // what the page throws, for the route's error.tsx
  console.log(JSON.stringify({ thrown: error.message, seen }));
}
"""


def history_module(tmp_path: Path) -> Path:
    """``history.ts`` from the page, as JavaScript: its TypeScript is the ``import type`` line
    and ``loadHistory``'s annotations, and nothing else is changed."""
    text = DOCS.read_text()
    start = text.index(HISTORY_TS)
    block = text[start : text.index("```", start)]
    js = re.sub(r"^import type .*\n", "", block, flags=re.MULTILINE)
    signature = r"\((\w+): string, (\w+): string \| null\): Promise<UIMessage\[\]> \{"
    js, count = re.subn(signature, r"(\1, \2) {", js)
    assert count == 1, block
    path = tmp_path / "history.mjs"
    path.write_text(js)
    return path


def load_history(module: Path, agent: str, chat_id: str, cookie: str | None) -> dict[str, Any]:
    """What the server component gets: ``loadHistory(id, cookie)`` with ``AGENT_URL``, and the
    requests it made (``seen``: url, the Cookie header sent, the status)."""
    node = shutil.which("node")
    assert node is not None
    done = subprocess.run(
        [
            node,
            "--input-type=module",
            "-e",
            RUN,
            module.as_uri(),
            *map(json.dumps, [chat_id, cookie]),
        ],
        cwd=NODE_DIR,
        env={"AGENT_URL": agent, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=60,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def browser_history(agent: str, chat_id: str, cookie: str) -> Any:
    """What the browser's own request gets."""
    response = httpx.get(f"{agent}/agent/chat/{chat_id}/messages", headers={"cookie": cookie})
    assert response.status_code == 200, response.text
    return response.json()


def chat(agent: str, chat_id: str, cookie: str, text: str, **spec: Any) -> list[dict[str, Any]]:
    """The real ai@7 client sends ``text`` and waits for the answer; its messages."""
    report = drive_chat(
        {
            "api": f"{agent}/agent/chat",
            "chatId": chat_id,
            "headers": {"cookie": cookie},
            "steps": [{"send": text}],
            **spec,
        },
        7,
    )
    assert (report["status"], report["error"], report["loop"]) == ("ready", None, False)
    messages: list[dict[str, Any]] = report["messages"]
    return messages


def test_the_server_component_loads_what_the_browser_would(
    starlette_host: str, tmp_path: Path
) -> None:
    module = history_module(tmp_path)
    chat_id = f"chat-{secrets.token_hex(4)}"
    # what a browser sends the Next server: its identity and the site's other cookies
    cookie = f"theme=dark; adk_asgi_uid={secrets.token_urlsafe(24)}"
    url = f"{starlette_host}/agent/chat/{chat_id}/messages"

    first = load_history(module, starlette_host, chat_id, cookie)  # a new chat: no history yet
    assert first == {"messages": [], "seen": [{"url": url, "cookie": cookie, "status": 404}]}

    shown = chat(starlette_host, chat_id, cookie, "weather in Paris")
    stored = browser_history(starlette_host, chat_id, cookie)
    assert [m["role"] for m in stored] == ["user", "assistant"]
    loaded = load_history(module, starlette_host, chat_id, cookie)
    assert loaded == {"messages": stored, "seen": [{"url": url, "cookie": cookie, "status": 200}]}
    assert loaded["messages"] == shown

    # the next page: rendered with that history, the client goes on from it
    shown = chat(starlette_host, chat_id, cookie, "hello", messages=loaded["messages"])
    stored = browser_history(starlette_host, chat_id, cookie)
    assert [m["role"] for m in stored] == ["user", "assistant"] * 2
    assert load_history(module, starlette_host, chat_id, cookie)["messages"] == stored == shown

    # the identity cookie alone (the recipe's cookies() variant) is the same browser
    alone = "adk_asgi_uid=" + cookie.split("adk_asgi_uid=")[1]
    assert load_history(module, starlette_host, chat_id, alone)["messages"] == stored

    # an id that is no chat id is thrown (the agent's 400), not taken for a new chat
    bad = load_history(module, starlette_host, "no such id", cookie)
    reason = json.dumps({"error": CHAT_ID_RULE}, separators=(",", ":"))
    assert bad == {
        "thrown": f"the chat's history: 400 {reason}",
        "seen": [
            {
                "url": f"{starlette_host}/agent/chat/no%20such%20id/messages",
                "cookie": cookie,
                "status": 400,
            }
        ],
    }

    # another browser, and a first visit with no cookie: the agent's 404, an empty chat
    other = f"adk_asgi_uid={secrets.token_urlsafe(24)}"
    for stranger in (other, None):
        assert load_history(module, starlette_host, chat_id, stranger) == {
            "messages": [],
            "seen": [{"url": url, "cookie": stranger, "status": 404}],
        }
