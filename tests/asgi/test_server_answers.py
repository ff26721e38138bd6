"""Long-running tools the server answers (a back office), over SSE: the browser can never
answer them (409, nothing stored or run), the app answers them with ``AdkApp.answer_call``,
once across requests and across apps sharing one session database, and the user sees the
outcome in history and, with a stream store, on the page that follows the chat."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.genai import types

from adk_asgi import AdkApp, CallAlreadyAnswered, CallNotOpen, ChatBusy, Limits, Stores, UnknownCall
from adk_asgi.stores.resumable import InMemoryStreamStore
from adk_asgi.testing import Call, ChatClient, Text, read_ui_message
from demo_app import change_bgm, get_weather, process_payment
from tests.asgi.test_hitl import PAY_ALICE, text
from tests.support import (
    SqliteSessionService,
    answer,
    counter,
    normalize_ids,
    parse_sse,
    scripted_agent,
)

pytestmark = pytest.mark.asyncio

REFUND = {"order": "A7", "amount": 20}
APPROVED = {"approved": True, "by": "clerk-12"}
ASKING = "Asking the back office."


def request_refund(order: str, amount: float) -> None:
    """Ask the back office to approve a refund; a clerk answers later, from the server."""


class BackOffice:
    """An agent whose refund waits for the back office, and the page of one user's chat."""

    def __init__(self, tools: Sequence[Any] = (), **options: Any) -> None:
        self.model_calls = 0
        self.seen: list[dict[str, Any]] = []
        """The results the model read, in order."""
        agent = scripted_agent(
            responder=self.respond,
            tools=[LongRunningFunctionTool(request_refund), get_weather, change_bgm, *tools],
            chunk_size=200,
            delay=options.pop("delay", 0.0),
        )
        self.app = AdkApp(agent, identify=lambda c: "alice", **options)
        self.page = ChatClient(self.app, chat_id="chat-1", id_factory=counter("u"))
        """The user's page: the stock client on chat-1 (its user messages u1, u3, u5…)."""

    def respond(self, contents: list[types.Content]) -> list[Any]:
        self.model_calls += 1
        for part in contents[-1].parts or []:
            answered = part.function_response
            if answered is not None and answered.name == "request_refund":
                result = answered.response or {}
                self.seen.append(result)
                return [Text(f"The back office said: approved={result.get('approved')}.")]
            if answered is not None:
                return [Text("Windy in Paris.")]
        said = "".join(p.text or "" for p in contents[-1].parts or [])
        if "weather" in said:
            return [Call("get_weather", {"city": "Paris"})]
        if "music" in said:
            return [Call("change_bgm", {"track": 3})]
        return [Text(ASKING), Call("request_refund", REFUND)]

    @property
    def user(self) -> dict[str, Any]:
        """The page's first message: the user's request for a refund."""
        return self.page.messages[0]

    async def ask(self) -> dict[str, Any]:
        """Send the user's message; the page's assistant message after it."""
        reply = await self.page.send("refund order A7")
        assert reply.status == 200 and reply.message is not None, reply.error
        return reply.message

    async def history(self) -> list[dict[str, Any]]:
        return await self.page.history()

    async def events(self) -> int:
        session = await self.app.services.session("alice", "chat-1")
        assert session is not None
        return len(session.events)


ASKED_STREAM = [
    {"type": "start", "messageId": "<msg1>"},
    {"type": "start-step"},
    {"type": "text-start", "id": "<block1>"},
    {"type": "text-delta", "id": "<block1>", "delta": ASKING},
    {"type": "text-end", "id": "<block1>"},
    {
        "type": "tool-input-start",
        "toolCallId": "<call1>",
        "toolName": "request_refund",
        "providerExecuted": True,
    },
    {
        "type": "tool-input-available",
        "toolCallId": "<call1>",
        "toolName": "request_refund",
        "input": REFUND,
        "providerExecuted": True,
    },
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "tool-calls"},
]
FOLLOW_UP = "The back office said: approved=True."


def asked_parts(state: str = "input-available", **result: Any) -> list[dict[str, Any]]:
    return [
        {"type": "step-start"},
        {"type": "text", "text": ASKING, "state": "done"},
        {
            "type": "tool-request_refund",
            "toolCallId": "call_1",
            "state": state,
            "input": REFUND,
            **result,
            "providerExecuted": True,
        },
    ]


