"""The rules for the values a client names things by: chat ids, the other ids it sends, media
types. Each is a pattern (matched whole) and the sentence a refusal quotes, so the client is
told the rule it broke. (Checked where a request is taken: :mod:`adk_asgi.serving.checks`, the
routes.)"""

from __future__ import annotations

import re
from typing import Final

CHAT_ID: Final = re.compile(r"\A(?![A-Za-z]:)(?!\.\.?\Z)(?!user\Z)[A-Za-z0-9_.:@-]{1,128}\Z")
"""A chat id (the ADK session id): short, safe in a URL path and a database key, and one
that every ADK artifact service takes as a session id: not a letter then ``:`` (a Windows
drive to them), not ``.`` or ``..`` (a path's parent), not ``user`` (the flat stores' name
for a user's own files). Such an id made a chat whose uploads stayed inline, whose files
were a 500 and which could never be deleted. Anchored with ``\\A…\\Z``, so ``match`` takes
the whole string too (``$`` also matches before a final newline: ``"abc\\n"`` passed); the
package calls ``fullmatch`` all the same."""
CHAT_ID_RULE: Final = (
    "a chat id is 1-128 letters, digits or _.:@-, not a letter then ':', '.', '..' or 'user'"
)
_TOKEN: Final = r"[A-Za-z0-9!#$%&'*+.^_`|~-]+"
_QUOTED: Final = r'"[^"\\\x00-\x1f\x7f]*"'
MEDIA_TYPE: Final = re.compile(
    rf"\A{_TOKEN}/{_TOKEN}(?:[ \t]*;[ \t]*{_TOKEN}=(?:{_TOKEN}|{_QUOTED}))*\Z"
)
"""A media type as HTTP writes one (RFC 9110: ``type/subtype``, then ``;name=value``
parameters). A file part's is stored and becomes the ``Content-Type`` of the file when it is
served: ``图像/png`` made that a 500, and a CR/LF reached the ASGI server as a header."""
MAX_MEDIA_TYPE: Final = 255
MEDIA_TYPE_RULE: Final = (
    f"a media type is type/subtype (RFC 9110), ASCII, at most {MAX_MEDIA_TYPE} characters"
)


def is_media_type(value: str) -> bool:
    """Whether ``value`` is a media type the package stores and serves (:data:`MEDIA_TYPE`)."""
    return len(value) <= MAX_MEDIA_TYPE and value.isascii() and MEDIA_TYPE.match(value) is not None


CLIENT_ID: Final = re.compile(r"[^\x00-\x1f\x7f]{1,256}")
"""Any other id the client sends (a message, a tool call, an approval, a live ``requestId``):
echoed in frames and history and stored in the session, so bounded and free of control
characters. Matched whole (``fullmatch``)."""
CLIENT_ID_RULE: Final = "an id is 1-256 characters, none of them a control character"
