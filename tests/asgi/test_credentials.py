"""Credentials over SSE, through the ASGI client, against a real OAuth 2.0 provider on loopback
(tests/oauth_provider.py): what asks the user (``tool-adk_request_credential``), the consent a
browser follows, the answer (``addToolOutput``) the server checks, and the tool that then calls
the provider's API with the token ADK got (docs/credentials.md)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from fastapi.openapi.models import APIKey, OAuth2, OAuthFlowAuthorizationCode, OAuthFlows
from google.adk.agents import LlmAgent
from google.adk.auth.auth_credential import AuthCredential, AuthCredentialTypes, OAuth2Auth
from google.adk.auth.auth_handler import AuthHandler
from google.adk.auth.auth_tool import AuthConfig
from google.adk.tools.authenticated_function_tool import AuthenticatedFunctionTool
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.adk.workflow import START, Workflow, node
from google.genai import types

from adk_asgi import AdkApp, Messages
from adk_asgi.testing import (
    Call,
    ChatClient,
    ChatResponse,
    ScriptedLlm,
    Text,
    Turn,
    last_assistant_message_is_complete_with_tool_calls,
)
from demo_app import change_bgm
from tests.oauth_provider import USER, Client, OAuthProvider, serve
from tests.support import counter

pytestmark = pytest.mark.filterwarnings(
    # CredentialManager and its exchangers are marked experimental in ADK 2.13
    r"ignore:\[EXPERIMENTAL\]:UserWarning"
)

CALLBACK = "http://app.test/oauth/callback"
"""The page's callback: where the provider sends the browser back (never fetched here)."""
SECRET = "s3cret"
PENDING = "Pending User Authorization."
"""What ``AuthenticatedFunctionTool`` answers while it waits for the credential (ADK stores
it as ``{"result": …}``; the client is shown the string, as the tool returned it)."""
API_KEY = "k-123"


@pytest.fixture
def provider() -> Iterator[OAuthProvider]:
    clients = {
        "bridge": Client("bridge", SECRET, (CALLBACK,)),
        "public": Client("public", None, (CALLBACK,)),
    }
    with serve(OAuthProvider(clients=clients, api_keys={API_KEY})) as served:
        yield served


def oauth_config(provider: OAuthProvider, client_id: str, redirect_uri: str | None) -> AuthConfig:
    scheme = OAuth2(
        flows=OAuthFlows(
            authorizationCode=OAuthFlowAuthorizationCode(
                authorizationUrl=provider.authorize_url,
                tokenUrl=provider.token_url,
                scopes={"profile": "your profile"},
            )
        )
    )
    secret = SECRET if client_id == "bridge" else None
    oauth2 = OAuth2Auth(client_id=client_id, client_secret=secret, redirect_uri=redirect_uri)
    raw = AuthCredential(auth_type=AuthCredentialTypes.OAUTH2, oauth2=oauth2)
    # a credential_key of our own: without one ADK's AuthConfig.__init__ calls its own
    # deprecated get_credential_key (a DeprecationWarning in ADK 2.13)
    return AuthConfig(auth_scheme=scheme, raw_auth_credential=raw, credential_key="profile")


def api_key_config() -> AuthConfig:
    scheme = APIKey(**{"in": "header", "name": "x-api-key"})
    return AuthConfig(auth_scheme=scheme, credential_key="api-key")


def profile_tool(provider: OAuthProvider, config: AuthConfig) -> AuthenticatedFunctionTool:
    """The user's profile at the provider, with the credential ADK hands the tool."""

    async def get_my_profile(credential: AuthCredential) -> dict[str, Any]:
        """Who the user is at the provider."""
        if credential.oauth2 is not None:
            headers = {"authorization": f"Bearer {credential.oauth2.access_token}"}
        else:
            headers = {"x-api-key": credential.api_key or ""}
        async with httpx.AsyncClient() as client:
            response = await client.get(provider.api_url, headers=headers)
        result: dict[str, Any] = response.json()
        return result

    return AuthenticatedFunctionTool(func=get_my_profile, auth_config=config)


