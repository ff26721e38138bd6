"""The one door to ADK's internals: every private module, name or attribute of ``google-adk``
that adk_asgi uses is used here, and only here (``tests/unit/test_adk_private_door.py`` fails
on any other). ADK may change any of them in a minor 2.x release; each has a test named after
the ADK behaviour it relies on (``tests/unit/test_adk_private.py``) that fails naming the
function here to update.

Each touch says what it relies on (checked against google-adk 2.13.0), why no public API serves,
and what upstream change would let it go. What has a public API is used through it elsewhere,
not here: ``google.adk.errors.StaleSessionError``, ``StreamingMode`` from
``google.adk.agents.run_config``, the agents' ``canonical_*_tool_callbacks`` lists (run by
:mod:`adk_asgi.live.agent_callbacks` itself), and ``ValueError`` for ADK's
``WorkflowDataError`` (its base class).

Sans-I/O and the lowest layer: it imports nothing of adk_asgi.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from google.adk.auth.auth_credential import _CREDENTIAL_SECRET_KEYS
from google.adk.events._rewind_events import _apply_rewinds
from google.adk.tools._node_tool import NodeTool
from google.adk.utils.streaming_utils import (
    _JsonPathTracker,
    _parse_json_path,
    _set_value_by_json_path,
)
from google.adk.workflow._errors import NodeInterruptedError
from google.adk.workflow.utils._rehydration_utils import (
    _unwrap_response,
    _validate_resume_response,
)
from google.adk.workflow.utils._workflow_hitl_utils import confirmation_interrupt_id

if TYPE_CHECKING:
    from google.adk.agents.context import Context
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.events.event import Event
    from google.adk.sessions.sqlite_session_service import SqliteSessionService
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.function_tool import FunctionTool
    from google.genai import types

__all__ = [
    "CREDENTIAL_SECRET_KEYS",
    "NodeInterruptedError",
    "NodeTool",
    "SqliteLocation",
    "answered_later",
    "as_answer",
    "check_resume_answer",
    "confirmation_rule",
    "event_queue",
    "invocation_of",
    "json_to_partial_args",
    "node_confirmation_id",
    "parse_json_path",
    "refuses_arguments",
    "set_value_by_json_path",
    "sqlite_location",
    "without_rewound",
]

ADK_CHECKED: Final = "2.13.0"
"""The google-adk version every touch here was read against."""


# --- sessions ---------------------------------------------------------------------------------


class SqliteLocation(NamedTuple):
    """Where a ``SqliteSessionService`` keeps its sessions, as it opens them itself."""

    path: str
    """The file's path (``""`` or ``":memory:"``: an in-memory database)."""
    connect: str
    """What it passes to ``sqlite3.connect`` / ``aiosqlite.connect``."""
    uri: bool
    """Whether it connects with ``uri=True`` (``connect`` is a ``file:`` URI)."""


def sqlite_location(service: SqliteSessionService) -> SqliteLocation:
    """Where ``service`` keeps its sessions, so the chat locks and claims live in that file.

    Relies on: ``google.adk.sessions.sqlite_session_service.SqliteSessionService.__init__``
    setting ``_db_path``, ``_db_connect_path`` and ``_db_connect_uri`` from
    ``_parse_db_path(db_path)`` (a ``sqlite:`` URL parsed the SQLAlchemy way, a query made a
    ``file:`` URI).
    Why private: the service keeps neither the ``db_path`` it was given nor any public
    accessor of where it connects.
    Gone when: ADK exposes the parsed location (e.g. public ``db_path`` / ``connect_path`` /
    ``connect_uri`` properties).
    """
    return SqliteLocation(service._db_path, service._db_connect_path, service._db_connect_uri)


# --- events -----------------------------------------------------------------------------------


def without_rewound(events: list[Event]) -> list[Event]:
    """The session's events as the model sees them: without what a rewind took back.

    Relies on: ``google.adk.events._rewind_events._apply_rewinds`` (the rule ADK's prompt
    building, ``flows.llm_flows.contents``, and compaction share: an event with
    ``actions.rewind_before_invocation_id`` drops itself and everything back to that
    invocation's first event).
    Why private: ADK has no public function for "the live events after rewinds".
    Gone when: ADK makes it public (e.g. ``google.adk.events.apply_rewinds``).
    """
    return _apply_rewinds(events)


# --- auth -------------------------------------------------------------------------------------

CREDENTIAL_SECRET_KEYS: Final[frozenset[str]] = _CREDENTIAL_SECRET_KEYS
"""The keys ADK's own web server strips from an ``AuthConfig`` before an untrusted client sees
it (passwords, tokens, the redirect URL's code, a PKCE verifier…), in both spellings.

Relies on: ``google.adk.auth.auth_credential._CREDENTIAL_SECRET_KEYS`` (a ``frozenset[str]``
kept next to the credential fields "so the two lists can't silently drift apart").
Why private: ADK's redaction helpers (``_redact_credential_secrets``) are private too, and
adk_asgi redacts its own shapes (a call's args, a stored answer) with the same keys.
Gone when: ADK exports the set or a public redaction function.
"""


