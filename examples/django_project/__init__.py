"""A minimal Django project serving an agent through ``AdkMiddleware`` (docs/mounting.md)."""
