"""Each touch of ADK's internals (adk_asgi/adk/private.py), checked against the installed ADK:
one test per ADK behaviour relied on, named after it, that fails naming the function to update
when an ADK release changes it. Then the public replacements used instead of internals, and the
live bridge's callback runner against ADK's own (docs/internals/architecture.md#adks-internals).
"""

from __future__ import annotations

import asyncio
import inspect
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.llm_agent import LlmAgent
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.runners import InMemoryRunner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.adk.tools.tool_context import ToolContext
from google.adk.workflow import START, Workflow
from google.genai import types

from adk_asgi.adk import private
from adk_asgi.live.agent_callbacks import run_callbacks
from adk_asgi.testing import Call, ScriptedLlm, Text

ADK = version("google-adk")
DOOR = "adk_asgi/adk/private.py"


@contextmanager
def relied_on(touch: str, behaviour: str) -> Iterator[None]:
    """Fail naming the touch and the ADK behaviour when anything inside fails."""
    try:
        yield
    except (Exception, AssertionError) as error:
        pytest.fail(
            f"ADK {ADK} no longer {behaviour}: {DOOR} {touch} needs updating"
            f" (checked on {private.ADK_CHECKED}). {type(error).__name__}: {error}",
            pytrace=True,
        )


def weather(city: str, days: int = 1) -> dict[str, Any]:
    """The forecast."""
    return {"city": city, "days": days}


# --- sessions ---------------------------------------------------------------------------------


def test_sqlite_session_service_keeps_its_parsed_db_path_in_private_attributes(
    tmp_path: Path,
) -> None:
    file = str(tmp_path / "sessions.db")
    with relied_on(
        "sqlite_location()",
        "keeps SqliteSessionService's _db_path, _db_connect_path and _db_connect_uri as"
        " _parse_db_path makes them",
    ):
        assert private.sqlite_location(SqliteSessionService(file)) == (file, file, False)
        assert private.sqlite_location(SqliteSessionService(f"sqlite:///{file}")) == (
            file,
            file,
            False,
        )
        where = private.sqlite_location(SqliteSessionService(f"sqlite:///{file}?mode=rwc"))
        assert where == (file, f"file:{file}?mode=rwc", True)
        sqlite3.connect(where.connect, uri=where.uri).close()  # (what the locks open)
        assert private.sqlite_location(SqliteSessionService(":memory:")).path == ":memory:"


# --- events -----------------------------------------------------------------------------------


def test_apply_rewinds_drops_a_rewind_and_everything_back_to_its_invocation() -> None:
    def event(invocation: str, rewind: str | None = None) -> Event:
        actions = EventActions(rewind_before_invocation_id=rewind)
        return Event(invocation_id=invocation, author="user", actions=actions)

    first, second, second_reply, rewind, third = (
        event("i1"),
        event("i2"),
        event("i2"),
        event("i3", rewind="i2"),
        event("i4"),
    )
    with relied_on(
        "without_rewound()",
        "has _rewind_events._apply_rewinds drop a rewind event and its invocation's events",
    ):
        kept = private.without_rewound([first, second, second_reply, rewind, third])
        assert [e.id for e in kept] == [first.id, third.id]


# --- auth -------------------------------------------------------------------------------------


def test_auth_credential_lists_the_secret_keys_its_web_server_strips() -> None:
    with relied_on(
        "CREDENTIAL_SECRET_KEYS",
        "keeps auth_credential._CREDENTIAL_SECRET_KEYS, a frozenset of both spellings",
    ):
        keys = private.CREDENTIAL_SECRET_KEYS
        assert isinstance(keys, frozenset)
        assert {
            "accessToken",
            "access_token",
            "refreshToken",
            "clientSecret",
            "authResponseUri",
            "authCode",
            "password",
            "token",
        } <= keys
        assert {"authUri", "state", "redirectUri", "scopes"}.isdisjoint(keys)


# --- streamed tool arguments ------------------------------------------------------------------


def test_streaming_utils_parses_and_sets_json_paths() -> None:
    with relied_on(
        "parse_json_path() / set_value_by_json_path()",
        "has streaming_utils._parse_json_path / _set_value_by_json_path read '$.a.b[0]'",
    ):
        assert private.parse_json_path("$.a.b[0]") == ["a", "b", 0]
        assert private.parse_json_path("$.city") == ["city"]
        target: dict[str, Any] = {}
        private.set_value_by_json_path(target, ["a", "b", 0], 1)
        private.set_value_by_json_path(target, ["city"], "Boston")
        assert target == {"a": {"b": [1]}, "city": "Boston"}


