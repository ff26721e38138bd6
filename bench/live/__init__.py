"""Live mode: ``WS /live`` against bare ``run_live``, memory per idle connection, audio rates.

``python -m bench.live [--quick] [--reps R] [--sizes N ...] [--no-pin]``

The same agent as ``bench.throughput`` (``bench.harness.agent``), run by ``Runner.run_live``, in
rows (``bench.live.rows``): ``floor`` is ``run_live`` iterated in this process; ``adk_asgi`` is
``WS /live`` served by uvicorn in a child process and driven by a ``websockets`` client here,
offering permessage-deflate as browsers do; ``adk_asgi, no deflate`` the same without it;
``adk_asgi in-process`` is the app called in this process with no socket (adk_asgi's own share).

* **throughput**: N text deltas per answer, from the user text (``send`` frame; for the floor
  ``LiveRequestQueue.send_content``) to the end of the turn (``finish`` chunk; ``turn_complete``).
* **speech out**: the same in audio mode: N frames of 20 ms output audio (and their
  transcript) per answer.
* **audio in**: N frames of 20 ms microphone audio pushed as fast as possible, timed to the
  first frame of the answer.
* **idle connections**: the server's RSS with K idle connections open, in a fresh server per
  connection state.

Rounds rotate the order of the rows, and ratios are medians of per-round ratios, so a noisy
machine slows every row alike. See ``docs/internals/performance-notes.md`` ("Live mode") for what
the figures mean.
"""
