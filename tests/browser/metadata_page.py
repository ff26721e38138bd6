"""The demo app with docs/metadata.md's message metadata hook, for the page's ``metadata``
scenario (tests/browser/test_demo_page.py): each answer shows its model and tokens, in the
stream and after a reload. Run with ``uvicorn tests.browser.metadata_page:app``."""

from adk_asgi import Messages
from demo_app import create_app
from tests.e2e.metadata_app import message_metadata

app = create_app(messages=Messages(message_metadata=message_metadata))
