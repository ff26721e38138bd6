"""Agents whose tool needs the user's credential (docs/credentials.md), for the real AI SDK
clients (tests/e2e/test_credential_clients.py). Run with ``uvicorn --factory
tests.e2e.credentials_app:create_app``, with :data:`PROVIDER_ENV` set to the base URL of the
OAuth provider of tests/oauth_provider.py (started first, by the test): ADK builds the consent
URL from it, exchanges the code at its ``/token``, and the tool calls its ``/api/me``. (A
factory, so that the test can import the constants below.)

Mounted apps (each answers ``POST /chat`` and ``GET /chat/{id}/messages`` under its prefix):

* ``/oauth``: ``get_my_profile`` is an ``AuthenticatedFunctionTool`` of a confidential OAuth2
  client (:data:`CLIENT_ID`, its secret on the server, the redirect URI :data:`CALLBACK` named
  by the tool);
* ``/api-key``: the same tool with an API key (header ``x-api-key``).

The model (a ``ScriptedLlm`` answering from the conversation, so every chat gets the same
answers) calls ``get_my_profile``, then greets the user by the name its result gives.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx
from fastapi.openapi.models import APIKey, OAuth2, OAuthFlowAuthorizationCode, OAuthFlows
from google.adk.agents import LlmAgent
from google.adk.auth.auth_credential import AuthCredential, AuthCredentialTypes, OAuth2Auth
from google.adk.auth.auth_tool import AuthConfig
from google.adk.tools.authenticated_function_tool import AuthenticatedFunctionTool
from google.genai import types
from starlette.applications import Starlette
from starlette.routing import Mount

from adk_asgi import AdkApp
from adk_asgi.testing import Call, ScriptedLlm, Text, Turn

PROVIDER_ENV = "ADK_ASGI_TEST_OAUTH_PROVIDER"
"""The environment variable holding the OAuth provider's base URL (``http://127.0.0.1:…``)."""
CALLBACK = "http://app.test/oauth/callback"
"""The page's callback: where the provider sends the browser back (never fetched)."""
CLIENT_ID = "bridge"
SECRET = "s3cret"
SCOPES = {"profile": "your profile"}


def oauth_config(provider: str) -> AuthConfig:
    scheme = OAuth2(
        flows=OAuthFlows(
            authorizationCode=OAuthFlowAuthorizationCode(
                authorizationUrl=f"{provider}/authorize",
                tokenUrl=f"{provider}/token",
                scopes=SCOPES,
            )
        )
    )
    oauth2 = OAuth2Auth(client_id=CLIENT_ID, client_secret=SECRET, redirect_uri=CALLBACK)
    raw = AuthCredential(auth_type=AuthCredentialTypes.OAUTH2, oauth2=oauth2)
    # a credential_key of our own: without one ADK's AuthConfig.__init__ calls its own
    # deprecated get_credential_key
    return AuthConfig(auth_scheme=scheme, raw_auth_credential=raw, credential_key="profile")


def api_key_config() -> AuthConfig:
    scheme = APIKey(**{"in": "header", "name": "x-api-key"})
    return AuthConfig(auth_scheme=scheme, credential_key="api-key")


def profile_agent(provider: str, config: AuthConfig) -> LlmAgent:
    """An agent that calls ``get_my_profile`` (with the credential ADK hands it), then greets
    the user by the name its result gives."""

    async def get_my_profile(credential: AuthCredential) -> dict[str, Any]:
        """Who the user is at the provider."""
        if credential.oauth2 is not None:
            headers = {"authorization": f"Bearer {credential.oauth2.access_token}"}
        else:
            headers = {"x-api-key": credential.api_key or ""}
        async with httpx.AsyncClient() as client:
            response = await client.get(f"{provider}/api/me", headers=headers)
        result: dict[str, Any] = response.json()
        return result

    def greeter(contents: list[types.Content]) -> Turn:
        last = (contents[-1].parts or [])[-1]
        if last.function_response is not None:
            profile = last.function_response.response or {}
            return [Text(f"Hello {profile.get('name', profile)}!")]
        return [Call("get_my_profile")]

    tool = AuthenticatedFunctionTool(func=get_my_profile, auth_config=config)
    model = ScriptedLlm(responder=greeter, chunk_size=200)
    return LlmAgent(name="agent", model=model, tools=[tool])


def create_app() -> Starlette:
    # CredentialManager and its exchangers are marked experimental in ADK 2.13
    warnings.filterwarnings("ignore", r"\[EXPERIMENTAL\]", UserWarning)
    provider = os.environ.get(PROVIDER_ENV)
    if not provider:
        raise RuntimeError(f"set {PROVIDER_ENV} to the OAuth provider's base URL")
    apps = {
        "/oauth": AdkApp(profile_agent(provider, oauth_config(provider))),
        "/api-key": AdkApp(profile_agent(provider, api_key_config())),
    }

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for chat in apps.values():
                stack.push_async_callback(chat.aclose)
            yield

    return Starlette(
        routes=[Mount(prefix, app=chat) for prefix, chat in apps.items()], lifespan=lifespan
    )
