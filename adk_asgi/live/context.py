"""What the jobs of one live protocol machine share (sans-I/O).

The machine (:mod:`.protocol`) is split by job — user turns (:mod:`.turns`),
``run_live`` events (:mod:`.events`), tool waits (:mod:`.waits`), stored replays
(:mod:`.replay`) — and each job works on the same connection: its output list, its request
streams, its tool calls, its clock and its options. This holds them, and the few steps more
than one job takes (a converter for a message, the response under way, the pause of a turn).
"""

from __future__ import annotations

from collections.abc import Callable

from adk_asgi.convert.events import EventConverter
from adk_asgi.convert.options import ConverterOptions
from adk_asgi.hitl.policy import ToolPolicy
from adk_asgi.live.calls import LiveCalls
from adk_asgi.live.outputs import Output
from adk_asgi.live.streams import Response, Streams


class LiveContext:
    __slots__ = (
        "audio",
        "calls",
        "chat_id",
        "chats_at",
        "check_files",
        "client_activity",
        "clock",
        "converting",
        "new_message_id",
        "out",
        "streams",
        "tools",
        "wall_clock",
    )

    def __init__(
        self,
        *,
        out: list[Output],
        streams: Streams,
        tools: ToolPolicy,
        new_message_id: Callable[[], str],
        clock: Callable[[], float],
        audio: bool,
        client_activity: bool,
        converting: ConverterOptions,
        wall_clock: Callable[[], float] | None,
        chats_at: str | None = None,
        check_files: Callable[[int, int], None] | None = None,
    ) -> None:
        self.out = out
        self.streams = streams
        self.tools = tools
        self.calls = LiveCalls(out, tools)
        self.new_message_id = new_message_id
        self.clock = clock
        self.audio = audio
        self.client_activity = client_activity
        """The client signals the user's activity (push to talk; ``Services.client_activity``)."""
        self.converting = converting
        self.wall_clock = wall_clock
        """Unix time, for when a response starts (message metadata); ``None``: not known."""
        self.chats_at = chats_at
        """The path of the app's chats (``<mount>/chat``), where each chat's files are served
        (an image Gemini's code drew); ``None``: not known."""
        self.check_files = check_files
        """``(held, adding)``: whether a chat that holds ``held`` bytes of files may take
        ``adding`` more (raises a :class:`~adk_asgi.errors.ClientError`); ``None``: no bound."""
        self.chat_id: str | None = None
        """The chat the connection serves, once it is bound."""

    def take(self) -> list[Output]:
        """What the machine asked for since the last call, in order."""
        out = list(self.out)
        self.out.clear()
        return out

    def converter(self, message_id: str, known_calls: set[str] | None = None) -> EventConverter:
        return self.converting.converter(
            message_id,
            policy=self.tools,
            known_calls=set(self.calls.state.calls) if known_calls is None else known_calls,
            started_at=self.wall_clock() if self.wall_clock is not None else None,
            live=True,
            files_at=self.files_at,
        )

    @property
    def files_at(self) -> str | None:
        """The chat's path, whose file route serves its files (``EventConverter.files_at``)."""
        if self.chats_at is None or self.chat_id is None:
            return None
        return f"{self.chats_at}/{self.chat_id}"

    def unasked_response(self, message_id: str | None = None) -> Response:
        """The response under way, or a new one that no request reads yet (a ``resume`` or a
        late answer will), for ``message_id`` (a paused message going on) or a new message."""
        response = self.streams.response
        if response is None:
            response = self.streams.begin(self.converter(message_id or self.new_message_id()))
            self.streams.emit(response.converter.start(), self.clock())
        return response

    def maybe_pause(self) -> None:
        """End the request stream once every call of the last step waits or is done."""
        response = self.streams.response
        if response is None:
            return
        chunks = self.calls.pause()
        if chunks is not None:
            response.converter.waiting_on_calls()
            self.streams.end(chunks + response.converter.finish(), self.clock())
