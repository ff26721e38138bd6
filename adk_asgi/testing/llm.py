"""``ScriptedLlm``: the scripted model itself, over the script language of :mod:`.scripted`
and the live connection of :mod:`.live` (it imports both; neither imports it)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import Field, PrivateAttr

from adk_asgi.testing.live import ScriptedLiveConnection
from adk_asgi.testing.scripted import (
    DEFAULT_MODEL_NAME,
    Responder,
    ScriptExhaustedError,
    Turn,
    new_call_id,
    prompt_tokens,
    turn_to_responses,
)

__all__ = ["REQUEST_LOG_SIZE", "ScriptedLlm"]


REQUEST_LOG_SIZE = 1000
"""How many requests a ScriptedLlm remembers: enough for any test, bounded for a long demo."""


class ScriptedLlm(BaseLlm):
    """A deterministic stand-in for Gemini, scripted by turns or by a responder.

    ``ScriptedLlm(turns=[[Text("hi")], [Call("f", {"x": 1})]])`` answers model call *n* with
    turn *n*; ``ScriptedLlm(responder=fn)`` answers with ``fn(llm_request.contents)``. One
    instance may serve concurrent calls (ADK shares model instances): per-call state is local,
    and the only shared state is the turn cursor and the request log, both updated
    synchronously. ``connect()`` serves ``Runner.run_live`` from the same script (see
    :mod:`.live` for the live shapes and the audio convention).
    """

    model: str = DEFAULT_MODEL_NAME
    chunk_size: int = Field(default=8, ge=1)
    """Characters per streamed text/thought delta."""
    delay: float = Field(default=0.0, ge=0.0)
    """Seconds to sleep before each response; 0 still yields to the event loop, like I/O."""

    # Callables live in private attributes so the model stays serialisable (model_dump).
    # (A factory, not default=new_call_id: pydantic would bind a plain function default.)
    _id_factory: Callable[[], str] = PrivateAttr(default_factory=lambda: new_call_id)
    _turns: list[Turn] | None = PrivateAttr(default=None)
    _responder: Responder | None = PrivateAttr(default=None)
    _transcribe: Callable[[bytes], str] | None = PrivateAttr(default=None)
    _synthesize: Callable[[str], bytes] | None = PrivateAttr(default=None)
    _cursor: int = PrivateAttr(default=0)
    _requests: deque[LlmRequest] = PrivateAttr(
        default_factory=lambda: deque(maxlen=REQUEST_LOG_SIZE)
    )

    def __init__(
        self,
        *,
        turns: Sequence[Turn] | None = None,
        responder: Responder | None = None,
        id_factory: Callable[[], str] = new_call_id,
        transcribe: Callable[[bytes], str] | None = None,
        synthesize: Callable[[str], bytes] | None = None,
        **fields: Any,
    ) -> None:
        """``id_factory`` mints ids for calls scripted without one; ``transcribe`` (PCM16 16 kHz
        bytes → what the user said) and ``synthesize`` (answer text → output audio bytes) are
        the live connection's speech stand-ins, UTF-8 by default; ``fields`` are pydantic fields
        (``model``, ``chunk_size``, ``delay``)."""
        if (turns is None) == (responder is None):
            raise ValueError("ScriptedLlm needs exactly one of turns= or responder=")
        super().__init__(**fields)
        self._id_factory = id_factory
        self._turns = [list(turn) for turn in turns] if turns is not None else None
        self._responder = responder
        self._transcribe = transcribe
        self._synthesize = synthesize

    @property
    def requests(self) -> list[LlmRequest]:
        """Every request received (model calls and live connects), in order (a copy)."""
        return list(self._requests)

    def next_turn(self, contents: list[types.Content]) -> Turn:
        """The turn answering ``contents``: the responder's answer, or the next scripted turn."""
        if self._responder is not None:
            return self._responder(contents)
        assert self._turns is not None
        index = self._cursor
        if index >= len(self._turns):
            raise ScriptExhaustedError(
                f"ScriptedLlm has no turn left for model call #{index + 1}: "
                f"only {len(self._turns)} turn(s) were scripted"
            )
        self._cursor = index + 1
        return self._turns[index]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Answer one model call the way ``Gemini.generate_content_async`` does (see
        :func:`turn_to_responses`), yielding to the event loop before each response."""
        self._requests.append(llm_request)
        contents = list(llm_request.contents)
        turn = self.next_turn(contents)
        responses = turn_to_responses(
            turn,
            stream=stream,
            chunk_size=self.chunk_size,
            prompt_token_count=prompt_tokens(contents),
            id_factory=self._id_factory,
        )
        for response in responses:
            await asyncio.sleep(self.delay)
            yield response

    @contextlib.asynccontextmanager
    async def connect(self, llm_request: LlmRequest) -> AsyncIterator[ScriptedLiveConnection]:
        """A live session answering like Gemini Live (see :mod:`.live`);
        closed on exit."""

        self._requests.append(llm_request)
        connection = ScriptedLiveConnection(
            self,
            llm_request,
            id_factory=self._id_factory,
            transcribe=self._transcribe,
            synthesize=self._synthesize,
        )
        try:
            yield connection
        finally:
            await connection.close()
