"""``AdkApp(request_state=...)``: the keys a client adds to the ``POST /chat`` body
(``useChat``'s / ``sendMessage``'s ``body``) go through the app's hook into the session state
the run starts with — read by an instruction template and by a tool; refused with a 422 (or the
hook's own status) and its reason; ignored without a hook."""

from __future__ import annotations

from typing import Any, Literal

import httpx
import msgspec
import pytest
from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext

from adk_asgi import AdkApp, Messages
from adk_asgi.errors import ClientError
from adk_asgi.serving.request_state import state_delta
from adk_asgi.testing import Call, Text, read_ui_message
from tests.support import answer, counter, parse_sse, scripted_agent

pytestmark = pytest.mark.asyncio


class Extras(msgspec.Struct):
    """What the app takes from a request: a mode, nothing else."""

    mode: Literal["terse", "chatty"] = "chatty"


def take_mode(extras: dict[str, Any], user_id: str) -> dict[str, Any]:
    return {"mode": msgspec.convert(extras, Extras).mode, "user:asked_by": user_id}


def read_mode(tool_context: ToolContext) -> dict[str, Any]:
    """The mode the request set."""
    return {"mode": tool_context.state.get("mode"), "other": tool_context.state.get("other")}


class Seen:
    def __init__(self) -> None:
        self.instructions: list[str] = []

    def __call__(self, callback_context: CallbackContext, llm_request: LlmRequest) -> None:
        instruction = str(llm_request.config.system_instruction)
        self.instructions.append(instruction.split("\n\n")[0])  # ADK adds the agent's name


def make_app(hook: Any, seen: Seen, turns: list[Any] | None = None) -> AdkApp:
    agent = scripted_agent(
        turns or [[Call("read_mode", {})], [Text("ok")]],
        tools=[read_mode],
        instruction="Answer in {mode} mode.",
        before_model_callback=seen,
        chunk_size=100,
    )
    return AdkApp(
        agent,
        messages=Messages(message_id_factory=counter("msg")),
        identify=lambda c: "ada",
        request_state=hook,
    )


def client_for(app: AdkApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


def body(**extras: Any) -> dict[str, Any]:
    hello = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}
    return {"id": "chat-1", "message": hello, **extras}


