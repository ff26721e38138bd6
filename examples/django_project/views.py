"""The host's own page: an ordinary (synchronous) Django view."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse


def home(request: HttpRequest) -> HttpResponse:
    return HttpResponse(
        "Hello from Django. The agent is at /agent/chat.", content_type="text/plain"
    )
