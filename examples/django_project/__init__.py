"""A minimal Django project serving the demo agent through ``AdkMiddleware`` (docs/mounting.md)."""