async def test_the_hooks_state_is_what_the_instruction_and_the_tools_read() -> None:
    seen = Seen()
    app = make_app(take_mode, seen)
    async with client_for(app) as client:
        response = await client.post("/chat", json=body(mode="terse", other="ignored"))
    assert response.status_code == 200, response.text
    t = "msg1-txt1"
    assert parse_sse(response.content) == [
        {"type": "start", "messageId": "msg1"},
        {"type": "start-step"},
        {
            "type": "tool-input-start",
            "toolCallId": "call_1",
            "toolName": "read_mode",
            "providerExecuted": True,
        },
        {
            "type": "tool-input-available",
            "toolCallId": "call_1",
            "toolName": "read_mode",
            "input": {},
            "providerExecuted": True,
        },
        {
            "type": "tool-output-available",
            "toolCallId": "call_1",
            "output": {"mode": "terse", "other": None},
        },
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": t},
        {"type": "text-delta", "id": t, "delta": "ok"},
        {"type": "text-end", "id": t},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    assert seen.instructions == ["Answer in terse mode."] * 2
    session = await app.session_service.get_session(
        app_name=app.app_name, user_id="ada", session_id="chat-1"
    )
    assert session is not None
    assert {k: v for k, v in session.state.items() if not k.startswith("adk_asgi:")} == {
        "mode": "terse",
        "user:asked_by": "ada",
    }


async def test_a_continuation_writes_its_extras_before_the_approved_tool_runs() -> None:
    agent = scripted_agent(
        [[Call("read_mode", {})], [Text("ok")]],
        tools=[FunctionTool(read_mode, require_confirmation=True)],
        instruction="Answer in {mode} mode.",
    )
    app = AdkApp(
        agent,
        messages=Messages(message_id_factory=counter("msg")),
        identify=lambda c: "ada",
        request_state=take_mode,
    )
    async with client_for(app) as client:
        asked = await client.post("/chat", json=body(mode="terse"))
        message = answer(read_ui_message(parse_sse(asked.content)), "read_mode", approved=True)
        went_on = await client.post(
            "/chat", json={"id": "chat-1", "message": message, "mode": "chatty"}
        )
    assert went_on.status_code == 200, went_on.text
    t = "msg1-txt1"
    assert parse_sse(went_on.content) == [
        {"type": "start", "messageId": "msg1"},
        {
            "type": "tool-output-available",
            "toolCallId": "call_1",
            "output": {"mode": "chatty", "other": None},
        },
        {"type": "start-step"},
        {"type": "text-start", "id": t},
        {"type": "text-delta", "id": t, "delta": "ok"},
        {"type": "text-end", "id": t},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


async def test_an_async_hook_gets_the_extras_and_the_user() -> None:
    given: list[tuple[dict[str, Any], str]] = []

    async def hook(extras: dict[str, Any], user_id: str) -> dict[str, Any]:
        given.append((extras, user_id))
        return {"mode": "chatty"}

    seen = Seen()
    app = make_app(hook, seen, turns=[[Text("ok")]])
    payloads = {"approval-1": {"amount": 5}}  # the bridge's own key is not an extra
    async with client_for(app) as client:
        response = await client.post(
            "/chat", json=body(mode="x", nested={"a": [1]}, confirmationPayloads=payloads)
        )
    assert response.status_code == 200, response.text
    assert given == [({"mode": "x", "nested": {"a": [1]}}, "ada")]
    assert seen.instructions == ["Answer in chatty mode."]


@pytest.mark.parametrize(
    ("extras", "status", "reason"),
    [
        ({"mode": "loud"}, 422, "Invalid enum value 'loud' - at `$.mode`"),
        ({"mode": 3}, 422, "Expected `str`, got `int` - at `$.mode`"),
        ({"mode": "terse", "forbidden": True}, 403, "this account may not choose"),
        ({"mode": "terse", "empty": True}, 422, "the request's extras are refused"),
    ],
)
async def test_a_hook_that_refuses_the_extras_refuses_the_request(
    extras: dict[str, Any], status: int, reason: str
) -> None:
    def hook(extras: dict[str, Any], user_id: str) -> dict[str, Any]:
        if extras.get("forbidden"):
            raise ClientError(403, "this account may not choose")
        if extras.get("empty"):
            raise ValueError()
        return take_mode(extras, user_id)

    seen = Seen()
    app = make_app(hook, seen)
    async with client_for(app) as client:
        response = await client.post("/chat", json=body(**extras))
        chats = await client.get("/chats")
    assert (response.status_code, response.json()) == (status, {"error": reason})
    assert seen.instructions == []  # nothing ran
    assert chats.json() == []  # and no chat was made


async def test_without_a_hook_the_extras_are_ignored() -> None:
    seen = Seen()
    agent = scripted_agent([[Text("ok")]], instruction="Answer in {mode?} mode.")
    agent.before_model_callback = seen
    app = AdkApp(
        agent, messages=Messages(message_id_factory=counter("msg")), identify=lambda c: "ada"
    )
    async with client_for(app) as client:
        response = await client.post("/chat", json=body(mode="terse"))
    assert response.status_code == 200, response.text
    assert seen.instructions == ["Answer in  mode."]


@pytest.mark.parametrize(
    ("returned", "error"),
    [
        (["mode"], "request_state returned list, not a mapping"),
        ({1: "x"}, "request_state returned a key that is not a string: 1"),
        (
            {"adk_asgi:title": "x"},
            "request_state may not write 'adk_asgi:title': the bridge's own state",
        ),
        (
            {"when": object()},
            "request_state returned a value a session cannot store: "
            "Encoding objects of type object is unsupported",
        ),
    ],
)
async def test_what_a_hook_returns_must_be_state_a_session_keeps(
    returned: object, error: str
) -> None:
    with pytest.raises(TypeError) as raised:
        await state_delta(lambda extras, user_id: returned, {}, "ada")  # type: ignore[arg-type,return-value]
    assert str(raised.value) == error
