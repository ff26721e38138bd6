"""The wire: what travels between a browser and the app, as typed values and bytes.

The AI SDK's UI message stream chunks (:mod:`.chunks`), the request bodies and their
``UIMessage`` parts (:mod:`.messages`), the one JSON policy for what a client may send
(:mod:`.decoding`), SSE framing and parsing (:mod:`.sse_frames`) and chunk → bytes with the
version gate, ai@5, ai@6 or ai@7 (:mod:`.encoding`). The lowest layer, sans-I/O: it imports only
:mod:`adk_asgi.errors`, msgspec and the standard library — nothing of ADK, no socket, no clock.

Internal: not an import path of the public API (docs/reference.md#import-paths).
"""
