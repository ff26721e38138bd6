"""The benchmarks of adk_asgi, kept out of the package so nothing here ships to users.

One package per benchmark, run as ``python -m bench.<name>`` (``throughput``, ``live``,
``concurrency``, ``slow_clients``, ``live_concurrency``, ``scale_out``, ``session_reads``,
``sse_layers``, ``starvation``): its ``__init__`` describes it (the ``--help`` text), ``run.py``
runs it, ``rows.py`` holds its rows and what they measure, ``report.py`` prints it. What they
share is in ``bench.harness``; a benchmark never imports another, and no module of ``bench``
imports in a circle (``tests/unit/test_bench_layout.py``). See docs/performance.md.
"""