def greeter(contents: list[types.Content]) -> Turn:
    """Calls the profile tool; greets the user by the name its result gives."""
    last = (contents[-1].parts or [])[-1]
    if last.function_response is not None:
        profile = last.function_response.response or {}
        return [Text(f"Hello {profile.get('name', profile)}!")]
    return [Call("get_my_profile")]


CARD = "adk_request_credential"
"""The tool name of ADK's credential request, the card the page answers with ``addToolOutput``."""


def chat_on(tool_or_root: Any) -> ChatClient:
    """A page with the stock ``useChat`` on chat-1, every id counted. ``tool_or_root``: the
    tool of an agent that greets the user by its result, or the app's root agent (or
    workflow) itself."""
    root = tool_or_root
    if not isinstance(root, LlmAgent | Workflow):
        model = ScriptedLlm(responder=greeter, id_factory=counter("call_"), chunk_size=200)
        root = LlmAgent(name="agent", model=model, tools=[tool_or_root])
    app = AdkApp(
        root, messages=Messages(message_id_factory=counter("msg")), identify=lambda c: "ada"
    )
    return ChatClient(app, chat_id="chat-1", id_factory=counter("u"))


async def ask(chat: ChatClient) -> list[dict[str, Any]]:
    """ "who am i": the first response's chunks."""
    reply = await chat.send("who am i")
    assert reply.status == 200, reply.error
    return reply.chunks


def request_part(chat: ChatClient) -> dict[str, Any]:
    """The credential card of the chat's latest answer."""
    return next(p for p in chat.messages[-1]["parts"] if p["type"] == f"tool-{CARD}")


async def answer_card(chat: ChatClient, output: Any) -> ChatResponse:
    """``addToolOutput({output})`` on the card, and the request the stock helper sends."""
    reply = await chat.tool_result(CARD, output)
    assert reply is not None, "the stock helper sent nothing"
    return reply


async def reload(chat: ChatClient) -> None:
    """A refused answer stays on the page's card; the page reloads the chat to answer again."""
    chat.messages = await chat.history()


async def consent(auth_uri: str) -> str:
    """What a browser does with the consent URL: the provider (auto-consenting) redirects it to
    the page's callback, whose URL is the authorization response."""
    async with httpx.AsyncClient() as browser:
        response = await browser.get(auth_uri)
    assert response.status_code == 302, response.text
    return response.headers["location"]


def oauth2_of(part: dict[str, Any]) -> dict[str, Any]:
    oauth2: dict[str, Any] = part["input"]["authConfig"]["exchangedAuthCredential"]["oauth2"]
    return oauth2


def asking(call_id: str, credential_id: str, request: dict[str, Any]) -> list[dict[str, Any]]:
    """The first response: the tool's call, ADK's request for the credential, and the tool's
    own answer while it waits (a server tool's output, so the stock tool-calls helper sends the
    step once the credential part has its output)."""
    return [
        {"type": "start", "messageId": "msg1"},
        {"type": "start-step"},
        {
            "type": "tool-input-start",
            "toolCallId": call_id,
            "toolName": "get_my_profile",
            "providerExecuted": True,
        },
        {
            "type": "tool-input-available",
            "toolCallId": call_id,
            "toolName": "get_my_profile",
            "input": {},
            "providerExecuted": True,
        },
        {
            "type": "tool-input-start",
            "toolCallId": credential_id,
            "toolName": "adk_request_credential",
        },
        {
            "type": "tool-input-available",
            "toolCallId": credential_id,
            "toolName": "adk_request_credential",
            "input": request,
        },
        {"type": "tool-output-available", "toolCallId": call_id, "output": PENDING},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]


