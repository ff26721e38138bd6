"""What a message costs when its session is read once, against twice, on PostgreSQL.

``python -m bench.session_reads [--rounds R] [--chats C]``

A request reads its chat's session for the bridge's checks; ADK's ``Runner`` used to read it
again as the run started (every event of the chat), and is now handed the object the checks
read (``adk_asgi/serving/session_handover.py``). Each row sends C messages, each the last of a chat
of T earlier turns (0, 10, 40), to an ``AdkApp`` on ADK's ``DatabaseSessionService``, called in
this process through ``httpx.ASGITransport``; the *read twice* row is the same app with the
hand-over switched off. Rounds alternate the two. Printed per chat length: the session reads
per message (counted), the process's CPU per message, and the ratio. A throw-away PostgreSQL
cluster is started from Debian's binaries (``tests/backing_services.py``).
"""
