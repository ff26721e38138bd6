"""What ran is recorded, in live mode (adk_asgi/serving/finish_tools.py): a socket closed right
after the user approved a payment — after 1, 2 or 3 chunks of the answer, 50 times each — never
stops the session between the payment's run and its stored result. Against a real uvicorn in the
test's own loop; the payment takes a moment (it awaits its bank), as a real one does."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from google.adk.agents import LlmAgent
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext

from adk_asgi import AdkApp
from adk_asgi.testing import demo_model
from tests.asgi.test_hitl import PAY_ALICE, SENT_ALICE
from tests.live.live_server import stored_history, wait_until_closed
from tests.live.live_socket import open_live, serve
from tests.support import answer, counter

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

ROUNDS = 50


class Bank:
    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()

    async def process_payment(
        self, amount: float, recipient: str, tool_context: ToolContext, currency: str = "USD"
    ) -> dict[str, Any]:
        """Send money."""
        self.runs[tool_context.session.id] += 1
        await asyncio.sleep(0.02)  # the bank answers
        return {"status": "sent", "amount": amount, "recipient": recipient}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[tuple[AdkApp, str, Bank]]:
    bank = Bank()
    agent = LlmAgent(
        name="demo_agent",
        model=demo_model(id_factory=counter("call_"), chunk_size=200),
        tools=[FunctionTool(bank.process_payment, require_confirmation=True)],
    )
    app = AdkApp(agent)
    async with serve(app) as url:
        yield app, url, bank


@pytest.mark.parametrize("chunks", [1, 2, 3])
async def test_an_approval_cut_after_1_2_or_3_chunks_stores_the_payment_exactly_when_it_ran(
    server: tuple[AdkApp, str, Bank], chunks: int
) -> None:
    app, url, bank = server
    outcomes: Counter[tuple[int, str, str]] = Counter()
    for _ in range(ROUNDS):
        live, socket = await open_live(url)
        async with socket:
            await live.turn("pay 5 to alice")
            answer(live.assistant, "process_payment", approved=True)
            request_id = await live.send()
            read = 0
            while read < chunks:
                frame = json.loads(await asyncio.wait_for(socket.recv(), 10))
                if frame.get("requestId") == request_id and frame["type"] == "chunk":
                    read += 1
        await wait_until_closed(app)
        payment = (await stored_history(app, live.chat_id))[1]["parts"][1]
        shown = json.dumps(payment.get("output"), sort_keys=True)
        outcomes[(bank.runs[live.chat_id], payment["state"], shown)] += 1
    assert payment["input"] == PAY_ALICE
    # each payment ran once, and is stored as it ran (before: input-available, 50 of 50 cut
    # after the first chunk, while the payment had run)
    sent = json.dumps(SENT_ALICE, sort_keys=True)
    assert dict(outcomes) == {(1, "output-available", sent): ROUNDS}
