"""``AdkApp.aclose()`` closes everything it holds even when one close fails, then raises the
first failure: a lock backend that is down must not leave the stream store or claims open."""

from __future__ import annotations

import pytest

from adk_asgi import AdkApp, Stores
from adk_asgi.stores.claims import InMemoryClaims
from adk_asgi.stores.locks import InMemoryChatLocks
from adk_asgi.stores.resumable import InMemoryStreamStore
from tests.support import scripted_agent


class BrokenLocks(InMemoryChatLocks):
    """Locks whose backend fails to close (a Redis that went away)."""

    async def aclose(self) -> None:
        raise ConnectionError("the lock backend is gone")


class CountedClaims(InMemoryClaims):
    closed = 0

    async def aclose(self) -> None:
        self.closed += 1
        raise RuntimeError("the claims database is gone too")


class CountedStreams(InMemoryStreamStore):
    closed = 0

    async def aclose(self) -> None:
        self.closed += 1


async def test_aclose_runs_every_close_and_raises_the_first_failure() -> None:
    claims, streams = CountedClaims(), CountedStreams()
    app = AdkApp(
        scripted_agent([]), stores=Stores(locks=BrokenLocks(), claims=claims, streams=streams)
    )
    with pytest.raises(ConnectionError, match="the lock backend is gone"):
        await app.aclose()
    assert (claims.closed, streams.closed) == (1, 1)
