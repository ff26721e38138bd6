"""Many chats at once on one uvicorn worker: CPU per delta against the floor, chunk integrity,
time to first chunk and the gaps between deliveries; then slow readers (``bench.slow_clients``).

``python -m bench.concurrency [--quick] [--levels N ...] [--deltas D] [--no-pin] [--no-slow]
[--no-peer] [--before-tree PATH] [--gc-freeze-row]``

An A/B of two commits: ``git worktree add /tmp/before <commit>``, then ``python -m
bench.concurrency --before-tree /tmp/before`` (the ``adk_asgi before`` row, below).

At each level, N chats start at once, each asking the scripted agent (``bench.harness.agent``) for a
reply of D text deltas (300; 8 characters each), in rows run in turns (their order changing
each round, ``bench.harness.rows.round_order``):

* ``floor``: N concurrent ``Runner.run_async`` calls in this process (SSE streaming, in-memory
  sessions created before the clock starts), run on the server's CPU, as ``bench.throughput``
  does for one.
* ``adk_asgi``: N concurrent ``POST /agent/chat`` on ONE uvicorn worker (``bench.harness.serve
  adk_asgi``, pinned to one CPU), read in this process on the other CPU, by one
  ``httpx.AsyncClient`` per chat (each user has a browser of their own; see
  ``bench.harness.chats.Chats``).
* ``adk_asgi gc.freeze`` (``--gc-freeze-row``): the same server with ``gc.freeze()`` after
  start-up (``BENCH_GC_FREEZE=1``), as docs/deployment.md recommends.
* ``adk_asgi before`` (only with ``--before-tree PATH``): the same server run from another
  checkout of adk-asgi (``git worktree add PATH <commit>``), in a child process started in that
  tree with ``PYTHONPATH`` on it, so it serves that tree's ``adk_asgi`` with this venv's
  packages; in the same rounds, so ``adk_asgi / adk_asgi before`` is an A/B of two commits
  measured in one run.
* ``ag-ui-adk``: the AG-UI protocol's ADK middleware (``bench.harness.peers``) on its own worker,
  same uvicorn settings and client; its ``max_concurrent_executions`` (10 by default) is raised
  above the largest level, or it would refuse most of each burst with a ``RUN_ERROR``.

Every stream is checked chunk by chunk against the stream of the same reply read alone (the
message id aside, the scripted agent's answer is deterministic): a lost, duplicated or reordered
chunk, an ``error`` chunk or a stream without ``[DONE]`` is counted. Server CPU per delta comes
from the server's ``/__cpu`` probe around each batch, the client's from this process; a client
near 100 % of its CPU, or slow to send its burst, would be the bottleneck, and the report says
so. The garbage collector's time comes from ``/__gc`` (the floor: the same clock here).

Time to first chunk (TTFC) runs from the request on the wire (the floor: the run's start) to
its first text delta.
A *gap* is the time between two consecutive deliveries of one stream (reads that brought at
least one whole chunk; floor: events, but not those taken from ADK's queue in one go), from its
first text delta to its end: how long the user looks at a stream that does not move. Levels are
bursts: the N requests are sent together. Percentiles are over every stream of every round.

Then ``bench.slow_clients``, in a process of its own (unless ``--no-slow``). See
``docs/internals/performance-notes.md``.
"""
