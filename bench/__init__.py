"""Benchmarks of adk_asgi against bare ``run_async`` and ADK's own ``/run_sse`` (``python -m
bench.throughput``), and of live mode against bare ``run_live`` (``python -m bench.live``); kept
out of the package so nothing here ships to users."""