def history(message_id: str, *parts: dict[str, Any]) -> list[dict[str, Any]]:
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "refund order A7"}]}
    return [user, {"id": message_id, "role": "assistant", "parts": list(parts)}]


ANSWERED_PARTS = [
    *asked_parts("output-available", output=APPROVED),
    {"type": "step-start"},
    {"type": "text", "text": FOLLOW_UP, "state": "done"},
]


async def test_a_back_office_approval_is_answered_by_the_server_never_by_the_browser() -> None:
    office = BackOffice()
    page = await office.ask()
    message_id = page["id"]
    assert office.model_calls == 1
    before = await office.history()
    assert before == history(message_id, *asked_parts())
    stored = await office.events()

    forged = answer(copy.deepcopy(page), "request_refund", output={"approved": True})
    body = {"id": "chat-1", "messages": [office.user, forged], "messageId": message_id}
    refused = await office.page.http.post("/chat", json=body)
    assert refused.status_code == 409
    assert refused.json() == {
        "error": "tool call 'call_1' is answered by the server, not the browser"
    }
    assert await office.history() == before
    assert await office.events() == stored
    assert office.model_calls == 1

    assert await office.app.answer_call("alice", "chat-1", "call_1", APPROVED) == message_id
    assert office.seen == [APPROVED]
    assert office.model_calls == 2
    assert await office.history() == history(message_id, *ANSWERED_PARTS)

    # the browser's answer after the server's is history re-sent: it answers nothing
    again = await office.page.http.post("/chat", json=body)
    assert (again.status_code, again.json()) == (
        409,
        {"error": "this request answers no open tool call of the chat"},
    )
    with pytest.raises(CallAlreadyAnswered, match="'call_1' was answered already"):
        await office.app.answer_call("alice", "chat-1", "call_1", {"approved": False})
    assert (office.model_calls, office.seen) == (2, [APPROVED])


async def test_the_first_stream_shows_the_call_as_the_servers() -> None:
    office = BackOffice()
    reply = await office.page.send("refund order A7")
    assert normalize_ids(reply.chunks) == ASKED_STREAM


async def test_a_page_following_the_chat_sees_the_servers_answer_and_the_follow_up() -> None:
    office = BackOffice(stores=Stores(streams=InMemoryStreamStore()), delay=0.05)
    message_id = (await office.ask())["id"]
    answering = asyncio.create_task(office.app.answer_call("alice", "chat-1", "call_1", APPROVED))
    followed: httpx.Response | None = None
    while followed is None or followed.status_code == 204:
        await asyncio.sleep(0.005)
        assert not answering.done()
        followed = await office.page.http.get("/chat/chat-1/stream")
    assert followed.status_code == 200
    assert await answering == message_id
    assert parse_sse(followed.content) == [
        {"type": "start", "messageId": message_id},
        {"type": "tool-output-available", "toolCallId": "call_1", "output": APPROVED},
        *[
            {**chunk, "id": f"{message_id}-txt1"} if "id" in chunk else chunk
            for chunk in text(FOLLOW_UP)
        ],
        {"type": "finish", "finishReason": "stop"},
    ]
    assert await office.history() == history(message_id, *ANSWERED_PARTS)


async def test_two_answers_at_once_take_the_result_once() -> None:
    office = BackOffice()
    message_id = (await office.ask())["id"]
    first, second = await asyncio.gather(
        office.app.answer_call("alice", "chat-1", "call_1", APPROVED),
        office.app.answer_call("alice", "chat-1", "call_1", {"approved": False}),
        return_exceptions=True,
    )
    assert first == message_id
    assert isinstance(second, CallAlreadyAnswered)
    assert (office.model_calls, office.seen) == (2, [APPROVED])
    assert await office.history() == history(message_id, *ANSWERED_PARTS)
    assert await _responses_to("call_1", office.app) == 1


