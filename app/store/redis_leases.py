"""Leases in Redis (the `LeaseStore` port of `app.services.ports`): one key per held
lease, its value the holder, its time to live the lease's. Taking or extending one and
giving one up are each one Lua script, so no other replica can slip in between the
check and the write.
"""

from __future__ import annotations

from app.store.leases import new_holder
from app.store.redis_connection import RedisConnection

# Take the lease when free (SET NX), or extend it when this holder has it.
_ACQUIRE = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""
# Delete the lease only when this holder has it.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisLeases:
    """Leases under `<prefix>lease:` keys, held as `holder` (one per replica)."""

    def __init__(self, connection: RedisConnection, holder: str | None = None) -> None:
        self._redis = connection
        self.holder = holder or new_holder()
        self._acquire = connection.sync.register_script(_ACQUIRE)
        self._release = connection.sync.register_script(_RELEASE)

    def acquire(self, key: str, ttl_seconds: float) -> bool:
        """Takes the lease when it is free or expired, or extends it when this replica
        holds it; False when another replica holds it."""
        ttl_ms = max(1, int(ttl_seconds * 1000))
        name = self._redis.key("lease", key)
        taken = self._redis.run(lambda: self._acquire(keys=[name], args=[self.holder, ttl_ms]))
        return bool(taken)

    def release(self, key: str) -> None:
        """Gives the lease up if this replica still holds it."""
        name = self._redis.key("lease", key)
        self._redis.run(lambda: self._release(keys=[name], args=[self.holder]))
