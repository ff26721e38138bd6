"""Files the user sends: inline by default (the model gets the bytes, the session keeps them),
or moved to ADK's artifact service by its ``SaveFilesAsArtifactsPlugin`` — then history shows
the file part the user sent, served by ``GET /chat/{id}/files/{name}`` to the chat's own user."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest
from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
from google.adk.plugins.save_files_as_artifacts_plugin import SaveFilesAsArtifactsPlugin
from google.genai import types
from starlette.applications import Starlette
from starlette.routing import Mount

from adk_asgi import AdkApp
from adk_asgi.testing import Text
from adk_asgi.wire.values import MEDIA_TYPE_RULE
from tests.support import scripted_agent

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
DATA_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()
PICTURE = {"type": "file", "mediaType": "image/png", "url": DATA_URL, "filename": "dot.png"}
ASK = {"type": "text", "text": "what is this?"}


def app(seen: list[list[types.Part]], *, artifacts: bool) -> AdkApp:
    def respond(contents: list[types.Content]) -> list[Text]:
        seen.append(list(contents[-1].parts or []))
        return [Text("A dot.")]

    options: dict[str, Any] = {}
    if artifacts:
        options = {
            "artifact_service": InMemoryArtifactService(),
            "plugins": [SaveFilesAsArtifactsPlugin()],
        }
    return AdkApp(scripted_agent(responder=respond), **options)


def client(chat: AdkApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=chat), base_url="http://t")


def body(chat_id: str = "pics") -> dict[str, Any]:
    return {"id": chat_id, "messages": [{"id": "u1", "role": "user", "parts": [ASK, PICTURE]}]}


async def test_a_file_sent_inline_reaches_the_model_and_history_as_it_was_sent() -> None:
    seen: list[list[types.Part]] = []
    async with client(app(seen, artifacts=False)) as browser:
        assert (await browser.post("/chat", json=body())).status_code == 200
        history = (await browser.get("/chat/pics/messages")).json()
    [parts] = seen
    assert parts[1].inline_data is not None and parts[1].inline_data.data == PNG
    assert history[0]["parts"] == [ASK, PICTURE]


async def test_a_file_moved_to_the_artifact_service_is_served_back_to_its_user_only() -> None:
    seen: list[list[types.Part]] = []
    chat = app(seen, artifacts=True)
    async with client(chat) as browser, client(chat) as stranger:
        assert (await browser.post("/chat", json=body())).status_code == 200
        history = (await browser.get("/chat/pics/messages")).json()
        served = await browser.get("/chat/pics/files/dot.png")
        missing = await browser.get("/chat/pics/files/other.png")
        foreign = await stranger.get("/chat/pics/files/dot.png")
    # the model read ADK's placeholder; the session keeps no bytes
    assert [p.text for p in seen[0]] == ["what is this?", '[Uploaded Artifact: "dot.png"]']
    file_part = {**PICTURE, "url": "/chat/pics/files/dot.png"}
    assert history[0]["parts"] == [ASK, file_part]
    assert (served.status_code, served.content) == (200, PNG)
    assert served.headers["content-type"] == "image/png"
    assert served.headers["x-content-type-options"] == "nosniff"
    assert (missing.status_code, missing.json()) == (404, {"error": "this chat has no such file"})
    assert (foreign.status_code, foreign.json()) == (404, {"error": "this chat does not exist"})


async def test_a_mounted_app_points_history_at_its_own_path() -> None:
    seen: list[list[types.Part]] = []
    host = Starlette(routes=[Mount("/agent", app=app(seen, artifacts=True))])
    transport = httpx.ASGITransport(app=host)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as browser:
        assert (await browser.post("/agent/chat", json=body())).status_code == 200
        history = (await browser.get("/agent/chat/pics/messages")).json()
        url = history[0]["parts"][1]["url"]
        served = await browser.get(url)
    assert url == "/agent/chat/pics/files/dot.png"
    assert served.content == PNG


SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script></svg>'
HTML = b"<html><script>fetch('/chat', {method: 'POST'})</script></html>"


def upload(name: str, media_type: str, data: bytes) -> dict[str, Any]:
    url = f"data:{media_type};base64," + base64.b64encode(data).decode()
    return {"type": "file", "mediaType": media_type, "url": url, "filename": name}


async def test_an_uploaded_html_or_svg_is_served_as_a_sandboxed_attachment_and_a_png_inline() -> (
    None
):
    """An upload is the user's bytes under the app's origin: served inline, HTML or SVG would
    run script as the app. Every upload is sandboxed (CSP) and not sniffed; only passive media
    are shown inline."""
    chat = app([], artifacts=True)
    files = [
        upload("page.html", "text/html", HTML),
        upload("logo.svg", "image/svg+xml", SVG),
        PICTURE,
        upload("notes.txt", "text/plain", b"hi"),
    ]
    message = {"id": "u1", "role": "user", "parts": [ASK, *files]}
    async with client(chat) as browser:
        sent = await browser.post("/chat", json={"id": "pics", "messages": [message]})
        assert sent.status_code == 200
        served = {
            name: await browser.get(f"/chat/pics/files/{name}")
            for name in ("page.html", "logo.svg", "dot.png", "notes.txt")
        }
    kept = ("content-type", "content-disposition", "content-security-policy")
    headers = {
        name: {k: r.headers[k] for k in (*kept, "x-content-type-options")}
        for name, r in served.items()
    }
    assert headers == {
        "page.html": {
            "content-type": "text/html; charset=utf-8",
            "content-disposition": "attachment; filename*=UTF-8''page.html",
            "content-security-policy": "sandbox",
            "x-content-type-options": "nosniff",
        },
        "logo.svg": {
            "content-type": "image/svg+xml",
            "content-disposition": "attachment; filename*=UTF-8''logo.svg",
            "content-security-policy": "sandbox",
            "x-content-type-options": "nosniff",
        },
        "dot.png": {
            "content-type": "image/png",
            "content-disposition": "inline; filename*=UTF-8''dot.png",
            "content-security-policy": "sandbox",
            "x-content-type-options": "nosniff",
        },
        "notes.txt": {
            "content-type": "text/plain; charset=utf-8",
            "content-disposition": "inline; filename*=UTF-8''notes.txt",
            "content-security-policy": "sandbox",
            "x-content-type-options": "nosniff",
        },
    }
    assert [served[n].content for n in ("page.html", "logo.svg", "dot.png")] == [HTML, SVG, PNG]


@pytest.mark.parametrize(
    "media_type",
    ["图像/png", "image/png\r\nX-Injected: 1", "", "image", "image/png png", "a/" + "b" * 300],
)
async def test_a_file_whose_media_type_is_no_media_type_is_refused_and_nothing_is_stored(
    media_type: str,
) -> None:
    """``图像/png`` was stored and made the file's GET a 500; a value with CR/LF was handed to
    the ASGI server as a header."""
    seen: list[list[types.Part]] = []
    chat = app(seen, artifacts=True)
    part = {**PICTURE, "mediaType": media_type}
    message = {"id": "u1", "role": "user", "parts": [ASK, part]}
    async with client(chat) as browser:
        sent = await browser.post("/chat", json={"id": "pics", "messages": [message]})
        stored = await browser.get("/chat/pics/messages")
    reason = f"messages[0].parts[1].mediaType: {MEDIA_TYPE_RULE}"
    assert (sent.status_code, sent.json()) == (400, {"error": reason})
    assert (stored.status_code, seen) == (404, [])


async def test_a_stored_file_whose_media_type_is_no_media_type_is_served_as_bytes() -> None:
    """A file an app's tool saved (or one stored before the rule) keeps what it was given;
    it is shown and served as ``application/octet-stream``, an attachment."""
    chat = app([], artifacts=True)
    async with client(chat) as browser:
        assert (await browser.post("/chat", json=body())).status_code == 200
        blob = types.Blob(mime_type="image/png\r\nX-Injected: 1", data=PNG)
        artifacts = chat.services.artifact_service
        assert artifacts is not None
        sessions = await chat.services.session_service.list_sessions(
            app_name=chat.services.app_name, user_id=None
        )
        [owner] = {s.user_id for s in sessions.sessions}
        await artifacts.save_artifact(
            app_name=chat.services.app_name,
            user_id=owner,
            session_id="pics",
            filename="dot.png",
            artifact=types.Part(inline_data=blob),
        )
        served = await browser.get("/chat/pics/files/dot.png")
        history = (await browser.get("/chat/pics/messages")).json()
    assert (served.status_code, served.content) == (200, PNG)
    assert served.headers["content-type"] == "application/octet-stream"
    assert served.headers["content-disposition"].startswith("attachment;")
    assert "x-injected" not in served.headers
    assert history[0]["parts"][1]["mediaType"] == "application/octet-stream"
