"""Every agent shape the bridge serves, one ``AdkApp`` each, for the real AI SDK clients
(tests/e2e/test_agent_shapes.py). Run with ``uvicorn tests.e2e.shapes_app:app``.

Mounted apps (each answers ``POST /chat``, ``GET /chat/{id}/messages``, ``WS /live`` and
``GET /transport.js`` under its prefix):

* ``/parallel``: a ``ParallelAgent`` of two streaming ``LlmAgent``\\s (``alpha``, ``bravo``);
  ``bravo``'s model is slower to start, so ``alpha`` is shown first every time.
* ``/sequential``: a ``SequentialAgent`` of ``first`` then ``second``.
* ``/loop``: a ``LoopAgent`` whose ``writer`` drafts twice, then calls ``finish`` (escalates)
  and says it is done.
* ``/transfer``: ``front`` hands the chat over to its sub-agent ``billing``.
* ``/agent-tool``: ``asker`` calls the agent ``expert`` as a tool (``AgentTool``).
* ``/request-input``: ``booker`` asks for a city with ADK's ``request_input`` tool.
* ``/workflow-input``: an ADK 2 ``Workflow`` whose first node asks for a name
  (``RequestInput``), the next one greets it.
* ``/workflow-confirm``: a ``Workflow`` whose ``pay`` node requires confirmation.
* ``/workflow-tool``: ``receptionist`` calls the workflow ``greeter`` as a tool (ADK's
  ``NodeTool``); its first node asks for a name (``RequestInput``), the next one greets it,
  and the greeting is the tool's result.
* ``/toolset``: ``shop``, whose tools come from a toolset (``Catalog``, as an MCP server's:
  ``search_catalog`` returns a list, ``order_item`` requires confirmation), sent as dynamic
  tools, and a browser tool ``locate`` (static, by the default rule).
* ``/dynamic``: ``shop`` again, with ``dynamic_tools`` naming its browser tool too.
* ``/dynamic-v5``: for ai@5 clients, ``shop`` without ordering (ai@5 has no approvals), its
  browser tool dynamic too.
* ``/refund``: ``clerk`` refunds, once the user approves it, with a tool that raises.

Every model is a ``ScriptedLlm`` answering from the conversation (``responder=``), so every chat
of the session gets the same answers, over SSE and over the live connection alike. In live mode
ADK ends a ``SequentialAgent``'s sub-agent when it calls ``task_completed`` (a tool ADK adds to
the sub-agents of a live ``SequentialAgent``), so the sequential models call it whenever their
request offers it (live, ``/sequential`` runs a tree of its own: its ``live_agent``).

``GET /__runs`` returns how many times the confirmed ``pay`` node (and the ``refund`` tool)
really ran, per chat (the ADK session id is the chat id): ``{chat id: runs}``, chats where it
never ran absent.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from google.adk.agents import LlmAgent, LoopAgent, ParallelAgent, SequentialAgent
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.events.request_input import RequestInput
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools import request_input
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.adk.workflow import START, Workflow, node
from google.genai import types
from pydantic import BaseModel, PrivateAttr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from adk_asgi import AdkApp, Messages, client_tool
from adk_asgi.testing import Call, ScriptedLlm, Segment, Text
from adk_asgi.testing.live import ScriptedLiveConnection

# ADK 2 deprecates the agent classes of ADK 1 (and AgentTool's plugins argument); this app
# serves them on purpose.
warnings.filterwarnings("ignore", r".* is deprecated", DeprecationWarning)
warnings.filterwarnings("ignore", r"The `plugins` argument is deprecated", DeprecationWarning)

ALPHA = "Alpha speaks here."
BRAVO = "Bravo answers too."
FIRST = "First, this."
SECOND = "Then that."
DRAFTS = ("Draft one.", "Draft two.")
DONE = "Done."
PASSING = "Passing you on."
BILLING = "Billing here."
EXPERT = "Paris."
ASKER = "It is Paris."
NAME_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
ASK_NAME = "What is your name?"
ASK_CITY = "Which city?"
AMOUNT = 30

BRAVO_DELAY = 0.1
"""Seconds before each of ``bravo``'s model responses: ``alpha`` starts first, every time."""


def responses_to(contents: list[types.Content], name: str) -> int:
    """How many function responses to ``name`` the conversation holds."""
    return sum(
        1
        for content in contents
        for part in content.parts or ()
        if part.function_response is not None and part.function_response.name == name
    )


def this_turn(contents: list[types.Content]) -> list[types.Content]:
    """The conversation since the user's last text."""
    for index in range(len(contents) - 1, -1, -1):
        content = contents[index]
        if content.role == "user" and any(part.text for part in content.parts or ()):
            return contents[index + 1 :]
    return contents


def says(text: str) -> ScriptedLlm:
    """A model that answers every call with ``text``."""
    return ScriptedLlm(responder=lambda contents: [Text(text)])


