"""Gemini's code execution as the AI SDK's Google provider shows it (sans-I/O).

With ADK's ``BuiltInCodeExecutor`` Gemini runs the code it writes, on Google's side, and its
answer holds the code (an ``executable_code`` part), what the code printed
(``code_execution_result``) and any image it drew (``inline_data``). ``@ai-sdk/google`` shows
the code as the call of a tool the provider ran (``toolName: "code_execution"``,
``providerExecuted: true``, input ``{language, code}``), the result as that call's output
(``{outcome, output}``; a result belongs to the code before it) and an image as a ``file``
part. This does the same, for :class:`~.events.EventConverter`:

* the code and its result are shown as they stream (a partial event), and once: the model
  call's final event, which repeats them, shows only what its partials did not;
* a call's id is the one Gemini gives the code, else ``<message>-code<n>``, counted past the
  ids the message already holds (a continuation's known calls): history replays the same
  events in the same responses, so it makes the same ids, and no two cards of a message
  share one;
* ADK saves an image the code drew as an artifact of the chat (the model call's final event
  says ``Saved as artifact: <name>. `` in its place, and the content-less event ADK yields just
  before it has the artifact's version in ``artifact_delta``). The image is a ``file`` part
  pointing at the chat's file route (``<chat>/files/<name>?version=<n>``,
  :mod:`adk_asgi.routes.files`) when the converter knows the chat's path (``files_at``), else
  ADK's words stay. It is shown at the end of the event that names it: ADK names the file only
  once the model call ended, so a stream cannot show it sooner, and history shows it there too.
"""

from __future__ import annotations

import mimetypes
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

from google.adk.events.event import Event
from google.genai import types

from adk_asgi.convert.text_blocks import TextBlocks
from adk_asgi.hitl.pending import CODE_EXECUTION
from adk_asgi.wire.chunks import (
    File,
    ToolInputAvailable,
    ToolInputStart,
    ToolOutputAvailable,
    UIMessageChunk,
)

SAVED: Final = re.compile(r"\ASaved as artifact: (?P<name>.+)\. \Z", re.DOTALL)
"""What ADK's built-in code executor leaves in place of an image it saved
(``_code_execution._run_post_processor``)."""


def is_code_part(part: types.Part) -> bool:
    """Code the model ran, or what it printed."""
    return part.executable_code is not None or part.code_execution_result is not None


def code_input(code: types.ExecutableCode) -> dict[str, Any]:
    """The call's input, as the provider reads the part: ``{language, code}``."""
    shown: dict[str, Any] = {}
    if code.language is not None:
        shown["language"] = code.language.value
    shown["code"] = code.code or ""
    return shown


def code_output(result: types.CodeExecutionResult) -> dict[str, Any]:
    """The call's output, as the provider reads the part: ``{outcome, output}`` (Gemini leaves
    an empty output out)."""
    outcome = result.outcome or types.Outcome.OUTCOME_UNSPECIFIED
    return {"outcome": outcome.value, "output": result.output or ""}


@dataclass(frozen=True, slots=True)
class SavedImage:
    """An image the code drew, as ADK saved it: the artifact's name and version, and the words
    ADK left in its place."""

    name: str
    version: int
    words: str


def image_file(image: SavedImage, files_at: str) -> File:
    """The ``file`` part of a saved image, served by the chat's file route. Its media type is
    read from the name (ADK names an image ``<time>.<subtype of its type>``)."""
    guessed, _ = mimetypes.guess_type(image.name, strict=False)
    media_type = guessed if guessed and guessed.startswith("image/") else "image/*"
    url = f"{files_at}/files/{quote(image.name, safe='')}?version={image.version}"
    return File(url=url, media_type=media_type)


