"""One chat id rule that every ADK artifact service takes as a session id, checked at every
door (issue 36, 3). ``c:1`` and ``x:chat`` (a Windows drive to ADK's artifact services), ``.``,
``..`` and ``user`` were accepted: with an artifact service, uploads silently stayed inline,
``GET …/files/f.txt`` was a 500 and ``DELETE /chat/c:1`` a 503 on every retry — a chat that
could never be deleted. Now they are a 400 at the door, and an id the rule takes works end to
end on ADK's in-memory and file artifact services."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.adk.artifacts.base_artifact_service import BaseArtifactService
from google.adk.artifacts.file_artifact_service import FileArtifactService
from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
from google.adk.plugins.save_files_as_artifacts_plugin import SaveFilesAsArtifactsPlugin
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from adk_asgi import AdkApp
from adk_asgi.testing import Text
from adk_asgi.wire.values import CHAT_ID_RULE
from tests.servers import in_loop_uvicorn
from tests.support import scripted_agent

pytestmark = pytest.mark.asyncio

REFUSED = ["c:1", "x:chat", ".", "..", "user"]
TAKEN = ["chat:1", "a@b.c", "..chat", "users"]
NOTE = b"milk, eggs"
FILE = {
    "type": "file",
    "mediaType": "text/plain",
    "url": "data:text/plain;base64," + base64.b64encode(NOTE).decode(),
    "filename": "f.txt",
}


def app(artifacts: BaseArtifactService) -> AdkApp:
    agent = scripted_agent(responder=lambda contents: [Text("Noted.")])
    plugins = [SaveFilesAsArtifactsPlugin()]
    return AdkApp(agent, artifact_service=artifacts, plugins=plugins)


def message(chat_id: str) -> dict[str, Any]:
    parts = [{"type": "text", "text": "keep this"}, FILE]
    return {"id": chat_id, "messages": [{"id": "u1", "role": "user", "parts": parts}]}


def client(chat: AdkApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=chat), base_url="http://t")


@pytest.fixture(params=["memory", "files"])
def artifacts(request: pytest.FixtureRequest, tmp_path: Path) -> BaseArtifactService:
    if request.param == "memory":
        return InMemoryArtifactService()
    return FileArtifactService(tmp_path / "artifacts")


@pytest.mark.parametrize("chat_id", REFUSED)
async def test_an_id_an_artifact_service_refuses_is_a_400_at_every_door(
    chat_id: str, artifacts: BaseArtifactService
) -> None:
    chat = app(artifacts)
    refusal = {"error": CHAT_ID_RULE}
    path = chat_id.replace(".", "%2E")  # (a client drops "." and ".." from a path it sends)
    async with client(chat) as browser:
        sent = await browser.post("/chat", json=message(chat_id))
        doors = [
            await browser.get(f"/chat/{path}/messages"),
            await browser.get(f"/chat/{path}/stream"),
            await browser.get(f"/chat/{path}/files/f.txt"),
            await browser.delete(f"/chat/{path}"),
        ]
    assert (sent.status_code, sent.json()) == (400, {"error": f"id: {CHAT_ID_RULE}"})
    assert [(door.status_code, door.json()) for door in doors] == [(400, refusal)] * 4
    async with in_loop_uvicorn(chat) as base:
        with pytest.raises(InvalidStatus) as refused:
            async with connect(f"{base.replace('http', 'ws', 1)}/live?chatId={path}"):
                pass
    assert refused.value.response.status_code == 400
    assert refused.value.response.body is not None
    assert CHAT_ID_RULE.encode() in refused.value.response.body


@pytest.mark.parametrize("chat_id", TAKEN)
async def test_a_chat_whose_id_the_rule_takes_keeps_its_files_and_can_be_deleted(
    chat_id: str, artifacts: BaseArtifactService
) -> None:
    async with client(app(artifacts)) as browser:
        sent = await browser.post("/chat", json=message(chat_id))
        history = (await browser.get(f"/chat/{chat_id}/messages")).json()
        served = await browser.get(f"/chat/{chat_id}/files/f.txt")
        deleted = await browser.delete(f"/chat/{chat_id}")
        after = await browser.get(f"/chat/{chat_id}/messages")
    assert sent.status_code == 200
    # moved to the artifact service: history points at the chat's file route
    assert history[0]["parts"][1] == {**FILE, "url": f"/chat/{chat_id}/files/f.txt"}
    assert (served.status_code, served.content) == (200, NOTE)
    assert deleted.status_code == 204, deleted.text
    assert after.status_code == 404
