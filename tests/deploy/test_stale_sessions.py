"""A writer the chat lock does not cover (another part of the app appending to a chat's session)
against a run of that chat, on ADK's SQLite session services (native and SQLAlchemy's): a run
refused before its first event is run again; one refused later ends with an error that says
why, and the chat keeps what was shown (serving/stale_sessions.py)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.sessions.session import Session
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from adk_asgi import AdkApp, Messages
from adk_asgi.convert.failures import show_errors
from adk_asgi.serving.answers import keep_shown
from adk_asgi.testing import Call, ChatClient, Closed, Text
from tests.support import SqliteSessionService, counter, normalize_ids, scripted_agent

pytestmark = pytest.mark.backing

NOT_SAVED = (
    "ChatChangedElsewhere: another request changed this chat at the same time; this message"
    " was not saved: send it again"
)
CHANGED = (
    "ChatChangedElsewhere: another request changed this chat while the answer ran; the rest"
    " of the answer was not saved: send the message again"
)


class Interloper(BasePlugin):
    """Another writer of the app's: it appends a state change to the session through a service
    of its own, as the user's message is about to be stored (``at="message"``: on the first
    ``times`` messages) or once the model's final response is in (``at="answer"``)."""

    def __init__(self, other: BaseSessionService, at: str, times: int = 1) -> None:
        super().__init__(name="interloper")
        self.other = other
        self.at = at
        self.times = times
        self.messages = 0
        self.wrote = 0

    async def on_user_message_callback(
        self, *, invocation_context: InvocationContext, user_message: types.Content
    ) -> types.Content | None:
        self.messages += 1
        if self.at == "message" and self.wrote < self.times:
            await self._write(invocation_context.session)
        return None

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        if self.at == "answer" and not llm_response.partial and not self.wrote:
            await self._write(callback_context.session)
        return None

    async def _write(self, session: Session) -> None:
        stored = await self.other.get_session(
            app_name=session.app_name, user_id=session.user_id, session_id=session.id
        )
        assert stored is not None
        note = EventActions(state_delta={"note": f"seen {self.wrote}"})
        await self.other.append_event(
            stored, Event(author="back_office", actions=note, timestamp=time.time())
        )
        self.wrote += 1


Services = tuple[BaseSessionService, BaseSessionService]


@pytest_asyncio.fixture(params=["sqlite-native", "sqlite-sqlalchemy"])
async def services(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Services]:
    """The app's session service, and another writer's on the same file."""
    path = tmp_path / "sessions.db"
    made: list[Any] = []
    for _ in range(2):
        if request.param == "sqlite-native":
            made.append(SqliteSessionService(str(path)))
        else:
            made.append(DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}"))
    yield made[0], made[1]
    for service in made:
        await service.close()


async def _chat(services: Services, interloper: Interloper) -> tuple[Any, list[Any]]:
    sessions, _ = services
    agent = scripted_agent([[Text("Hello there!")]], chunk_size=6)
    app = AdkApp(
        agent,
        app_name="app",
        session_service=sessions,
        plugins=[interloper],
        messages=Messages(on_error=show_errors),
    )
    try:
        await app.prepare()
        async with ChatClient(app, chat_id="chat-1") as chat:
            sent = await chat.send("hi")
            history = await chat.history()
    finally:
        await app.aclose()
    return sent, history


ANSWER = [
    {"type": "start", "messageId": "<msg1>"},
    {"type": "start-step"},
    {"type": "text-start", "id": "<block1>"},
    {"type": "text-delta", "id": "<block1>", "delta": "Hello "},
    {"type": "text-delta", "id": "<block1>", "delta": "there!"},
    {"type": "text-end", "id": "<block1>"},
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop"},
]


async def test_a_run_whose_session_changed_before_its_first_write_is_run_again(
    services: Services,
) -> None:
    interloper = Interloper(services[1], at="message")
    sent, history = await _chat(services, interloper)
    assert (sent.status, normalize_ids(sent.chunks)) == (200, ANSWER)
    assert (interloper.messages, interloper.wrote) == (2, 1)  # the retry saw the message again
    assert history == [
        {"id": history[0]["id"], "role": "user", "parts": [{"type": "text", "text": "hi"}]},
        {
            "id": sent.chunks[0]["messageId"],
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "text", "text": "Hello there!", "state": "done"},
            ],
        },
    ]


async def test_a_run_refused_twice_before_it_streamed_ends_with_an_error_that_says_why(
    services: Services,
) -> None:
    """Refused at its first write, run again, refused again: the message was not stored, and
    the error says so; the chat keeps the error the user was shown."""
    interloper = Interloper(services[1], at="message", times=2)
    sent, history = await _chat(services, interloper)
    error = {"errorText": NOT_SAVED}
    assert normalize_ids(sent.chunks) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "data-error", "data": error, "id": "<block1>"},
        {"type": "error", "errorText": NOT_SAVED},
        {"type": "finish", "finishReason": "error"},
    ]
    message_id = sent.chunks[0]["messageId"]
    part = {"type": "data-error", "data": error, "id": f"{message_id}-error"}
    assert history == [{"id": message_id, "role": "assistant", "parts": [part]}]


