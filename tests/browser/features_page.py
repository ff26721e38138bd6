"""The demo page in front of an agent that uses the AI SDK features apps build on
(docs/data-parts.md, docs/tools.md, docs/metadata.md), for the page's ``features`` scenario
(tests/browser/test_demo_page.py): a tool that sends a ``data-weather`` card and updates it by
id, a toolset's tool (a dynamic tool, as an MCP server's) that asks for approval, and each
answer's metadata. Run with ``uvicorn tests.browser.features_page:app``."""

from __future__ import annotations

from google.genai import types

from adk_asgi.testing import Call, Text
from demo_app import create_app
from tests.asgi.test_data_parts import get_weather
from tests.e2e.metadata_app import message_metadata
from tests.e2e.shapes_app import SHOP_ORDER, Catalog
from tests.support import scripted_agent


def respond(contents: list[types.Content]) -> list[Call | Text]:
    """The weather (its card), then an order the user approves, then the answer."""
    answered = {
        p.function_response.name for c in contents for p in c.parts or [] if p.function_response
    }
    if "get_weather" not in answered:
        return [Call("get_weather", {"city": "Paris"})]
    if "order_item" not in answered:
        return [Call("order_item", SHOP_ORDER)]
    return [Text("All set.")]


agent = scripted_agent(responder=respond, tools=[get_weather, Catalog()], name="demo_agent")
app = create_app(agent, message_metadata=message_metadata)
