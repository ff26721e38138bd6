"""The routes beside ``POST /chat`` and ``WS /live``: what a page reads and manages.

A chat's history and its resumable stream (:mod:`.reads`), a user's chats for a sidebar
(:mod:`.chats`) and the uploads a chat shows (:mod:`.files`). It may import every layer below
the application (:mod:`adk_asgi.app`), the SSE transport included for a resumed stream.

Internal: not an import path of the public API (docs/reference.md#import-paths).
"""