async def test_a_run_refused_after_it_streamed_ends_with_an_error_and_keeps_what_was_shown(
    services: Services,
) -> None:
    interloper = Interloper(services[1], at="answer")
    sent, history = await _chat(services, interloper)
    error = {"errorText": CHANGED}
    assert normalize_ids(sent.chunks) == [
        *ANSWER[:-2],
        {"type": "data-error", "data": error, "id": "<block2>"},
        {"type": "error", "errorText": CHANGED},
        *ANSWER[-2:-1],
        {"type": "finish", "finishReason": "error"},
    ]
    message_id = sent.chunks[0]["messageId"]
    assert history == [
        {"id": history[0]["id"], "role": "user", "parts": [{"type": "text", "text": "hi"}]},
        {
            "id": message_id,
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "text", "text": "Hello there!", "state": "done"},
                {"type": "data-error", "data": error, "id": f"{message_id}-error"},
            ],
        },
    ]


async def test_a_live_session_refused_after_a_tool_ran_keeps_its_result_and_says_why(
    services: Services,
) -> None:
    """Live mode shows a tool's result as it returns, before ADK stores it. Refused at that
    store: the result shown is kept (not the "stopped while this tool ran" a later connection
    would store, which lets the model run it again), ``on_error`` meets the error SSE reports
    (not ADK's ``StaleSessionError``), the socket closes (1011) as after any failure, and the
    chat goes on in the next connection."""
    sessions, other = services

    async def take_note(tool_context: ToolContext) -> dict[str, Any]:
        """The app's own write of the session, during a call of the live session's."""
        await Interloper(other, at="answer")._write(tool_context.session)
        return {"noted": True}

    agent = scripted_agent([[Call("take_note")], [Text("Noted.")], [Text("Hello again.")]])
    agent.tools.append(take_note)
    app = AdkApp(
        agent, app_name="app", session_service=sessions, messages=Messages(on_error=show_errors)
    )
    async with ChatClient(
        app, transport="live", chat_id="chat-1", id_factory=counter("u")
    ) as browser:
        failed = await browser.send("note this")
        assert failed.closed == Closed(1011, "the live session ended after an error")
        again = await browser.send("hi")  # (a new connection)
        assert again.closed is None
        history = await browser.history()
    chunks, answer = failed.chunks, again.chunks
    found = await sessions.list_sessions(app_name="app")
    (chat,) = found.sessions
    stored = await sessions.get_session(app_name="app", user_id=chat.user_id, session_id=chat.id)
    await app.aclose()
    assert stored is not None
    results = [r.response for e in stored.events for r in e.get_function_responses()]
    assert results == [{"noted": True}]
    error = {"errorText": CHANGED}
    call = {"toolCallId": "<call1>", "toolName": "take_note", "providerExecuted": True}
    assert normalize_ids(chunks) == [
        {"type": "start", "messageId": "<msg1>"},
        {"type": "start-step"},
        {"type": "tool-input-start", **call},
        {"type": "tool-input-available", **call, "input": {}},
        {"type": "tool-output-available", "toolCallId": "<call1>", "output": {"noted": True}},
        {"type": "data-error", "data": error, "id": "<block1>"},
        {"type": "error", "errorText": CHANGED},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "error"},
    ]
    failed_id, answer_id = chunks[0]["messageId"], answer[0]["messageId"]
    part = {
        "type": "tool-take_note",
        "toolCallId": "call_1",
        "state": "output-available",
        "input": {},
        "output": {"noted": True},
        "providerExecuted": True,
    }
    assert history == [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "note this"}]},
        {
            "id": failed_id,
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                part,
                {"type": "data-error", "data": error, "id": f"{failed_id}-error"},
            ],
        },
        {  # the next connection's model answers the stored history first (docs/live.md)
            "id": history[2]["id"],
            "role": "assistant",
            "parts": [{"type": "step-start"}, {"type": "text", "text": "Noted.", "state": "done"}],
        },
        {
            "id": again.body["messages"][-1]["id"],
            "role": "user",
            "parts": [{"type": "text", "text": "hi"}],
        },
        {
            "id": answer_id,
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "text", "text": "Hello again.", "state": "done"},
            ],
        },
    ]


async def test_a_kept_result_is_stored_once_and_named_after_the_agent_when_unknown() -> None:
    """``keep_shown``'s results: one the session has already is not stored again; one that
    names no author is stored as the app's agent's."""
    app = AdkApp(scripted_agent([]), app_name="app")
    services = app.services
    session = await services.session_service.create_session(app_name="app", user_id="u")

    def result(call_id: str, author: str) -> Event:
        response = types.FunctionResponse(id=call_id, name="pay", response={"ok": call_id})
        content = types.Content(role="user", parts=[types.Part(function_response=response)])
        return Event(invocation_id="i", author=author, content=content)

    await services.session_service.append_event(session, result("c1", "test_agent"))
    await keep_shown(
        services, session, "m1", [], "boom", results=[result("c1", "test_agent"), result("c2", "")]
    )
    stored = await services.session_service.get_session(
        app_name="app", user_id="u", session_id=session.id
    )
    assert stored is not None
    kept = [(e.author, r.id, r.response) for e in stored.events for r in e.get_function_responses()]
    assert kept == [("test_agent", "c1", {"ok": "c1"}), ("test_agent", "c2", {"ok": "c2"})]
    await app.aclose()
