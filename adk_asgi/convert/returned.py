"""A tool's result as the tool returned it, not as ADK wrapped it (sans-I/O).

A function response is an object, so ADK stores a tool's return value that is not one (a list,
a string, a number, ``None``) as ``{"result": value}``
(``google.adk.flows.llm_flows.tools._caller._normalize_tool_result``); the model is sent that
form. A page reads the value the tool returned (``output.length`` of a list), so the client is
shown the value (docs/tools.md#tool-outputs).

The rule, the same for the stream and history: a stored response that is exactly
``{"result": value}`` with a ``value`` that is not an object is ADK's wrapper, and the client is
shown ``value``. Every other response is shown as stored: an object ADK never wraps, so
``{"result": {...}}`` is the tool's own. The one shape both could have made, a tool that itself
returned ``{"result": <not an object>}``, is recorded when the tool returns it
(:class:`adk_asgi.serving.as_returned.AsReturned`, in the event's bookkeeping:
``as_returned``), and shown as stored.

A browser tool's answer is the page's (``addToolOutput``), and is shown as the page sent it
(:func:`adk_asgi.convert.adk_values.as_sent`): :mod:`adk_asgi.hitl.continuation` sends ADK a
browser tool's answer that is not an object, or is an object of the wrapper's shape, as
``{"result": answer}``, so the stored response's ``result`` is always what the page sent.
"""

from __future__ import annotations

from typing import Any

from google.adk.events.event import Event

from adk_asgi.hitl import bookkeeping


def is_wrapper(response: Any) -> bool:
    """Whether ``response`` has the shape of ADK's wrapper of a value that is not an object."""
    return (
        isinstance(response, dict)
        and len(response) == 1
        and "result" in response
        and not isinstance(response["result"], dict)
    )


def as_returned(response: Any, *, kept: bool = False) -> Any:
    """The value a server tool returned, from its stored response. ``kept``: the bridge
    recorded that the tool returned the wrapper's shape itself (it is shown as stored)."""
    if not kept and is_wrapper(response):
        return response["result"]
    return response


def kept_calls(event: Event) -> list[str]:
    """The calls ``event`` answers whose tool returned ADK's wrapper shape itself."""
    return bookkeeping.read(event).as_returned
