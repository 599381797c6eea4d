"""The proxy's summary cache in Redis (the `SummaryStore` port of `app.services.ports`),
the fast option beside the SQL table when `COMPACTOR_REDIS_URL` is set: the same
matching (app.services.proxy.summary_cache), the same bounds per tenant.

Keys under `<prefix>sc:`:
    scope:<tenant>:<scope>  hash  "<prefix_len>:<prefix_hash>" → entry id
    entry:<id>              hash  len, tokens, message (JSON), scope key, field
    tenant:<tenant>         zset  entry ids by age (ids come from one counter)
    seq                     the counter
Adding (and evicting a tenant's oldest beyond the bound) is one Lua script, so replicas
adding at once never leave an index pointing nowhere; a lookup that finds an entry
evicted since it was listed gets None, as with SQL. The script touches entry keys it
derives: a standalone Redis (or a primary with replicas), not Redis Cluster.
"""

from __future__ import annotations

import orjson

from app.store.errors import StoreError
from app.store.redis_connection import RedisConnection, tenant_key
from app.store.views import CachedSummary, StoredPrefix

# KEYS: scope hash, tenant zset, counter; ARGV: field, len, tokens, message, max entries,
# entry key prefix. Returns the new id, or 0 when the same prefix was stored first.
_ADD = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
local id = redis.call('INCR', KEYS[3])
local entry = ARGV[6] .. id
redis.call('HSET', entry, 'len', ARGV[2], 'tokens', ARGV[3], 'message', ARGV[4],
           'scope', KEYS[1], 'field', ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], id)
redis.call('ZADD', KEYS[2], id, id)
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[5])
if over > 0 then
  for _, old in ipairs(redis.call('ZRANGE', KEYS[2], 0, over - 1)) do
    local gone = ARGV[6] .. old
    local where = redis.call('HMGET', gone, 'scope', 'field')
    if where[1] then redis.call('HDEL', where[1], where[2]) end
    redis.call('DEL', gone)
  end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, over - 1)
end
return id
"""


class RedisSummaryStore:
    """Summaries of history prefixes in Redis, at most `max_entries_per_tenant` per
    tenant (its oldest go first)."""

    def __init__(self, connection: RedisConnection, max_entries_per_tenant: int) -> None:
        self._redis = connection
        self.max_entries = max_entries_per_tenant
        self._add = connection.sync.register_script(_ADD)

    def _scope(self, tenant: str, scope: str) -> str:
        return self._redis.key("sc", "scope", tenant_key(tenant), scope)

    def _entry(self, entry: str = "") -> str:
        return self._redis.key("sc", "entry", entry)

    def candidates(self, tenant: str, scope: str) -> list[StoredPrefix]:
        """The tenant's entries in this scope, longest prefix first (no summaries read)."""
        client = self._redis.sync
        index = self._redis.run(lambda: client.hgetall(self._scope(tenant, scope)))
        found = []
        for field, entry in index.items():
            length, _, prefix_hash = _text(field).partition(":")
            found.append(StoredPrefix(_text(entry), int(length), prefix_hash))
        return sorted(found, key=lambda c: c.prefix_len, reverse=True)

    def summary(self, entry: StoredPrefix) -> CachedSummary | None:
        """The summary of an entry; None when it was evicted since it was listed."""
        client = self._redis.sync
        key = self._entry(entry.entry)
        length, tokens, message = self._redis.run(
            lambda: client.hmget(key, ["len", "tokens", "message"])
        )
        if length is None or tokens is None or message is None:
            return None
        return CachedSummary(int(length), int(tokens), orjson.loads(message))

    def add(self, tenant: str, scope: str, prefix_hash: str, summary: CachedSummary) -> None:
        """Stores a summary, then evicts the tenant's oldest entries beyond the bound; a
        concurrent request that stored the same one first wins (not an error)."""
        try:
            message = orjson.dumps(summary.summary_message)
        except TypeError as exc:
            raise StoreError(f"summary not storable in redis: {exc}") from exc
        keys = [
            self._scope(tenant, scope),
            self._redis.key("sc", "tenant", tenant_key(tenant)),
            self._redis.key("sc", "seq"),
        ]
        args: list[bytes | str | int] = [
            f"{summary.prefix_len}:{prefix_hash}",
            summary.prefix_len,
            summary.prefix_tokens,
            message,
            self.max_entries,
            self._entry(),
        ]
        self._redis.run(lambda: self._add(keys=keys, args=args))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
