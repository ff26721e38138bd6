"""ADK's credential requests (docs/credentials.md) through the real AI SDK clients, ai@6 and
ai@7, over SSE (the stock ``DefaultChatTransport``) with the stock
``lastAssistantMessageIsCompleteWithToolCalls`` helper, against ``tests/e2e/credentials_app.py``
under a real uvicorn, whose tool signs in at a real OAuth 2.0 provider on loopback
(``tests/oauth_provider.py``, started first: the app learns its URL from the environment).

The OAuth flow is the one docs/credentials.md gives a page that navigates to the consent in
its own tab: the chat shows the ``tool-adk_request_credential`` part and the page goes away;
the test, as the browser, follows the part's ``authUri`` to the provider (which consents at once
and redirects to the page's callback); the callback page reloads the chat from
``GET /chat/{id}/messages`` and answers the part with the stock ``addToolOutput({tool:
"adk_request_credential", toolCallId, output: {authResponseUri}})``, which the stock helper
sends. Two runs of the Node driver, then, one page each, on the same chat and cookie. The API
key needs no round trip: one page asks and answers.

Each test asserts the client's final messages whole (ids replaced by placeholders), the number
of requests, that every response passes the SDK's own parser and state machine, what the
provider saw (the code exchanged once, the API called once with the token it issued), and what
a reload shows against what the client showed: the same, but the answer's part shows the
request it answered, not the redirect (its code) or the key the client sent.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

import httpx
import pytest

from tests.e2e.credentials_app import CALLBACK, CLIENT_ID, PROVIDER_ENV, SCOPES, SECRET
from tests.e2e.node_client import drive_chat, validate_sse
from tests.e2e.test_agent_shapes import STEP, normalized, outcome, said, text
from tests.oauth_provider import USER, Client, OAuthProvider, serve
from tests.servers import uvicorn_server

pytestmark = [
    pytest.mark.e2e,
    # CredentialManager and its exchangers are marked experimental in ADK 2.13
    pytest.mark.filterwarnings(r"ignore:\[EXPERIMENTAL\]:UserWarning"),
]

SSE = pytest.mark.parametrize("sdk", [6, 7], ids=["sse-v6", "sse-v7"])

API_KEY = "k-123"
PENDING = "Pending User Authorization."
"""What ``AuthenticatedFunctionTool`` answers while it waits for the credential (ADK stores
it as ``{"result": …}``; the client is shown the string, as the tool returned it)."""
ASK = "who am i"
GREETING = "Hello Ada Lovelace!"
IDLE_MS = 100
"""How long a chat must stay ready and quiet for a step to be over (the driver's default is
300 ms): the stock helper sends a continuation as soon as a response ends, so none is missed."""


@pytest.fixture(scope="session")
def oauth_provider() -> Iterator[OAuthProvider]:
    """The provider on loopback for the whole session: it knows the app's client and the API
    key, and consents at once."""
    clients = {CLIENT_ID: Client(CLIENT_ID, SECRET, (CALLBACK,))}
    with serve(OAuthProvider(clients=clients, api_keys={API_KEY})) as served:
        yield served


@pytest.fixture(scope="session")
def credentials_server(oauth_provider: OAuthProvider) -> Iterator[str]:
    """tests/e2e/credentials_app.py under a real uvicorn, told where the provider is."""
    env = {PROVIDER_ENV: oauth_provider.base_url}
    app = "tests.e2e.credentials_app:create_app"
    with uvicorn_server(app, env=env, args=["--factory"]) as base:
        yield base


@pytest.fixture
def provider(oauth_provider: OAuthProvider) -> OAuthProvider:
    """The session's provider, with what it saw so far forgotten: what it holds at the end of a
    test is what that test's chats made it see."""
    for seen in (
        oauth_provider.authorize_requests,
        oauth_provider.token_requests,
        oauth_provider.refused,
        oauth_provider.api_calls,
    ):
        seen.clear()
    return oauth_provider


