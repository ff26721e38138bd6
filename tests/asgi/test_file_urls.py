"""File URLs a user message may carry (adk_asgi/serving/file_urls.py): ``data:`` and the chat's own
uploads; anything else (``gs://``, ``https://``, ``file://``) is refused with ``422`` unless the
app's ``allowed_file_url`` hook allows it, since the model would read it with the server's
credentials. New and re-sent messages alike, over SSE and in live ``send`` frames."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
from google.adk.plugins.save_files_as_artifacts_plugin import SaveFilesAsArtifactsPlugin
from google.genai import types
from starlette.applications import Starlette
from starlette.routing import Mount

from adk_asgi import AdkApp, Security
from adk_asgi.testing import Text
from adk_asgi.testing.asgi_websocket import websocket
from tests.asgi.test_uploads import ASK, DATA_URL, PICTURE
from tests.support import scripted_agent

REASON = (
    "refused; only data: URLs and this chat's own uploads are accepted"
    " (the app allows others with Security(allowed_file_url=...))"
)
FOREIGN = [
    ("gs://uploads/app/bob/chat/secret.pdf/0", "gs: URLs are"),
    ("https://example.com/a.pdf", "https: URLs are"),
    ("file:///etc/passwd", "file: URLs are"),
    ("/chat/someone-elses/files/secret.pdf", "this URL is"),
]


def refusal(where: str, what: str) -> dict[str, str]:
    return {"error": f"{where}.url: {what} {REASON}"}


def recording_app(seen: list[list[types.Part]], **options: Any) -> AdkApp:
    def respond(contents: list[types.Content]) -> list[Text]:
        seen.append(list(contents[-1].parts or []))
        return [Text("A file.")]

    return AdkApp(scripted_agent(responder=respond), identify=lambda conn: "alice", **options)


def client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


def file_part(url: str) -> dict[str, str]:
    return {"type": "file", "mediaType": "application/pdf", "url": url, "filename": "a.pdf"}


def user(message_id: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": list(parts)}


ANSWERED = {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "A file."}]}


@pytest.mark.parametrize(("url", "what"), FOREIGN, ids=["gs", "https", "file", "other-chat"])
async def test_a_foreign_file_url_in_the_new_message_is_refused_with_422(
    url: str, what: str
) -> None:
    seen: list[list[types.Part]] = []
    body = {"id": "c1", "messages": [user("u1", ASK, file_part(url))]}
    async with client(recording_app(seen)) as browser:
        response = await browser.post("/chat", json=body)
    assert (response.status_code, response.json()) == (
        422,
        refusal("messages[0].parts[1]", what),
    )
    assert seen == []  # the model never saw it


@pytest.mark.parametrize(("url", "what"), FOREIGN, ids=["gs", "https", "file", "other-chat"])
async def test_a_foreign_file_url_in_a_resent_message_is_refused_with_422(
    url: str, what: str
) -> None:
    """The stock client re-sends the whole chat: an earlier message is checked as well."""
    seen: list[list[types.Part]] = []
    async with client(recording_app(seen)) as browser:
        first = {"id": "c1", "messages": [user("u1", ASK)]}
        assert (await browser.post("/chat", json=first)).status_code == 200
        again = {"id": "c1", "messages": [user("u1", file_part(url)), ANSWERED, user("u2", ASK)]}
        response = await browser.post("/chat", json=again)
    assert (response.status_code, response.json()) == (
        422,
        refusal("messages[0].parts[0]", what),
    )
    assert len(seen) == 1


async def test_the_hook_allows_a_url_for_its_user() -> None:
    """The GCS recipe of docs/sse.md: the user's own objects in the app's bucket."""
    seen: list[list[types.Part]] = []
    asked: list[tuple[str, str]] = []

    def allowed_file_url(url: str, user_id: str) -> bool:
        asked.append((url, user_id))
        return url.startswith(f"gs://uploads/app/{user_id}/")

    own = "gs://uploads/app/alice/c1/a.pdf/0"
    other = "gs://uploads/app/bob/c9/b.pdf/0"
    app = recording_app(seen, security=Security(allowed_file_url=allowed_file_url))
    async with client(app) as browser:
        allowed = await browser.post(
            "/chat", json={"id": "c1", "messages": [user("u1", ASK, file_part(own))]}
        )
        refused = await browser.post(
            "/chat", json={"id": "c2", "messages": [user("u1", ASK, file_part(other))]}
        )
    assert allowed.status_code == 200
    assert seen[0][1] == types.Part(
        file_data=types.FileData(file_uri=own, mime_type="application/pdf", display_name="a.pdf")
    )
    assert (refused.status_code, refused.json()) == (
        422,
        refusal("messages[0].parts[1]", "gs: URLs are"),
    )
    assert asked == [(own, "alice"), (other, "alice")]


async def test_the_chats_own_upload_url_comes_back_with_the_chat() -> None:
    """History shows an upload as ``<mount>/chat/<id>/files/<name>``; the client re-sends it."""
    seen: list[list[types.Part]] = []
    chat = recording_app(
        seen, artifact_service=InMemoryArtifactService(), plugins=[SaveFilesAsArtifactsPlugin()]
    )
    host = Starlette(routes=[Mount("/agent", app=chat)])
    async with client(host) as browser:
        first = {"id": "pics", "messages": [user("u1", ASK, PICTURE)]}
        assert (await browser.post("/agent/chat", json=first)).status_code == 200
        history = (await browser.get("/agent/chat/pics/messages")).json()
        assert history[0]["parts"][1]["url"] == "/agent/chat/pics/files/dot.png"
        again = {"id": "pics", "messages": [*history, user("u2", ASK)]}
        response = await browser.post("/agent/chat", json=again)
        elsewhere = {"id": "pics", "messages": [*history, user("u2", ASK)]}
        elsewhere["messages"][0]["parts"][1]["url"] = "/chat/pics/files/dot.png"  # not mounted
        misplaced = await browser.post("/agent/chat", json=elsewhere)
    assert response.status_code == 200
    assert [p.text for p in seen[-1]] == ["what is this?"]
    assert (misplaced.status_code, misplaced.json()) == (
        422,
        refusal("messages[0].parts[1]", "this URL is"),
    )


async def test_a_data_url_is_always_accepted() -> None:
    seen: list[list[types.Part]] = []
    body = {"id": "c1", "messages": [user("u1", ASK, {**PICTURE, "url": DATA_URL})]}
    async with client(
        recording_app(seen, security=Security(allowed_file_url=lambda url, uid: False))
    ) as browser:
        assert (await browser.post("/chat", json=body)).status_code == 200
    assert seen[0][1].inline_data is not None


async def test_a_live_send_with_a_gs_url_gets_an_error_frame_and_the_connection_goes_on() -> None:
    seen: list[list[types.Part]] = []
    app = recording_app(seen)
    gs = "gs://uploads/app/bob/chat/secret.pdf/0"
    frame = {
        "type": "send",
        "requestId": "r1",
        "id": "live-1",
        "trigger": "submit-message",
        "messageId": None,
        "messages": [user("u1", ASK, file_part(gs))],
        "body": {},
    }
    async with websocket(app, "/live") as ws:
        await ws.send_json(frame)
        assert await ws.receive_json() == {
            "type": "error",
            "requestId": "r1",
            "errorText": refusal("messages[0].parts[1]", "gs: URLs are")["error"],
        }
        await ws.send_json({"type": "ping"})
        assert await ws.receive_json() == {"type": "pong"}
    assert seen == []
