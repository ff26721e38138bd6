"""Starvation: what one user holding everything a browser can hold does to another user's time
to first text.

``python -m bench.starvation [--quick] [--sockets N] [--flood F] [--probes P] [--rounds R]
[--delay S]``

One uvicorn worker (``bench.harness.serve adk_asgi_shared``, ``BENCH_USER_HEADER=1``: the user is
the ``x-user`` header) on ADK's ``DatabaseSessionService`` on a throw-away PostgreSQL cluster
(``tests/backing_services.py``), with the app's own defaults: chat locks in the session
database (``PostgresChatLocks``) and the per-user bounds (``UserBounds()``). The model takes
``--delay`` seconds per delta (20 ms, about Gemini Flash's pace), so a stream mostly waits for
its model, as real ones do. Each round measures, on the same server, one phase after another:

* **quiet**: P probes by the user ``victim``, one after another: a new chat over SSE, its time
  to the first ``text-delta``.
* **sockets**: the user ``mallory`` has tried N live sockets, each on a chat of its own (8, its
  bound, stay open, each holding its chat; the rest were closed with 1013); P probes meanwhile.
* **bound**: mallory also keeps as many chat requests in flight as that user may run (4, or
  ``--bound``; a closed loop: each answered one is sent again at once); P probes meanwhile.
* **flood**: mallory keeps F requests in flight: 4 run, the rest are refused ``429`` (each
  after its second's pause) and sent again at once; P probes meanwhile.

The requests of the last two run in a process of their own, so the probes' clock reads the
server, not a load generator sharing their event loop; the server runs on the last CPU, the
load generators on the others, so their work does not take the server's CPU either. A refusal
that comes before its request's answer is done being counted (a closed loop sends again at
once) is counted too.

Printed per phase: the median time to first text over the rounds, its ratio to quiet (the
median of the rounds' ratios), and what mallory got (sockets open and closed, requests answered
and refused).
"""
