"""Recipe: a Django project's ASGI application wrapped in ``AdkMiddleware`` (docs/mounting.md).

Run it from the repository root::

    uvicorn examples.django_project.asgi:app

``POST /agent/chat`` streams the chat and ``WS /agent/live`` is the live route: both are answered
by the ``AdkApp`` before Django sees the request, so Django's middleware cannot buffer the stream
and Django's handler, which speaks neither WebSocket nor lifespan, needs neither. Everything else
(``GET /`` here) is Django's.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

from adk_asgi import AdkApp, AdkMiddleware
from demo_app import build_agent

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "examples.django_project.settings")
django_app = get_asgi_application()

# The demo agent: the offline scripted model, or Gemini when GOOGLE_API_KEY is set (a chat
# model, so live mode then needs a second AdkApp on a live model: docs/mounting.md). Your own:
#   agent = LlmAgent(name="assistant", model="gemini-2.5-flash", instruction="Be brief.")
# The middleware closes the AdkApp when the server shuts down.
application = AdkMiddleware(django_app, prefix="/agent", chat=AdkApp(build_agent()))
app = application  # `uvicorn …asgi:app`; Django's own convention is `application`
