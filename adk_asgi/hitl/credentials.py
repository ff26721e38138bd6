"""ADK's requests for the user's credentials (``adk_request_credential``), checked (sans-I/O).

A tool with an ``auth_config`` (``AuthenticatedFunctionTool``, or a tool that calls
``tool_context.request_credential``), and a workflow node with one, ask the user through a
long-running ``adk_request_credential`` call whose args are ADK's ``AuthToolArguments``:
``{"functionCallId", "authConfig": {"authScheme", "rawAuthCredential"?,
"exchangedAuthCredential"?, "credentialKey"}}``. For OAuth2 and OpenID Connect ADK has already
built the consent URL (``exchangedAuthCredential.oauth2.authUri``, with ``state`` and, for a
public client, a PKCE challenge); ADK then waits for a function response holding the same
``AuthConfig`` with the provider's redirect filled in (``authResponseUri``, ``redirectUri``), or
with the key for an API key, and exchanges the code for a token itself (authlib, on the
server: the client secret never leaves it).

The client sees the call as a ``tool-adk_request_credential`` part and answers it with
``addToolOutput``, like a browser tool (docs/credentials.md). Three things make it unlike one:

* **The answer is a credential, and ADK checks little of it.** For a tool (not a workflow node)
  ADK compares no OAuth ``state``: whatever authorization response comes back is exchanged, so a
  page tricked into sending someone else's redirect would bind their account to this chat
  (login CSRF). A malformed answer is dropped with a log line and the run goes on as if nothing
  was answered (a tool), or fails the run and every later one (a node). So
  :func:`check_answer` refuses what does not fit, before anything is stored: the state of the
  returned redirect must be the one ADK issued (``409``), its shape must be right (``422``).
* **ADK's answer is rebuilt on the server.** The client sends only what the user produced (the
  redirect URL, or the key); the ``AuthConfig`` ADK gets is the one it issued, read from the
  session, with those fields set. Nothing else the client says reaches ADK: not a state, not a
  PKCE verifier, not a token it would like used instead of the exchange.
* **Some of the request is secret.** ADK keeps a public client's PKCE verifier in the call's
  args; its own web server strips credential secrets before showing a request, and
  :func:`shown_input` / :func:`shown_output` do the same for the part's input and, in history,
  for the answer.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal
from urllib.parse import parse_qs, urlsplit, urlunsplit

from google.adk.auth.auth_tool import AuthConfig
from google.genai import types
from pydantic import ValidationError

from adk_asgi.adk.private import CREDENTIAL_SECRET_KEYS
from adk_asgi.errors import ClientError
from adk_asgi.hitl.interrupts import REQUEST_CREDENTIAL
from adk_asgi.hitl.pending import ToolCall
from adk_asgi.wire.messages import ToolPart

__all__ = [
    "REQUEST_CREDENTIAL",
    "asks_credentials",
    "check_answer",
    "shown_input",
    "shown_output",
]

Kind = Literal["oauth2", "apiKey", "http"]
_OAUTH_SCHEMES: Final = frozenset({"oauth2", "openIdConnect"})
_SIMPLE_KEYS: Final[dict[Kind, frozenset[str]]] = {
    "oauth2": frozenset({"authResponseUri", "redirectUri"}),
    "apiKey": frozenset({"apiKey"}),
    "http": frozenset({"token", "username", "password"}),
}
"""The keys of the short answer (docs/credentials.md), per kind of request."""
_NOT_FROM_CLIENT: Final = frozenset(
    {"accessToken", "refreshToken", "idToken", "authCode", "codeVerifier", "clientSecret"}
)
"""What an answer in ADK's own form may not carry: the server makes tokens from the
authorization response itself, with the verifier and secret it kept."""
MAX_URI: Final = 8192
"""The longest redirect URL taken (browsers and servers cap URLs near there)."""


def asks_credentials(content: types.Content) -> bool:
    """Whether ``content`` is a credential request of a tool: ADK gives that event the role of
    the tool's response (``"user"``), not the model's, yet it belongs in the assistant's message,
    in the step of the call that asked, where the stream shows it."""
    parts = content.parts or []
    return bool(parts) and all(
        p.function_call is not None and p.function_call.name == REQUEST_CREDENTIAL for p in parts
    )


def shown_input(name: str, args: Mapping[str, Any]) -> Any:
    """A call's args as the client is shown them (the part's ``input``): for a credential
    request, without the secrets ADK's own web server strips (a PKCE verifier, keys, tokens);
    any other call's as they are."""
    if name != REQUEST_CREDENTIAL:
        return args
    return _redacted(dict(args))


def shown_output(name: str, result: Any) -> Any:
    """A call's result as history shows it (the part's ``output``): for a credential request,
    the ``AuthConfig`` ADK was given, without the redirect URL's code, the key or any token."""
    if name != REQUEST_CREDENTIAL:
        return result
    return _redacted(result)