class _OffersTool(ScriptedLlm):
    """A ``ScriptedLlm`` whose responder also learns whether the request offers a tool (here:
    ``task_completed``, which ADK gives the sub-agents of a live ``SequentialAgent`` only)."""

    _text: str = PrivateAttr(default="")
    _offered: bool = PrivateAttr(default=False)

    def __init__(self, text: str) -> None:
        super().__init__(responder=self._answer)
        self._text = text

    def _answer(self, contents: list[types.Content]) -> list[Segment]:
        if responses_to(contents, "task_completed"):
            return []  # it said its part, and ADK moves on
        if self._offered:
            return [Text(self._text), Call("task_completed", {})]
        return [Text(self._text)]

    @staticmethod
    def _offers(request: LlmRequest) -> bool:
        return "task_completed" in request.tools_dict

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self._offered = self._offers(llm_request)
        async for response in super().generate_content_async(llm_request, stream):
            yield response

    @asynccontextmanager
    async def connect(self, llm_request: LlmRequest) -> AsyncIterator[ScriptedLiveConnection]:
        self._offered = self._offers(llm_request)
        async with super().connect(llm_request) as connection:
            yield connection


def parallel() -> ParallelAgent:
    bravo = ScriptedLlm(
        responder=lambda contents: [Text(BRAVO)], delay=BRAVO_DELAY, chunk_size=len(BRAVO)
    )
    return ParallelAgent(
        name="both",
        sub_agents=[
            LlmAgent(name="alpha", model=says(ALPHA)),
            LlmAgent(name="bravo", model=bravo),
        ],
    )


def sequential() -> SequentialAgent:
    return SequentialAgent(
        name="pipeline",
        sub_agents=[
            LlmAgent(name="first", model=_OffersTool(FIRST)),
            LlmAgent(name="second", model=_OffersTool(SECOND)),
        ],
    )


def loop() -> LoopAgent:
    def finish(tool_context: ToolContext) -> dict[str, str]:
        """Stop the loop."""
        tool_context.actions.escalate = True
        return {"status": "done"}

    def draft(contents: list[types.Content]) -> list[Segment]:
        # ADK calls the model once more after ``finish`` (escalating ends the loop, not the
        # agent's own turn)
        if responses_to(contents[-1:], "finish"):
            return [Text(DONE)]
        drafted = any(content.role == "model" for content in this_turn(contents))
        return [Text(DRAFTS[1]), Call("finish", {})] if drafted else [Text(DRAFTS[0])]

    writer = LlmAgent(name="writer", model=ScriptedLlm(responder=draft), tools=[finish])
    return LoopAgent(name="rounds", sub_agents=[writer], max_iterations=5)


def transfer() -> LlmAgent:
    def front(contents: list[types.Content]) -> list[Segment]:
        if responses_to(contents, "transfer_to_agent"):
            return [Text("Back at the front.")]
        return [Text(PASSING), Call("transfer_to_agent", {"agent_name": "billing"})]

    billing = LlmAgent(name="billing", description="Pays bills.", model=says(BILLING))
    return LlmAgent(name="front", model=ScriptedLlm(responder=front), sub_agents=[billing])


def agent_tool() -> LlmAgent:
    def asker(contents: list[types.Content]) -> list[Segment]:
        if responses_to(contents, "expert"):
            return [Text(ASKER)]
        return [Call("expert", {"request": "capital of France?"})]

    expert = LlmAgent(name="expert", description="Knows capitals.", model=says(EXPERT))
    return LlmAgent(name="asker", model=ScriptedLlm(responder=asker), tools=[AgentTool(expert)])


def booking() -> LlmAgent:
    """Asks the user for a city with ADK's ``request_input`` tool, then books what it got."""

    def booker(contents: list[types.Content]) -> list[Segment]:
        answers = [
            part.function_response.response
            for content in this_turn(contents)
            for part in content.parts or ()
            if part.function_response is not None
        ]
        if not answers:
            schema = {"type": "string"}
            return [Call("adk_request_input", {"message": ASK_CITY, "response_schema": schema})]
        return [Text(f"Booked for {(answers[-1] or {}).get('result')}.")]

    return LlmAgent(name="booker", model=ScriptedLlm(responder=booker), tools=[request_input])


def search_catalog(query: str) -> list[str]:
    """Search the catalog (a list: ADK stores it as ``{"result": [...]}``)."""
    return [f"{query} one", f"{query} two"]


def order_item(item: str) -> dict[str, str]:
    """Order an item (the user confirms it first)."""
    return {"ordered": item}


@client_tool
def locate() -> None:
    """Where the user is (the browser answers)."""


class Catalog(BaseToolset):
    """A toolset, as an MCP server is: its tools are listed at run time. ``ordering``: it
    offers ``order_item`` too, which asks for confirmation (an ai@5 client cannot answer)."""

    def __init__(self, *, ordering: bool = True) -> None:
        super().__init__()
        self.ordering = ordering

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        ordered = [FunctionTool(order_item, require_confirmation=True)] if self.ordering else []
        return [FunctionTool(search_catalog), *ordered]


SHOP_SEARCH = {"query": "lamp"}
SHOP_FOUND = ["lamp one", "lamp two"]
SHOP_ORDER = {"item": "lamp one"}
SHOP_DONE = "All set."