class Browser:
    """One browser's chat at the ``AdkApp`` mounted at ``prefix``: every :meth:`page` is a run
    of the Node driver (a page load) on the same chat id and cookie."""

    def __init__(self, server: str, prefix: str, sdk: int) -> None:
        self.sdk = sdk
        self.api = f"{server}{prefix}/chat"
        self.chat_id = f"chat-{secrets.token_hex(4)}"
        self.headers = {"cookie": f"adk_asgi_uid={secrets.token_urlsafe(24)}"}
        self.messages_url = f"{self.api}/{self.chat_id}/messages"

    def page(self, *steps: Any, reload: bool = False, **spec: Any) -> dict[str, Any]:
        """Drive a page: ``steps`` of the driver (a text is a ``send``), after loading the chat
        from ``GET /chat/{id}/messages`` when ``reload``; ``spec``: more of the driver's spec.
        Every whole response is checked by the SDK's own parser and state machine."""
        first = [{"reload": self.messages_url}] if reload else []
        report = drive_chat(
            {
                "api": self.api,
                "chatId": self.chat_id,
                "headers": self.headers,
                "sendAutomaticallyWhen": "toolCalls",
                "steps": first + [s if isinstance(s, dict) else {"send": s} for s in steps],
                "idleMs": IDLE_MS,
                **spec,
            },
            self.sdk,
        )
        assert not report["timeout"] and not report["loop"], report
        if reload:
            assert report["reloads"] == [
                {"url": self.messages_url, "status": 200, "messageCount": 2}
            ]
        answered = [i for i, r in enumerate(report["responses"]) if r["status"] == 200]
        bodies = [report["responses"][i]["sse"] for i in answered]
        continued = []
        for index in answered:
            last = report["requests"][index]["messages"][-1]
            continued.append(last if last["role"] == "assistant" else None)
        for result in validate_sse(bodies, self.sdk, messages=continued) if bodies else []:
            assert result["ok"], result
        return report

    def history(self) -> Any:
        response = httpx.get(self.messages_url, headers=self.headers, timeout=10)
        assert response.status_code == 200, response.text
        return response.json()


def profile(output: Any) -> dict[str, Any]:
    """The tool that asked: a server tool (``providerExecuted``), so the stock helper waits
    for the credential part only."""
    return {
        "type": "tool-get_my_profile",
        "toolCallId": "<call1>",
        "state": "output-available",
        "input": {},
        "output": output,
        "providerExecuted": True,
    }


def credential(tool_input: dict[str, Any], output: Any = None) -> dict[str, Any]:
    """The request's part: waiting (``output=None``), or answered with ``output``."""
    part: dict[str, Any] = {
        "type": "tool-adk_request_credential",
        "toolCallId": "<call2>",
        "state": "input-available",
        "input": tool_input,
    }
    if output is not None:
        part.update(state="output-available", output=output)
    return part


def oauth_request(provider: OAuthProvider, state: str) -> dict[str, Any]:
    """What the OAuth tool's request shows: ADK's ``AuthToolArguments`` (the consent URL it
    built, with its ``state``), without the client secret."""
    query = urlencode(
        {
            "response_type": "code",
            "client_id": CLIENT_ID,
            "redirect_uri": CALLBACK,
            "scope": "profile",
            "state": state,
            "access_type": "offline",
            "prompt": "consent",
        }
    )
    client = {
        "clientId": CLIENT_ID,
        "redirectUri": CALLBACK,
        "tokenEndpointAuthMethod": "client_secret_basic",
    }
    return {
        "functionCallId": "<call1>",
        "authConfig": {
            "authScheme": {
                "type": "oauth2",
                "flows": {
                    "authorizationCode": {
                        "scopes": SCOPES,
                        "authorizationUrl": provider.authorize_url,
                        "tokenUrl": provider.token_url,
                    }
                },
            },
            "rawAuthCredential": {"authType": "oauth2", "oauth2": client},
            "exchangedAuthCredential": {
                "authType": "oauth2",
                "oauth2": {
                    "clientId": CLIENT_ID,
                    "authUri": f"{provider.authorize_url}?{query}",
                    "state": state,
                    "redirectUri": CALLBACK,
                    "tokenEndpointAuthMethod": "client_secret_basic",
                },
            },
            "credentialKey": "profile",
        },
    }


API_KEY_REQUEST: dict[str, Any] = {
    "functionCallId": "<call1>",
    "authConfig": {
        "authScheme": {"type": "apiKey", "in": "header", "name": "x-api-key"},
        "credentialKey": "api-key",
    },
}


def consent(auth_uri: str) -> str:
    """What the browser does with the consent URL: the provider (auto-consenting) redirects it
    to the page's callback, whose URL is the authorization response."""
    response = httpx.get(auth_uri, timeout=10)
    assert response.status_code == 302, response.text
    location: str = response.headers["location"]
    return location


