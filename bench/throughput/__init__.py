"""Throughput and time to first text: adk_asgi against bare ``run_async`` and its peers.

``python -m bench.throughput [--quick] [--reps R] [--sizes N ...] [--no-peer] [--no-bare]
[--before-tree PATH]``

An A/B of two commits: ``git worktree add /tmp/before <commit>``, then ``python -m
bench.throughput --before-tree /tmp/before`` (the ``adk_asgi before`` row, below).

Every row runs the same agent (``bench.harness.agent``: a scripted model streaming N deltas of 8
characters) in one invocation of this command, with the runs of the rows interleaved, so a
noisy machine slows all rows alike and the ratios stay fair:

* ``floor``: ``Runner.run_async`` (SSE streaming, in-memory sessions) iterated in this process;
  nothing can stream faster than ADK produces events.
* ``adk_asgi``: ``AdkApp`` mounted in Starlette, served by uvicorn in a child process, read by an
  httpx streaming client here.
* ``adk_asgi before`` (only with ``--before-tree PATH``): the same server run from another
  checkout of adk-asgi (``git worktree add PATH <commit>``), in a child process started in that
  tree with ``PYTHONPATH`` on it, so it serves that tree's ``adk_asgi`` with this venv's
  packages. It runs in the same rounds as the other rows, so ``adk_asgi / adk_asgi before`` is
  an A/B of two commits measured in one run.
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
