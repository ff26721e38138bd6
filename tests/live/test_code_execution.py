"""Gemini's code execution (ADK's ``BuiltInCodeExecutor``), on both models, over SSE and live:
the code and what it printed show once, as the AI SDK's Google provider shows them (a
``code_execution`` call the provider ran, and its output), an image the code drew is a
``file`` part the page fetches from the chat's file route, and a reload shows the same.

Each scenario asserts the whole chunk sequence (ids normalised, deltas folded:
``test_two_models.folded``). The executor's event before each final model event gave that
event a new id, and the answer was streamed a second time in a step of its own; the image
was ADK's words, "Saved as artifact: <name>. ".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.code_executors import BuiltInCodeExecutor
from google.genai import types

from adk_asgi import AdkApp
from adk_asgi.hitl.tools import client_tool
from adk_asgi.testing import (
    Call,
    ChatClient,
    Code,
    CodeResult,
    Image,
    Text,
    Turn,
)
from tests.live.test_two_models import (
    HELLO,
    agent,
    converse,
    folded,
    gemini,
    messages_of,
    same_messages,
    server_call,
    text_block,
)
from tests.servers import in_loop_uvicorn

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

__all__ = ["agent", "gemini"]  # (the fixtures of test_two_models: both models, one script)

PNG = b"\x89PNG\r\n\x1a\n a chart"


@pytest.fixture(autouse=True)
def code_execution_on_the_scripted_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """ADK's executor asks for Gemini's code execution tool only of a model named
    ``gemini-…``: the scripted model's name is not (ADK's opt-out of that check)."""
    monkeypatch.setenv("ADK_DISABLE_GEMINI_MODEL_ID_CHECK", "true")
    yield


def coding(agent: Callable[..., LlmAgent], **script: Any) -> AdkApp:
    return AdkApp(agent(**script, code_executor=BuiltInCodeExecutor()))


def code_run(code: str, output: str, call: int = 1) -> list[dict[str, Any]]:
    """The card of code Gemini ran, with what it printed."""
    return [
        *server_call("code_execution", {"language": "PYTHON", "code": code}, call),
        {
            "type": "tool-output-available",
            "toolCallId": f"<call{call}>",
            "output": {"outcome": "OUTCOME_OK", "output": output},
            "providerExecuted": True,
        },
    ]


COUNTING: Turn = [Text("Let me count. "), Code("print(2 + 2)"), CodeResult("4\n"), Text("It is 4.")]
COUNTED = [
    {"type": "start", "messageId": "<msg1>"},
    {"type": "start-step"},
    *text_block("Let me count. "),
    *code_run("print(2 + 2)", "4\n"),
    *text_block("It is 4.", 2),
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop"},
]


@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_code_and_what_it_printed_show_once_then_the_answer(
    agent: Callable[..., LlmAgent], transport: str
) -> None:
    app = coding(agent, turns=[COUNTING] * 2)
    responses = await converse(app, transport, "2 + 2?", "and again?")
    assert [folded(chunks) for chunks in responses] == [COUNTED, COUNTED]


@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_an_answer_with_no_code_streams_once_with_the_executor_on(
    agent: Callable[..., LlmAgent], transport: str
) -> None:
    """The executor's event before the final event gave it a new id: over SSE, the answer
    came again in a second step."""
    app = coding(agent, turns=[[Text("Hello there, friend!")]] * 2)
    responses = await converse(app, transport, "hi", "hi again")
    assert [folded(chunks) for chunks in responses] == [HELLO, HELLO]


def file_urls(chunks: list[dict[str, Any]], chat_id: str) -> list[str]:
    """The URLs of the files a stream shows, each checked to be the chat's file route for an
    image ADK saved (``<time>.png``: the name ADK gives an image Gemini does not name)."""
    urls = [c["url"] for c in chunks if c["type"] == "file"]
    route = rf"/chat/{re.escape(chat_id)}/files/\d{{8}}_\d{{6}}\.png\?version=[01]"
    assert all(re.fullmatch(route, url) for url in urls), urls
    return urls


def drawn(*urls: str) -> list[dict[str, Any]]:
    return [{"type": "file", "url": url, "mediaType": "image/png"} for url in urls]


@pytest.mark.parametrize("transport", ["sse", "live"])
async def test_a_chart_the_code_draws_is_a_file_the_page_fetches(
    agent: Callable[..., LlmAgent], transport: str
) -> None:
    turn: Turn = [Code("plot()"), CodeResult(""), Image(PNG), Text("Here it is.")]
    app = coding(agent, turns=[turn])
    if transport == "sse":
        async with ChatClient(app) as chat:
            reply = await chat.send("draw it")
            chat_id, chunks = chat.id, reply.chunks
            fetched = [await chat.http.get(url) for url in file_urls(chunks, chat_id)]
            assert await chat.history() == chat.messages
            others = [
                await chat.http.get(url.replace("version=0", f"version={version}"))
                for url in file_urls(chunks, chat_id)
                for version in ("9", "x")
            ]
    else:
        async with (
            in_loop_uvicorn(app) as base,
            ChatClient(base_url=base, transport="live") as chat,
        ):
            reply = await chat.send("draw it")
            assert (reply.status, reply.error) == (200, None), reply
            chat_id, chunks = chat.id, reply.chunks
            fetched = [await chat.http.get(path) for path in file_urls(chunks, chat_id)]
            others = []
            same_messages(await chat.history(), messages_of(("draw it",), [chunks]))
    [url] = file_urls(chunks, chat_id)
    # Over SSE ADK names the image when the model's call ends, after its text; Gemini Live
    # sends each part as a message of its own, and ADK saves the image as it comes.
    answer = [*text_block("Here it is."), *drawn(url)]
    if transport == "live":
        answer = [*drawn(url), *text_block("Here it is.")]
    assert folded(chunks) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        *code_run("plot()", ""),
        *answer,
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    assert [(f.status_code, f.content, f.headers["content-type"]) for f in fetched] == [
        (200, PNG, "image/png")
    ]
    assert all(other.status_code == 404 for other in others), others


async def test_two_charts_of_one_answer_each_show_their_own_bytes(
    agent: Callable[..., LlmAgent],
) -> None:
    """ADK names both by the second it saves them: one artifact's two versions, each part
    pointing at its own."""
    turn: Turn = [Code("plot(); plot()"), CodeResult(""), Image(b"one"), Image(b"two")]
    async with ChatClient(coding(agent, turns=[turn])) as chat:
        reply = await chat.send("draw two")
        chunks = folded(reply.chunks)
        urls = file_urls(chunks, chat.id)
        assert chunks == [
            {"type": "start", "messageId": "<msg1>"},
            {"type": "start-step"},
            *code_run("plot(); plot()", ""),
            *drawn(*urls),
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ]
        assert [(await chat.http.get(url)).content for url in urls] == [b"one", b"two"]
        assert await chat.history() == chat.messages


@client_tool
def play(track: int) -> None:
    """Play a track, in the browser."""


def counting_then_playing(contents: list[types.Content]) -> Turn:
    if any(p.function_response for p in contents[-1].parts or []):
        return [Code("print(3)"), CodeResult("3\n"), Text("Playing.")]
    return [Code("print(2)"), CodeResult("2\n"), Call("play", {"track": 2})]


async def test_a_message_the_page_continues_keeps_its_code_cards(
    agent: Callable[..., LlmAgent],
) -> None:
    """The page re-sends the message with the card of the code Gemini ran: no call of the chat
    (it was refused as a forged answer, 409), and the code of the continuation gets an id of
    its own."""
    app = coding(agent, responder=counting_then_playing, tools=[play])
    async with ChatClient(app) as chat:
        asked = await chat.send("count, then play")
        assert folded(asked.chunks) == [
            {"type": "start", "messageId": "<msg1>"},
            {"type": "start-step"},
            *code_run("print(2)", "2\n"),
            {"type": "tool-input-start", "toolCallId": "<call2>", "toolName": "play"},
            {
                "type": "tool-input-available",
                "toolCallId": "<call2>",
                "toolName": "play",
                "input": {"track": 2},
            },
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "tool-calls"},
        ]
        played = await chat.tool_result("play", {"playing": 2})
        assert played is not None
        assert folded(played.chunks) == [
            {"type": "start", "messageId": "<msg1>"},
            {"type": "start-step"},
            *code_run("print(3)", "3\n"),
            *text_block("Playing."),
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ]
        cards = [p["toolCallId"] for p in chat.messages[-1]["parts"] if "toolCallId" in p]
        assert len(cards) == len(set(cards)) == 3
        assert await chat.history() == chat.messages
