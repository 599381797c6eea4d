"""The proxy's resend memos in Redis (the `ResendMemo` port of `app.services.ports`),
shared by every replica: a body one replica found under its threshold, or compacted,
is known to the others by the SHA-256 of its exact bytes.

Entries never change once written (`SET NX`) and expire after
`COMPACTOR_REDIS_MEMO_TTL_SECONDS`; Redis's own `maxmemory` policy bounds the rest.
A compacted entry holds a recipe (`CompactedResend`: about a summary's bytes), one
value: a header line of five integers, then the JSON of the changed messages.
"""

from __future__ import annotations

from app.store.redis_connection import RedisConnection, body_digest, tenant_key
from app.store.views import CompactedResend

# A recipe larger than this is not shared (each replica still remembers it itself).
MAX_SHARED_RECIPE_BYTES = 4 * 1024 * 1024


def _packed(resend: CompactedResend) -> bytes:
    header = b"%d %d %d %d %d\n" % (
        resend.history_len,
        resend.lead,
        resend.keep_from,
        resend.tokens_before,
        resend.tokens_after,
    )
    return header + resend.middle


def _unpacked(value: bytes) -> CompactedResend | None:
    header, _, middle = value.partition(b"\n")
    try:
        history_len, lead, keep_from, before, after = (int(part) for part in header.split())
    except ValueError:
        return None
    return CompactedResend(history_len, lead, keep_from, middle, before, after)


class RedisResendMemo:
    """Resend memos under `<prefix>memo:` keys, each with a time to live."""

    def __init__(self, connection: RedisConnection, ttl_seconds: int) -> None:
        self._redis = connection
        self._ttl = ttl_seconds

    def _under_key(self, api: str, raw: bytes) -> str:
        return self._redis.key("memo", "under", api, body_digest(raw))

    def _compacted_key(self, tenant: str, api: str, raw: bytes) -> str:
        return self._redis.key("memo", "compacted", tenant_key(tenant), api, body_digest(raw))

    async def under_threshold(self, api: str, raw: bytes) -> int | None:
        """The token count of a body some replica found under its threshold."""
        client = self._redis.asyncio
        value = await self._redis.run_async(lambda: client.get(self._under_key(api, raw)))
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    async def remember_under_threshold(self, api: str, raw: bytes, tokens: int) -> None:
        """Shares a body found under its threshold (the first writer's entry stays)."""
        client = self._redis.asyncio
        key = self._under_key(api, raw)
        await self._redis.run_async(lambda: client.set(key, tokens, ex=self._ttl, nx=True))

    async def compacted(self, tenant: str, api: str, raw: bytes) -> CompactedResend | None:
        """What some replica forwarded for this very body of this tenant."""
        client = self._redis.asyncio
        key = self._compacted_key(tenant, api, raw)
        value = await self._redis.run_async(lambda: client.get(key))
        return _unpacked(value) if isinstance(value, bytes) else None

    async def remember_compacted(
        self, tenant: str, api: str, raw: bytes, resend: CompactedResend
    ) -> None:
        """Shares what was forwarded for a compacted body (the first writer's stays)."""
        if resend.size > MAX_SHARED_RECIPE_BYTES:
            return
        client = self._redis.asyncio
        key, value = self._compacted_key(tenant, api, raw), _packed(resend)
        await self._redis.run_async(lambda: client.set(key, value, ex=self._ttl, nx=True))
