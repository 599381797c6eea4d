"""Python client of the context-compactor HTTP API (sync and async), on httpx alone.

    from context_compactor import CompactorClient, CompactorAPIError

    with CompactorClient("http://127.0.0.1:8000", api_key="...") as compactor:
        session = compactor.create_session(model="gpt-4o", system="You are a coding agent.")
        compactor.append_messages(session.id, [{"role": "user", "content": "Fix the bug"}])
        prepared = compactor.prepare(session.id)  # before every model call
        send_to_model(prepared.context.system, prepared.context.messages)

`AsyncCompactorClient` has the same methods as coroutines (`aclose`, `async with`).
Every answer is a frozen dataclass (`Estimate`, `CompactResult`, `Session`,
`AppendResult`, `Context`, `PrepareResult`, ...) whose `raw` attribute is the JSON object
the service sent, so fields this client does not know yet stay reachable.

Errors: every failure raises `CompactorAPIError`, and nothing else does (apart from
`ValueError` for an empty session id, a programming mistake):

- a non-2xx answer: `status` is the HTTP status; `type`, `title` and `detail` are the RFC
  9457 problem details the service sends (for example 404 `Session not found`, 409
  `Nothing to compact`, 422 `Invalid request` with the offending fields in
  `body["errors"]`, 401 `Unauthorized`). A non-JSON answer (a proxy's error page) keeps
  its reason phrase as `title` and the start of its text as `detail`; `body` is `{}`.
- no answer at all (connection refused, timeout, dropped connection): `status` is 0,
  `type` is `TRANSPORT_ERROR` or `TIMEOUT_ERROR`, and the httpx exception is the
  `__cause__`.
- a 2xx answer that does not match the API contract: `type` is `UNEXPECTED_RESPONSE`.

The client never retries on its own: whether a request may be repeated is the caller's
call (appends are safe to repeat with the same `idempotency_key`).

It imports only httpx and the standard library, so an agent can use it without the
service's dependencies. Framework integrations live in `context_compactor.integrations`
(each behind its own extra: `[langchain]`, `[pydantic-ai]`, `[openai-agents]`).
"""

from context_compactor._async import (
    AsyncCompactorClient,
)
from context_compactor._errors import (
    TIMEOUT_ERROR,
    TRANSPORT_ERROR,
    UNEXPECTED_RESPONSE,
    CompactorAPIError,
)
from context_compactor._jobs import (
    CompactionJob,
    JobProblem,
    JobProgress,
)
from context_compactor._models import (
    Breakdown,
    ClearedToolUse,
    CompactResult,
    Estimate,
    Health,
    Message,
    Readiness,
    RestoredFact,
    SummarizerInfo,
    SystemPrompt,
    SystemPromptSource,
)
from context_compactor._requests import (
    ClearOptions,
    CompactOptions,
    EstimateOptions,
    HistoryOptions,
    PromptFile,
    SessionChanges,
    SessionOptions,
    Skill,
    Subagent,
    SystemPromptOptions,
    UsageReport,
)
from context_compactor._session_models import (
    AppendResult,
    ClearSettings,
    CompactionRecord,
    Context,
    CostLine,
    CostPart,
    DollarsByKind,
    Folded,
    PrepareResult,
    RevertResult,
    SearchHit,
    SearchResult,
    Session,
    SessionCost,
    SessionPage,
    SettingsChange,
    TenantCost,
    TokensByKind,
    Transcript,
    Uncompacted,
)
from context_compactor._sync import (
    CompactorClient,
)
from context_compactor._transport import (
    DEFAULT_TIMEOUT,
)
from context_compactor._types import (
    AppliedStep,
    ChangedVia,
    CompactReason,
    FactKind,
    Format,
    JobState,
    SearchMatch,
    SourceKind,
    Strategy,
    ThinkingLevel,
    TokenizerName,
    Trigger,
    WindowSource,
)
from context_compactor._version import (
    __version__,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "TIMEOUT_ERROR",
    "TRANSPORT_ERROR",
    "UNEXPECTED_RESPONSE",
    "AppendResult",
    "AppliedStep",
    "AsyncCompactorClient",
    "Breakdown",
    "ChangedVia",
    "ClearOptions",
    "ClearSettings",
    "ClearedToolUse",
    "CompactOptions",
    "CompactReason",
    "CompactResult",
    "CompactionJob",
    "CompactionRecord",
    "CompactorAPIError",
    "CompactorClient",
    "Context",
    "CostLine",
    "CostPart",
    "DollarsByKind",
    "Estimate",
    "EstimateOptions",
    "FactKind",
    "Folded",
    "Format",
    "Health",
    "HistoryOptions",
    "JobProblem",
    "JobProgress",
    "JobState",
    "Message",
    "PrepareResult",
    "PromptFile",
    "Readiness",
    "RestoredFact",
    "RevertResult",
    "SearchHit",
    "SearchMatch",
    "SearchResult",
    "Session",
    "SessionChanges",
    "SessionCost",
    "SessionOptions",
    "SessionPage",
    "SettingsChange",
    "Skill",
    "SourceKind",
    "Strategy",
    "Subagent",
    "SummarizerInfo",
    "SystemPrompt",
    "SystemPromptOptions",
    "SystemPromptSource",
    "TenantCost",
    "ThinkingLevel",
    "TokenizerName",
    "TokensByKind",
    "Transcript",
    "Trigger",
    "Uncompacted",
    "UsageReport",
    "WindowSource",
    "__version__",
]
