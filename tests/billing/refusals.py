"""Requests the vendors refuse, with the status and error body each API answers."""

from __future__ import annotations

import uuid
from typing import Any


class Refused(Exception):
    """A request the vendor would refuse: `status` and the vendor's error body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(str(body))
        self.status = status
        self.body = body

    @property
    def message(self) -> str:
        error = self.body.get("error")
        return str(error.get("message")) if isinstance(error, dict) else str(self.body)


def anthropic_refusal(status: int, error_type: str, message: str) -> Refused:
    """Anthropic's error shape (`type: error`, `error.type`, `error.message`, request id)."""
    return Refused(
        status,
        {
            "type": "error",
            "error": {"type": error_type, "message": message},
            "request_id": f"req_{uuid.uuid4().hex[:24]}",
        },
    )


def openai_refusal(
    status: int, message: str, *, param: str | None = None, code: str | None = None
) -> Refused:
    """OpenAI's error shape (`error.message`, `type`, `param`, `code`)."""
    error_type = "invalid_request_error" if status < 500 else "server_error"
    return Refused(
        status, {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    )