# --- streamed tool arguments ------------------------------------------------------------------


def parse_json_path(json_path: str) -> list[str | int]:
    """A ``PartialArg.json_path`` (``$.a.b[0]``) as keys and indexes, as ADK reads it.

    Relies on: ``google.adk.utils.streaming_utils._parse_json_path`` (what ADK's
    ``StreamingResponseAggregator`` uses to rebuild a call's streamed arguments).
    Why private: no public JSON-path helper in ADK; using ADK's keeps the arguments rebuilt
    exactly as ADK rebuilds them.
    Gone when: ADK makes its JSON-path helpers public, or the aggregator exposes the partial
    arguments it rebuilt.
    """
    return _parse_json_path(json_path)


def set_value_by_json_path(
    target: dict[str, Any] | list[Any], path: list[str | int], value: Any
) -> None:
    """Set ``value`` at ``path`` (from :func:`parse_json_path`) in ``target``, creating what is
    missing, as ADK's aggregator does.

    Relies on: ``google.adk.utils.streaming_utils._set_value_by_json_path``.
    Why private and gone when: as :func:`parse_json_path`.
    """
    _set_value_by_json_path(target, path, value)


def json_to_partial_args() -> Callable[[str], list[types.PartialArg]]:
    """A function that turns successive chunks of one call's JSON text into the ``partial_args``
    ADK's own models stream (the scripted test model streams calls as ADK's Anthropic model
    does).

    Relies on: ``google.adk.utils.streaming_utils._JsonPathTracker`` and its
    ``handle_chunk(chunk) -> list[PartialArg]`` (used by ``models.anthropic_llm``).
    Why private: ADK has no public JSON-text → ``PartialArg`` tracker.
    Gone when: ADK makes the tracker public.
    """
    return _JsonPathTracker().handle_chunk


# --- workflows asking the user ----------------------------------------------------------------


def node_confirmation_id(node_path: str) -> str:
    """The interrupt id (the ``adk_request_input`` call's id) of the confirmation a workflow
    node with ``require_confirmation`` asks (``wf_tool_confirmation:<node path>``).

    Relies on: ``google.adk.workflow.utils._workflow_hitl_utils.confirmation_interrupt_id``
    (a public name in a private module).
    Why private: the module is private and nothing public names the id's form.
    Gone when: ADK exports it (e.g. from ``google.adk.workflow``) or marks a confirmation's
    call some other public way.
    """
    return confirmation_interrupt_id(node_path)


def check_resume_answer(answer: dict[str, Any], schema: object) -> None:
    """Raise ``ValueError`` when ``answer`` (a function response to ``adk_request_input``) does
    not fit ``schema`` (its ``response_schema``), by the rule ADK applies when it resumes the
    workflow with it: unwrap ``{"result": x}`` (JSON-parsing a string), then validate.

    Relies on: ``google.adk.workflow.utils._rehydration_utils._unwrap_response`` and
    ``_validate_resume_response``, which raise ``WorkflowDataError`` (a ``ValueError``, from
    the private ``google.adk.workflow._errors``) or ``ValueError`` / pydantic's
    ``ValidationError`` (a ``ValueError``) for an answer that does not fit.
    Why private: ADK validates only as it resumes; a bad answer stored in the session would
    fail every later run of the chat, so adk_asgi checks it first, with ADK's own rule.
    Gone when: ADK exposes a public validator of resume answers (or ``RequestInput``'s).
    """
    _validate_resume_response(_unwrap_response(answer), schema)


# NodeTool: ``google.adk.tools._node_tool.NodeTool`` (what ``LlmAgent`` wraps a workflow given as
# a tool in). Why private: ADK does not export it; the live bridge must recognise such a tool to
# run it itself. Gone when: ADK exports ``NodeTool`` (e.g. from ``google.adk.tools``).
#
# NodeInterruptedError: ``google.adk.workflow._errors.NodeInterruptedError`` (a
# ``BaseException``), what ``NodeTool.run_async`` raises when its workflow stops for the user.
# Why private: ADK documents it as internal; a live run has no pause, so adk_asgi catches it to
# wait for the page's answers. Gone when: ADK's live flow resumes a workflow tool itself, or
# exports the error.


# --- tools ------------------------------------------------------------------------------------


