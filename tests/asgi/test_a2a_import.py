"""ADK imports ``RemoteA2aAgent``'s module on every run and, without ``a2a-sdk``, loads two
modules' bytecode again each time before the import fails; ``AdkApp`` answers that import at
once (adk_asgi/serving/a2a_import.py). These tests need ``a2a-sdk`` absent, as it is here."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import pytest

from adk_asgi import AdkApp
from adk_asgi.serving.a2a_import import ADK_MODULE, MissingA2a, skip_failed_a2a_import
from adk_asgi.testing import ChatClient, Text
from tests.support import scripted_agent

INNER = "google.adk.a2a.agent._remote_a2a_agent"
"""What ``ADK_MODULE`` imports first: loaded (and dropped) again on every run without the fix."""


class Spy:
    """A finder that finds nothing and notes every module looked for."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> None:
        self.asked.append(fullname)


def spy_on_imports(monkeypatch: pytest.MonkeyPatch) -> Spy:
    """A :class:`Spy` first on ``sys.meta_path`` (for this test)."""
    assert importlib.util.find_spec("a2a") is None, "these tests need a2a-sdk not installed"
    found = Spy()
    monkeypatch.setattr(sys, "meta_path", [found, *sys.meta_path])
    return found


def chats() -> AdkApp:
    return AdkApp(scripted_agent([[Text("one")], [Text("two")]]))


async def test_a_run_does_not_load_adks_a2a_module_again(monkeypatch: pytest.MonkeyPatch) -> None:
    app = chats()
    spy = spy_on_imports(monkeypatch)
    async with ChatClient(app, chat_id="chat-1") as chat:
        assert (await chat.send("hi")).text == "one"
        assert (await chat.send("again")).text == "two"
    assert spy.asked.count(ADK_MODULE) == 2  # ADK still asks, once a run
    assert INNER not in spy.asked  # and is answered at once
    assert ADK_MODULE not in sys.modules


async def test_without_the_finder_every_run_loads_it_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the finder saves, and a sign for the day ADK stops importing it (then it can go)."""
    app = chats()
    kept = [finder for finder in sys.meta_path if not isinstance(finder, MissingA2a)]
    monkeypatch.setattr(sys, "meta_path", kept)
    spy = spy_on_imports(monkeypatch)
    async with ChatClient(app, chat_id="chat-1") as chat:
        await chat.send("hi")
        await chat.send("again")
    assert spy.asked.count(INNER) == 2


def test_it_is_installed_once() -> None:
    chats()
    chats()
    skip_failed_a2a_import()
    assert sum(isinstance(finder, MissingA2a) for finder in sys.meta_path) == 1


def test_the_error_is_the_one_python_raises() -> None:
    chats()
    with pytest.raises(ModuleNotFoundError, match="No module named 'a2a'") as raised:
        importlib.import_module(ADK_MODULE)
    assert raised.value.name == "a2a"


def test_an_a2a_installed_later_is_imported_as_usual(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """a2a-sdk installed while the server runs: the finder stands aside from then on."""
    finder = MissingA2a()
    with pytest.raises(ModuleNotFoundError):
        finder.find_spec(ADK_MODULE, None)
    (tmp_path / "a2a").mkdir()
    (tmp_path / "a2a" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))  # (and invalidates the finders' caches)
    assert finder.find_spec(ADK_MODULE, None) is None
    assert finder.find_spec("a2a", None) is None  # other modules: never its business
