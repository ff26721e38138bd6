"""Where the bridge's CPU per delta goes with many SSE chats at once, layer by layer, in process.

``python -m bench.sse_layers [--chats N] [--deltas D] [--rounds R] [--quick]``

``bench.concurrency`` measures the whole server against bare ``run_async`` at the same
concurrency; this bench splits the difference. N chats (50) of D deltas (300) run at once in
this process, one row after the other, each row adding one layer to the one above it:

* ``floor``: bare ``Runner.run_async`` (SSE streaming, no plugin, sessions created first).
* ``runner``: the ``AdkApp``'s own runner: its plugins, the run options that tag every event
  with the ids the client knows, the run paced to its reader (``pace.paced_by``).
* ``converter``: the same run through ``sse_body``: every event converted to UI message chunks
  and encoded as SSE (``EventConverter``, ``ChunkEncoder``), the bytes dropped.
* ``app``: ``POST /chat`` of the ``AdkApp`` called as an ASGI app (body decode, identity,
  chat lock, the session made in the request, the chat's title, the coalescing writer and its
  tasks), with a ``send`` that drops the bytes: everything but uvicorn and the socket.

Rounds rotate the rows' order. Each row's CPU (``time.process_time``) is split into the
garbage collector's share (``gc.callbacks``) and the rest, per delta; *step* is the median over
rounds of the row's CPU per delta minus the row above's. Every chat is checked: exactly D text
deltas. See ``docs/internals/performance-notes.md`` ("Many chats at once").
"""
