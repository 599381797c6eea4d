"""Inspector logins (SPEC §9): a random token per login, known to the store, which the
server verifies on every page, expires on its own clock and revokes on logout.

The cookie holds only the token (32 random bytes): nothing in it is derived from the API
key, so a leaked cookie allows no offline guessing of the key, and it stops working the
moment its row is deleted, on every replica. The row holds the token's SHA-256 and an
HMAC of the key with the service's secret (COMPACTOR_STATE_KEY): a login ends when the
key that made it is no longer configured.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from app.services.sessions.transactions import SessionStore
from app.store.transactions import SessionDatabase
from app.store.views import UiLogin

# Far above what one person's browsers hold; bounds what one key can make the store keep.
MAX_LOGINS_PER_TENANT = 100
_KEY_ID_LABEL = b"compactor inspector login key\x00"


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class InspectorLogins:
    """Makes, checks and revokes the logins of the inspector's cookie."""

    def __init__(
        self,
        database: SessionDatabase,
        keys: Mapping[str, str],
        secret: bytes,
        lifetime_seconds: int,
    ) -> None:
        self._store = SessionStore(database)
        self._secret = secret
        self.lifetime_seconds = lifetime_seconds
        # key id → tenant, for every configured key.
        self._tenants = {self._key_id(key): tenant for key, tenant in keys.items()}

    def _key_id(self, key: str) -> str:
        return hmac.new(self._secret, _KEY_ID_LABEL + key.encode(), hashlib.sha256).hexdigest()

    def log_in(self, tenant: str, key: str, replacing: str | None = None) -> str:
        """A new login for `tenant` (whose key is `key`); the browser's previous login,
        `replacing`, ends with it. Returns the token for the cookie."""
        token = secrets.token_urlsafe(32)
        now = datetime.now(UTC)
        login = UiLogin(
            token_hash=_token_hash(token),
            tenant=tenant,
            key_id=self._key_id(key),
            created_at=now,
            expires_at=now + timedelta(seconds=self.lifetime_seconds),
        )
        with self._store.transaction() as tx:
            if replacing:
                tx.ui_logins.delete(_token_hash(replacing))
            tx.ui_logins.delete_expired(now)
            tx.ui_logins.add(login, MAX_LOGINS_PER_TENANT)
        return token

    def tenant_of(self, token: str) -> str | None:
        """The tenant of a live login, or None: unknown, expired, revoked, or made with a
        key that is no longer configured."""
        if not token or len(token) > 256:
            return None
        with self._store.transaction() as tx:
            row = tx.ui_logins.live(_token_hash(token), datetime.now(UTC))
            if row is None:
                return None
            tenant, key_id = row.tenant, row.key_id
        owner = None
        for known, holder in self._tenants.items():
            if hmac.compare_digest(known, key_id):
                owner = holder
        return tenant if owner == tenant else None

    def log_out(self, token: str) -> None:
        """Revokes the login (a token that is not one is ignored)."""
        if token and len(token) <= 256:
            with self._store.transaction() as tx:
                tx.ui_logins.delete(_token_hash(token))
