"""``adk-asgi web``'s AGENT, found as ``adk web`` finds it, with a clear word when it is not;
and the offline model it runs on (adk_asgi.testing.echo)."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.genai import types

from adk_asgi.testing import Call, Fail, Text
from adk_asgi.testing.echo import echo_responder
from adk_asgi.web.agents import AgentNotFound, find_agent
from adk_asgi.web.cli import main

AGENT = """
from google.adk.agents import LlmAgent

root_agent = LlmAgent(name="{name}", model="gemini-2.5-flash")
"""


def agents(root: Path, *names: str) -> Path:
    for name in names:
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text("from . import agent\n")
        (root / name / "agent.py").write_text(AGENT.format(name=name))
    return root


def test_an_agents_directory_with_one_agent_serves_it(tmp_path: Path) -> None:
    found = find_agent(str(agents(tmp_path / "solo_agents", "solo")))
    assert (found.name, found.watch) == ("solo", tmp_path / "solo_agents" / "solo")


def test_one_agents_own_directory_serves_it(tmp_path: Path) -> None:
    found = find_agent(str(agents(tmp_path / "own_agents", "own") / "own"))
    assert found.name == "own"


def test_several_agents_need_a_name(tmp_path: Path) -> None:
    root = agents(tmp_path / "team_agents", "alpha", "beta")
    with pytest.raises(AgentNotFound, match=r"holds agents alpha, beta: name one with --agent"):
        find_agent(str(root))
    assert find_agent(str(root), "beta").name == "beta"
    with pytest.raises(AgentNotFound, match=r"no agent 'gamma' in .*: agents alpha, beta"):
        find_agent(str(root), "gamma")


def test_what_is_not_an_agent_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(AgentNotFound, match=r"no agent in .*empty: a directory with agent\.py"):
        find_agent(str(tmp_path / "empty"))
    with pytest.raises(AgentNotFound, match=r"'nowhere' is neither a directory nor module:attr"):
        find_agent("nowhere")
    with pytest.raises(AgentNotFound, match=r"adk_asgi\.app\.AdkApp is not an ADK agent or App"):
        find_agent("adk_asgi.app:AdkApp")
    with pytest.raises(AgentNotFound, match=r"cannot import 'no_such_module'"):
        find_agent("no_such_module:agent")
    assert main(["web", str(tmp_path / "empty")]) == 2
    assert "adk-asgi web: no agent in" in capsys.readouterr().err


def test_module_attribute_names_an_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_bot.py").write_text(AGENT.format(name="bot"))
    monkeypatch.syspath_prepend(str(tmp_path))
    assert find_agent("my_bot:root_agent").name == "bot"


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def test_the_offline_model_echoes_and_calls_the_tool_it_is_asked_to() -> None:
    assert echo_responder([user("hi there ")]) == [Text('You said: "hi there".')]
    assert echo_responder([user('call get_time {"city": "Rome"}')]) == [
        Call("get_time", {"city": "Rome"})
    ]
    assert echo_responder([user("call ping")]) == [Call("ping", {})]
    result = types.Part.from_function_response(name="ping", response={"ok": True})
    called = [user("call ping"), types.Content(role="user", parts=[result])]
    assert echo_responder(called) == [Text('ping returned {"ok": true}.')]
    assert echo_responder([user("explode")]) == [Fail("the offline model exploded, as asked")]


SCRIPTED = """
from adk_asgi.testing import ScriptedLlm, Text
from google.adk.agents import LlmAgent

root_agent = LlmAgent(name="kept", model=ScriptedLlm(responder=lambda contents: [Text("ok")]))
"""


async def test_session_db_keeps_the_chats_in_that_database(tmp_path: Path) -> None:
    """``--session-db``: any ADK session URI, through ADK's own service factory."""
    import sqlite3

    import httpx

    from adk_asgi.web.cli import build
    from tests.packaging.test_readme import lifespan_of
    from tests.support import user_body

    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "agent.py").write_text(SCRIPTED)
    found = find_agent(str(tmp_path / "kept"))
    database = tmp_path / "chats.db"
    app = build(found, {"session_db": f"sqlite:///{database}", "offline": False})
    transport = httpx.ASGITransport(app=app)
    async with lifespan_of(app), httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        response = await c.post("/agent/chat", json=user_body("hi", "c1"))
        assert response.status_code == 200
    with sqlite3.connect(database) as db:
        sessions = db.execute("SELECT id FROM sessions").fetchall()
    db.close()
    assert sessions == [("c1",)]