GREETED = [
    {"type": "start", "messageId": "msg1"},
    {"type": "tool-output-available", "toolCallId": "call_1", "output": USER},
    {"type": "start-step"},
    {"type": "text-start", "id": "msg1-txt1"},
    {"type": "text-delta", "id": "msg1-txt1", "delta": "Hello Ada Lovelace!"},
    {"type": "text-end", "id": "msg1-txt1"},
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop"},
]
"""The continuation once the credential is in: the tool ran again with the token, and the
model read its result."""


def consent_request(provider: OAuthProvider, config: AuthConfig, state: str) -> dict[str, Any]:
    """The request a confidential client's tool shows (``client_secret_basic``, the redirect
    URI named by the tool): ADK's ``AuthToolArguments``, without the client secret."""
    query = urlencode(
        {
            "response_type": "code",
            "client_id": "bridge",
            "redirect_uri": CALLBACK,
            "scope": "profile",
            "state": state,
            "access_type": "offline",
            "prompt": "consent",
        }
    )
    client = {"clientId": "bridge", "redirectUri": CALLBACK}
    method = {"tokenEndpointAuthMethod": "client_secret_basic"}
    return {
        "functionCallId": "call_1",
        "authConfig": {
            "authScheme": {
                "type": "oauth2",
                "flows": {
                    "authorizationCode": {
                        "scopes": {"profile": "your profile"},
                        "authorizationUrl": provider.authorize_url,
                        "tokenUrl": provider.token_url,
                    }
                },
            },
            "rawAuthCredential": {"authType": "oauth2", "oauth2": client | method},
            "exchangedAuthCredential": {
                "authType": "oauth2",
                "oauth2": {
                    "clientId": "bridge",
                    "authUri": f"{provider.authorize_url}?{query}",
                    "state": state,
                    "redirectUri": CALLBACK,
                }
                | method,
            },
            "credentialKey": config.credential_key,
        },
    }


async def test_an_oauth_tool_asks_for_consent_then_calls_the_api_with_the_token(
    provider: OAuthProvider,
) -> None:
    config = oauth_config(provider, "bridge", CALLBACK)
    async with chat_on(profile_tool(provider, config)) as chat:
        first = await ask(chat)
        part = request_part(chat)
        credential_id, state = part["toolCallId"], oauth2_of(part)["state"]
        assert first == asking("call_1", credential_id, consent_request(provider, config, state))
        asked = copy.deepcopy(chat.messages)
        assert await chat.history() == asked  # a reload can answer it

        redirect = await consent(oauth2_of(part)["authUri"])
        assert redirect.startswith(f"{CALLBACK}?code=")
        assert parse_qs(urlsplit(redirect).query)["state"] == [state]
        reply = await answer_card(chat, {"authResponseUri": redirect})
        assert last_assistant_message_is_complete_with_tool_calls(reply.body["messages"])
        assert reply.status == 200, reply.error
        assert reply.chunks == GREETED

        # ADK exchanged the code (its client authenticated, the redirect URI repeated), and the
        # tool called the API with the token it got
        code = parse_qs(urlsplit(redirect).query)["code"][0]
        assert provider.token_requests == [
            {
                "grant_type": "authorization_code",
                "redirect_uri": CALLBACK,
                "code": code,
                "client_auth": "basic",
            }
        ]
        assert provider.refused == []
        assert provider.api_calls == list(provider.tokens)
        assert len(provider.api_calls) == 1

        # a reload shows what streamed; the answer's part shows the request it answered,
        # without the redirect (its code) it carried
        [user, shown] = copy.deepcopy(chat.messages)
        answered = next(p for p in shown["parts"] if p["type"] == f"tool-{CARD}")
        answered["output"] = part["input"]["authConfig"]
        assert await chat.history() == [user, shown]

        # the same answer again (a replay, a double submit) finds nothing open
        replay = await chat.http.post("/chat", json=reply.body)
        assert replay.status_code == 409
        assert replay.json() == {"error": "this request answers no open tool call of the chat"}
        assert len(provider.token_requests) == 1


