"""UI message → ADK content, alone."""

from __future__ import annotations

import pytest
from google.genai import types

from adk_asgi.convert.translate import TranslationError, decode_data_url, user_content
from adk_asgi.wire.messages import DataPart, FilePart, TextPart, ToolPart, UIMessage


def user(*parts: object) -> UIMessage:
    return UIMessage(id="u1", role="user", parts=list(parts))  # type: ignore[arg-type]


def test_text_parts_become_text() -> None:
    assert user_content(user(TextPart(text="hi"), TextPart(text="there"))) == types.Content(
        role="user", parts=[types.Part(text="hi"), types.Part(text="there")]
    )


def test_data_url_file_becomes_inline_bytes() -> None:
    part = FilePart(media_type="image/png", url="data:image/png;base64,iVBORw==", filename="a.png")
    assert user_content(user(part, TextPart(text="what is this?"))) == types.Content(
        role="user",
        parts=[
            types.Part(
                inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG", display_name="a.png")
            ),
            types.Part(text="what is this?"),
        ],
    )


def test_remote_file_becomes_a_file_reference() -> None:
    part = FilePart(media_type="application/pdf", url="https://example.com/a.pdf")
    assert user_content(user(part)).parts == [
        types.Part(
            file_data=types.FileData(
                file_uri="https://example.com/a.pdf", mime_type="application/pdf"
            )
        )
    ]


def test_app_data_parts_are_not_model_input() -> None:
    content = user_content(user(DataPart(type="data-x", data=1), TextPart(text="hi")))
    assert content.parts == [types.Part(text="hi")]


def test_percent_encoded_data_url() -> None:
    assert decode_data_url("data:text/plain,a%20b") == ("text/plain", b"a b")
    assert decode_data_url("data:,x") == ("text/plain", b"x")


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (UIMessage(id="a", role="assistant", parts=[]), "expected a user message"),
        (user(), "the user message has no text or file to send"),
        (user(TextPart(text="")), "the user message has no text or file to send"),
        (
            user(FilePart(media_type="image/png", url="data:image/png;base64,!!")),
            "a data URL's base64 payload is invalid",
        ),
        (user(FilePart(media_type="image/png", url="file:///etc/passwd")), "a file URL must be"),
        (
            user(ToolPart(type="tool-x", tool_call_id="c", state="input-available")),
            "a user message cannot carry a 'tool-x' part",
        ),
    ],
)
def test_untranslatable_messages_are_refused(message: UIMessage, reason: str) -> None:
    with pytest.raises(TranslationError, match=reason):
        user_content(message)