def test_json_path_tracker_turns_json_text_chunks_into_partial_args() -> None:
    with relied_on(
        "json_to_partial_args()",
        "has streaming_utils._JsonPathTracker().handle_chunk(text) -> list[PartialArg]",
    ):
        feed = private.json_to_partial_args()
        first = feed('{"city": "Bos')
        rest = feed('ton", "days": 3}')
        assert [(p.json_path, p.string_value, p.will_continue) for p in first] == [
            ("$.city", "Bos", True)
        ]
        assert [(p.json_path, p.string_value, p.number_value) for p in rest] == [
            ("$.city", "ton", None),
            ("$.days", None, 3.0),
        ]


# --- workflows asking the user ----------------------------------------------------------------


def test_a_node_confirmation_is_asked_under_its_interrupt_id() -> None:
    with relied_on(
        "node_confirmation_id()",
        "names a node's confirmation _workflow_hitl_utils.confirmation_interrupt_id(path)"
        " = 'wf_tool_confirmation:<path>'",
    ):
        assert private.node_confirmation_id("flow/pay") == "wf_tool_confirmation:flow/pay"


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def test_a_resume_answer_is_unwrapped_and_validated_against_its_schema() -> None:
    with relied_on(
        "check_resume_answer()",
        "validates a resume answer with _rehydration_utils._unwrap_response and"
        " _validate_resume_response, raising a ValueError",
    ):
        private.check_resume_answer({"result": '{"n": 1}'}, SCHEMA)  # (JSON text unwrapped)
        private.check_resume_answer({"n": 2}, SCHEMA)
        for wrong in ({"result": '{"n": "x"}'}, {"m": 1}):
            with pytest.raises(ValueError):
                private.check_resume_answer(wrong, SCHEMA)
        from google.adk.workflow._errors import WorkflowDataError

        assert issubclass(WorkflowDataError, ValueError)  # (interrupts.py catches ValueError)


def _ask() -> None:
    """A node."""


def test_an_agent_wraps_a_workflow_tool_in_node_tool() -> None:
    workflow = Workflow(name="flow", edges=[(START, _ask)])
    with relied_on(
        "NodeTool",
        "wraps a workflow given as an LlmAgent's tool in tools._node_tool.NodeTool",
    ):
        agent = LlmAgent(name="agent", model=ScriptedLlm(turns=[]), tools=[workflow])
        assert isinstance(agent.tools[0], private.NodeTool)
        assert issubclass(private.NodeTool, BaseTool)


def test_node_interrupted_error_is_a_base_exception_that_tool_pipelines_pass_on() -> None:
    """A workflow tool that stops for the user raises it out of ``NodeTool.run_async``
    (exercised end to end by tests/live/test_live_node_tools.py)."""
    with relied_on(
        "NodeInterruptedError",
        "raises workflow._errors.NodeInterruptedError, a BaseException, for a stopped node",
    ):
        assert issubclass(private.NodeInterruptedError, BaseException)
        assert not issubclass(private.NodeInterruptedError, Exception)


# --- tools ------------------------------------------------------------------------------------


def _rule(args: dict[str, Any]) -> bool:
    return bool(args)


def test_function_tool_keeps_require_confirmation_in_a_private_attribute() -> None:
    with relied_on(
        "confirmation_rule()",
        "keeps FunctionTool's (and McpTool's, McpToolset's) require_confirmation in"
        " _require_confirmation",
    ):
        assert private.confirmation_rule(FunctionTool(weather)) is False
        assert private.confirmation_rule(FunctionTool(weather, require_confirmation=True)) is True
        assert private.confirmation_rule(FunctionTool(weather, require_confirmation=_rule)) is _rule
        assert private.confirmation_rule(object()) is False


def test_mcp_toolset_keeps_require_confirmation_in_a_private_attribute() -> None:
    """Read from ADK's source: ``McpToolset`` cannot be imported without the ``mcp`` package,
    which neither ADK nor this package requires."""
    import google.adk.tools

    source = Path(google.adk.tools.__file__).parent / "mcp_tool" / "mcp_toolset.py"
    with relied_on(
        "confirmation_rule()", "keeps McpToolset's require_confirmation in _require_confirmation"
    ):
        text = source.read_text()
        assert "self._require_confirmation = require_confirmation" in text
        assert "require_confirmation=self._require_confirmation" in text  # given to its tools


