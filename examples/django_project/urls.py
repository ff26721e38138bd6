"""The Django project's routes. ``/agent/…`` is not here: ``AdkMiddleware`` answers it first."""

from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [path("", views.home, name="home")]
