"""What a running tool tells the user before its result: ADK's progress messages (sans-I/O).

A generator tool reports progress by yielding ``Event(message="Fetching weather…")`` before
its result (``yield {"temp": 20}``, its last yield). Over ``run_async`` ADK runs it as a
workflow node inside the call (``FunctionTool._run_generator_as_node``) and each message is an
event of its own, stored in the session, on the call's branch ``…<tool>@<call id>``, with the
role ``user`` (``FunctionNode._to_event``); the result follows as the call's function
response. The AI SDK's name for such a message is a *preliminary* output: the stream sends
each one as ``tool-output-available`` with ``preliminary: true`` on the call's part, and the
result replaces it (docs/hitl.md#progress-while-a-tool-runs). History shows the result only,
as the client is left with once the result came.

In live mode ADK answers an async-generator tool's call at once with a pending status (its
function response, stored) and sends the tool's yields to the model only; its messages come
after that response, so there is nothing left for them to precede (docs/hitl.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from google.adk.events.event import Event


@dataclass(frozen=True, slots=True)
class Progress:
    """A progress message of the call ``call_id`` (ADK's id) of the tool ``tool``."""

    call_id: str
    tool: str
    text: str


def progress_of(event: Event) -> Progress | None:
    """The progress message ``event`` is, or ``None``: a complete event on a tool call's
    branch, for the user (role ``user``, not the user's own), with no function call or
    response and no output. Its text is the progress shown; other parts (a file) are not."""
    content = event.content
    if event.partial or event.author == "user" or content is None or content.role != "user":
        return None
    if event.output is not None or not event.branch or not content.parts:
        return None
    *_, segment = event.branch.split(".")
    tool, at, call_id = segment.partition("@")
    if not (tool and at and call_id):
        return None
    if any(part.function_call or part.function_response for part in content.parts):
        return None
    text = "".join(part.text for part in content.parts if part.text)
    return Progress(call_id=call_id, tool=tool, text=text)
