"""Settings of the minimal Django project: one view, no database, no apps.

Only what Django needs to serve ``urls.py`` without warnings; a real project keeps its own
settings and changes nothing here but ``asgi.py``.
"""

from __future__ import annotations

SECRET_KEY = "django-insecure-example-only"  # never reuse: read it from the environment
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "django_project.urls"
INSTALLED_APPS: list[str] = []
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
]
DATABASES: dict[str, dict[str, str]] = {}
USE_TZ = True
