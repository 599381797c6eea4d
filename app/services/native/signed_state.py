"""The state a compaction hands back to the caller, signed so only this service's own
state is ever trusted again (SPEC §11).

A token is `ccs1.<payload>.<mac>`: the payload is zlib-compressed JSON in base64url, the
mac an HMAC-SHA256 over the prefix and payload with the configured key. It is signed, not
encrypted: it holds the caller's own conversation, which the caller already has. The
payload names the tenant, so one tenant's state is refused for another.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import zlib
from typing import Any

from app.engine.errors import CompactionStateError

PREFIX = "ccs1."
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_.=-]+")
# A decompressed payload larger than this is refused (the state of one compaction is a
# summary and a kept tail: far below it).
MAX_STATE_BYTES = 64 * 1024 * 1024


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class StateSigner:
    """Seals and opens compaction state with one HMAC key."""

    def __init__(self, key: bytes | None) -> None:
        # Without a configured key the state only survives as long as this process.
        self.ephemeral = not key
        self._key = key or secrets.token_bytes(32)

    def seal(self, payload: dict[str, Any], tenant: str = "") -> str:
        """`payload` (JSON-able) as a signed token bound to `tenant`."""
        data = json.dumps({"t": tenant, "p": payload}, separators=(",", ":")).encode()
        body = _b64(zlib.compress(data, 6))
        return f"{PREFIX}{body}.{self._mac(body)}"

    def is_ours(self, token: str) -> bool:
        """True when `token` looks like this service's state (it may still be altered)."""
        return token.startswith(PREFIX)

    def open(self, token: str, tenant: str = "", where: str = "encrypted_content") -> Any:
        """The payload of a token this service sealed for `tenant`; anything else raises
        CompactionStateError."""
        # Only base64url and the separators: anything else (a non-ASCII character, say) is
        # not ours, and must not reach the MAC (compare_digest refuses non-ASCII text).
        if (
            not isinstance(token, str)
            or not token.startswith(PREFIX)
            or token.count(".") != 2
            or not _TOKEN_CHARS.fullmatch(token)
        ):
            raise CompactionStateError(
                f"{where}: not a compaction state written by this service; send back the "
                "compaction item exactly as the service returned it"
            )
        body, mac = token[len(PREFIX) :].split(".")
        if not hmac.compare_digest(mac.encode("ascii"), self._mac(body).encode("ascii")):
            raise CompactionStateError(
                f"{where}: the compaction state's signature does not match: it was altered, "
                "or written by another deployment (or before a restart, when "
                "COMPACTOR_STATE_KEY is not set)"
            )
        try:
            inflater = zlib.decompressobj()
            data = inflater.decompress(_unb64(body), MAX_STATE_BYTES)
            sealed = json.loads(data)
        except (ValueError, zlib.error) as exc:
            raise CompactionStateError(f"{where}: unreadable compaction state") from exc
        if not isinstance(sealed, dict) or sealed.get("t") != tenant:
            raise CompactionStateError(f"{where}: this compaction state belongs to another tenant")
        return sealed.get("p")

    def _mac(self, body: str) -> str:
        digest = hmac.new(self._key, (PREFIX + body).encode("ascii"), hashlib.sha256).digest()
        return _b64(digest)
