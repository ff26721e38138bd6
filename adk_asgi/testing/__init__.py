"""Offline stand-ins for Gemini: a scripted model for tests, the demo, and users' own tests.

``ScriptedLlm`` streams like Gemini (delta partials, one aggregated final response, call ids,
usage), so code written against it meets the same event shapes in production; its live
connection (``ScriptedLlm.connect``, for ``Runner.run_live``) does the same for Gemini Live.
``ChatClient`` drives an app like the stock AI SDK client, over SSE or the live WebSocket
(docs/testing.md#testing-your-app).

Public: this package; its modules are internal (docs/reference.md#import-paths).
"""

from adk_asgi.convert.ui_message import StreamingMessage, UIMessageStreamError, read_ui_message
from adk_asgi.testing.asgi_websocket import Closed
from adk_asgi.testing.auto_send import (
    last_assistant_message_is_complete_with_approval_responses,
    last_assistant_message_is_complete_with_tool_calls,
    stock_send_automatically_when,
)
from adk_asgi.testing.client import ChatClient, ChatResponse, TransportName, parse_sse_chunks
from adk_asgi.testing.demo_grammar import (
    PLANNER,
    demo_model,
    demo_responder,
    parse_stages,
    planner_model,
    planner_responder,
)
from adk_asgi.testing.echo import echo_responder, offline_gemini
from adk_asgi.testing.gemini_server import GeminiStandIn
from adk_asgi.testing.live import (
    OUTPUT_AUDIO_MIME_TYPE,
    ScriptedLiveConnection,
    synthesize_utf8,
    transcribe_utf8,
)
from adk_asgi.testing.live_transport import LiveFrameError
from adk_asgi.testing.llm import ScriptedLlm
from adk_asgi.testing.scripted import (
    DEFAULT_MODEL_NAME,
    Blocked,
    Call,
    Code,
    CodeResult,
    Fail,
    Image,
    Responder,
    ScriptedModelError,
    ScriptExhaustedError,
    Segment,
    Source,
    Text,
    Thought,
    Turn,
    assign_call_ids,
    new_call_id,
    prompt_tokens,
    turn_to_responses,
)

__all__ = [
    "DEFAULT_MODEL_NAME",
    "OUTPUT_AUDIO_MIME_TYPE",
    "PLANNER",
    "Blocked",
    "Call",
    "ChatClient",
    "ChatResponse",
    "Closed",
    "Code",
    "CodeResult",
    "Fail",
    "GeminiStandIn",
    "Image",
    "LiveFrameError",
    "Responder",
    "ScriptExhaustedError",
    "ScriptedLiveConnection",
    "ScriptedLlm",
    "ScriptedModelError",
    "Segment",
    "Source",
    "StreamingMessage",
    "Text",
    "Thought",
    "TransportName",
    "Turn",
    "UIMessageStreamError",
    "assign_call_ids",
    "demo_model",
    "demo_responder",
    "echo_responder",
    "last_assistant_message_is_complete_with_approval_responses",
    "last_assistant_message_is_complete_with_tool_calls",
    "new_call_id",
    "offline_gemini",
    "parse_sse_chunks",
    "parse_stages",
    "planner_model",
    "planner_responder",
    "prompt_tokens",
    "read_ui_message",
    "stock_send_automatically_when",
    "synthesize_utf8",
    "transcribe_utf8",
    "turn_to_responses",
]