def asked(provider: OAuthProvider, browser: Browser) -> tuple[dict[str, Any], str]:
    """The first page: the chat asks for the credential and waits. Returns the request's part
    as the client shows it, and the redirect the browser got from the consent."""
    report = browser.page(ASK)
    assert outcome(report) == ("ready", None, 1)
    part = report["messages"][1]["parts"][2]
    oauth2 = part["input"]["authConfig"]["exchangedAuthCredential"]["oauth2"]
    assert normalized(report["messages"]) == said(
        ASK, STEP, profile(PENDING), credential(oauth_request(provider, oauth2["state"]))
    )
    # the stock helper looked once (at the end of the response) and sent nothing
    assert report["autoSendChecks"] == [False]
    # a reload shows the request as it streamed: the callback page can answer it
    assert browser.history() == report["messages"]
    redirect = consent(oauth2["authUri"])
    assert provider.authorize_requests == [dict(parse_qsl(urlsplit(oauth2["authUri"]).query))]
    assert provider.refused == []
    code = parse_qs(urlsplit(redirect).query)["code"][0]
    assert code in provider.codes and code not in provider.redeemed
    assert redirect == f"{CALLBACK}?{urlencode({'code': code, 'state': oauth2['state']})}"
    return part, redirect


def answer(part: dict[str, Any], output: dict[str, Any]) -> dict[str, Any]:
    """The page's ``addToolOutput`` for the request's part."""
    return {
        "addToolOutput": {
            "tool": "adk_request_credential",
            "toolCallId": part["toolCallId"],
            "output": output,
        }
    }


def shown_in_history(messages: list[dict[str, Any]], output: Any) -> list[dict[str, Any]]:
    """``messages`` as a reload shows them: the answered request's part shows ``output`` (what
    ADK was given, without the secret the client sent) instead of the client's answer."""
    shown = [dict(message) for message in messages]
    shown[1] = shown[1] | {"parts": [dict(part) for part in shown[1]["parts"]]}
    [part] = [p for p in shown[1]["parts"] if p["type"] == "tool-adk_request_credential"]
    part["output"] = output
    return shown


def state_of(part: dict[str, Any]) -> str:
    state: str = part["input"]["authConfig"]["exchangedAuthCredential"]["oauth2"]["state"]
    return state


@SSE
def test_oauth_consent_then_the_tool_calls_the_api_with_the_token(
    credentials_server: str, provider: OAuthProvider, sdk: int
) -> None:
    """The callback page answers the request; the same answer again, as soon as its response
    starts (a double submission) and after it (a replay), finds nothing open: the code is
    exchanged once."""
    browser = Browser(credentials_server, "/oauth", sdk)
    part, redirect = asked(provider, browser)

    report = browser.page(
        answer(part, {"authResponseUri": redirect}),
        {"resend": "last"},
        reload=True,
        duplicateRequests=[0],
    )
    assert outcome(report) == ("ready", None, 1)
    nothing_open = {"error": "this request answers no open tool call of the chat"}
    assert [(d["request"], d["status"], d["json"]) for d in report["duplicates"]] == [
        (0, 409, nothing_open)
    ]
    assert [(r["request"], r["status"], r["json"]) for r in report["resends"]] == [
        (0, 409, nothing_open)
    ]
    # the stock helper sent the answered step (and looked again, in vain, at the answer)
    assert report["autoSendChecks"] == [True, False]
    [sent] = report["requests"]
    assert (sent["trigger"], sent["messageId"]) == ("submit-message", report["messages"][1]["id"])
    assert sent["messages"][-1]["parts"][2] == part | {
        "state": "output-available",
        "output": {"authResponseUri": redirect},
    }
    # the answer streamed into the same message: the tool's real output, then the model's text
    request = oauth_request(provider, state_of(part))
    assert normalized(report["messages"]) == said(
        ASK,
        STEP,
        profile(USER),
        credential(request, {"authResponseUri": redirect}),
        STEP,
        text(GREETING),
    )

    # ADK exchanged the code once (its client authenticated, the redirect URI repeated), and
    # the tool called the API once, with the token it got
    code = parse_qs(urlsplit(redirect).query)["code"][0]
    assert provider.token_requests == [
        {
            "grant_type": "authorization_code",
            "redirect_uri": CALLBACK,
            "code": code,
            "client_auth": "basic",
        }
    ]
    [token] = provider.api_calls
    assert provider.tokens.get(token or "") == "profile"
    assert provider.refused == []

    # a reload shows what the client shows, but the answer's part shows the request it
    # answered, not the redirect (its code)
    assert browser.history() == shown_in_history(report["messages"], part["input"]["authConfig"])


