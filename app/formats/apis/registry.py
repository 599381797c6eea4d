"""The typed registry of vendor APIs the proxy speaks (SPEC §10, §11), and what is known
per upstream rather than per API: where an unmanaged `/v1/*` request goes
(`upstream_for`, `path_under_base`) and each vendor's error shape (`vendor_error_body`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from app.formats.apis.chat_completions import CHAT_COMPLETIONS
from app.formats.apis.gemini import GEMINI, GEMINI_STREAM
from app.formats.apis.messages import MESSAGES
from app.formats.apis.pass_through import has_dot_segment, path_under_base, upstream_for
from app.formats.apis.protocol import Upstream, VendorApi
from app.formats.apis.responses import RESPONSES
from app.formats.apis.vendor_errors import vendor_error_body

__all__ = [
    "VENDOR_APIS",
    "VendorApiRegistry",
    "has_dot_segment",
    "path_under_base",
    "upstream_for",
    "vendor_error_body",
]


class VendorApiRegistry:
    """Vendor APIs by name; each upstream's default API answers its plain routes."""

    def __init__(self, apis: Iterable[VendorApi]) -> None:
        self._apis: dict[str, VendorApi] = {api.name: api for api in apis}

    def __iter__(self) -> Iterator[VendorApi]:
        return iter(self._apis.values())

    def get(self, name: str) -> VendorApi:
        return self._apis[name]

    def for_upstream(self, upstream: Upstream) -> VendorApi:
        """The first API registered for `upstream` (its plain routes, e.g. /v1/models)."""
        return next(api for api in self._apis.values() if api.upstream is upstream)

    @property
    def upstreams(self) -> tuple[Upstream, ...]:
        return tuple(dict.fromkeys(api.upstream for api in self._apis.values()))


VENDOR_APIS = VendorApiRegistry([CHAT_COMPLETIONS, MESSAGES, RESPONSES, GEMINI, GEMINI_STREAM])