class CodeRuns:
    """The code execution of one response: its calls, results and images.

    ``known``: the ids of the calls the client holds a part for (the tool cards' set, shared:
    a code call's id joins it). ``files_at``: the chat's path (``<mount>/chat/<id>``), under
    which the file route serves its artifacts; ``None`` where the converter does not know it.
    """

    def __init__(
        self, message_id: str, blocks: TextBlocks, known: set[str], files_at: str | None = None
    ) -> None:
        self.message_id = message_id
        self.blocks = blocks
        self.known = known
        self.files_at = files_at
        self._count = 0
        self._last: str | None = None
        """The call the next result belongs to (the code before it)."""
        self._named: set[str] = set()
        """The calls named by Gemini's id of their code."""
        self._streamed: dict[str, list[int]] = {}
        """The code parts and the results each model call's partials showed (by its key): its
        final event shows only the ones after them."""
        self._saved: dict[str, int] = {}
        """The images the code executor saved that no event named yet: name → version."""

    # --- code and results ------------------------------------------------------------------

    def partial(self, key: str, part: types.Part, out: list[UIMessageChunk]) -> None:
        """A code part of a partial event: shown now, and counted for its final event."""
        shown = self._streamed.setdefault(key, [0, 0])
        shown[0 if part.executable_code is not None else 1] += 1
        self._show(part, out)

    def final(self, key: str, part: types.Part, out: list[UIMessageChunk]) -> None:
        """A code part of a complete event: shown, unless its partial was."""
        shown = self._streamed.get(key)
        kind = 0 if part.executable_code is not None else 1
        if shown is not None and shown[kind]:
            shown[kind] -= 1
            return
        self._show(part, out)

    def end(self, key: str) -> None:
        """The model call of ``key`` ended (its final event was fed)."""
        self._streamed.pop(key, None)

    def _show(self, part: types.Part, out: list[UIMessageChunk]) -> None:
        if part.executable_code is not None:
            self._show_code(part.executable_code, out)
        elif part.code_execution_result is not None:
            self._show_result(part.code_execution_result, out)

    def _show_code(self, code: types.ExecutableCode, out: list[UIMessageChunk]) -> None:
        if not code.code:  # (the provider shows no empty code either)
            return
        call_id = self._last = self._call_id(code)
        self.blocks.close(out)
        name, shown = CODE_EXECUTION, code_input(code)
        out.append(
            ToolInputStart(
                tool_call_id=call_id,
                tool_name=name,
                provider_executed=True,
                provider_metadata=self.blocks.speaker,
            )
        )
        out.append(
            ToolInputAvailable(
                tool_call_id=call_id, tool_name=name, input=shown, provider_executed=True
            )
        )

    def _show_result(self, result: types.CodeExecutionResult, out: list[UIMessageChunk]) -> None:
        call_id = result.id if result.id in self._named else self._last
        self._last = None
        if call_id is None:  # (no code before it: the provider drops it too)
            return
        self.blocks.close(out)
        output = code_output(result)
        out.append(ToolOutputAvailable(tool_call_id=call_id, output=output, provider_executed=True))

    def _call_id(self, code: types.ExecutableCode) -> str:
        """Gemini's id of the code (its result names it), else the message's next own one."""
        if code.id:
            self._named.add(code.id)
            self.known.add(code.id)
            return code.id
        call_id = ""
        while not call_id or call_id in self.known:
            self._count += 1
            call_id = f"{self.message_id}-code{self._count}"
        self.known.add(call_id)
        return call_id

    # --- images ----------------------------------------------------------------------------

    def saw(self, event: Event) -> None:
        """A content-less event: the images ADK's code executor saved for the model event that
        follows it (its ``artifact_delta``)."""
        for name, version in event.actions.artifact_delta.items():
            self._saved[name] = version

    @staticmethod
    def in_partial(part: types.Part) -> bool:
        """A partial event's part that is an image, or ADK's words for it: not shown there
        (ADK names it only in the final event). ADK's aggregator keeps the very part of a
        partial response for the final one, which the executor then rewrites, so a partial
        event read late carries the words instead of the image."""
        return part.inline_data is not None or SAVED.match(part.text or "") is not None

    def saved_images(self, parts: Sequence[types.Part]) -> dict[int, SavedImage]:
        """The images a model event's parts stand for (ADK's words for the images its code
        executor saved just before), by the part's ``id()``, in order. Images saved under one
        name (ADK names them by the second) are versions of one artifact: ``artifact_delta``
        holds the last, and each of the words before names the version before."""
        named = [(id(p), m) for p in parts if (m := self._words(p)) is not None]
        left = Counter(match["name"] for _, match in named)
        images: dict[int, SavedImage] = {}
        for part_id, match in named:
            name = match["name"]
            left[name] -= 1
            images[part_id] = SavedImage(name, self._saved[name] - left[name], match.string)
        for name in left:
            del self._saved[name]
        return images

    def _words(self, part: types.Part) -> re.Match[str] | None:
        match = SAVED.match(part.text or "") if part.inline_data is None else None
        return match if match is not None and match["name"] in self._saved else None

    def show_image(self, image: SavedImage, key: str, out: list[UIMessageChunk]) -> None:
        """A saved image, where its event ends: its file, or ADK's words where the chat's file
        route is not known."""
        self.blocks.close(out)
        if self.files_at is not None:
            out.append(image_file(image, self.files_at))
            return
        self.blocks.text(key, image.words, out)
        self.blocks.close(out)
