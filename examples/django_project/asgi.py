"""Recipe: a Django project's ASGI application wrapped in ``AdkMiddleware`` (docs/mounting.md).

Run it from the directory above this project's (``examples/``), with
``pip install adk-asgi django``::

    uvicorn django_project.asgi:app

``POST /agent/chat`` streams the chat and ``WS /agent/live`` is the live route: both are answered
by the ``AdkApp`` before Django sees the request, so Django's middleware cannot buffer the stream
and Django's handler, which speaks neither WebSocket nor lifespan, needs neither. Everything else
(``GET /`` here) is Django's.

The agent is Gemini with one tool, ``get_weather``. Without ``GOOGLE_API_KEY`` a local stand-in
answers in Gemini's place: it echoes what you say, and ``call get_weather {"city": "Paris"}``
runs the tool. With a key, the live route needs an agent on a live model
(``AdkApp(agent, live_agent=...)``, docs/mounting.md): ``gemini-2.5-flash`` is a chat model.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application
from google.adk.agents import LlmAgent

from adk_asgi import AdkApp, AdkMiddleware

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_project.settings")
django_app = get_asgi_application()

if not os.environ.get("GOOGLE_API_KEY"):  # no key: a local stand-in answers as Gemini would
    from adk_asgi.testing import offline_gemini  # (it echoes; never in a deployment)

    offline_gemini()


def get_weather(city: str) -> dict[str, str | int]:
    """The weather in a city.

    Args:
        city: The city's name, e.g. "Paris".
    """
    return {"city": city, "forecast": "sunny", "temperature_c": 21}


agent = LlmAgent(
    name="assistant",
    model="gemini-2.5-flash",
    instruction="Be brief. Ask get_weather for the weather.",
    tools=[get_weather],
)
# The middleware closes the AdkApp when the server shuts down.
application = AdkMiddleware(django_app, prefix="/agent", chat=AdkApp(agent))
app = application  # `uvicorn django_project.asgi:app`; Django's own convention is `application`
