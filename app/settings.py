"""Service configuration: one pydantic-settings class, `COMPACTOR_` prefix, never read at
import time (create_app builds it or is given one)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.engine.thinking import ThinkingLevel


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="COMPACTOR_", extra="ignore")

    database_url: str = "sqlite:///./data/compactor.db"
    # Apply pending migrations when the app starts; defaults to yes for the embedded SQLite
    # file and no for PostgreSQL, where `compactor migrate` runs once per deployment.
    auto_migrate: bool | None = None
    summarizer: Literal["extractive", "openai", "anthropic"] = "extractive"
    summarizer_base_url: str | None = None
    summarizer_api_key: SecretStr | None = None
    summarizer_model: str | None = None
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

    @field_validator("workspace_roots")
    @classmethod
    def _workspace_roots_are_absolute(cls, value: str | None) -> str | None:
        """Refuse to start with a relative root: what it allows would depend on the cwd."""
        for root in (value or "").split(","):
            if root.strip() and not root.strip().startswith("/"):
                raise ValueError(f"workspace root {root.strip()!r} is not an absolute path")
        return value