@SSE
def test_api_key_asked_and_used_in_one_page(
    credentials_server: str, provider: OAuthProvider, sdk: int
) -> None:
    """The page asks for the key in the request's part and answers it there: one page, the
    stock helper sends the answer as soon as the part has it."""
    browser = Browser(credentials_server, "/api-key", sdk)
    report = browser.page(
        ASK, {"addToolOutput": {"tool": "adk_request_credential", "output": {"apiKey": API_KEY}}}
    )
    assert outcome(report) == ("ready", None, 2)
    assert report["autoSendChecks"] == [False, True, False]
    [_, sent] = report["requests"]
    assert sent["trigger"] == "submit-message"
    assert normalized(sent["messages"]) == said(
        ASK, STEP, profile(PENDING), credential(API_KEY_REQUEST, {"apiKey": API_KEY})
    )
    assert normalized(report["messages"]) == said(
        ASK,
        STEP,
        profile(USER),
        credential(API_KEY_REQUEST, {"apiKey": API_KEY}),
        STEP,
        text(GREETING),
    )
    # the tool called the API once, with the key; nothing was exchanged
    assert provider.api_calls == [API_KEY]
    assert (provider.token_requests, provider.refused) == ([], [])
    # a reload shows the request the key answered, without the key
    answered = API_KEY_REQUEST["authConfig"] | {"exchangedAuthCredential": {"authType": "apiKey"}}
    assert browser.history() == shown_in_history(report["messages"], answered)


@SSE
def test_a_forged_state_is_refused_and_the_chat_shows_why(
    credentials_server: str, provider: OAuthProvider, sdk: int
) -> None:
    """The callback page answers with a redirect whose ``state`` is not the one ADK issued for
    this request (another consent's: a login CSRF). ADK itself would exchange it; the bridge
    answers ``409`` with its reason, which the stock transport makes the chat's error, and
    nothing runs: no exchange, no API call, the request still open. The true answer, from the
    next page, still goes through."""
    browser = Browser(credentials_server, "/oauth", sdk)
    part, redirect = asked(provider, browser)
    waiting = browser.history()
    forged = redirect.replace("state=", "state=forged")

    report = browser.page(answer(part, {"authResponseUri": forged}), reload=True)
    reason = (
        "the authorization response does not belong to credential request "
        f"{part['toolCallId']!r}: its state is not the one issued"
    )
    body = json.dumps({"error": reason}, separators=(",", ":"))
    assert outcome(report) == ("error", body, 1)  # the response's body, as the chat shows it
    # ai@7's transport throws its APICallError (same message), ai@6's a plain Error
    assert report["errorName"] == {6: "Error", 7: "AI_APICallError"}[sdk]
    [response] = report["responses"]
    assert (response["status"], response["contentType"], response["body"]) == (
        409,
        "application/json",
        body,
    )
    # the client keeps its answer on the part; the server stored nothing of it
    assert normalized(report["messages"]) == said(
        ASK,
        STEP,
        profile(PENDING),
        credential(oauth_request(provider, state_of(part)), {"authResponseUri": forged}),
    )
    assert (provider.token_requests, provider.api_calls, provider.refused) == ([], [], [])
    assert browser.history() == waiting

    # the request is as it was: the true redirect answers it from the next page
    report = browser.page(answer(part, {"authResponseUri": redirect}), reload=True)
    assert outcome(report) == ("ready", None, 1)
    assert normalized(report["messages"]) == said(
        ASK,
        STEP,
        profile(USER),
        credential(oauth_request(provider, state_of(part)), {"authResponseUri": redirect}),
        STEP,
        text(GREETING),
    )
    code = parse_qs(urlsplit(redirect).query)["code"][0]
    assert [r["code"] for r in provider.token_requests] == [code]
    [token] = provider.api_calls
    assert provider.tokens.get(token or "") == "profile"
    assert provider.refused == []
