"""Moved to app.formats.vendor.apis (vendor wire knowledge lives with the formats); this
re-export keeps branches that import the old path working until they are merged."""

from app.formats.vendor.apis import (
    CHAT_COMPLETIONS as CHAT_COMPLETIONS,
)
from app.formats.vendor.apis import (
    MESSAGES as MESSAGES,
)
from app.formats.vendor.apis import (
    RESPONSES as RESPONSES,
)
from app.formats.vendor.apis import (
    ProxyApi as ProxyApi,
)
from app.formats.vendor.apis import (
    Upstream as Upstream,
)
