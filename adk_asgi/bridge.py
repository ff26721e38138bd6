"""The ADK ``App`` the runners run: the user's app with the bridge's plugins added.

What makes an ADK agent speak the AI SDK's tool protocol in both modes is a set of ADK plugins
(each in the layer its concept lives in): they refuse invalid calls, keep what a tool returned,
order results, pause an SSE run for a browser's tool, hold a live call until the user answers,
and pace a run to its reader. They run as one plugin, after the user's own, in the order
:data:`~adk_asgi.serving.plugin_chain.BRIDGE_ORDER` gives with its reasons.

Internal: not an import path of the public API; :mod:`adk_asgi` exports its public
names (docs/reference.md#import-paths).
"""

from __future__ import annotations

from google.adk.apps.app import App

from adk_asgi.convert.safe_history import ReadableRequests
from adk_asgi.live.app_plugins import reported
from adk_asgi.live.tools import LiveToolGate
from adk_asgi.serving.as_returned import AsReturned
from adk_asgi.serving.call_order import ResultsInCallOrder
from adk_asgi.serving.finish_tools import FinishRanTools
from adk_asgi.serving.invalid_calls import InvalidCalls
from adk_asgi.serving.pace import PaceToReader
from adk_asgi.serving.plugin_chain import BRIDGE_ORDER, PluginChain
from adk_asgi.sse.pause import PauseForClientTools


def bridged(app: App) -> App:
    """``app`` with the bridge's plugins after its own (each of its own that rewrites a tool's
    result reported to the live gate, :mod:`adk_asgi.live.app_plugins`)."""
    invalid_calls = InvalidCalls()
    live_gate = LiveToolGate(invalid_calls)
    members = [
        invalid_calls,
        AsReturned(),
        ReadableRequests(),
        ResultsInCallOrder(),
        PauseForClientTools(),
        live_gate,
        FinishRanTools(),
        PaceToReader(),
    ]
    bridge = PluginChain("adk_asgi", members, order=BRIDGE_ORDER)
    return app.model_copy(update={"plugins": [*reported(app.plugins, live_gate), bridge]})
