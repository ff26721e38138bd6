"""No chat can be poisoned (adk_asgi/convert/safe_history.py): a stored value that cannot be read
back or sent to the model — a browser tool's result nested 950 levels deep, written straight into
the session service — is shown in history as the tool's ``output-error``, is sent to the model
as an error payload, and the chat goes on: the next messages run and answer.

Both on ADK's in-memory service and on its ``DatabaseSessionService`` (SQLite): the database
service refuses to store such a value itself, so the test writes it into the row, as another
writer of the database (or an older version) could have.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pydantic
import pytest
from google.adk.events.event import Event
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.genai import types

from adk_asgi import AdkApp, Messages
from adk_asgi.convert.safe_history import MAX_DEPTH, ReadableRequests, lost_result, unreadable
from adk_asgi.errors import STORE_FAILED
from adk_asgi.testing import Call, ChatClient, Text, Turn
from demo_app import change_bgm
from tests.live.live_socket import serve
from tests.support import counter, normalize_ids, scripted_agent

DEPTH = 950
LOST = lost_result(f"it is nested deeper than {MAX_DEPTH} levels")


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"a": value}
    return value


def get_weather(city: str) -> dict[str, Any]:
    """A server tool whose result no one can read back."""
    return {"city": city, "report": nested(DEPTH)}


class Forecast(pydantic.BaseModel):
    city: str
    sky: str = "clear"


def get_forecast(city: str) -> Forecast:
    """A server tool that returns a pydantic model, which ADK keeps as it is."""
    return Forecast(city=city)


class Chat:
    """The app on one session service, a model that reports the tool results it was sent,
    events written straight into the service, and the page on chat-1 (``page``: its user
    messages are u1, u3, u5…, the even ids the client's own for the answers it streamed)."""

    def __init__(self, sessions: DatabaseSessionService | None) -> None:
        self.seen: list[Any] = []

        def respond(contents: list[types.Content]) -> Turn:
            last = contents[-1].parts or []
            if last and last[0].text == "play jazz":
                return [Call("change_bgm", {"track": "jazz"})]
            if last and last[0].text == "weather in Paris":
                return [Call("get_weather", {"city": "Paris"})]
            if last and last[0].text == "forecast for Paris":
                return [Call("get_forecast", {"city": "Paris"})]
            responses = [
                p.function_response.response
                for c in contents
                for p in c.parts or []
                if p.function_response is not None
            ]
            self.seen.append(responses)
            return [Text(f"Answered: {last[0].text if last[0].text else 'the tool'}")]

        agent = scripted_agent(
            responder=respond, tools=[change_bgm, get_weather, get_forecast], chunk_size=200
        )
        self.app = AdkApp(
            agent,
            session_service=sessions,
            identify=lambda c: "alice",
            messages=Messages(message_id_factory=counter("msg")),
        )
        self.page = ChatClient(self.app, chat_id="chat-1", id_factory=counter("u"))

    async def send(self, text: str) -> list[dict[str, Any]]:
        """The page sends ``text``: the answer's chunks, ids normalized."""
        reply = await self.page.send(text)
        assert reply.status == 200, reply.error
        return normalize_ids(reply.chunks)

    async def history(self) -> Any:
        return await self.page.history()

    async def store_browser_result(self, result: Any) -> None:
        """The browser's result for the open ``change_bgm`` call, written straight into the
        session service, as ADK stores it."""
        service = self.app.session_service
        session = await service.get_session(
            app_name=self.app.app_name, user_id="alice", session_id="chat-1"
        )
        assert session is not None
        response = types.FunctionResponse(id="call_1", name="change_bgm", response=result)
        event = Event(
            author="user",
            invocation_id=session.events[-1].invocation_id,
            content=types.Content(role="user", parts=[types.Part(function_response=response)]),
        )
        await service.append_event(session, event)


@pytest.fixture
async def memory_chat() -> AsyncIterator[Chat]:
    chat = Chat(None)
    async with chat.page:
        yield chat
    await chat.app.aclose()


@pytest.fixture
async def database_chat(tmp_path: Path) -> AsyncIterator[Chat]:
    sessions = DatabaseSessionService(f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}")
    chat = Chat(sessions)
    try:
        async with chat.page:
            yield chat
    finally:
        await chat.app.aclose()
        await sessions.close()


def answered(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        {"type": "text-start", "id": "<block1>"},
        {"type": "text-delta", "id": "<block1>", "delta": f"Answered: {text}"},
        {"type": "text-end", "id": "<block1>"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def lost_bgm(message_id: str, user_text: str) -> list[dict[str, Any]]:
    lost_part = {
        "type": "tool-change_bgm",
        "toolCallId": "call_1",
        "state": "output-error",
        "input": {"track": "jazz"},
        "errorText": LOST,
    }
    return [
        {"id": message_id, "role": "user", "parts": [{"type": "text", "text": user_text}]},
        {"id": "msg1", "role": "assistant", "parts": [{"type": "step-start"}, lost_part]},
    ]


def answer_message(user_id: str, text: str, message_id: str) -> list[dict[str, Any]]:
    return [
        {"id": user_id, "role": "user", "parts": [{"type": "text", "text": text}]},
        {
            "id": message_id,
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "text", "text": f"Answered: {text}", "state": "done"},
            ],
        },
    ]


async def chat_goes_on(chat: Chat) -> None:
    """History shows the lost result as an error, and the next two messages answer."""
    first_turn = lost_bgm("u1", "play jazz")
    assert await chat.history() == first_turn
    assert await chat.send("hello") == answered("hello")
    assert await chat.send("and again") == answered("and again")
    assert chat.seen == [[{"error": LOST}], [{"error": LOST}]]  # never the value itself
    assert await chat.history() == [
        *first_turn,
        *answer_message("u3", "hello", "msg2"),
        *answer_message("u5", "and again", "msg3"),
    ]


async def test_a_browser_result_950_deep_in_memory_is_an_output_error_and_the_chat_goes_on(
    memory_chat: Chat,
) -> None:
    """ADK's in-memory service copies the session for each read, recursively: before, every
    read of this chat failed (history 500, the next message 503)."""
    await memory_chat.send("play jazz")
    await memory_chat.store_browser_result({"a": nested(DEPTH - 1)})
    await chat_goes_on(memory_chat)


async def test_a_browser_result_200_deep_in_a_database_is_an_output_error_and_the_chat_goes_on(
    database_chat: Chat,
) -> None:
    """The deepest a database session keeps (pydantic refuses to serialize past about 250
    levels): read back, but not to be sent to the model nor shown."""
    await database_chat.send("play jazz")
    await database_chat.store_browser_result({"a": nested(199)})
    await chat_goes_on(database_chat)


async def test_a_server_tool_result_nested_950_deep_is_stored_as_its_error_in_a_database(
    database_chat: Chat,
) -> None:
    """Before, the database refused the run's event (pydantic's depth limit): the answer ended
    with an ``error`` chunk and the call was left without its result."""
    shown = await database_chat.send("weather in Paris")
    assert shown == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        {
            "type": "tool-input-start",
            "toolCallId": "<call1>",
            "toolName": "get_weather",
            "providerExecuted": True,
        },
        {
            "type": "tool-input-available",
            "toolCallId": "<call1>",
            "toolName": "get_weather",
            "input": {"city": "Paris"},
            "providerExecuted": True,
        },
        {"type": "tool-output-error", "toolCallId": "<call1>", "errorText": LOST},
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": "<block1>"},
        {"type": "text-delta", "id": "<block1>", "delta": "Answered: the tool"},
        {"type": "text-end", "id": "<block1>"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    assert database_chat.seen == [[{"error": LOST}]]
    assert await database_chat.send("hello") == answered("hello")
    lost_part = {
        "type": "tool-get_weather",
        "toolCallId": "call_1",
        "state": "output-error",
        "input": {"city": "Paris"},
        "errorText": LOST,
        "providerExecuted": True,
    }
    answered_tool = {"type": "text", "text": "Answered: the tool", "state": "done"}
    assert await database_chat.history() == [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "weather in Paris"}]},
        {
            "id": "msg1",
            "role": "assistant",
            "parts": [{"type": "step-start"}, lost_part, {"type": "step-start"}, answered_tool],
        },
        *answer_message("u3", "hello", "msg2"),
    ]


