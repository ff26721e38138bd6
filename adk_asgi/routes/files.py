"""Uploads kept in ADK's artifact service, served back to the page that shows them.

A file sent inline (a ``data:`` URL in a user message) is stored in every copy of the event
that carries it: fine for a small image, heavy for a PDF in a session database that history
reads in full. ADK's ``SaveFilesAsArtifactsPlugin`` moves such files into the artifact
service and leaves ``[Uploaded Artifact: "<name>"]`` in the message; with it, history shows
the file as the file part the user sent, pointing at ``GET /chat/{id}/files/{name}``, which
serves it to the chat's own user only.

An upload is the user's bytes under the app's origin, so it is served as passive content: an
HTML or SVG file opened inline would run its script as the app. Every file goes out with
``Content-Security-Policy: sandbox`` (no script, a unique origin, even when opened directly) and
``nosniff``; only media a browser shows without running anything (images other than SVG,
audio, video, PDF, plain text) are ``inline``, everything else is an ``attachment``.

The route serves any file of the chat the artifact service keeps, the images Gemini's code
drew among them (ADK's ``BuiltInCodeExecutor`` saves them; :mod:`adk_asgi.convert.code_execution`
points at them with ``?version=<n>``: two images saved under one name in the same second are
versions of one artifact, and each part keeps showing its own).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from adk_asgi.errors import UNKNOWN_CHAT, ClientError
from adk_asgi.serving.refusals import json_refusal
from adk_asgi.serving.services import Services
from adk_asgi.wire.messages import FilePart
from adk_asgi.wire.values import CHAT_ID, CHAT_ID_RULE, is_media_type

NO_FILE: Final = "this chat has no such file"
VERSION: Final = re.compile(r"\A[0-9]{1,9}\Z")
"""A version the route takes (``?version=``): a whole number, as artifact services count."""
INLINE_PREFIXES: Final = ("image/", "audio/", "video/")
INLINE_TYPES: Final = frozenset({"application/pdf", "text/plain"})
ACTIVE_TYPES: Final = frozenset({"image/svg+xml"})
"""An image type that is a document: SVG runs script when opened as a page."""


def safe_media_type(stored: str | None) -> str:
    """A stored file's media type as it is shown and served: one stored before the rule held
    (or by a tool of the app) that is no media type is served as bytes."""
    return stored if stored and is_media_type(stored) else "application/octet-stream"


def disposition(media_type: str) -> str:
    """``inline`` for passive media, ``attachment`` (a download) for anything else."""
    base = media_type.split(";", 1)[0].strip().lower()
    passive = base in INLINE_TYPES or base.startswith(INLINE_PREFIXES)
    return "inline" if passive and base not in ACTIVE_TYPES else "attachment"


async def uploaded_files(
    services: Services, user_id: str, chat_id: str, names: list[str], base_path: str
) -> Mapping[str, FilePart]:
    """The file parts history shows for ``names`` (those the artifact service still has),
    with URLs under ``base_path`` (the chat's own path, ``…/chat/{id}``)."""
    artifacts = services.artifact_service
    files: dict[str, FilePart] = {}
    if artifacts is None:
        return files
    for name in names:
        version = await artifacts.get_artifact_version(
            app_name=services.app_name, user_id=user_id, session_id=chat_id, filename=name
        )
        if version is None:
            continue
        media_type = safe_media_type(version.mime_type)
        url = f"{base_path}/files/{quote(name, safe='')}"
        files[name] = FilePart(media_type=media_type, url=url, filename=name)
    return files


class FilesEndpoint:
    """``GET /chat/{chat_id}/files/{name}``: a file of the chat, from the artifact service
    (``?version=<n>``: that version of it; else the latest)."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def respond(self, request: Request) -> Response:
        services = self.services
        try:
            identity = await services.identity_of(request)
            chat_id = request.path_params["chat_id"]
            if not CHAT_ID.match(chat_id):
                raise ClientError(400, CHAT_ID_RULE)
            if await services.session(identity.user_id, chat_id) is None:
                raise ClientError(404, UNKNOWN_CHAT)
            name = request.path_params["name"]
            asked = request.query_params.get("version")
            if asked is not None and not VERSION.match(asked):
                raise ClientError(404, NO_FILE)
            version = None if asked is None else int(asked)
            artifacts = services.artifact_service
            part = None
            if artifacts is not None:
                part = await artifacts.load_artifact(
                    app_name=services.app_name,
                    user_id=identity.user_id,
                    session_id=chat_id,
                    filename=name,
                    version=version,
                )
            blob = None if part is None else part.inline_data
            if blob is None or blob.data is None:
                raise ClientError(404, NO_FILE)
        except ClientError as exc:
            return json_refusal(exc)
        media_type = safe_media_type(blob.mime_type)
        filename = f"filename*=UTF-8''{quote(name, safe='')}"
        return Response(
            blob.data,
            media_type=media_type,
            headers={
                "content-disposition": f"{disposition(media_type)}; {filename}",
                "content-security-policy": "sandbox",
                "cache-control": "private, max-age=3600",
                "x-content-type-options": "nosniff",
            },
        )