def confirmation_rule(tool: object) -> Any:
    """A tool's or toolset's ``require_confirmation`` as it was given (``True``, a function of
    the call's arguments, or ``False`` when it has none).

    Relies on: ``FunctionTool``, ``McpTool`` and ``McpToolset`` keeping the constructor's
    ``require_confirmation`` in ``_require_confirmation`` (google.adk.tools.function_tool,
    google.adk.tools.mcp_tool).
    Why private: only ``McpToolset`` has a public ``require_confirmation`` property (and
    importing it needs the ``mcp`` package); ``check_require_confirmation`` answers one call,
    not whether a tool may ask at all, which adk_asgi needs when the app is built.
    Gone when: ``BaseTool`` exposes ``require_confirmation`` publicly.
    """
    return getattr(tool, "_require_confirmation", False)


def answered_later(tool: BaseTool) -> bool:
    """Whether ADK builds no function response when this tool returns nothing (a falsy value):
    a long-running tool, or one that defers its response (an ``AgentTool``'s task delegation).

    Relies on: ``google.adk.flows.llm_flows.tools._caller`` skipping the response when
    ``(tool.is_long_running or tool._defers_response) and not function_response``, and
    ``BaseTool._defers_response`` (``True`` on ``AgentTool``).
    Why private: ``_defers_response`` is documented "Internal — do not set"; there is no public
    reader of it.
    Gone when: ADK exposes whether a tool defers its response (e.g. a public property).
    """
    return bool(tool.is_long_running or tool._defers_response)


class _EmptyAnswer(dict[str, Any]):
    """``{}``, but true: ADK's truthiness test takes it for an answer."""

    def __bool__(self) -> bool:
        return True


def as_answer(result: dict[str, Any]) -> dict[str, Any]:
    """``result``, an answer to a call, as a function response ADK builds even for a tool it
    answers later (:func:`answered_later`): an empty object (``{}``, a browser tool's result)
    is one that tests true; the response ADK builds of it is a plain ``{}``.

    Relies on: ``google.adk.flows.llm_flows.tools._caller`` testing the result's truth (``not
    function_response``), not ``is None``, before it skips the response, and building the
    response with pydantic (``Part.from_function_response``), which copies it into a ``dict``.
    Why private: a long-running tool's ``{}`` reads as "no response yet" there, and no public
    way says that a callback's ``{}`` answers the call.
    Gone when: ADK tells an empty result from none (``function_response is None``).
    """
    return _EmptyAnswer() if result == {} else result


def refuses_arguments(tool: FunctionTool, args: dict[str, Any]) -> bool:
    """Whether ADK's ``FunctionTool.run_async`` refuses these arguments without running the
    function: its own checks, in its order (validation errors when
    ``FUNCTION_TOOL_ARG_VALIDATION`` is on, then a missing mandatory parameter).

    Relies on: ``FunctionTool._preprocess_args_with_validation(args) -> (args, errors)`` and
    ``FunctionTool._get_mandatory_args() -> list[str]`` (google.adk.tools.function_tool).
    May raise anything when they change shape: the caller treats that as "no".
    Why private: ADK answers a refused call to the model with an ``{"error": ...}`` dict, and
    no public method tells a refusal from a tool's own error.
    Gone when: ADK marks a refused call (a public validation method, or a flag on the response
    event).
    """
    _, errors = tool._preprocess_args_with_validation(dict(args))
    missing = [name for name in tool._get_mandatory_args() if name not in args]
    return bool(errors or missing)


# --- the invocation ---------------------------------------------------------------------------


def invocation_of(context: Context) -> InvocationContext:
    """The invocation a tool's or callback's context runs in: the runner's own object, not a
    copy (the live agent, the event queue, the ``LiveRequestQueue``, the run config).

    Relies on: ``google.adk.agents.context.Context._invocation_context``.
    Why private: the public ``Context.get_invocation_context()`` returns a copy (with the
    context's proxy session), made on every call.
    Gone when: ADK gives the agent, queue and run config public accessors on ``Context``, or
    ``get_invocation_context()`` stops copying.
    """
    return context._invocation_context


class EventQueue(Protocol):
    """The runner's event queue, as adk_asgi puts on it: ``(event, processed signal)``."""

    def put_nowait(self, item: tuple[Event, Any]) -> None: ...


def event_queue(invocation: InvocationContext) -> EventQueue | None:
    """The queue ADK's runner drains in order, storing and streaming each event (``None``: ADK
    runs this invocation without one, as it runs a root ``ParallelAgent``, ``SequentialAgent``
    or ``LoopAgent``).

    Relies on: ``InvocationContext._event_queue`` (an ``asyncio.Queue`` of ``(event,
    asyncio.Event | None)``: the signal is set once the runner stored a complete event; a
    partial event's is ``None``), which ``Runner`` sets and ``InvocationContext._enqueue_event``
    puts on.
    Why private: ``_enqueue_event`` is private and awaits the store; ``send_data`` is a plain
    function, for sync tools too.
    Gone when: ADK has a public way for a tool to emit an event of its own (ordered among the
    invocation's events).
    """
    return invocation._event_queue
