"""Service configuration: one pydantic-settings class, `COMPACTOR_` prefix, never read at
import time (create_app builds it or is given one).

Values come from, highest first: keyword arguments, the environment, the configuration
file (COMPACTOR_CONFIG, TOML; keys are the setting names in lower case), the defaults.
An unknown `COMPACTOR_*` variable or file key refuses to start (app.configuration). Each
field's docstring is its documentation: docs/configuration.md is generated from them
(`compactor config --markdown`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from app.allowed_hosts import parse_allowed_hosts
from app.configuration import (
    ConfigFileSource,
    check_environment,
    config_path,
    did_you_mean,
    environment,
)
from app.engine.model_policy import ModelPolicy, ModelPrices
from app.engine.thinking import ThinkingLevel
from app.providers.catalog import ProviderName

SummarizerName = Literal["extractive", ProviderName]
StrategyName = Literal["summarize", "clear_tool_results", "auto"]


class _PolicyPart(BaseModel):
    """A table of the configuration file: unknown keys are refused with the one meant."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            names = list(cls.model_fields)
            unknown = [key for key in data if key not in names]
            if unknown:
                problems = [f"{key!r}{did_you_mean(str(key), names)}" for key in unknown]
                raise ValueError(
                    f"unknown key {'; '.join(problems)}; the keys are {', '.join(names)}"
                )
        return data


class PricesSettings(_PolicyPart):
    """US dollars per million tokens."""

    input: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    output: float | None = Field(default=None, ge=0)

    def policy(self) -> ModelPrices:
        return ModelPrices(**self.model_dump())


class ModelPolicySettings(_PolicyPart):
    """One `[models."pattern"]` table: the settings of the models the pattern matches."""

    context_window: int | None = Field(default=None, gt=0)
    reserve_tokens: int | None = Field(default=None, ge=0)
    trigger_ratio: float | None = Field(default=None, gt=0, le=1)
    keep_recent_tokens: int | None = Field(default=None, gt=0)
    strategy: StrategyName | None = None
    prepare_ahead_ratio: float | None = Field(default=None, gt=0, le=1)
    prices: PricesSettings | None = None

    def policy(self) -> ModelPolicy:
        """The engine value of this table."""
        values = self.model_dump(exclude={"prices"})
        return ModelPolicy(**values, prices=self.prices.policy() if self.prices else None)