async def test_a_public_client_uses_pkce_and_the_page_names_its_callback(
    provider: OAuthProvider,
) -> None:
    async with chat_on(profile_tool(provider, oauth_config(provider, "public", None))) as chat:
        await ask(chat)
        oauth2 = oauth2_of(request_part(chat))
        # the client sees the challenge, never the verifier ADK keeps in the call's args
        assert "codeVerifier" not in oauth2
        consent_query = parse_qs(urlsplit(oauth2["authUri"]).query)
        assert consent_query["code_challenge_method"] == ["S256"]
        assert "redirect_uri" not in consent_query  # ADK named none: the page adds its own
        redirect = await consent(f"{oauth2['authUri']}&{urlencode({'redirect_uri': CALLBACK})}")
        reply = await answer_card(chat, {"authResponseUri": redirect, "redirectUri": CALLBACK})
        assert (reply.status, reply.chunks) == (200, GREETED), reply.error
    # the provider checked the verifier against the challenge before it gave the token
    [token_request] = provider.token_requests
    assert token_request["client_auth"] == "none"
    assert token_request["redirect_uri"] == CALLBACK
    assert "code_verifier" in token_request
    assert provider.refused == []


async def test_adk_own_answer_is_taken_too(provider: OAuthProvider) -> None:
    """ADK's web UI answers with the request's ``AuthConfig``, the redirect filled in."""
    async with chat_on(profile_tool(provider, oauth_config(provider, "bridge", CALLBACK))) as chat:
        await ask(chat)
        part = request_part(chat)
        redirect = await consent(oauth2_of(part)["authUri"])
        answer = copy.deepcopy(part["input"]["authConfig"])
        answer["exchangedAuthCredential"]["oauth2"]["authResponseUri"] = redirect
        reply = await answer_card(chat, answer)
        assert (reply.status, reply.chunks) == (200, GREETED), reply.error


def forged(redirect: str) -> str:
    """The redirect with a state of the attacker's (another consent's)."""
    return redirect.replace("state=", "state=forged")


async def test_an_authorization_response_with_another_state_is_refused(
    provider: OAuthProvider,
) -> None:
    """ADK itself takes any state back from a tool's request (it kept none to compare), so a
    page tricked into sending another consent's redirect would bind that account to the chat."""
    async with chat_on(profile_tool(provider, oauth_config(provider, "bridge", CALLBACK))) as chat:
        await ask(chat)
        part = request_part(chat)
        redirect = await consent(oauth2_of(part)["authUri"])
        adk_form = copy.deepcopy(part["input"]["authConfig"])
        adk_form["exchangedAuthCredential"]["oauth2"] |= {
            "authResponseUri": forged(redirect),
            "state": "forged" + oauth2_of(part)["state"],
        }
        reason = (
            f"the authorization response does not belong to credential request "
            f"{part['toolCallId']!r}: its state is not the one issued"
        )
        for answer in [{"authResponseUri": forged(redirect)}, adk_form]:
            refused = await answer_card(chat, answer)
            assert (refused.status, refused.error) == (409, reason)
            await reload(chat)
        assert provider.token_requests == []  # nothing was exchanged
        # the chat is as it was: the true answer still goes through
        reply = await answer_card(chat, {"authResponseUri": redirect})
        assert (reply.status, reply.chunks) == (200, GREETED), reply.error


async def test_an_answer_for_a_call_the_chat_never_had_is_refused(
    provider: OAuthProvider,
) -> None:
    async with chat_on(profile_tool(provider, oauth_config(provider, "bridge", CALLBACK))) as chat:
        await ask(chat)
        part = request_part(chat)
        redirect = await consent(oauth2_of(part)["authUri"])
        # a forged request: the answer, for a call id the chat never had
        output = {"authResponseUri": redirect}
        part.update(state="output-available", output=output, toolCallId="adk-made-up")
        refused = await chat.submit()
    assert (refused.status, refused.error) == (
        409,
        "tool call 'adk-made-up' is not part of this chat",
    )
    assert provider.token_requests == []


def out(value: Any) -> dict[str, Any]:
    """``addToolOutput({output: value})``."""
    return {"output": value}