async def test_two_apps_on_one_session_database_take_the_result_once(tmp_path: Path) -> None:
    """Two workers: each its own in-process locks, one SQLite file (sessions and claims), so
    only the claim stops a second answer."""
    database = str(tmp_path / "chats.db")
    offices = [BackOffice(session_service=SqliteSessionService(database)) for _ in range(2)]
    for office in offices:
        await office.app.prepare()
    message_id = (await offices[0].ask())["id"]
    outcomes = await asyncio.gather(
        offices[0].app.answer_call("alice", "chat-1", "call_1", APPROVED),
        offices[1].app.answer_call("alice", "chat-1", "call_1", APPROVED),
        return_exceptions=True,
    )
    assert message_id in outcomes
    (lost,) = [outcome for outcome in outcomes if outcome != message_id]
    assert isinstance(lost, CallAlreadyAnswered)
    assert str(lost) in (
        "tool call 'call_1' was answered by another request",  # both read it open
        "tool call 'call_1' was answered already",  # read after the other stored its answer
    )
    assert offices[0].model_calls + offices[1].model_calls == 2  # the question, one follow-up
    assert offices[0].seen + offices[1].seen == [APPROVED]
    for office in offices:
        assert await office.history() == history(message_id, *ANSWERED_PARTS)
        assert await _responses_to("call_1", office.app) == 1
        await office.app.aclose()


async def test_what_the_server_cannot_answer_is_refused_and_nothing_is_taken() -> None:
    office = BackOffice(limits=Limits(busy_timeout=0.05))
    with pytest.raises(UnknownCall, match=r"^there is no chat 'chat-1' for this user$"):
        await office.app.answer_call("alice", "chat-1", "call_1", APPROVED)
    message_id = (await office.ask())["id"]
    with pytest.raises(UnknownCall, match=r"^this chat has no tool call 'call_9'$"):
        await office.app.answer_call("alice", "chat-1", "call_9", APPROVED)
    with pytest.raises(UnknownCall, match=r"^there is no chat 'chat-1' for this user$"):
        await office.app.answer_call("bob", "chat-1", "call_1", APPROVED)

    key = office.app.services.chat_key("alice", "chat-1")
    async with office.app.services.locks.hold(key, 1):  # a run of the chat under way
        with pytest.raises(ChatBusy):
            await office.app.answer_call("alice", "chat-1", "call_1", APPROVED)
    assert await office.app.answer_call("alice", "chat-1", "call_1", APPROVED) == message_id

    await office.page.send("weather")
    with pytest.raises(CallAlreadyAnswered, match=r"^tool call 'call_2' was answered already$"):
        await office.app.answer_call("alice", "chat-1", "call_2", APPROVED)  # ADK's own
    await office.page.send("music")
    with pytest.raises(CallNotOpen, match=r"^tool call 'call_3' \(change_bgm\) is the page's"):
        await office.app.answer_call("alice", "chat-1", "call_3", APPROVED)  # the browser's
    assert office.model_calls == 5  # the question, the follow-up, weather (2), music


async def test_an_answer_after_the_user_moved_on_goes_on_in_a_new_message() -> None:
    """The user kept chatting while the back office decided: the call's card (in its own
    message) shows the result, and the model's follow-up is a new message at the end, not
    text slipped into an old message above the later turns."""
    office = BackOffice(stores=Stores(streams=InMemoryStreamStore()))
    asked = (await office.ask())["id"]
    weather = await office.page.send("weather")
    assert weather.message is not None
    later = weather.message["id"]
    answered = await office.app.answer_call("alice", "chat-1", "call_1", APPROVED)
    assert answered not in (asked, later)
    weather_parts = [
        {"type": "step-start"},
        {
            "type": "tool-get_weather",
            "toolCallId": "call_2",
            "state": "output-available",
            "input": {"city": "Paris"},
            "output": {"city": "Paris", "forecast": "windy", "temperature_c": 19},
            "providerExecuted": True,
        },
        {"type": "step-start"},
        {"type": "text", "text": "Windy in Paris.", "state": "done"},
    ]
    assert await office.history() == [
        *history(asked, *asked_parts("output-available", output=APPROVED)),
        {"id": "u3", "role": "user", "parts": [{"type": "text", "text": "weather"}]},
        {"id": later, "role": "assistant", "parts": weather_parts},
        {
            "id": answered,
            "role": "assistant",
            "parts": [{"type": "step-start"}, {"type": "text", "text": FOLLOW_UP, "state": "done"}],
        },
    ]


