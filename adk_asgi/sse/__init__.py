"""The SSE transport: ``POST /chat`` runs ``Runner.run_async`` and streams the answer.

The endpoint (:mod:`.chat`) checks a request and runs it; the response (:mod:`.response`)
feeds ADK's events to the converter; the writer (:mod:`.writer`) coalesces body writes; the
plugin in :mod:`.pause` ends a run while a browser call is open. Thin on purpose: what a chunk
says is decided below, in :mod:`adk_asgi.convert` and :mod:`adk_asgi.hitl`. It may import
:mod:`adk_asgi.serving` and every layer under it, never :mod:`adk_asgi.live`.

Internal: not an import path of the public API (docs/reference.md#import-paths).
"""