MALFORMED = [
    pytest.param(
        lambda redirect: {"errorText": "no thanks"},  # addToolOutput({state: "output-error"})
        "a credential request is answered with an output (to go on without it, send a new message)",
        id="output-error",
    ),
    pytest.param(lambda redirect: out(redirect), "it must be an object", id="not-an-object"),
    pytest.param(
        lambda redirect: out({"authResponseUri": redirect, "code": "x"}),
        "unknown key 'code' (expected authResponseUri, redirectUri)",
        id="unknown-key",
    ),
    pytest.param(
        lambda redirect: out({"redirectUri": CALLBACK}),
        "authResponseUri: the provider's redirect is missing",
        id="no-redirect",
    ),
    pytest.param(
        lambda redirect: out({"authResponseUri": redirect + "#access_token=t"}),
        "authResponseUri must not carry a #fragment",
        id="fragment",
    ),
    pytest.param(
        lambda redirect: out({"authResponseUri": redirect.replace("app.test", "evil.test")}),
        f"authResponseUri is not a redirect to redirectUri {CALLBACK!r}",
        id="elsewhere",
    ),
    pytest.param(
        lambda redirect: out({"authResponseUri": redirect, "redirectUri": "http://evil.test/cb"}),
        f"redirectUri: the request named {CALLBACK!r}",
        id="other-redirect-uri",
    ),
    pytest.param(
        lambda redirect: out(
            {"authResponseUri": redirect.replace("code=", "error=access_denied&x=")}
        ),
        "the provider refused the authorization: access_denied",
        id="provider-refused",
    ),
    pytest.param(
        lambda redirect: out(
            {"exchangedAuthCredential": {"authType": "oauth2", "oauth2": {"accessToken": "t"}}}
        ),
        "oauth2.accessToken is not taken from the client (send the authorization response; "
        "the server exchanges it)",
        id="a-token-instead",
    ),
    pytest.param(
        lambda redirect: out({"authType": "apiKey", "apiKey": API_KEY}),
        "authType 'apiKey' does not answer a oauth2 request",
        id="another-kind",
    ),
]


@pytest.mark.parametrize(("make", "why"), MALFORMED)
async def test_an_answer_that_does_not_fit_is_refused_and_changes_nothing(
    provider: OAuthProvider, make: Any, why: str
) -> None:
    async with chat_on(profile_tool(provider, oauth_config(provider, "bridge", CALLBACK))) as chat:
        await ask(chat)
        part = request_part(chat)
        redirect = await consent(oauth2_of(part)["authUri"])
        change = make(redirect)
        if "errorText" in change:
            refused = await chat.tool_error(CARD, change["errorText"])
        else:
            refused = await chat.tool_result(CARD, change["output"])
        assert refused is not None
        assert (refused.status, refused.error) == (
            422,
            f"the answer to credential request {part['toolCallId']!r}: {why}",
        )
        assert provider.token_requests == []
        await reload(chat)
        reply = await answer_card(chat, {"authResponseUri": redirect})
        assert (reply.status, reply.chunks) == (200, GREETED), reply.error


async def test_an_api_key_is_asked_for_and_used(provider: OAuthProvider) -> None:
    config = api_key_config()
    async with chat_on(profile_tool(provider, config)) as chat:
        first = await ask(chat)
        part = request_part(chat)
        request = {
            "functionCallId": "call_1",
            "authConfig": {
                "authScheme": {"type": "apiKey", "in": "header", "name": "x-api-key"},
                "credentialKey": config.credential_key,
            },
        }
        assert first == asking("call_1", part["toolCallId"], request)
        empty = await answer_card(chat, {"apiKey": ""})
        assert (empty.status, empty.error) == (
            422,
            f"the answer to credential request {part['toolCallId']!r}: apiKey: the key is missing",
        )
        await reload(chat)
        reply = await answer_card(chat, {"apiKey": API_KEY})
        assert (reply.status, reply.chunks) == (200, GREETED), reply.error
        assert provider.api_calls == [API_KEY]
        # history shows the answer without the key
        [user, shown] = copy.deepcopy(chat.messages)
        answered = next(p for p in shown["parts"] if p["type"] == f"tool-{CARD}")
        answered["output"] = request["authConfig"] | {
            "exchangedAuthCredential": {"authType": "apiKey"}
        }
        assert await chat.history() == [user, shown]


