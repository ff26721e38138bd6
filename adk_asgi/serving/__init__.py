"""What both transports do with a request before and around a run.

The app's services as one object (:mod:`.services`), who asks (:mod:`.identity`) and from which
page (:mod:`.origins`), what a request may carry (:mod:`.checks`, :mod:`.file_urls`,
:mod:`.request_state`), the user's answers claimed and recorded (:mod:`.answers`), a message
sent again (:mod:`.again`), the session read once and handed to the runner
(:mod:`.session_handover`), pace and load, and a refusal as an HTTP response
(:mod:`.refusals`). It may import every lower layer (:mod:`adk_asgi.stores`,
:mod:`adk_asgi.convert`, :mod:`adk_asgi.hitl`, :mod:`adk_asgi.wire`), never a transport
(:mod:`adk_asgi.sse`, :mod:`adk_asgi.live`).

Internal: not an import path of the public API (docs/reference.md#import-paths).
"""
