"""ADK's import of ``RemoteA2aAgent`` on every run, answered at once when ``a2a-sdk`` is missing.

google-adk 2.13 builds a workflow node each time it runs one (``build_node``: the root agent of
every ``run_async``, and each node of a workflow), and that function imports
``google.adk.agents.remote_a2a_agent`` inside its body to learn whether the agent is a remote
A2A one, catching the ``ImportError`` when the optional ``a2a-sdk`` is not installed. Python
caches a module, not a failed import: the half-made modules are removed, so every run reads and
executes the bytecode of two modules again before ``import a2a`` fails. That is 0.37-0.41 ms
per run in process and 0.3-0.9 ms in a server's process, paid between the request and the
model call: before the first words (docs/internals/performance-notes.md, *Time to first chunk*).

:func:`skip_failed_a2a_import` puts a finder first on ``sys.meta_path`` that answers that one
import with the error Python would raise (``No module named 'a2a'``) without loading anything,
as long as ``a2a`` cannot be found. Nothing else changes: ADK catches the error as before; an app
that has ``a2a-sdk`` (installed before or after the server started) imports the real module,
which is then cached; every other import passes by the finder untouched.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Final

ADK_MODULE: Final = "google.adk.agents.remote_a2a_agent"
"""The module ADK imports on every run (``google/adk/workflow/utils/_workflow_graph_utils.py``)."""
A2A: Final = "a2a"
"""The top-level package of ``a2a-sdk``, which that module imports first."""


class MissingA2a(importlib.abc.MetaPathFinder):
    """Fails :data:`ADK_MODULE`'s import at once while :data:`A2A` cannot be found."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != ADK_MODULE or A2A in sys.modules:
            return None
        # Asked each time (a directory listing Python caches), so installing a2a-sdk later works.
        if importlib.util.find_spec(A2A) is not None:
            return None
        raise ModuleNotFoundError(f"No module named {A2A!r}", name=A2A)


def skip_failed_a2a_import() -> None:
    """Install :class:`MissingA2a` once per process (first, so no other finder loads first)."""
    if not any(isinstance(finder, MissingA2a) for finder in sys.meta_path):
        sys.meta_path.insert(0, MissingA2a())