def test_a_tool_that_defers_its_response_gets_none_built_when_it_returns_nothing() -> None:
    from google.adk.flows.llm_flows.tools import _caller

    with relied_on(
        "answered_later()",
        "skips the function response of a tool with is_long_running or _defers_response that"
        " returns nothing (flows.llm_flows.tools._caller, BaseTool._defers_response)",
    ):
        assert "tool.is_long_running or tool._defers_response" in inspect.getsource(_caller)
        assert private.answered_later(FunctionTool(weather)) is False
        assert private.answered_later(LongRunningFunctionTool(weather)) is True
        helper = LlmAgent(name="helper", model=ScriptedLlm(turns=[]), mode="task")
        lead = LlmAgent(name="lead", model=ScriptedLlm(turns=[]), sub_agents=[helper])
        task_tools = [t for t in lead.tools if isinstance(t, BaseTool) and t.name == "helper"]
        assert [private.answered_later(t) for t in task_tools] == [True]  # (_TaskAgentTool)


def test_a_long_running_tools_answer_is_tested_for_truth_and_copied_into_a_dict() -> None:
    from google.adk.flows.llm_flows.tools import _caller

    with relied_on(
        "as_answer()",
        "skips the function response of a long-running tool by the truth of its result"
        " (flows.llm_flows.tools._caller), or builds it into a plain dict",
    ):
        assert ") and not function_response:" in inspect.getsource(_caller)
        answer = private.as_answer({})
        assert bool(answer) is True
        built = types.Part.from_function_response(name="change_bgm", response=answer)
        assert built.function_response is not None
        response = built.function_response.response
        assert (type(response), response) == (dict, {})
        kept = {"playing": 3}
        assert private.as_answer(kept) is kept


def test_function_tool_checks_its_arguments_before_it_runs() -> None:
    tool = FunctionTool(weather)
    with relied_on(
        "refuses_arguments()",
        "checks a FunctionTool's arguments with _preprocess_args_with_validation(args) ->"
        " (args, errors) and _get_mandatory_args() -> list[str]",
    ):
        assert tool._get_mandatory_args() == ["city"]
        assert private.refuses_arguments(tool, {}) is True
        assert private.refuses_arguments(tool, {"city": "Boston"}) is False
        assert private.refuses_arguments(tool, {"city": "Boston", "days": 2}) is False


# --- the invocation ---------------------------------------------------------------------------


async def test_a_tool_context_runs_in_the_runners_invocation_with_its_event_queue() -> None:
    """A tool reads the runner's own invocation (not a copy) and puts an event on the queue
    the runner drains: the runner stores and streams it before the tool's result."""
    seen: dict[str, Any] = {}

    def note(tool_context: ToolContext) -> dict[str, Any]:
        """Puts a note before its result."""
        invocation = private.invocation_of(tool_context)
        seen["invocation"] = invocation
        seen["copy"] = tool_context.get_invocation_context()
        queue = private.event_queue(invocation)
        assert queue is not None
        event = Event(
            invocation_id=invocation.invocation_id,
            author="agent",
            content=types.Content(role="model", parts=[types.Part(text="a note")]),
        )
        queue.put_nowait((event, asyncio.Event()))
        return {"ok": True}

    agent = LlmAgent(
        name="agent", model=ScriptedLlm(turns=[[Call("note", {})], [Text("done")]]), tools=[note]
    )
    runner = InMemoryRunner(agent=agent, app_name="app")
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    with relied_on(
        "invocation_of() / event_queue()",
        "gives a tool's Context the runner's InvocationContext in _invocation_context, whose"
        " _event_queue the runner drains in order, storing each event",
    ):
        texts = []
        async for event in runner.run_async(
            user_id="u",
            session_id=session.id,
            new_message=types.Content(role="user", parts=[types.Part(text="hi")]),
        ):
            for part in (event.content.parts if event.content else None) or []:
                if part.text:
                    texts.append(part.text)
                elif part.function_response:
                    texts.append(f"response:{part.function_response.name}")
        assert isinstance(seen["invocation"], InvocationContext)
        assert seen["invocation"] is not seen["copy"]
        assert seen["invocation"].agent.name == "agent"  # (the agent as the runner runs it)
        assert texts.index("a note") < texts.index("response:note")
        stored = await runner.session_service.get_session(
            app_name="app", user_id="u", session_id=session.id
        )
        assert stored is not None
        assert any(e.content and e.content.parts[0].text == "a note" for e in stored.events)


