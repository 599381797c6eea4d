"""Service configuration: one pydantic-settings class, `COMPACTOR_` prefix, never read at
import time (create_app builds it or is given one)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.allowed_hosts import parse_allowed_hosts
from app.engine.thinking import ThinkingLevel
from app.providers.catalog import ProviderName


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="COMPACTOR_", extra="ignore")

    database_url: str = "sqlite:///./data/compactor.db"
    # Apply pending migrations when the app starts; defaults to yes for the embedded SQLite
    # file and no for PostgreSQL, where `compactor migrate` runs once per deployment.
    auto_migrate: bool | None = None
    # `extractive` (offline) or a named provider of app/providers/catalog.py, which fixes
    # the wire protocol and how the endpoint is addressed (docs/providers.md).
    summarizer: Literal["extractive"] | ProviderName = "extractive"
    summarizer_base_url: str | None = None
    summarizer_api_key: SecretStr | None = None
    summarizer_model: str | None = None
    # Azure only: the deployment to call (defaults to the model name) and `api-version`.
    summarizer_deployment: str | None = None
    summarizer_api_version: str | None = None
    summarizer_thinking: ThinkingLevel = ThinkingLevel.OFF
    summarizer_timeout_seconds: float = Field(default=120.0, gt=0)
    # Transport retries of one summary call (429, 5xx, connection errors), all within
    # summarizer_timeout_seconds.
    summarizer_max_retries: int = Field(default=3, ge=0, le=10)
    api_keys: SecretStr | None = None
    # A file holding the same `tenant:key,…` list (one per line also works), for secrets
    # mounted into a container instead of set in its environment.
    api_keys_file: Path | None = None
    # Serving beyond loopback without API keys must be asked for explicitly.
    allow_unauthenticated: bool = False
    # Host names answered besides loopback names and the address a request arrived at
    # (comma-separated: name, name:port, *.suffix; `*` for any, behind a proxy that checks
    # the Host itself). Anything else is 400: a DNS-rebinding page names its own host.
    allowed_hosts: str | None = None
    # How long an inspector login lasts; the server refuses it afterwards, whatever the
    # browser kept (SPEC §9).
    ui_login_seconds: int = Field(default=12 * 3600, gt=0, le=30 * 24 * 3600)
    # The Bearer key of /metrics (it sums every tenant's traffic). With API keys on and
    # no metrics key, /metrics answers 403 to everyone.
    metrics_key: SecretStr | None = None
    max_body_bytes: int = Field(default=32 * 1024 * 1024, gt=0)
    # Slow clients: a request's headers and its body must each arrive within these, and
    # the bodies being received or handled at once may hold at most this many bytes.
    header_timeout_seconds: float = Field(default=30.0, gt=0)
    body_timeout_seconds: float = Field(default=60.0, gt=0)
    max_pending_body_bytes: int = Field(default=256 * 1024 * 1024, gt=0)
    # A summarizer reply larger than this (after decompression) is refused unread.
    summarizer_max_reply_bytes: int = Field(default=16 * 1024 * 1024, gt=0)
    models_file: Path | None = None
    fallback_context_window: int = Field(default=128_000, gt=0)
    image_tokens: int = Field(default=1200, ge=0)
    token_cache_entries: int = Field(default=200_000, ge=1)
    # Comma-separated absolute directories the service may read prompt files from.
    workspace_roots: str | None = None
    # Extra regular expressions (JSON list) opening another agent's summary message, added
    # to the built-in ones (pi, LangChain, Claude Code); what follows is the summary.
    summary_patterns: list[str] = Field(default_factory=list)
    # Vendor-native context management (SPEC §11): `emulate` applies the edits and
    # compaction here in front of any upstream; `forward` gives the upstream the request
    # unchanged (for upstreams that implement them).
    native_edits: Literal["emulate", "forward"] = "emulate"
    # HMAC key that signs the compaction state handed to callers. Unset, a random key is
    # made per process: compaction blocks/items then stop working after a restart and on
    # other replicas. Set it (the same value on every replica) in production.
    state_key: SecretStr | None = None

    def metrics_key_value(self) -> str | None:
        """The /metrics key, or None when unset."""
        return self.metrics_key.get_secret_value() if self.metrics_key else None

    def state_key_bytes(self) -> bytes | None:
        """The state-signing key, or None for a per-process random one."""
        return self.state_key.get_secret_value().encode() if self.state_key else None

    # Proxy mode (SPEC §10): where /v1/* requests go. Configuration only; no request
    # chooses. OpenAI's includes the version path (https://api.openai.com/v1), Anthropic's
    # does not (https://api.anthropic.com), as each SDK's base_url.
    upstream_openai_url: str | None = None
    upstream_anthropic_url: str | None = None
    # transparent: compact over the threshold before forwarding; native: only what the
    # request asks for (vendor-native context management); off: a plain pass-through.
    proxy_mode: Literal["transparent", "native", "off"] = "transparent"
    upstream_timeout_seconds: float = Field(default=600.0, gt=0)
    upstream_connect_timeout_seconds: float = Field(default=10.0, gt=0)
    # Summaries of resent history prefixes kept per tenant (oldest evicted first).
    proxy_summary_cache_entries: int = Field(default=1000, ge=1)
    inspector_recent_requests: int = Field(default=200, ge=1, le=100_000)
    """The inspector's recent stateless proxy requests (`/ui/requests`): the newest this
    many per tenant, in memory per process (each replica shows what it handled)."""
    inspector_show_content: bool = False
    """Also keep the first 300 characters of each such request's last message for
    `/ui/requests`; off by default, and the inspector then shows no message content."""

    def api_key_spec(self) -> str | None:
        """The configured `tenant:key` list from the variable and/or the file; None when
        neither is set. An empty variable counts as unset; a blank but non-empty value or
        a keys file without keys is returned as is, to be refused."""
        given = self.api_keys.get_secret_value() if self.api_keys is not None else ""
        parts = [given] if given else []
        if self.api_keys_file is not None:
            parts.append(self.api_keys_file.read_text("utf-8").replace("\n", ","))
        return ",".join(parts) if parts else None

    @property
    def migrate_on_start(self) -> bool:
        if self.auto_migrate is not None:
            return self.auto_migrate
        return self.database_url.startswith("sqlite")

    @field_validator("upstream_openai_url", "upstream_anthropic_url")
    @classmethod
    def _upstream_is_http(cls, value: str | None) -> str | None:
        """An upstream is an absolute http(s) URL; a trailing slash is dropped."""
        if value is None or not value.strip():
            return None
        value = value.strip().rstrip("/")
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"upstream URL {value!r} must start with http:// or https://")
        return value

    @field_validator("summary_patterns")
    @classmethod
    def _summary_patterns_compile(cls, value: list[str]) -> list[str]:
        """Refuse to start with a pattern that is not a valid regular expression."""
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"summary pattern {pattern!r} is not a regex: {exc}") from None
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _allowed_hosts_parse(cls, value: str | None) -> str | None:
        """Refuse to start with an entry that is not a host name."""
        parse_allowed_hosts(value)
        return value

    @field_validator("workspace_roots")
    @classmethod
    def _workspace_roots_are_absolute(cls, value: str | None) -> str | None:
        """Refuse to start with a relative root: what it allows would depend on the cwd."""
        for root in (value or "").split(","):
            if root.strip() and not root.strip().startswith("/"):
                raise ValueError(f"workspace root {root.strip()!r} is not an absolute path")
        return value