def _redacted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items() if k not in CREDENTIAL_SECRET_KEYS}
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    return value


@dataclass(frozen=True, slots=True)
class _Answer:
    """What the client's answer says, whichever form it came in."""

    auth_response_uri: str | None = None
    redirect_uri: str | None = None
    state: str | None = None
    api_key: str | None = None
    token: str | None = None
    username: str | None = None
    password: str | None = None


def check_answer(part: ToolPart, call: ToolCall) -> dict[str, Any]:
    """The function response ADK gets for the client's answer to credential request ``call``
    (an open ``adk_request_credential`` call of this chat; the continuation checker made sure
    of that), or a refusal: :class:`~adk_asgi.errors.ClientError` ``409`` when the redirect's
    OAuth state is not the one issued (another consent's, forged or stale), ``422`` when the
    answer does not fit the request.

    The answer is ``part.output``: ``{"authResponseUri": <the URL the provider redirected to>,
    "redirectUri"?: <the page's callback, when ADK named none>}`` for OAuth2 / OpenID Connect,
    ``{"apiKey": …}`` for an API key, ``{"token": …}`` or ``{"username": …, "password": …}``
    for HTTP; or ADK's own answer, the ``AuthConfig`` (or its ``exchangedAuthCredential``)
    with those fields set, as ADK's web UI sends it.
    """
    where = f"the answer to credential request {call.id!r}"
    if part.state != "output-available":
        raise ClientError(
            422,
            f"{where}: a credential request is answered with an output (to go on without it, "
            "send a new message)",
        )
    request = call.args.get("authConfig")
    if not isinstance(request, dict):
        raise ClientError(422, f"{where}: the request carries no authConfig")
    kind = _kind(request, where)
    answer = _read(part.output, kind, where)
    config = copy.deepcopy(request)
    if kind == "oauth2":
        exchanged = config["exchangedAuthCredential"]
        exchanged["oauth2"] |= _oauth(answer, exchanged["oauth2"], where, call.id)
    elif kind == "apiKey":
        if not answer.api_key:
            raise ClientError(422, f"{where}: apiKey: the key is missing")
        config["exchangedAuthCredential"] = {"authType": "apiKey", "apiKey": answer.api_key}
    else:
        config["exchangedAuthCredential"] = _http(answer, request, where)
    try:  # what ADK will parse; one it cannot is dropped (a tool) or fails the run (a node)
        AuthConfig.model_validate(config)
    except ValidationError as error:
        raise ClientError(
            422, f"{where}: ADK cannot read it ({error.errors()[0]['msg']})"
        ) from None
    return config


def _kind(request: dict[str, Any], where: str) -> Kind:
    """What the request asks the user for."""
    scheme = request.get("authScheme") or {}
    scheme_type = scheme.get("type") if isinstance(scheme, dict) else None
    oauth2 = (request.get("exchangedAuthCredential") or {}).get("oauth2") or {}
    if scheme_type in _OAUTH_SCHEMES or oauth2:
        if not oauth2.get("authUri"):
            raise ClientError(422, f"{where}: the request carries no consent URL to answer")
        return "oauth2"
    if scheme_type in ("apiKey", "http"):
        return "apiKey" if scheme_type == "apiKey" else "http"
    raise ClientError(422, f"{where}: the bridge cannot collect a {scheme_type!r} credential")


def _read(output: Any, kind: Kind, where: str) -> _Answer:
    """The answer in the short form or in ADK's (an ``AuthConfig`` or an ``AuthCredential``)."""
    if not isinstance(output, dict):
        raise ClientError(422, f"{where}: it must be an object")
    credential = output.get("exchangedAuthCredential", output.get("exchanged_auth_credential"))
    if credential is None and ("authType" in output or "auth_type" in output):
        credential = output
    if credential is None:
        unknown = sorted(set(output) - _SIMPLE_KEYS[kind])
        if unknown:
            expected = ", ".join(sorted(_SIMPLE_KEYS[kind]))
            raise ClientError(422, f"{where}: unknown key {unknown[0]!r} (expected {expected})")
        return _Answer(
            auth_response_uri=_text(output, "authResponseUri", where),
            redirect_uri=_text(output, "redirectUri", where),
            api_key=_text(output, "apiKey", where),
            token=_text(output, "token", where),
            username=_text(output, "username", where),
            password=_text(output, "password", where),
        )
    if not isinstance(credential, dict):
        raise ClientError(422, f"{where}: exchangedAuthCredential must be an object")
    return _read_credential(credential, kind, where)


