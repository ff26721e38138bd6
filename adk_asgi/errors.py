"""The one way a request is refused before anything runs: a 4xx with a JSON reason."""

from __future__ import annotations

from starlette.responses import JSONResponse, Response


class ClientError(Exception):
    """A request the bridge refuses; ``reason`` names the problem for the client."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason

    def response(self, headers: dict[str, str] | None = None) -> Response:
        return JSONResponse({"error": self.reason}, status_code=self.status, headers=headers)
