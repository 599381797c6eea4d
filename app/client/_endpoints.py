"""Every endpoint as a request to send and a parser of its answer, shared by both clients."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, Required, TypedDict, TypeVar
from urllib.parse import quote

import httpx

from app.client._errors import error_from_response, unexpected_response
from app.client._fields import Format, MalformedAnswerError
from app.client._models import (
    AppendResult,
    CompactionRecord,
    CompactResult,
    Context,
    Estimate,
    Health,
    PrepareResult,
    Readiness,
    Session,
    SessionPage,
    SystemPrompt,
    Transcript,
    parse_compactions,
)

T = TypeVar("T")

ThinkingLevel = Literal["off", "minimal", "low", "medium", "high"]
TokenizerName = Literal["auto", "o200k_base", "cl100k_base", "chars/4"]
CompactReason = Literal["manual", "overflow"]


class UsageReport(TypedDict, total=False):
    """A provider usage report for the reply at `message_index`: the provider's `usage`
    object as returned (OpenAI Chat Completions, Responses or Anthropic) plus the index."""

    message_index: Required[int]
    input_tokens: int | None
    output_tokens: int | None
    cache_read_input_tokens: int | None
    cache_creation_input_tokens: int | None
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    prompt_tokens_details: Mapping[str, Any] | None
    completion_tokens_details: Mapping[str, Any] | None
    input_tokens_details: Mapping[str, Any] | None
    output_tokens_details: Mapping[str, Any] | None
    cache_creation: Mapping[str, Any] | None
    service_tier: str | None
    server_tool_use: Mapping[str, Any] | None
    inference_geo: str | None
    iterations: Sequence[Mapping[str, Any]] | None


class HistoryOptions(TypedDict, total=False):
    """Optional fields of POST /estimate (see the API contract for each)."""

    format: Format
    system: str | Sequence[Mapping[str, Any]]
    tools: Sequence[Mapping[str, Any]]
    model: str
    context_window: int
    reserve_tokens: int
    trigger_tokens: int
    tokenizer: TokenizerName
    usage: Sequence[UsageReport]
    estimate_floor: int


class CompactOptions(HistoryOptions, total=False):
    """Optional fields of POST /compact."""

    keep_recent_tokens: int
    force: bool
    instructions: str
    thinking: ThinkingLevel


class SessionOptions(TypedDict, total=False):
    """Optional fields of POST /sessions."""

    model: str
    format: Format
    system: str | Sequence[Mapping[str, Any]]
    tools: Sequence[Mapping[str, Any]]
    context_window: int
    reserve_tokens: int
    trigger_tokens: int
    keep_recent_tokens: int
    thinking: ThinkingLevel
    metadata: Mapping[str, Any]


class PromptFile(TypedDict):
    """A candidate file the agent found (rules files, prompt files)."""

    path: str
    content: str


class Skill(TypedDict, total=False):
    name: Required[str]
    description: Required[str]
    path: Required[str]
    content: str


class Subagent(TypedDict):
    name: str
    description: str


class SystemPromptOptions(TypedDict, total=False):
    """Optional fields of POST /context/system."""

    base_prompt: str
    files: Sequence[PromptFile]
    global_dir: str
    project_dir: str
    trusted: bool
    extension_contexts: Sequence[str]
    skills: Sequence[Skill]
    read_tool_available: bool
    subagents: Sequence[Subagent]
    model: str
    tokenizer: TokenizerName


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request to the service and how to read its answer."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    json: dict[str, Any] | None = None
    params: dict[str, int] | None = None
    headers: dict[str, str] | None = None

    def finish(self, response: httpx.Response) -> T:
        """The parsed answer, or CompactorAPIError for a non-2xx or malformed one."""
        if not response.is_success:
            raise error_from_response(response)
        try:
            return self.parse(response)
        except (MalformedAnswerError, ValueError) as exc:
            raise unexpected_response(response, str(exc)) from exc


def _json(parse: Callable[[dict[str, Any]], T]) -> Callable[[httpx.Response], T]:
    def read(response: httpx.Response) -> T:
        body = response.json()
        if not isinstance(body, dict):
            raise MalformedAnswerError("the answer is not a JSON object")
        return parse(body)

    return read


def _no_body(response: httpx.Response) -> None:
    return None


def _text(response: httpx.Response) -> str:
    return response.text


def _body(**fields: Any) -> dict[str, Any]:
    # Absent means "the service's default"; never send an explicit null for it.
    return {key: value for key, value in fields.items() if value is not None}


def _session_path(session_id: str, suffix: str = "") -> str:
    if not session_id:
        raise ValueError("session_id must not be empty")
    return f"/sessions/{quote(session_id, safe='')}{suffix}"


def healthz() -> Call[Health]:
    return Call("GET", "/healthz", _json(Health.parse))


def readyz() -> Call[Readiness]:
    return Call("GET", "/readyz", _json(Readiness.parse))


def metrics() -> Call[str]:
    return Call("GET", "/metrics", _text)


def estimate(messages: Sequence[Mapping[str, Any]], options: HistoryOptions) -> Call[Estimate]:
    return Call("POST", "/estimate", _json(Estimate.parse), _body(messages=messages, **options))


def compact(messages: Sequence[Mapping[str, Any]], options: CompactOptions) -> Call[CompactResult]:
    body = _body(messages=messages, **options)
    return Call("POST", "/compact", _json(CompactResult.parse), body)


def assemble_system_prompt(cwd: str, options: SystemPromptOptions) -> Call[SystemPrompt]:
    body = _body(cwd=cwd, **options)
    return Call("POST", "/context/system", _json(SystemPrompt.parse), body)


def create_session(options: SessionOptions) -> Call[Session]:
    return Call("POST", "/sessions", _json(Session.parse), _body(**options))


def list_sessions(offset: int, limit: int) -> Call[SessionPage]:
    params = {"offset": offset, "limit": limit}
    return Call("GET", "/sessions", _json(SessionPage.parse), params=params)


def get_session(session_id: str) -> Call[Session]:
    return Call("GET", _session_path(session_id), _json(Session.parse))


def delete_session(session_id: str) -> Call[None]:
    return Call("DELETE", _session_path(session_id), _no_body)


def append_messages(
    session_id: str,
    messages: Sequence[Mapping[str, Any]],
    usage: Sequence[UsageReport] | None,
    idempotency_key: str | None,
) -> Call[AppendResult]:
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key is not None else None
    return Call(
        "POST",
        _session_path(session_id, "/messages"),
        _json(AppendResult.parse),
        _body(messages=messages, usage=usage),
        headers=headers,
    )


def transcript(session_id: str, offset: int, limit: int) -> Call[Transcript]:
    params = {"offset": offset, "limit": limit}
    return Call(
        "GET", _session_path(session_id, "/transcript"), _json(Transcript.parse), params=params
    )


def context(session_id: str) -> Call[Context]:
    return Call("GET", _session_path(session_id, "/context"), _json(Context.parse))


def prepare(session_id: str) -> Call[PrepareResult]:
    return Call("POST", _session_path(session_id, "/prepare"), _json(PrepareResult.parse))


def compact_session(
    session_id: str,
    reason: CompactReason,
    instructions: str | None,
    thinking: ThinkingLevel | None,
) -> Call[PrepareResult]:
    body = _body(reason=reason, instructions=instructions, thinking=thinking)
    return Call("POST", _session_path(session_id, "/compact"), _json(PrepareResult.parse), body)


def compactions(session_id: str) -> Call[list[CompactionRecord]]:
    return Call("GET", _session_path(session_id, "/compactions"), _json(parse_compactions))