def test_unreadable_names_values_too_deep_or_not_json_and_nothing_else() -> None:
    assert unreadable(nested(MAX_DEPTH)) is None
    assert unreadable({"text": "{[" * 500}) is None  # brackets in strings are not depth
    assert unreadable(nested(MAX_DEPTH + 1)) == f"it is nested deeper than {MAX_DEPTH} levels"
    assert unreadable(nested(5000)) == f"it is nested deeper than {MAX_DEPTH} levels"
    assert unreadable({"when": object()}) == "it is not a JSON value"


async def test_the_model_request_keeps_the_session_s_own_values() -> None:
    """The plugin replaces a part of the request, never the value the session holds."""
    from google.adk.models.llm_request import LlmRequest

    deep = nested(DEPTH)
    response = types.FunctionResponse(id="c", name="t", response={"a": deep})
    stored = types.Content(role="user", parts=[types.Part(function_response=response)])
    request = LlmRequest(contents=[stored])
    await ReadableRequests().before_model_callback(
        callback_context=None,  # type: ignore[arg-type]  # (the plugin does not read it)
        llm_request=request,
    )
    sent = request.contents[0].parts
    assert sent is not None and sent[0].function_response is not None
    assert sent[0].function_response.response == {"error": LOST}
    assert stored.parts is not None and stored.parts[0].function_response is response
    assert response.response == {"a": deep}


