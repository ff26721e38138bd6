"""The server's truth about tool calls: what waits for the user, and what an answer may say.

A chat's calls are read from its ADK session events (:mod:`.pending`): which wait for an
approval, a browser's result or an input, and which were answered. What the bridge records
beside ADK's own fields (:mod:`.bookkeeping`), ADK 2's input requests (:mod:`.interrupts`;
inside a workflow run as a tool, :mod:`.node_tools`),
the agent tree's tools (:mod:`.policy`, :mod:`.tools`), credentials (:mod:`.credentials`) and a
continuation checked against that truth (:mod:`.continuation`) live here. Nothing the client
says about a call is believed before this layer agrees. Sans-I/O: it may import
:mod:`adk_asgi.wire`, :mod:`adk_asgi.errors` and ADK's types, never a transport or a store.

Internal: not an import path of the public API (docs/reference.md#import-paths).
"""
