"""``adk_asgi.hitl.credentials`` on plain values: the answers the ASGI tests (tests/asgi/
test_credentials.py) do not reach through a provider — HTTP schemes, ADK's other answer forms,
a request ADK issued without a state — and what the client is shown of a request."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import types

from adk_asgi.errors import ClientError
from adk_asgi.hitl.credentials import (
    REQUEST_CREDENTIAL,
    asks_credentials,
    check_answer,
    shown_input,
)
from adk_asgi.hitl.pending import ToolCall
from adk_asgi.wire.messages import ToolPart

CALLBACK = "https://app.test/cb"
AUTH_URI = "https://idp.test/authorize?response_type=code&client_id=c&state=S1"


def request(scheme: dict[str, Any], exchanged: dict[str, Any] | None = None) -> ToolCall:
    config: dict[str, Any] = {"authScheme": scheme, "credentialKey": "k"}
    if exchanged is not None:
        config["exchangedAuthCredential"] = exchanged
    args = {"functionCallId": "call_1", "authConfig": config}
    return ToolCall("cred", REQUEST_CREDENTIAL, args, "inv", "msg1", long_running=True)


def answer(output: Any) -> ToolPart:
    return ToolPart(
        type="tool-adk_request_credential",
        tool_call_id="cred",
        state="output-available",
        output=output,
    )


BEARER = request({"type": "http", "scheme": "bearer"})
BASIC = request({"type": "http", "scheme": "basic"})
API_KEY = request({"type": "apiKey", "in": "header", "name": "x-api-key"})
OAUTH_SCHEME = {
    "type": "oauth2",
    "flows": {
        "authorizationCode": {
            "authorizationUrl": "https://idp.test/authorize",
            "tokenUrl": "https://idp.test/token",
            "scopes": {},
        }
    },
}


def oauth(**oauth2: Any) -> ToolCall:
    issued = {"clientId": "c", "authUri": AUTH_URI, "redirectUri": CALLBACK} | oauth2
    return request(OAUTH_SCHEME, {"authType": "oauth2", "oauth2": issued})


def test_an_http_bearer_token_or_basic_credentials() -> None:
    assert check_answer(answer({"token": "t"}), BEARER)["exchangedAuthCredential"] == {
        "authType": "http",
        "http": {"scheme": "bearer", "credentials": {"token": "t"}},
    }
    basic = check_answer(answer({"username": "ada", "password": "pw"}), BASIC)
    assert basic["exchangedAuthCredential"]["http"] == {
        "scheme": "basic",
        "credentials": {"username": "ada", "password": "pw"},
    }
    with pytest.raises(ClientError) as refused:
        check_answer(answer({"username": "ada", "token": "t"}), BEARER)
    assert (refused.value.status, refused.value.reason) == (
        422,
        "the answer to credential request 'cred': give a token, or a username and a password",
    )


def test_adk_answer_forms_in_either_spelling() -> None:
    """ADK's models read camelCase and snake_case: so does the bridge."""
    credential = {"auth_type": "apiKey", "api_key": "k1"}
    for output in [credential, {"exchanged_auth_credential": credential}]:
        config = check_answer(answer(output), API_KEY)
        assert config == {
            "authScheme": {"type": "apiKey", "in": "header", "name": "x-api-key"},
            "credentialKey": "k",
            "exchangedAuthCredential": {"authType": "apiKey", "apiKey": "k1"},
        }
    redirect = f"{CALLBACK}?code=abc&state=S1"
    adk = {"exchangedAuthCredential": {"oauth2": {"auth_response_uri": redirect}}}
    oauth2 = check_answer(answer(adk), oauth(state="S1"))["exchangedAuthCredential"]["oauth2"]
    assert oauth2["authResponseUri"] == redirect


def test_the_answer_keeps_what_adk_issued() -> None:
    """The state and PKCE verifier ADK issued go back to it, whatever the client sends."""
    call = oauth(state="S1", codeVerifier="v" * 48, codeChallengeMethod="S256")
    config = check_answer(answer({"authResponseUri": f"{CALLBACK}?code=abc&state=S1#"}), call)
    assert config["exchangedAuthCredential"]["oauth2"] == {
        "clientId": "c",
        "authUri": AUTH_URI,
        "redirectUri": CALLBACK,
        "state": "S1",
        "codeVerifier": "v" * 48,
        "codeChallengeMethod": "S256",
        "authResponseUri": f"{CALLBACK}?code=abc&state=S1",  # the empty fragment dropped
    }


@pytest.mark.parametrize(
    ("returned", "status"),
    [("state=S1", 200), ("state=S2", 409), ("", 409), ("state=S1&state=S1", 409)],
)
def test_the_returned_state_must_be_the_issued_one_exactly(returned: str, status: int) -> None:
    output = answer({"authResponseUri": f"{CALLBACK}?code=abc&{returned}"})
    if status == 200:
        check_answer(output, oauth(state="S1"))
        return
    with pytest.raises(ClientError) as refused:
        check_answer(output, oauth(state="S1"))
    assert refused.value.status == status


def test_a_request_issued_without_a_state_takes_the_redirect_as_it_is() -> None:
    """ADK issues no state when the tool gave its own consent URL (or authlib is missing):
    there is nothing to compare, and the provider's redirect is passed on."""
    config = check_answer(answer({"authResponseUri": f"{CALLBACK}?code=abc"}), oauth())
    assert config["exchangedAuthCredential"]["oauth2"]["authResponseUri"] == f"{CALLBACK}?code=abc"


def test_a_request_with_no_consent_url_or_of_another_scheme_cannot_be_answered() -> None:
    for call, why in [
        (request(OAUTH_SCHEME), "the request carries no consent URL to answer"),
        (request({"type": "mutualTLS"}), "the bridge cannot collect a 'mutualTLS' credential"),
    ]:
        with pytest.raises(ClientError) as refused:
            check_answer(answer({"apiKey": "k"}), call)
        assert refused.value.reason == f"the answer to credential request 'cred': {why}"


def test_the_client_is_shown_the_request_without_its_secrets() -> None:
    call = oauth(state="S1", codeVerifier="v" * 48, codeChallengeMethod="S256")
    shown = shown_input(REQUEST_CREDENTIAL, call.args)
    assert shown["authConfig"]["exchangedAuthCredential"]["oauth2"] == {
        "clientId": "c",
        "authUri": AUTH_URI,
        "redirectUri": CALLBACK,
        "state": "S1",
        "codeChallengeMethod": "S256",
    }
    assert "codeVerifier" in call.args["authConfig"]["exchangedAuthCredential"]["oauth2"]
    assert shown_input("get_weather", {"codeVerifier": "x"}) == {"codeVerifier": "x"}


def test_a_tools_credential_request_is_told_from_other_content() -> None:
    def call(name: str) -> types.Part:
        return types.Part(function_call=types.FunctionCall(id="x", name=name, args={}))

    assert asks_credentials(types.Content(role="user", parts=[call(REQUEST_CREDENTIAL)]))
    assert not asks_credentials(types.Content(role="user", parts=[call("get_weather")]))
    assert not asks_credentials(types.Content(role="user", parts=[]))
    mixed = [call(REQUEST_CREDENTIAL), types.Part(text="hi")]
    assert not asks_credentials(types.Content(role="model", parts=mixed))