async def test_on_uvicorn_a_browser_result_950_deep_is_an_output_error_and_the_chat_goes_on() -> (
    None
):
    """As the issue reproduced it: the app under a real uvicorn (a deeper stack than the ASGI
    test client's), the page's history and its next messages over HTTP."""
    chat = Chat(None)
    async with serve(chat.app) as live_url:
        base = live_url.replace("ws://", "http://").removesuffix("/live")
        await chat.page.aclose()  # the page talks HTTP to the server instead
        chat.page = ChatClient(
            http=httpx.AsyncClient(base_url=base), chat_id="chat-1", id_factory=counter("u")
        )
        async with chat.page.http:
            await chat.send("play jazz")
            await chat.store_browser_result({"a": nested(DEPTH - 1)})
            await chat_goes_on(chat)


async def test_a_tool_result_only_pydantic_makes_json_of_is_kept_as_its_json(
    memory_chat: Chat,
) -> None:
    """Not every value that is not plain JSON is lost: a pydantic model (ADK keeps a tool's
    return value as it is) is stored as its JSON, as a database would store it. Before, its
    stream ended in an ``error`` chunk and the chat's history was a 500."""
    shown = await memory_chat.send("forecast for Paris")
    forecast = {"result": {"city": "Paris", "sky": "clear"}}
    assert shown == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        {
            "type": "tool-input-start",
            "toolCallId": "<call1>",
            "toolName": "get_forecast",
            "providerExecuted": True,
        },
        {
            "type": "tool-input-available",
            "toolCallId": "<call1>",
            "toolName": "get_forecast",
            "input": {"city": "Paris"},
            "providerExecuted": True,
        },
        {"type": "tool-output-available", "toolCallId": "<call1>", "output": forecast},
        {"type": "finish-step"},
        *answered("the tool")[1:],
    ]
    assert memory_chat.seen == [[forecast]]
    part = {
        "type": "tool-get_forecast",
        "toolCallId": "call_1",
        "state": "output-available",
        "input": {"city": "Paris"},
        "output": forecast,
        "providerExecuted": True,
    }
    answered_tool = {"type": "text", "text": "Answered: the tool", "state": "done"}
    assert await memory_chat.history() == [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "forecast for Paris"}]},
        {
            "id": "msg1",
            "role": "assistant",
            "parts": [{"type": "step-start"}, part, {"type": "step-start"}, answered_tool],
        },
    ]


async def test_a_session_the_database_cannot_read_back_is_a_503_with_its_reason_not_a_500(
    database_chat: Chat, tmp_path: Path
) -> None:
    """A row written outside ADK that ADK cannot decode fails the whole session read: history
    answers a JSON 503 the page can show (it was the server's plain 500 page), as the next
    message does."""
    await database_chat.send("hello")
    with closing(sqlite3.connect(tmp_path / "sessions.db")) as database, database:
        database.execute("UPDATE events SET event_data = '{not json'")
    response = await database_chat.page.http.get("/chat/chat-1/messages")
    assert (response.status_code, response.json()) == (503, {"error": STORE_FAILED})
    refused = await database_chat.page.send("again")
    assert (refused.status, refused.error) == (503, STORE_FAILED)
