"""Mounting recipes: the demo agent inside Starlette, FastAPI and Django (docs/mounting.md)."""
