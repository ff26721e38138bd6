"""The live transport: ``WS /live`` runs ``Runner.run_live`` for one chat per connection.

At its heart a sans-I/O protocol machine in h11's manner (:mod:`.protocol`, its phase table in
:mod:`.phases`, its jobs in :mod:`.turns`, :mod:`.events`, :mod:`.waits` and :mod:`.replay`):
frames and ADK events in, :mod:`.outputs` out. Around it the I/O: the handshake
(:mod:`.endpoint`), the connection's task group (:mod:`.connection`, the microphone's audio in
:mod:`.microphone`), the session task (:mod:`.session`), the bounded outbox (:mod:`.outbox`),
the stream store's record (:mod:`.record`) and the plugin that holds a tool
call until the user answers (:mod:`.tools`, and for a workflow run as a tool
:mod:`.node_tools`). It may import :mod:`adk_asgi.serving` and every
layer under it, never :mod:`adk_asgi.sse`.

Internal: not an import path of the public API (docs/reference.md#import-paths).
"""
