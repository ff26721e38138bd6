"""One client-error type (issue 25): every "the client's fault" exception is a
:class:`~adk_asgi.errors.ClientError` carrying its status hint, so a transport catches one type,
and only the transports turn it into a response (:func:`adk_asgi.serving.refusals.json_refusal`)."""

from __future__ import annotations

import msgspec

import adk_asgi
from adk_asgi.convert.translate import TranslationError
from adk_asgi.errors import AdkAsgiError, ClientError
from adk_asgi.hitl.continuation import Conflict
from adk_asgi.serving.checks import FrameRefused
from adk_asgi.serving.identity import Unauthorized
from adk_asgi.serving.refusals import json_refusal
from adk_asgi.wire.decoding import BadJson
from adk_asgi.wire.messages import RequestError


def test_every_client_fault_is_a_client_error_with_its_status_hint() -> None:
    refusals = [
        Conflict("approval 'a1' was already answered"),
        RequestError("the request body has no 'id'"),
        TranslationError("the user message has no text or file to send"),
        BadJson("a string holds NUL"),
        FrameRefused("r1", "requestId: bad"),
        Unauthorized(),
        Unauthorized("token expired"),
        ClientError(413, "the request body is larger than 10 bytes"),
    ]
    assert all(isinstance(error, ClientError) for error in refusals)
    assert [(type(e).__name__, e.status_hint, e.reason, str(e)) for e in refusals] == [
        (
            "Conflict",
            409,
            "approval 'a1' was already answered",
            "approval 'a1' was already answered",
        ),
        ("RequestError", 400, "the request body has no 'id'", "the request body has no 'id'"),
        (
            "TranslationError",
            400,
            "the user message has no text or file to send",
            "the user message has no text or file to send",
        ),
        ("BadJson", 400, "a string holds NUL", "a string holds NUL"),
        ("FrameRefused", 400, "requestId: bad", "requestId: bad"),
        ("Unauthorized", 401, "authentication required", "authentication required"),
        ("Unauthorized", 401, "token expired", "token expired"),
        (
            "ClientError",
            413,
            "the request body is larger than 10 bytes",
            "the request body is larger than 10 bytes",
        ),
    ]


def test_the_client_errors_stay_value_errors_where_they_were() -> None:
    for error in (Conflict("x"), RequestError("x"), TranslationError("x"), BadJson("x")):
        assert isinstance(error, ValueError)


def test_a_client_error_keeps_status_as_the_older_name_of_its_hint() -> None:
    assert ClientError(422, "x").status == 422


def test_json_refusal_sends_the_hint_and_the_reason_as_json() -> None:
    response = json_refusal(Conflict("this answer was already taken"), {"set-cookie": "a=b"})
    assert response.status_code == 409
    assert msgspec.json.decode(bytes(response.body)) == {"error": "this answer was already taken"}
    assert (response.headers["content-type"], response.headers["set-cookie"]) == (
        "application/json",
        "a=b",
    )


def test_the_package_exports_its_error_types_and_the_stream_store() -> None:
    assert {"AdkAsgiError", "ClientError", "StreamStore"} <= set(adk_asgi.__all__)
    assert (adk_asgi.AdkAsgiError, adk_asgi.ClientError) == (AdkAsgiError, ClientError)
    assert adk_asgi.StreamStore.__module__ == "adk_asgi.stores.resumable"
