"""What every benchmark of ``bench`` shares: the agent every row runs (``agent``), the server
processes (``serve`` in the child, ``servers`` in the parent, ``placement`` where they run),
their probes (``probes``), the clients (``rows`` for one timed request and the rounds, ``chats``
for many SSE chats, ``live`` for ``WS /live``, ``peers`` for ag-ui-adk), what ``/proc`` says
(``procfs``), the command lines (``cli``) and the tables (``report``).

The benchmarks (``bench.<name>``) import from here and never from each other.
"""