def _api_root(url: str) -> str:
    """`url` without a trailing `/v1` (the form both SDKs' paths start from)."""
    return url.removesuffix("/v1")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="COMPACTOR_", extra="ignore", use_attribute_docstrings=True
    )

    config: Path | None = None
    """A TOML file holding any of these settings (keys in lower case, without
    `COMPACTOR_`) and the per-model `[models."pattern"]` policies; the environment
    overrides it. Example: deploy/compactor.example.toml."""
    database_url: str = "sqlite:///./data/compactor.db"
    """SQLite (`sqlite:///path`) or PostgreSQL (`postgresql://user@host:port/db`); the
    service picks its own driver."""
    sqlite_synchronous: Literal["FULL", "NORMAL"] = "FULL"
    """SQLite only. FULL syncs the write-ahead log on every commit, so an acknowledged
    append survives a power loss; NORMAL syncs only at checkpoints (faster, but the last
    acknowledged appends can be lost on power loss, not on a crash of the service).
    PostgreSQL's own synchronous_commit decides there."""
    idempotency_retention_hours: float = Field(default=24.0, gt=0)
    """How long an append's Idempotency-Key is kept: a retry within it appends nothing,
    after it the same batch appends again. Expired keys are deleted as appends go."""
    compaction_job_retention_hours: float = Field(default=24.0, gt=0)
    """How long an asynchronous compaction job (`Prefer: respond-async` on
    `POST /sessions/{id}/compact`) can be read back; older jobs are deleted as new ones
    are made."""
    bound_compaction_wait_seconds: float = Field(default=60.0, ge=0)
    """How long a request bound to a session (`X-Compactor-Session`) waits for a
    compaction of that session another request or replica is running, to forward its
    result; past that it forwards the context as it is. 0: never wait (compact anyway)."""
    compaction_lease_seconds: float = Field(default=30.0, gt=0)
    """How long a session's automatic compaction holds its lease (one summary at a time
    across replicas) unless renewed; its holder renews it every third of that while the
    summary runs, so a crashed replica's lease runs out after it."""
    auto_migrate: bool | None = None
    """Apply pending migrations when the app starts; unset: yes for the embedded SQLite
    file, no for PostgreSQL, where `compactor migrate` runs once per deployment."""
    summarizer: SummarizerName = "extractive"
    """`extractive` (offline) or a named provider: openai, azure, openrouter, ollama,
    vllm, openai-compatible, anthropic (docs/providers.md)."""
    summarizer_base_url: str | None = None
    """The summarizer's endpoint (with or without `/v1`); a hosted provider's default
    when unset."""
    summarizer_api_key: SecretStr | None = None
    """The summarizer's API key."""
    summarizer_model: str | None = None
    """The model the summarizer calls (required for every provider but extractive)."""
    summarizer_deployment: str | None = None
    """Azure only: the deployment to call (default: the model name)."""
    summarizer_api_version: str | None = None
    """Azure only: the `api-version` query parameter."""
    summarizer_thinking: ThinkingLevel = ThinkingLevel.OFF
    """The thinking level summaries start at: off, minimal, low, medium, high."""
    summarizer_timeout_seconds: float = Field(default=120.0, gt=0)
    """Time one summary may take, retries included."""
    summarizer_max_retries: int = Field(default=3, ge=0, le=10)
    """Transport retries of one summary call (429, 5xx, connection errors), all within
    summarizer_timeout_seconds."""
    api_keys: SecretStr | None = None
    """`tenant:key,tenant:key`: when set, every request but health needs
    `Authorization: Bearer <key>` and sees only its tenant's sessions."""
    api_keys_file: Path | None = None
    """A file holding the same `tenant:key,…` list (one per line also works), for secrets
    mounted into a container instead of set in its environment."""
    allow_unauthenticated: bool = False
    """Serve beyond loopback without API keys (refused unless this is set)."""
    allowed_hosts: str | None = None
    """Host names answered besides loopback names and the address a request arrived at
    (comma-separated: name, name:port, *.suffix; `*` for any, behind a proxy that checks
    the Host itself). Anything else is 400: a DNS-rebinding page names its own host."""
    ui_login_seconds: int = Field(default=12 * 3600, gt=0, le=30 * 24 * 3600)
    """How long an inspector login lasts; the server refuses it afterwards, whatever the
    browser kept (SPEC §9)."""
    metrics_key: SecretStr | None = None
    """The Bearer key of /metrics (it sums every tenant's traffic). With API keys on and
    no metrics key, /metrics answers 403 to everyone."""
    max_body_bytes: int = Field(default=32 * 1024 * 1024, gt=0)
    """The largest request body accepted (413 beyond)."""
    header_timeout_seconds: float = Field(default=30.0, gt=0)
    """A request's headers must arrive within this (408 otherwise)."""
    body_timeout_seconds: float = Field(default=60.0, gt=0)
    """A request's body must arrive within this (408 otherwise)."""
    max_pending_body_bytes: int = Field(default=256 * 1024 * 1024, gt=0)
    """The bodies being received or handled at once may hold at most this many bytes
    (503 with Retry-After beyond)."""
    summarizer_max_reply_bytes: int = Field(default=16 * 1024 * 1024, gt=0)
    """A summarizer reply larger than this (after decompression) is refused unread."""
    models_file: Path | None = None
    """A JSON file of extra model registry entries, tools layouts, image rules, snapshots
    and alias rules (the format of app/registry/models.json), each overriding the
    built-in one of its name."""
    fallback_context_window: int = Field(default=128_000, gt=0)
    """The window assumed for a model nothing knows (answers then say
    `model_known: false`, `context_window_source: fallback`)."""
    image_tokens: int = Field(default=1200, ge=0)
    """Tokens assumed for an image whose size is unknown (the count says it is a guess)."""
    token_cache_entries: int = Field(default=200_000, ge=1)
    """Per-message token counts kept in memory (by content hash), so re-estimating a
    history that grew by one message costs about one message. About 270 bytes each
    (≈ 54 MB at the default; `bench/token_cache_memory.py`)."""
    workspace_roots: str | None = None
    """Comma-separated absolute directories the service may read prompt files from."""
    summary_patterns: list[str] = Field(default_factory=list)
    """Extra regular expressions (JSON list) opening another agent's summary message,
    added to the built-in ones (pi, LangChain, Claude Code); what follows is the summary."""
    native_edits: Literal["emulate", "forward"] = "emulate"
    """Vendor-native context management (SPEC §11): `emulate` applies the edits and
    compaction here in front of any upstream; `forward` gives the upstream the request
    unchanged (for upstreams that implement them)."""
    native_clearing: Literal["stepped", "exact"] = "stepped"
    """Emulated `clear_tool_uses_20250919` (SPEC §15): `stepped` moves the cleared set in
    cache-aware steps of 20,000 tokens of tool results and keeps it the same between steps
    (more than `keep` recent tool uses stay on some turns; `applied_edits` says how many in
    `kept_tool_uses`); `exact` is the vendor's per-turn rule (exactly `keep` kept), which
    re-writes the prompt cache on every new tool use of a client that resends its history."""
    clearing: Literal["stepped", "exact"] = "stepped"
    """Tool-result clearing of the `clear_tool_results` and `auto` strategies (REST
    `/compact`, sessions; SPEC §15): `stepped` clears only whole runs of 20,000 tokens of
    tool results (`clear_at_least` when larger, a quarter of the threshold when smaller),
    so the cleared set, and the prompt cache of a client that resends what it got back,
    stays the same between steps; `exact` clears everything but the newest `keep` tool
    uses on every request."""
    cost_ledger: bool = True
    """Record what every proxied request and summary call billed, as the upstream's usage
    reported it (SPEC §15: `GET /sessions/{id}/cost`, `GET /cost`, the `/metrics` token and
    dollar counters, the inspector). One small row per call in the store; `false` writes
    none (the routes then answer what was recorded before)."""
    state_key: SecretStr | None = None
    """HMAC key that signs the compaction state handed to callers. Unset, a random key is
    made per process: compaction blocks/items then stop working after a restart and on
    other replicas. Set it (the same value on every replica) in production."""

    def metrics_key_value(self) -> str | None:
        """The /metrics key, or None when unset."""
        return self.metrics_key.get_secret_value() if self.metrics_key else None

    def state_key_bytes(self) -> bytes | None:
        """The state-signing key, or None for a per-process random one."""
        return self.state_key.get_secret_value().encode() if self.state_key else None

    upstream_openai_url: str | None = None
    """Proxy mode (SPEC §10): where `/v1/chat/completions` and `/v1/responses` go, as the
    OpenAI SDK's base_url; with or without `/v1` (`https://api.openai.com` and
    `https://api.openai.com/v1` are the same). A base with another version path
    (`…/v1beta/openai`) is used as given."""
    upstream_anthropic_url: str | None = None
    """Proxy mode: where `/v1/messages` goes, as the Anthropic SDK's base_url; with or
    without `/v1` (`https://api.anthropic.com`)."""
    upstream_gemini_url: str | None = None
    """Proxy mode: where the Gemini routes go, the host without the version path
    (`https://generativelanguage.googleapis.com`)."""
    proxy_mode: Literal["transparent", "native", "off"] = "transparent"
    """transparent: compact over the threshold before forwarding; native: only what the
    request asks for (vendor-native context management); off: a plain pass-through."""
    upstream_timeout_seconds: float = Field(default=600.0, gt=0)
    """Time an upstream answer may take."""
    upstream_connect_timeout_seconds: float = Field(default=10.0, gt=0)
    """Time connecting to an upstream may take."""
    prepare_ahead_ratio: Annotated[float, Field(gt=0, le=1)] | Literal["off"] = 0.8
    """The soft threshold (SPEC §16), a share of the threshold: past it, the proxy's
    stateless requests and every session have the summary their next compaction needs
    prepared in the background, so the turn that crosses the threshold waits for no
    summarizer. It is the earliest start: once a conversation's pace is known (its own
    prepared summary's time, its growth and time between turns), the summary starts
    when the threshold is a summary's time plus one turn away. `off`: every compaction
    summarizes inline. With it on, a model's `prepare_ahead_ratio` overrides it."""
    prepare_ahead_wait_seconds: float = Field(default=60.0, ge=0)
    """Over the threshold with the prepared summary not ready and the request too large
    for the model's window: how long the turn waits for it before compacting inline."""
    prepare_ahead_lease_seconds: float = Field(default=30.0, gt=0)
    """How long the lease of a background summary lasts unless renewed (its replica
    renews it every third of that while the summary runs): one summary per conversation
    across replicas; a replica that crashed holding one frees it after this long."""
    proxy_summary_cache_entries: int = Field(default=1000, ge=1)
    """Summaries of resent history prefixes kept per tenant (oldest evicted first)."""
    redis_url: SecretStr | None = None
    """Shared state for replicas (SPEC §18): a Redis (`redis://host:6379/0`,
    `rediss://` for TLS) holding the proxy's resend memos and the leases of background
    work, so every replica behind a load balancer makes the same decision for the same
    bytes. Unset: memos are per process, leases are kept in the database."""
    redis_key_prefix: str = "compactor:"
    """What every key this service writes in Redis starts with (several deployments can
    share one Redis)."""
    redis_timeout_seconds: float = Field(default=0.5, gt=0)
    """Time one Redis command may take; a Redis that does not answer is a miss (the
    request goes on without shared memos), retried after 2 seconds."""
    redis_memo_ttl_seconds: int = Field(default=86400, ge=1)
    """How long a shared resend memo lives in Redis (Redis's maxmemory policy bounds
    it further)."""
    proxy_summary_cache_store: Literal["database", "redis"] = "database"
    """Where the proxy's summary cache lives: the database (table `summary_cache`) or,
    the faster option, the Redis of COMPACTOR_REDIS_URL (same bounds per tenant; give it
    a Redis whose maxmemory policy does not evict keys, or entries are lost early)."""
    models: dict[str, ModelPolicySettings] = Field(default_factory=dict)
    """Per-model policy, by glob pattern over the model name (`[models."claude-*"]` in the
    file; JSON in the environment): context_window, reserve_tokens, trigger_ratio,
    keep_recent_tokens, strategy, prepare_ahead_ratio and prices (input, cache_write,
    cache_read, output per million tokens). More specific patterns override less specific
    ones key by key; a request's own settings override both."""
    model_aliases: dict[str, str] = Field(default_factory=dict)
    """Model names (or globs) that stand for a registry model (`"my-claude" =
    "claude-sonnet-4-6"`), e.g. a gateway's own names."""
    models_from_upstream: bool = False
    """Read context windows from the upstreams' model lists (OpenRouter and vLLM
    `GET /v1/models`, LiteLLM `GET /model/info`) at start and every
    models_refresh_seconds; a failure is logged and the last list kept."""
    models_refresh_seconds: float = Field(default=900.0, ge=10, le=86_400)
    """How often the upstreams' model lists are read again."""
    upstream_models_api_key: SecretStr | None = None
    """Bearer key for reading the upstreams' model lists (LiteLLM's `/model/info` needs
    one; OpenRouter's list is public)."""

    inspector_recent_requests: int = Field(default=200, ge=1, le=100_000)
    """The inspector's recent stateless proxy requests (`/ui/requests`): the newest this
    many per tenant, in memory per process (each replica shows what it handled)."""
    inspector_show_content: bool = False
    """Also keep the first 300 characters of each such request's last message for
    `/ui/requests`; off by default, and the inspector then shows no message content."""
    mcp: bool = True
    """Serve the recall tools over MCP at `/mcp` (streamable HTTP, the same API keys):
    `search_history`, `read_entries`, `context_status`, `compact`. When on, a session's
    summary message ends with one line saying its full history is searchable. `off`
    turns both off."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Keyword arguments, then the environment, then the configuration file."""
        environ = environment()
        check_environment(settings_cls, environ)
        init_kwargs = getattr(init_settings, "init_kwargs", {})
        path = config_path(init_kwargs, environ)
        return (init_settings, env_settings, ConfigFileSource(settings_cls, path))

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

    @property
    def upstream_openai_root(self) -> str | None:
        """The OpenAI upstream without `/v1`: append `/v1/chat/completions` and the like.
        A base with another version path (`…/v1beta/openai`) is returned as given."""
        url = self.upstream_openai_url
        return _api_root(url) if url is not None else None

    @property
    def upstream_openai_base(self) -> str | None:
        """The OpenAI upstream as the OpenAI SDK's base_url: append `/chat/completions`.
        `/v1` is added to a bare host (`http://host:port` → `http://host:port/v1`)."""
        url = self.upstream_openai_url
        if url is None:
            return None
        return url if url.endswith("/v1") or httpx.URL(url).path.strip("/") else url + "/v1"

    @property
    def upstream_anthropic_root(self) -> str | None:
        """The Anthropic upstream without `/v1` (the Anthropic SDK's base_url form):
        append `/v1/messages`."""
        url = self.upstream_anthropic_url
        return _api_root(url) if url is not None else None

    @field_validator("summarizer", mode="before")
    @classmethod
    def _summarizer_is_known(cls, value: Any) -> Any:
        """An unknown summarizer names the valid choices in plain words."""
        choices = _SUMMARIZERS
        if isinstance(value, str) and value not in choices:
            raise ValueError(
                f"unknown summarizer {value!r}{did_you_mean(value, choices)}; "
                f"choose one of: {', '.join(choices)}"
            )
        return value

    @field_validator("upstream_openai_url", "upstream_anthropic_url", "upstream_gemini_url")
    @classmethod
    def _upstream_is_http(cls, value: str | None) -> str | None:
        """An upstream is an absolute http(s) URL; a trailing slash is dropped."""
        if value is None or not value.strip():
            return None
        value = value.strip().rstrip("/")
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"upstream URL {value!r} must start with http:// or https://")
        return value

    @field_validator("redis_url", mode="before")
    @classmethod
    def _redis_url_is_redis(cls, value: Any) -> Any:
        """An empty variable is unset; anything else is a redis://, rediss:// or unix:// URL
        (the refusal does not repeat the value: it may hold a password)."""
        text = value.get_secret_value() if isinstance(value, SecretStr) else value
        if text is None or (isinstance(text, str) and not text.strip()):
            return None
        if not isinstance(text, str) or not text.strip().startswith(
            ("redis://", "rediss://", "unix://")
        ):
            raise ValueError("a Redis URL starts with redis://, rediss:// or unix://")
        return text.strip()

    @model_validator(mode="after")
    def _redis_summary_cache_needs_redis(self) -> Settings:
        """The summary cache in Redis needs a Redis to be in."""
        if self.proxy_summary_cache_store == "redis" and self.redis_url is None:
            raise ValueError("COMPACTOR_PROXY_SUMMARY_CACHE_STORE=redis needs COMPACTOR_REDIS_URL")
        return self

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

    def model_policies(self) -> dict[str, ModelPolicy]:
        """The `models` tables as engine values, by pattern."""
        return {pattern: table.policy() for pattern, table in self.models.items()}


_SUMMARIZERS = ["extractive", *get_args(ProviderName)]
