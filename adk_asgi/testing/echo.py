"""An offline model for any agent (``adk-asgi web --offline``, :func:`offline_gemini`): it
echoes what the user says, and calls one of the agent's tools when asked to by name, so a page
can be tried, approvals and browser tools included, with no Gemini key.

* ``call <tool> {"arg": 1}`` (the JSON object optional): that call, then, once its result is
  in, ``<tool> returned {…}.``
* ``explode``: a model error, to see how a failure shows.
* anything else: ``You said: "<text>".``

Unlike the demo grammar (:mod:`.demo_grammar`), which knows the demo's tools, it knows none:
the names are the user's.
"""

from __future__ import annotations

import atexit
import json
import os
import re
from typing import Any, Final

from google.genai import types

from adk_asgi.testing.gemini_server import GeminiStandIn
from adk_asgi.testing.scripted import Call, Fail, Text, Turn

CALL: Final = re.compile(r"\A\s*call\s+(?P<name>[A-Za-z_][\w-]*)\s*(?P<args>\{.*\})?\s*\Z", re.S)


def echo_responder(contents: list[types.Content]) -> Turn:
    """The answer to the conversation's last user text (see the module docstring)."""
    last = max((i for i, c in enumerate(contents) if _user_text(c)), default=-1)
    text = _user_text(contents[last]) if last >= 0 else ""
    results = [
        part.function_response
        for content in contents[last + 1 :]
        for part in content.parts or ()
        if part.function_response is not None
    ]
    if results:
        said = [f"{r.name} returned {json.dumps(r.response, default=str)}." for r in results]
        return [Text(" ".join(said))]
    if text.strip().lower() == "explode":
        return [Fail("the offline model exploded, as asked")]
    called = CALL.match(text)
    if called:
        return [Call(called["name"], _arguments(called["args"]))]
    return [Text(f'You said: "{text.strip()}".' if text.strip() else "Hello!")]


def _user_text(content: types.Content) -> str:
    if content.role != "user":
        return ""
    return "".join(p.text or "" for p in content.parts or () if p.text and not p.thought)


def _arguments(raw: str | None) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def offline_gemini() -> GeminiStandIn:
    """Gemini answered in this process, until it exits, by a local stand-in speaking the
    public Gemini API with :func:`echo_responder`: ADK's own ``Gemini`` class and google-genai
    run unchanged, for any Gemini model name, chat and live. Its address and key go into
    ``os.environ`` (google-genai reads them there; so do the server processes this one starts):
    call it before the first request, in a process of your own, never in a deployment."""
    stand_in = GeminiStandIn(responder=echo_responder)
    stand_in.start()
    atexit.register(stand_in.stop)
    os.environ.update(stand_in.environ)
    return stand_in
