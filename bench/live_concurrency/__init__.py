"""Live mode at scale on ONE uvicorn worker: a thousand idle WebSockets, then a hundred busy ones.

``python -m bench.live_concurrency [--quick] [--idle N] [--active N] [--deltas D] [--rounds R]
[--no-pin]``

The agent is ``bench.harness.agent``'s (``ScriptedLlm``, 8-character text deltas), run by
``Runner.run_live``; the server is ``bench.harness.serve adk_asgi`` (``WS /agent/live``, uvicorn's
defaults, permessage-deflate offered by the client as browsers do).

* **Idle connections** (a fresh server, unpinned): N WebSockets (1,000) opened on new chats
  with ``?chatId=``, so each has its ``run_live`` session open, and left idle. Then every
  connection answers one short turn (5 deltas) and is left idle again; then all close. At each
  step, once the server is idle: its RSS (``VmRSS``), its CPU over a window (20 s), and a census
  of its event loop's tasks and the objects the garbage collector tracks (``/__census``).
* **Active connections** (a fresh server on one CPU, the client on the other): N connections
  (100), each on a new chat, send their ``send`` frame at once, each asking for D deltas (300);
  against the floor, N concurrent bare ``Runner.run_live`` calls in this process, moved to the
  server's CPU. Diagnostic rows: the app called in this process without a socket (its own
  layer), the server's mount with a frame per delta (no coalescing), and a client that offers no
  permessage-deflate. Rounds rotate the order of the rows. Every response read over a socket is
  checked frame by frame: ``sequence`` numbers 0, 1, 2... with none lost, duplicated or out of
  order, the merged text equal to the answer's, the chunk types in the order of a response read
  alone, ``finish`` and ``end`` last, no error.

See ``docs/internals/performance-notes.md`` ("Live mode at scale").
"""