def shop(*, ordering: bool = True) -> LlmAgent:
    """Searches (a toolset's tool), orders (a toolset's tool that asks for confirmation; not
    when ``ordering`` is false), then asks the browser where the user is, and is done."""

    def shopper(contents: list[types.Content]) -> list[Segment]:
        turn = this_turn(contents)
        if not responses_to(turn, "search_catalog"):
            return [Call("search_catalog", SHOP_SEARCH)]
        if ordering and not responses_to(turn, "order_item"):
            return [Call("order_item", SHOP_ORDER)]
        if not responses_to(turn, "locate"):
            return [Call("locate", {})]
        return [Text(SHOP_DONE)]

    model = ScriptedLlm(responder=shopper)
    return LlmAgent(name="shop", model=model, tools=[Catalog(ordering=ordering), locate])


@node
async def ask_name(ctx: Any, node_input: Any) -> Any:
    yield RequestInput(message=ASK_NAME, response_schema=NAME_SCHEMA)


@node
def greet(node_input: dict[str, str]) -> str:
    return f"Hello {node_input['name']}"


class Visit(BaseModel):
    reason: str


VISIT = {"reason": "a visit"}
"""What ``receptionist`` calls ``greeter`` with."""


def workflow_tool() -> LlmAgent:
    """Calls the workflow ``greeter`` as a tool (ADK wraps it in a ``NodeTool``): it asks the
    user's name and greets it; the model then says what the tool returned."""

    def receptionist(contents: list[types.Content]) -> list[Segment]:
        results = [
            part.function_response.response
            for content in this_turn(contents)
            for part in content.parts or ()
            if part.function_response is not None and part.function_response.name == "greeter"
        ]
        if not results:
            return [Call("greeter", VISIT)]
        return [Text(f"The greeter said: {(results[-1] or {}).get('result')}.")]

    greeter = Workflow(
        name="greeter",
        description="Greets the visitor by name.",
        edges=[(START, ask_name, greet)],
        input_schema=Visit,
    )
    return LlmAgent(name="receptionist", model=ScriptedLlm(responder=receptionist), tools=[greeter])


PAY_RUNS: Counter[str] = Counter()
"""How many times ``pay`` really ran, per chat."""


@node
def plan(node_input: Any) -> dict[str, int]:
    return {"amount": AMOUNT}


@node(require_confirmation=True)
def pay(ctx: Any, node_input: dict[str, int]) -> str:
    PAY_RUNS[ctx.session.id] += 1
    return f"paid {node_input['amount']}"


def refund(amount: int, tool_context: ToolContext) -> dict[str, Any]:
    """Refund an amount, once the user approves it: the bank refuses it."""
    PAY_RUNS[tool_context.session.id] += 1
    raise RuntimeError(f"the bank refused a refund of {amount}")


def clerk() -> LlmAgent:
    """Refunds 30 (``refund`` asks for confirmation, then raises), and says it is done once
    it reads the refund's result."""

    def respond(contents: list[types.Content]) -> list[Segment]:
        if responses_to(this_turn(contents), "refund"):
            return [Text("Done.")]
        return [Call("refund", {"amount": AMOUNT})]

    tool = FunctionTool(refund, require_confirmation=True)
    return LlmAgent(name="clerk", model=ScriptedLlm(responder=respond), tools=[tool])


async def runs(request: Request) -> JSONResponse:
    return JSONResponse(dict(PAY_RUNS))


def create_app() -> Starlette:
    apps = {
        "/parallel": AdkApp(parallel()),
        # a tree of its own for live: ADK's live SequentialAgent adds task_completed (and an
        # instruction to call it) to its sub-agents for good, which would change the SSE answers
        "/sequential": AdkApp(sequential(), live_agent=sequential()),
        "/loop": AdkApp(loop()),
        "/transfer": AdkApp(transfer()),
        "/agent-tool": AdkApp(agent_tool()),
        "/request-input": AdkApp(booking()),
        "/workflow-input": AdkApp(Workflow(name="asking", edges=[(START, ask_name, greet)])),
        "/workflow-confirm": AdkApp(Workflow(name="paying", edges=[(START, plan, pay)])),
        "/workflow-tool": AdkApp(workflow_tool()),
        "/toolset": AdkApp(shop()),
        "/dynamic": AdkApp(
            shop(), messages=Messages(dynamic_tools={"search_catalog", "order_item", "locate"})
        ),
        "/refund": AdkApp(clerk()),
        "/dynamic-v5": AdkApp(
            shop(ordering=False),
            messages=Messages(dynamic_tools={"search_catalog", "locate"}),
            ai_sdk_version=5,
        ),
    }

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for chat in apps.values():
                stack.push_async_callback(chat.aclose)
            yield

    return Starlette(
        routes=[
            Route("/__runs", runs, methods=["GET"]),
            *(Mount(prefix, app=chat) for prefix, chat in apps.items()),
        ],
        lifespan=lifespan,
    )


app = create_app()