def _read_credential(credential: dict[str, Any], kind: Kind, where: str) -> _Answer:
    auth_type = _text(credential, "authType", where)
    if auth_type is not None and not _fits(auth_type, kind):
        raise ClientError(422, f"{where}: authType {auth_type!r} does not answer a {kind} request")
    oauth2 = _object(credential, "oauth2", where)
    http = _object(credential, "http", where)
    http_credentials = _object(http, "credentials", where)
    taken = sorted(k for k in oauth2 if _camel(k) in _NOT_FROM_CLIENT)
    if taken:
        raise ClientError(
            422,
            f"{where}: oauth2.{taken[0]} is not taken from the client (send the authorization "
            "response; the server exchanges it)",
        )
    return _Answer(
        auth_response_uri=_text(oauth2, "authResponseUri", where),
        redirect_uri=_text(oauth2, "redirectUri", where),
        state=_text(oauth2, "state", where),
        api_key=_text(credential, "apiKey", where),
        token=_text(http_credentials, "token", where),
        username=_text(http_credentials, "username", where),
        password=_text(http_credentials, "password", where),
    )


def _fits(auth_type: str, kind: Kind) -> bool:
    return auth_type in _OAUTH_SCHEMES if kind == "oauth2" else auth_type == kind


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word.title() for word in rest)


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def _text(source: Mapping[str, Any], key: str, where: str) -> str | None:
    """``source[key]`` (camelCase, or snake_case as ADK's models also read it), a string."""
    value = source.get(key, source.get(_snake(key)))
    if value is not None and not isinstance(value, str):
        raise ClientError(422, f"{where}: {key} must be a string")
    return value


def _object(source: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    value = source.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ClientError(422, f"{where}: {key} must be an object")
    return value


def _oauth(answer: _Answer, issued: dict[str, Any], where: str, call_id: str) -> dict[str, str]:
    """The fields of ``exchangedAuthCredential.oauth2`` the answer sets, once it is checked
    against what ADK issued (``issued``: its ``state``, its ``redirectUri`` if it named one)."""
    url = answer.auth_response_uri
    if not url:
        raise ClientError(422, f"{where}: authResponseUri: the provider's redirect is missing")
    if len(url) > MAX_URI:
        raise ClientError(422, f"{where}: authResponseUri is longer than {MAX_URI} characters")
    redirect_uri = _redirect_uri(answer, issued, where)
    parts = urlsplit(url)
    if parts.fragment:
        # authlib reads a fragment as an implicit grant's token: the server makes the token
        raise ClientError(422, f"{where}: authResponseUri must not carry a #fragment")
    target = _endpoint(redirect_uri)
    if target is None or _endpoint(url) != target:
        raise ClientError(
            422, f"{where}: authResponseUri is not a redirect to redirectUri {redirect_uri!r}"
        )
    query = parse_qs(parts.query, keep_blank_values=True)
    state = issued.get("state")
    returned = query.get("state", [])
    if (state is not None and returned != [state]) or answer.state not in (None, state):
        raise ClientError(
            409,
            f"the authorization response does not belong to credential request {call_id!r}: "
            "its state is not the one issued",
        )
    if "error" in query:
        reason = " ".join(query["error"] + query.get("error_description", []))
        raise ClientError(422, f"{where}: the provider refused the authorization: {reason}")
    if len(query.get("code", [])) != 1 or not query["code"][0]:
        raise ClientError(422, f"{where}: authResponseUri carries no authorization code")
    clean = urlunsplit(parts._replace(fragment=""))  # no trailing "#" either (see above)
    return {"authResponseUri": clean, "redirectUri": redirect_uri}


def _redirect_uri(answer: _Answer, issued: dict[str, Any], where: str) -> str:
    """Where the provider sends the user back: ADK's if it named one (the consent URL carries
    it), else the page's own callback, which the page added to the consent URL and the token
    request must repeat."""
    named = issued.get("redirectUri")
    if isinstance(named, str) and named:
        if answer.redirect_uri not in (None, named):
            raise ClientError(422, f"{where}: redirectUri: the request named {named!r}")
        return named
    if not answer.redirect_uri:
        raise ClientError(
            422, f"{where}: redirectUri: the request names none, so the answer must give it"
        )
    if urlsplit(answer.redirect_uri).fragment or _endpoint(answer.redirect_uri) is None:
        raise ClientError(422, f"{where}: redirectUri must be an http(s) URL without #fragment")
    return answer.redirect_uri


def _endpoint(url: str) -> tuple[str, str, str] | None:
    """A URL's scheme, host and path (``None`` if it is not an absolute http(s) URL)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError on a malformed port)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return parts.scheme.lower(), parts.netloc.lower(), parts.path or "/"


def _http(answer: _Answer, request: dict[str, Any], where: str) -> dict[str, Any]:
    """``exchangedAuthCredential`` for an HTTP scheme: a bearer token, or a user and password."""
    scheme = str((request.get("authScheme") or {}).get("scheme") or "bearer").lower()
    if answer.token and not (answer.username or answer.password):
        credentials: dict[str, str] = {"token": answer.token}
    elif answer.username and answer.password and not answer.token:
        credentials = {"username": answer.username, "password": answer.password}
    else:
        raise ClientError(422, f"{where}: give a token, or a username and a password")
    return {"authType": "http", "http": {"scheme": scheme, "credentials": credentials}}