async def test_a_tool_that_asks_for_the_credential_itself(provider: OAuthProvider) -> None:
    """The pattern of ADK's docs: ``tool_context.get_auth_response``, else
    ``tool_context.request_credential`` and a word for the model."""
    config = oauth_config(provider, "bridge", CALLBACK)

    async def get_my_profile(tool_context: ToolContext) -> dict[str, Any]:
        """Who the user is at the provider."""
        credential = tool_context.get_auth_response(config)
        if credential is None or credential.oauth2 is None:
            tool_context.request_credential(config)
            return {"pending": "Waiting for the user to sign in."}
        token = credential.oauth2.access_token
        async with httpx.AsyncClient() as client:
            response = await client.get(
                provider.api_url, headers={"authorization": f"Bearer {token}"}
            )
        result: dict[str, Any] = response.json()
        return result

    async with chat_on(FunctionTool(get_my_profile)) as chat:
        first = await ask(chat)
        part = request_part(chat)
        expected = asking("call_1", part["toolCallId"], part["input"])
        expected[6]["output"] = {"pending": "Waiting for the user to sign in."}
        assert first == expected
        assert oauth2_of(part)["authUri"].startswith(provider.authorize_url)
        redirect = await consent(oauth2_of(part)["authUri"])
        reply = await answer_card(chat, {"authResponseUri": redirect})
        assert (reply.status, reply.chunks) == (200, GREETED), reply.error
    assert len(provider.api_calls) == 1
    assert provider.api_calls[0] in provider.tokens


async def test_a_browser_result_sent_with_the_credential_reaches_the_model(
    provider: OAuthProvider,
) -> None:
    """ADK leaves an event that answers a credential request out of the model's context with
    all it holds: a browser's result sent in the same request is stored on its own first."""
    seen: list[types.Content] = []

    def responder(contents: list[types.Content]) -> Turn:
        seen[:] = contents
        if contents[-1].parts and contents[-1].parts[-1].function_response is not None:
            return [Text("Done.")]
        return [Call("get_my_profile"), Call("change_bgm", {"track": 2})]

    model = ScriptedLlm(responder=responder, id_factory=counter("call_"), chunk_size=200)
    tool = profile_tool(provider, oauth_config(provider, "bridge", CALLBACK))
    agent = LlmAgent(name="agent", model=model, tools=[tool, change_bgm])
    async with chat_on(agent) as chat:
        await ask(chat)
        redirect = await consent(oauth2_of(request_part(chat))["authUri"])
        # onToolCall's result, at once: the card still waits, so nothing is sent yet
        assert await chat.tool_result("change_bgm", {"playing": 2}) is None
        reply = await answer_card(chat, {"authResponseUri": redirect})
        assert reply.status == 200, reply.error
        assert reply.chunks == [
            {"type": "start", "messageId": "msg1"},
            {"type": "tool-output-available", "toolCallId": "call_1", "output": USER},
            {"type": "start-step"},
            {"type": "text-start", "id": "msg1-txt1"},
            {"type": "text-delta", "id": "msg1-txt1", "delta": "Done."},
            {"type": "text-end", "id": "msg1-txt1"},
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ]
    answers = {
        part.function_response.name: part.function_response.response
        for part in seen[-1].parts or []
        if part.function_response is not None
    }
    assert answers == {"get_my_profile": USER, "change_bgm": {"playing": 2}}


