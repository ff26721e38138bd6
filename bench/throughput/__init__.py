"""Throughput and time to first text: adk_asgi against bare ``run_async`` and its peers.

``python -m bench.throughput [--quick] [--reps R] [--sizes N ...] [--no-peer] [--no-before]
[--before-tree PATH]``

Every row runs the same agent (``bench.harness.agent``: a scripted model streaming N deltas of 8
characters) in one invocation of this command, with the runs of the rows interleaved, so a
noisy machine slows all rows alike and the ratios stay fair:

* ``floor``: ``Runner.run_async`` (SSE streaming, in-memory sessions) iterated in this process;
  nothing can stream faster than ADK produces events.
* ``adk_asgi``: ``AdkApp`` mounted in Starlette, served by uvicorn in a child process, read by an
  httpx streaming client here.
* ``adk_asgi before``: the same, with the SSE writer as it was before the first words after a
  pause went out at once (``bench.writer_before``): the A/B of that change. With
  ``--before-tree PATH``, the same app served from another checkout instead (a ``git
  worktree`` of an earlier commit): an A/B of two commits in one run.
* ``resumable``: the same app with a stream store, on a server of its own (as every row: a
  server that served the request before is faster to a first text).
* ``adk /run_sse``: ADK's own API server (``get_fast_api_app``), same uvicorn settings, same
  client.
* ``bare http``: ``run_async`` behind a raw ASGI endpoint, one SSE frame per partial event
  (``bench.harness.serve.bare_app``): what any HTTP server of the agent pays over the floor.
* ``bare http*``: the same, with ADK's failed import on every run skipped as ``AdkApp`` skips it
  (``adk_asgi.serving.a2a_import``): adk_asgi's time to first text over it is the bridge's own
  share, measured in the same rounds; ``bare http`` over it is what that import costs.
* ``ag-ui-adk``: the AG-UI protocol's ADK middleware (``bench.harness.peers``: FastAPI,
  sse-starlette), same uvicorn settings, same client; ``--no-peer`` leaves it out (it is
  installed by the ``bench`` extra).

Then the time to the first text delta of a short answer, and the encoding cost per chunk. See
``docs/internals/performance-notes.md`` for what the figures mean.
"""