def test_an_invocation_outside_a_runner_has_no_event_queue() -> None:
    invocation = InvocationContext(
        invocation_id="i",
        agent=LlmAgent(name="agent", model=ScriptedLlm(turns=[])),
        session_service=InMemorySessionService(),
        session=_session(),
    )
    with relied_on("event_queue()", "leaves InvocationContext._event_queue None until set"):
        assert private.event_queue(invocation) is None
        assert private.invocation_of(ToolContext(invocation)) is invocation


def _session() -> Any:
    from google.adk.sessions.session import Session

    return Session(id="s", app_name="app", user_id="u")


# --- public replacements ----------------------------------------------------------------------


def test_stale_session_error_is_public_in_google_adk_errors() -> None:
    from google.adk.errors import StaleSessionError
    from google.adk.sessions import sqlite_session_service

    assert issubclass(StaleSessionError, Exception)
    assert sqlite_session_service.StaleSessionError is StaleSessionError  # (what ADK raises)


def test_streaming_mode_is_importable_from_run_config() -> None:
    """adk_asgi/app.py imports it there, ADK's documented path; its ``type: ignore`` goes (mypy
    then flags it unused) once run_config exports the name."""
    from google.adk.agents import run_config

    assert run_config.StreamingMode.SSE.value == "sse"  # type: ignore[attr-defined]


def test_agents_give_their_tool_callbacks_as_public_canonical_lists() -> None:
    async def before(tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> None:
        return None

    agent = LlmAgent(
        name="agent",
        model=ScriptedLlm(turns=[]),
        before_tool_callback=before,
        after_tool_callback=[before, before],
    )
    assert agent.canonical_before_tool_callbacks == [before]
    assert agent.canonical_after_tool_callbacks == [before, before]


# --- the live bridge's callback runner, against ADK's own -------------------------------------

Calls = list[tuple[str, tuple[Any, ...], dict[str, Any]]]


def _callbacks(calls: Calls) -> dict[str, list[Callable[..., Any]]]:
    """Lists of callbacks, each noting how it was called."""

    def by_name(tool: Any, args: Any, tool_context: Any, tool_response: Any = None) -> None:
        calls.append(("by_name", (), {"tool": tool, "args": args}))

    def by_position(t: Any, a: Any, ctx: Any, response: Any = None) -> dict[str, Any]:
        calls.append(("by_position", (t, a, ctx, response), {}))
        return {"from": "by_position"}

    async def later(**kwargs: Any) -> dict[str, Any] | None:
        calls.append(("later", (), dict(kwargs)))
        return None

    async def answers(tool: Any, args: Any, tool_context: Any) -> dict[str, Any]:
        calls.append(("answers", (), {}))
        return {"from": "answers"}

    def falsy(tool: Any, args: Any, tool_context: Any) -> dict[str, Any]:
        calls.append(("falsy", (), {}))
        return {}

    def unbindable(only: Any) -> str:
        calls.append(("unbindable", (only,), {}))
        return "never"

    return {
        "none answers": [by_name, later],
        "positional answers": [by_name, by_position, answers],
        "async answers first": [later, answers, by_position],
        "an empty answer stops": [falsy, answers],
        "one that binds neither way": [unbindable],
        "none": [],
    }


@pytest.mark.parametrize("case", list(_callbacks([])))
@pytest.mark.parametrize("response", [False, True])
async def test_the_live_callback_runner_runs_a_list_as_adks_pipeline_does(
    case: str, response: bool
) -> None:
    from google.adk.utils._callback_pipeline import _run_callbacks, _stop_on_non_none

    kwargs: dict[str, Any] = {"tool": "T", "args": {"a": 1}, "tool_context": "C"}
    if response:
        kwargs["tool_response"] = {"r": 1}

    async def outcome(runner: Callable[..., Any], calls: Calls) -> tuple[str, Any, Calls]:
        try:
            return ("returned", await runner(_callbacks(calls)[case], **kwargs), calls)
        except TypeError as error:
            return ("raised", type(error), calls)

    ours = await outcome(run_callbacks, [])
    adks = await outcome(
        lambda callbacks, **kw: _run_callbacks(callbacks, _stop_on_non_none, **kw), []
    )
    assert ours == adks, (
        f"ADK {ADK}'s _callback_pipeline._run_callbacks runs an agent's callbacks otherwise:"
        " adk_asgi/live/agent_callbacks.py run_callbacks() needs updating"
    )