async def test_a_new_message_closes_a_credential_request_left_unanswered(
    provider: OAuthProvider,
) -> None:
    """As with an approval, a card the user left for a new message cannot be answered later:
    the old turn would run again, after the new one."""
    async with chat_on(profile_tool(provider, oauth_config(provider, "bridge", CALLBACK))) as chat:
        await ask(chat)
        old = request_part(chat)
        # another tab of the page keeps the card; this one sends a new message
        tab = ChatClient(http=chat.http, chat_id=chat.id, messages=chat.messages)
        redirect = await consent(oauth2_of(old)["authUri"])
        second = await chat.send("who am i?")
        assert second.status == 200, second.error
        newer = next(c for c in second.chunks if c.get("toolName") == CARD)
        assert newer["toolCallId"] != old["toolCallId"]
        stale = await tab.tool_result(CARD, {"authResponseUri": redirect})
        assert stale is not None
        assert (stale.status, stale.error) == (
            409,
            f"{old['toolCallId']!r} was closed unanswered: a new message was sent first",
        )
        assert provider.token_requests == []
        [_, shown, _, _] = await chat.history()
        closed = next(p for p in shown["parts"] if p["type"] == "tool-adk_request_credential")
        assert (closed["state"], closed["errorText"]) == (
            "output-error",
            "Not answered: a new message was sent first.",
        )


async def test_a_workflow_node_with_an_auth_config_asks_the_same_way(
    provider: OAuthProvider,
) -> None:
    """A node's request is ADK's own shape plus a ``message``; ADK keeps its state and PKCE
    verifier in the session, and the bridge checks the state before ADK would fail the run."""
    config = oauth_config(provider, "bridge", CALLBACK)

    @node(auth_config=config, rerun_on_resume=True)
    async def profile(ctx: Any, node_input: Any) -> str:
        credential = AuthHandler(config).get_auth_response(ctx.state)
        assert credential is not None and credential.oauth2 is not None
        headers = {"authorization": f"Bearer {credential.oauth2.access_token}"}
        async with httpx.AsyncClient() as client:
            response = await client.get(provider.api_url, headers=headers)
        return f"Hello {response.json()['name']}!"

    async with chat_on(Workflow(name="wf", edges=[(START, profile)])) as chat:
        first = await ask(chat)
        part = request_part(chat)
        request = consent_request(provider, config, oauth2_of(part)["state"])
        request |= {
            "functionCallId": "wf_auth:wf@1/profile@1",
            "message": "Please complete the authentication flow.",
        }
        assert part["toolCallId"].startswith("wf_auth:wf@1/profile@1~")
        assert first == [
            {"type": "start", "messageId": "msg1"},
            {"type": "start-step"},
            {
                "type": "tool-input-start",
                "toolCallId": part["toolCallId"],
                "toolName": "adk_request_credential",
            },
            {
                "type": "tool-input-available",
                "toolCallId": part["toolCallId"],
                "toolName": "adk_request_credential",
                "input": request,
            },
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "tool-calls"},
        ]
        assert await chat.history() == chat.messages
        redirect = await consent(oauth2_of(part)["authUri"])
        refused = await answer_card(chat, {"authResponseUri": forged(redirect)})
        assert refused.status == 409
        await reload(chat)
        reply = await answer_card(chat, {"authResponseUri": redirect})
        assert reply.status == 200, reply.error
        assert reply.chunks == [
            {"type": "start", "messageId": "msg1"},
            {"type": "start-step"},
            {"type": "text-start", "id": "msg1-txt1"},
            {"type": "text-delta", "id": "msg1-txt1", "delta": "Hello Ada Lovelace!"},
            {"type": "text-end", "id": "msg1-txt1"},
            {"type": "finish-step"},
            {"type": "finish", "finishReason": "stop"},
        ]
        [user, shown] = copy.deepcopy(chat.messages)
        answered = next(p for p in shown["parts"] if p["type"] == f"tool-{CARD}")
        answered["output"] = request["authConfig"]
        assert await chat.history() == [user, shown]
    assert len(provider.token_requests) == 1
    assert provider.api_calls == list(provider.tokens)
