"""A user's message as the page shows it: its text, its files, and the uploads the artifact
service keeps in their place (sans-I/O)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from google.adk.events.event import Event
from google.genai import types

from adk_asgi.convert.adk_values import file_of
from adk_asgi.wire.messages import FilePart, TextPart, UIPart

UPLOADED: Final = re.compile(r'^\[Uploaded Artifact: "(?P<name>.+)"\]$')
"""What ADK's ``SaveFilesAsArtifactsPlugin`` leaves in a user message for a file it moved to
the artifact service (:mod:`adk_asgi.routes.files`)."""


def uploaded_names(events: Iterable[Event]) -> list[str]:
    """The files the user's messages left in the artifact service, in order."""
    names: list[str] = []
    for event in events:
        if event.author != "user" or event.content is None:
            continue
        for part in event.content.parts or []:
            match = UPLOADED.match(part.text or "")
            if match and match["name"] not in names:
                names.append(match["name"])
    return names


def user_parts(parts: list[types.Part], files: Mapping[str, FilePart]) -> list[UIPart]:
    out: list[UIPart] = []
    for part in parts:
        uploaded = UPLOADED.match(part.text or "")
        if uploaded and uploaded["name"] in files:
            out.append(files[uploaded["name"]])
        elif part.text:
            out.append(TextPart(text=part.text))
        elif file := file_part(part):
            out.append(file)
    return out


def file_part(part: types.Part) -> FilePart | None:
    found = file_of(part)
    if found is None:
        return None
    url, media_type, filename = found
    return FilePart(media_type=media_type, url=url, filename=filename)
