"""Agents other than one ``LlmAgent``, over SSE through the ASGI client: what streams, and that
a reload (history) shows what streamed."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from google.adk.agents import LlmAgent, ParallelAgent, SequentialAgent

from adk_asgi import AdkApp
from adk_asgi.testing import ScriptedLlm, Text, read_ui_message
from tests.support import counter, parse_sse, user_body


def speaker(name: str, text: str) -> LlmAgent:
    """A sub-agent that streams ``text`` slowly enough to interleave with its siblings."""
    model = ScriptedLlm(turns=[[Text(text)]], chunk_size=4, delay=0.002)
    return LlmAgent(name=name, model=model)


async def stream_and_history(root: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    app = AdkApp(root, message_id_factory=counter("msg"), identify=lambda c: "u")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        response = await client.post("/chat", json=user_body("go"))
        history = (await client.get("/chat/chat-1/messages")).json()
    return parse_sse(response.content), history


def steps(chunks: list[dict[str, Any]]) -> list[list[str]]:
    """Each step's text parts, as the client builds them."""
    message = read_ui_message(chunks)
    result: list[list[str]] = []
    for part in message["parts"]:
        if part["type"] == "step-start":
            result.append([])
        elif part["type"] == "text":
            result[-1].append(part["text"])
    return result


def authors(chunks: list[dict[str, Any]]) -> list[str]:
    """Who wrote each text part, as its ``text-start`` says."""
    return [c["providerMetadata"]["adk"]["author"] for c in chunks if c["type"] == "text-start"]


@pytest.mark.filterwarnings("ignore:ParallelAgent is deprecated:DeprecationWarning")
async def test_a_parallel_agent_streams_each_answer_whole_as_history_shows_it() -> None:
    root = ParallelAgent(
        name="both",
        sub_agents=[speaker("a", "Alpha speaks here."), speaker("b", "Bravo answers too.")],
    )
    chunks, history = await stream_and_history(root)
    assert sorted(steps(chunks)) == [["Alpha speaks here."], ["Bravo answers too."]]
    assert sorted(authors(chunks)) == ["a", "b"]
    assert history[1] == read_ui_message(chunks)
    texts = [p for p in history[1]["parts"] if p["type"] == "text"]
    assert {p["text"]: p["providerMetadata"] for p in texts} == {
        "Alpha speaks here.": {"adk": {"author": "a"}},
        "Bravo answers too.": {"adk": {"author": "b"}},
    }


async def test_a_single_agent_names_no_speaker() -> None:
    chunks, history = await stream_and_history(speaker("solo", "Just me."))
    assert [c for c in chunks if c["type"] == "text-start"] == [
        {"type": "text-start", "id": "msg1-txt1"}
    ]
    assert "providerMetadata" not in history[1]["parts"][1]


@pytest.mark.filterwarnings("ignore:SequentialAgent is deprecated:DeprecationWarning")
async def test_a_sequential_agent_streams_one_step_per_sub_agent() -> None:
    root = SequentialAgent(
        name="one_then_other",
        sub_agents=[speaker("a", "First, this."), speaker("b", "Then that.")],
    )
    chunks, history = await stream_and_history(root)
    assert steps(chunks) == [["First, this."], ["Then that."]]
    assert authors(chunks) == ["a", "b"]
    assert history[1] == read_ui_message(chunks)