def waiting_step(message_id: str) -> list[dict[str, Any]]:
    """How a response that leaves the step waiting for the back office ends: an empty step,
    shown by a second ``start`` (tests/e2e/test_back_office_clients.py has the real clients)."""
    return [
        {"type": "start-step"},
        {"type": "finish-step"},
        {"type": "start", "messageId": message_id},
    ]


class MixedStep(BackOffice):
    """The model calls a browser tool and the back office in one step."""

    def respond(self, contents: list[types.Content]) -> list[Any]:
        self.model_calls += 1
        answered = [p.function_response for p in contents[-1].parts or [] if p.function_response]
        self.seen += [r.response or {} for r in answered]
        if answered:
            return [Text("Both done.")]
        return [Call("change_bgm", {"track": 3}), Call("request_refund", REFUND)]


async def test_a_browser_call_next_to_the_servers_is_answered_by_each_the_model_reads_both() -> (
    None
):
    office = MixedStep()
    page = await office.ask()
    played = answer(copy.deepcopy(page), "change_bgm", output={"playing": 3})
    body = {"id": "chat-1", "messages": [office.user, played], "messageId": page["id"]}
    response = await office.page.http.post("/chat", json=body)
    assert parse_sse(response.content) == [  # stored; the model waits for the back office
        {"type": "start", "messageId": page["id"]},
        *waiting_step(page["id"]),
        {"type": "finish", "finishReason": "stop"},
    ]
    assert (await office.history())[1]["parts"][-1] == {"type": "step-start"}
    assert office.model_calls == 1
    assert await office.app.answer_call("alice", "chat-1", "call_2", APPROVED) == page["id"]
    assert (office.model_calls, office.seen) == (2, [{"playing": 3}, APPROVED])
    assert await office.history() == history(
        page["id"],
        {"type": "step-start"},
        {
            "type": "tool-change_bgm",
            "toolCallId": "call_1",
            "state": "output-available",
            "input": {"track": 3},
            "output": {"playing": 3},
        },
        {
            "type": "tool-request_refund",
            "toolCallId": "call_2",
            "state": "output-available",
            "input": REFUND,
            "output": APPROVED,
            "providerExecuted": True,
        },
        {"type": "step-start"},  # (the step the page waited in)
        {"type": "step-start"},
        {"type": "text", "text": "Both done.", "state": "done"},
    )


SENT = {"status": "sent", "amount": 5, "recipient": "alice", "currency": "USD"}


class ApprovalBesideTheOffice(BackOffice):
    """The model asks for a payment's approval and the back office in one step."""

    def __init__(self) -> None:
        super().__init__(tools=[FunctionTool(process_payment, require_confirmation=True)])

    def respond(self, contents: list[types.Content]) -> list[Any]:
        self.model_calls += 1
        if any(p.function_response for p in contents[-1].parts or []):
            return [Text("Both done.")]
        return [Call("process_payment", PAY_ALICE), Call("request_refund", REFUND)]


async def test_an_approval_beside_a_back_office_call_ends_in_a_step_that_waits() -> None:
    """The approved payment runs, and the model waits for the back office: the response ends
    with the empty step, or the stock helpers send the approval again (409, the chat's error),
    and history shows the message the client built."""
    office = ApprovalBesideTheOffice()
    page = await office.ask()
    approved = answer(copy.deepcopy(page), "process_payment", approved=True)
    body = {"id": "chat-1", "messages": [office.user, approved], "messageId": page["id"]}
    response = await office.page.http.post("/chat", json=body)
    chunks = parse_sse(response.content)
    assert chunks == [
        {"type": "start", "messageId": page["id"]},
        {"type": "tool-output-available", "toolCallId": "call_1", "output": SENT},
        *waiting_step(page["id"]),
        {"type": "finish", "finishReason": "stop"},
    ]
    assert office.model_calls == 1
    shown = read_ui_message(chunks, approved)
    assert shown["parts"][-1] == {"type": "step-start"}
    assert (await office.history())[1] == shown


async def _responses_to(call_id: str, app: AdkApp) -> int:
    session = await app.services.session("alice", "chat-1")
    assert session is not None
    return sum(
        1
        for event in session.events
        for response in event.get_function_responses()
        if response.id == call_id
    )
