"""ADK events → UI message chunks and history, and UI messages → ADK content.

The converter (:mod:`.events`, with :mod:`.text_blocks`, :mod:`.tool_cards` and
:mod:`.tool_looks`) turns one response's events into chunks; :mod:`.history` turns a stored
session into ``UIMessage[]`` by playing its responses through that converter again, and the
chunks through the AI SDK client's reducer (:mod:`.ui_message`, and the user's answers
:mod:`.tool_answers`); :mod:`.translate` turns a user message into ADK ``Content``. Failures
(:mod:`.failures`), unreadable stored values (:mod:`.safe_history`) and a running tool's
progress (:mod:`.progress`) are shown here too.
Sans-I/O, unit-tested alone like h11: it may import :mod:`adk_asgi.hitl`,
:mod:`adk_asgi.wire` and :mod:`adk_asgi.errors`, never a transport or a store.

Internal: not an import path of the public API (docs/reference.md#import-paths).
"""

from adk_asgi.convert.events import EventConverter
from adk_asgi.convert.failures import AgentError, show_errors

__all__ = ["AgentError", "EventConverter", "show_errors"]
