"""Scale-out: SSE throughput with one uvicorn worker and with two, on the shared pieces several
workers need (PostgreSQL sessions, Redis chat locks and stream store); and what those cost.

``python -m bench.scale_out [--quick] [--users U] [--deltas D] [--rounds R] [--window S]
[--configs KEY ...] [--redis-pool {url,shared}]``

A throw-away PostgreSQL cluster and Redis server are started for the run from Debian's binaries
(``tests/backing_services.py``, the test suite's own code). Then one server per configuration,
all at once, each ``bench.harness.serve adk_asgi_shared``: uvicorn's own supervisor (what ``uvicorn
--workers N`` runs) with N worker processes on one listening socket, ``AdkApp`` at ``/agent``:

* ``1 worker`` and ``2 workers``: ADK's ``DatabaseSessionService`` on PostgreSQL (asyncpg),
  ``RedisChatLocks`` and ``RedisStreamStore``: a deployment that may run several workers;
* ``1 worker, local locks+streams``: the same sessions, in-process locks and
  ``InMemoryStreamStore``: what the cross-process lock and stream store cost, side by side;
* ``1 worker, all in memory``: in-memory sessions too (a diagnostic: what PostgreSQL costs).

``RedisChatLocks`` and ``RedisStreamStore`` are built from the URL, as docs/deployment.md shows
(``--redis-pool shared``: one ``redis.asyncio.Redis`` per worker on a ``BlockingConnectionPool``
of 100 connections for both instead).

Each configuration has its own database and Redis database. **Saturation**: U users (100), each
with a connection of their own, send new chats back to back (closed loop), each asking for D
deltas (100); after a warm-up the clock runs for a window (20 s). Counted in the window: the
text deltas that arrived (so a wave of chats ending together does not skew it), and the chats
that ended. CPU over the window comes from ``/proc``: the server's processes (supervisor and
workers, and each worker's share), Redis, PostgreSQL (postmaster and backends), this process
(the load generator), and the whole machine (the rest is other load, and ``steal`` the
hypervisor's). Rounds rotate the order of the configurations; ratios are medians of per-round
ratios. Every stream is checked chunk by chunk against one read alone.

**One at a time**: short chats (5 deltas) sent one after another, rotating over the
configurations: the latency a request pays for the shared pieces when nothing else runs.

See ``docs/internals/performance-notes.md`` ("Scale-out").
"""
