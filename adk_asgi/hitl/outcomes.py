"""The answers the bridge gives calls itself, and the user's reason in a confirmation (sans-I/O).

Kept apart from :mod:`.pending`, which reads a chat's calls, so that module stays one job;
:mod:`.pending` re-exports them, where the rest of the package imports them from.
"""

from __future__ import annotations

from typing import Any, Final

REJECTED: Final = {"error": "This tool call is rejected."}
"""ADK's own answer to a denied confirmation; the bridge answers denied client tools the same
way, so the model reads one shape for every denial."""
MOVED_ON: Final = {"error": "The user moved on before the browser answered."}
"""The result of a browser tool the user left unanswered by sending a new message."""
EXPIRED: Final = {"error": "The browser did not answer in time."}
"""The result of a browser tool whose wait ended while nobody was connected."""
INTERRUPTED: Final = {
    "error": "The server stopped while this tool ran; it is not known whether it finished."
}
"""The result of a call a crashed server left without one (it is never run again)."""
APPROVAL_EXPIRED: Final = "Not run: the approval was not answered in time."
APPROVAL_MOVED_ON: Final = "Not run: a new message was sent before the approval was answered."
"""What the client is shown for an approval closed without the user's answer (its card ends
as ``output-error`` with this text, not as the user's own ``output-denied``); the model reads
ADK's rejection for these as for a denial."""
INPUT_MOVED_ON: Final = {"error": "Not answered: a new message was sent first."}
"""The result of a request for the user's input (:mod:`.interrupts`) left unanswered by a new
message: the old question is closed (a workflow starts over from the new message; the model
reads this as the answer to its ``request_input`` call)."""
NEEDS_CONFIRMATION: Final = {
    "error": "This tool call requires confirmation, please approve or reject."
}
"""ADK's placeholder result of a call waiting for the user's confirmation."""


def unanswered(expired: bool) -> dict[str, str]:
    """The result of a question for the user closed unanswered: the user moved on, or (a live
    connection's) its wait ran out."""
    return EXPIRED if expired else INPUT_MOVED_ON


def reason_payload(reason: str) -> dict[str, str]:
    """The payload a confirmation answer carries for the user's reason, when the tool asked
    for no payload of its own (the tool reads it as ``tool_confirmation.payload``)."""
    return {"reason": reason}


def reason_of(payload: Any) -> str | None:
    """The user's reason in a confirmation answer's payload (:func:`reason_payload`)."""
    if isinstance(payload, dict) and set(payload) == {"reason"}:
        reason = payload["reason"]
        return reason if isinstance(reason, str) else None
    return None
