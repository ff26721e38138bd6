"""``adk-asgi web``: the chat page in front of your own agent, from a pip install.

:mod:`.agents` finds the agent as ``adk web`` does (an agents directory, one agent's directory,
or ``module:attribute``), :mod:`.page` serves it with the page this package ships, and
:mod:`.cli` is the command. The top layer of the package: it may use everything, the offline
model of :mod:`adk_asgi.testing` included.

Public: the command (``adk-asgi web``, ``python -m adk_asgi.web``); the modules are internal
(docs/reference.md#import-paths).
"""
