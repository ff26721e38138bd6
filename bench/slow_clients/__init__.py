"""Slow readers: the server's memory, and the other chats' gaps, when a client stops reading.

``python -m bench.slow_clients [--quick] [--no-pin]`` (also run by ``bench.concurrency``)

Each scenario runs on a fresh ``bench.harness.serve adk_asgi`` server (one uvicorn worker, pinned to
one CPU, the client on the other), so every peak of its resident memory is the scenario's own:

* **under load**: 50 normal users, each reading 3 chats of ``bench.concurrency``'s 300-delta
  replies one after the other: alone; next to two long answers (20,000 deltas) read at full
  speed (the control: the same work, taken as fast as it comes); next to one reader that stops
  reading for 10 s mid-answer and one that reads 1 KB a second. The long answers' readers
  leave when the normal chats are over.
* **alone**: one long answer and nothing else: read at full speed; paused for 10 s mid-answer
  (answers of 5,000 and 20,000 deltas); read at 1 KB/s for 15 s; and paused again with the
  kernel's own send buffer instead of the capped one.

Loopback TCP would soak up a whole answer before the server noticed a reader that does not
read: the kernel autotunes a connection's send buffer up to ``tcp_wmem``'s maximum (4 MiB),
where a slow network path fills after a few kilobytes in flight. So the server's connections
get ``SO_SNDBUF`` = ``SNDBUF`` (the kernel doubles it; inherited from the listening socket) and
the long answers' readers ``SO_RCVBUF`` = ``RCVBUF``; the last scenario shows the default.

Before the clock starts, each server runs the scenario's work once at full speed (a round of the
normal chats, one long answer), so the reading ``before`` already holds what any such run needs;
then the kernel's peak RSS (``VmHWM``) is reset through ``/proc/PID/clear_refs``. ``peak`` is
that peak at the end (checked against ``VmRSS`` sampled every 20 ms), ``end`` the ``VmRSS`` once
every stream is over and the server idle, and ``send-Q`` the most bytes the kernel held unsent
for the server's connections at once (``/proc/net/tcp``).

What should bound a reader that does not read: uvicorn stops taking body writes past its
transport's high-water mark (64 KiB), and adk_asgi's SSE writer then holds at most
``MAX_BUFFER`` (64 KiB) before it stops pulling events from ``run_async``. Whether ADK then
stops producing them is what the ``alone`` rows measure.
"""
