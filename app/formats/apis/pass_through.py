"""Which upstream an unmanaged `/v1/*` request goes to, and at which path (SPEC §10, §18).

The rule, in order:
1. a request carrying `anthropic-version` goes to Anthropic (Anthropic's SDKs send it on
   every request; OpenAI's never do);
2. a path under `/v1/messages` (`/v1/messages/batches`, …) or `/v1/complete` goes to
   Anthropic (its own API names, which OpenAI does not have);
3. everything else goes to OpenAI.

The path is the one received: OpenAI's configured base URL includes its version
(`https://api.openai.com/v1`), so `/v1/embeddings` becomes `<base>/embeddings`;
Anthropic's does not (`https://api.anthropic.com`), so the path is appended whole.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.formats.apis.protocol import Upstream

ANTHROPIC_VERSION_HEADER = "anthropic-version"
_ANTHROPIC_PATHS = ("/v1/messages", "/v1/complete")
VERSION_PREFIX = "/v1"


def upstream_for(path: str, header_names: Iterable[str]) -> Upstream:
    """The upstream an unmanaged `/v1/...` request belongs to (the rule above)."""
    if any(name.lower() == ANTHROPIC_VERSION_HEADER for name in header_names):
        return Upstream.ANTHROPIC
    for prefix in _ANTHROPIC_PATHS:
        if path == prefix or path.startswith(prefix + "/"):
            return Upstream.ANTHROPIC
    return Upstream.OPENAI


def path_under_base(upstream: Upstream, path: str) -> str:
    """`path` (`/v1/...`) as appended to the upstream's configured base URL."""
    if upstream is Upstream.OPENAI and path.startswith(VERSION_PREFIX + "/"):
        return path[len(VERSION_PREFIX) :]
    return path


def has_dot_segment(path: str) -> bool:
    """True when a segment of `path` is `.` or `..` (it would climb out of the base URL)."""
    return any(segment in (".", "..") for segment in path.split("/"))
