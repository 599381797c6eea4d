"""Every endpoint as a request to send and a parser of its answer, shared by both clients."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from context_compactor._errors import error_from_response, unexpected_response
from context_compactor._fields import MalformedAnswerError
from context_compactor._jobs import CompactionJob
from context_compactor._models import CompactResult, Estimate, Health, Readiness, SystemPrompt
from context_compactor._requests import (
    CompactOptions,
    EstimateOptions,
    SessionChanges,
    SessionOptions,
    SystemPromptOptions,
    UsageReport,
)
from context_compactor._session_models import (
    AppendResult,
    CompactionRecord,
    Context,
    PrepareResult,
    RevertResult,
    SearchResult,
    Session,
    SessionCost,
    SessionPage,
    SettingsChange,
    TenantCost,
    Transcript,
    parse_changes,
    parse_compactions,
)
from context_compactor._types import CompactReason, Strategy, ThinkingLevel

T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request to the service and how to read its answer."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    json: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    content: bytes | None = None

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


def _bytes(response: httpx.Response) -> bytes:
    return response.content


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


def estimate(messages: Sequence[Mapping[str, Any]], options: EstimateOptions) -> Call[Estimate]:
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


def prepare(session_id: str, dry_run: bool = False) -> Call[PrepareResult]:
    body = {"dry_run": True} if dry_run else None
    return Call("POST", _session_path(session_id, "/prepare"), _json(PrepareResult.parse), body)


def compact_session(
    session_id: str,
    reason: CompactReason,
    instructions: str | None,
    thinking: ThinkingLevel | None,
    strategy: Strategy | None,
    dry_run: bool = False,
) -> Call[PrepareResult]:
    body = _body(
        reason=reason,
        instructions=instructions,
        thinking=thinking,
        strategy=strategy,
        dry_run=dry_run or None,
    )
    return Call("POST", _session_path(session_id, "/compact"), _json(PrepareResult.parse), body)


def start_compaction(
    session_id: str,
    reason: CompactReason,
    instructions: str | None,
    thinking: ThinkingLevel | None,
    strategy: Strategy | None,
) -> Call[CompactionJob]:
    body = _body(reason=reason, instructions=instructions, thinking=thinking, strategy=strategy)
    return Call(
        "POST",
        _session_path(session_id, "/compact"),
        _json(_accepted),
        body,
        headers={"Prefer": "respond-async"},
    )


def _accepted(raw: dict[str, Any]) -> CompactionJob:
    # A service that ignored the preference answered the compaction itself (200).
    if "state" not in raw:
        raise MalformedAnswerError("the service answered inline, not with a job (202)")
    return CompactionJob.parse(raw)


def compaction_job(session_id: str, job_id: str) -> Call[CompactionJob]:
    if not job_id:
        raise ValueError("job_id must not be empty")
    path = _session_path(session_id, f"/jobs/{quote(job_id, safe='')}")
    return Call("GET", path, _json(CompactionJob.parse))


def compactions(session_id: str) -> Call[list[CompactionRecord]]:
    return Call("GET", _session_path(session_id, "/compactions"), _json(parse_compactions))


def search(session_id: str, q: str, limit: int, folded_only: bool) -> Call[SearchResult]:
    params: dict[str, Any] = {"q": q, "limit": limit}
    if folded_only:
        params["folded_only"] = "true"
    return Call(
        "GET", _session_path(session_id, "/search"), _json(SearchResult.parse), params=params
    )


def revert(session_id: str, compaction_id: str) -> Call[RevertResult]:
    if not compaction_id:
        raise ValueError("compaction_id must not be empty")
    path = _session_path(session_id, f"/compactions/{quote(compaction_id, safe='')}/revert")
    return Call("POST", path, _json(RevertResult.parse))


def fork(session_id: str, at_seq: int) -> Call[Session]:
    body = {"at_seq": at_seq}
    return Call("POST", _session_path(session_id, "/fork"), _json(Session.parse), body)


def update_session(session_id: str, changes: SessionChanges) -> Call[Session]:
    # Here None is sent: it sets the setting back to the service's default.
    return Call("PATCH", _session_path(session_id), _json(Session.parse), dict(changes))


def settings_changes(session_id: str) -> Call[list[SettingsChange]]:
    return Call("GET", _session_path(session_id, "/changes"), _json(parse_changes))


def export_session(session_id: str) -> Call[bytes]:
    return Call("GET", _session_path(session_id, "/export"), _bytes)


def import_session(bundle: bytes) -> Call[Session]:
    headers = {"Content-Type": "application/x-ndjson"}
    return Call("POST", "/sessions/import", _json(Session.parse), headers=headers, content=bundle)


def tenant_cost() -> Call[TenantCost]:
    return Call("GET", "/cost", _json(TenantCost.parse))


def cost(session_id: str) -> Call[SessionCost]:
    return Call("GET", _session_path(session_id, "/cost"), _json(SessionCost.parse))
