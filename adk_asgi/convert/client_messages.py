"""The chat's messages as the client holds them (plain JSON objects), while history replays
it (:mod:`.history`): a message is found by id, replaced by its new state as the client's
state update replaces it, and changed by what the user did to it (:mod:`.tool_answers`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Message = dict[str, Any]


class ClientMessages:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._assistant: dict[str, int] = {}
        """Where each assistant message is in :attr:`messages` (a replay replaces one at
        every event)."""

    def find(self, message_id: str) -> Message | None:
        at = self._assistant.get(message_id)
        if at is not None:
            return self.messages[at]
        return next((m for m in self.messages if m["id"] == message_id), None)

    def add(self, message: Message, *, before_the_last_user_message: bool = False) -> None:
        """A new message, at the end; or before the last message if that is the user's (the
        end of a live turn the user cut short with a new message is stored after it)."""
        last_is_users = bool(self.messages) and self.messages[-1]["role"] == "user"
        before = 1 if before_the_last_user_message and last_is_users else 0
        self.messages.insert(len(self.messages) - before, message)
        self._index()

    def replace(self, message: Message) -> None:
        """The assistant message of that id becomes ``message`` (appended if new)."""
        at = self._assistant.get(message["id"])
        if at is None:
            self.add(message)
        else:
            self.messages[at] = message

    def _index(self) -> None:
        self._assistant = {
            m["id"]: at for at, m in enumerate(self.messages) if m.get("role") == "assistant"
        }

    def act(self, message_id: str, action: Callable[..., int], *args: Any) -> None:
        """What the user did to a message (:mod:`.tool_answers`), on that message only: ids
        may repeat across turns (a workflow node's), the message's do not."""
        message = self.find(message_id)
        if message is None:
            return
        acted = [message]
        try:
            action(acted, *args)
        except LookupError:
            return  # (answered already: it shows its outcome)
        self.replace(acted[0])

    def known_calls(self, message_id: str) -> set[str]:
        """The calls the client holds a part for in the message."""
        message = self.find(message_id)
        if message is None:
            return set()
        return {p["toolCallId"] for p in message["parts"] if "toolCallId" in p}

    def shown(self) -> list[Message]:
        """The chat, without assistant messages that never got a part."""
        return [m for m in self.messages if m["role"] == "user" or m["parts"]]
