"""The one agent every row of the benchmark runs, so the rows differ only in the transport.

The answer length is read from the user text (``"1000"`` → 1,000 deltas), so one server process
started once can serve every size, and the bench and the servers build the agent identically.
"""

from __future__ import annotations

import itertools
import logging
import random
import warnings
from typing import Final

from google.adk.agents.llm_agent import LlmAgent
from google.genai import types

from adk_asgi import UserBounds
from adk_asgi.testing import ScriptedLlm, Text, Turn

APP_NAME: Final = "bench"
USER_ID: Final = "bench"
ONE_USER_FOR_MANY: Final = UserBounds(live_sockets=None, requests=None)
"""The bounds of the servers that identify every client as :data:`USER_ID`, who stands for the
many users a benchmark's clients are: none on chat requests and live sockets, which the
per-user defaults would refuse past 4 and 8 at once. (``bench.starvation`` measures the bounds
themselves, with a user per client.)"""
DELTA_CHARS: Final = 8
"""Characters per streamed delta (ScriptedLlm's ``chunk_size``): a few tokens, like Gemini."""

SPEECH_FRAME_BYTES: Final = 960
"""Output audio per delta in audio mode (live): 20 ms of PCM16 mono at 24 kHz, Gemini Live's
output format. Noise that differs from frame to frame (64 frames, far more than deflate's
window), so permessage-deflate gains nothing and costs what it costs on real speech."""
_noise = random.Random(0)
_SPEECH: Final = [_noise.randbytes(SPEECH_FRAME_BYTES) for _ in range(64)]
_spoken = itertools.count()

_WORDS: Final = "the quick brown fox jumps over a lazy dog while seven wizards quietly box "


def answer_text(deltas: int) -> str:
    """Exactly ``deltas * DELTA_CHARS`` characters of plain prose (no JSON escaping work)."""
    size = deltas * DELTA_CHARS
    return (_WORDS * (size // len(_WORDS) + 1))[:size]


def _responder(contents: list[types.Content]) -> Turn:
    last = contents[-1].parts or [] if contents else []
    text = "".join(part.text or "" for part in last).strip()
    return [Text(answer_text(int(text) if text.isdigit() else 5))]


def _speak(text: str) -> bytes:
    return _SPEECH[next(_spoken) % len(_SPEECH)]


def make_agent(delay: float = 0.0) -> LlmAgent:
    """An ``LlmAgent`` on ``ScriptedLlm``: one partial per delta, then one aggregated final; in
    live audio mode, one ``SPEECH_FRAME_BYTES`` audio chunk per delta instead. ``delay``:
    seconds the model takes per delta (0: as fast as the server reads them)."""
    model = ScriptedLlm(
        responder=_responder, chunk_size=DELTA_CHARS, delay=delay, synthesize=_speak
    )
    return LlmAgent(name=APP_NAME, model=model, instruction="Answer.")


def user_message(deltas: int) -> types.Content:
    return types.Content(role="user", parts=[types.Part.from_text(text=str(deltas))])


def quiet() -> None:
    """Silence ADK's per-run logging and experimental warnings so the table stays readable."""
    for name in ("google_adk", "google.adk", "google_genai", "opentelemetry"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=UserWarning)
