"""The asyncio client (same methods as CompactorClient, awaited)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar, Unpack

import httpx

from context_compactor import _endpoints as api
from context_compactor._base import ClientBase
from context_compactor._errors import CompactorAPIError
from context_compactor._jobs import DEFAULT_POLL_INTERVAL, CompactionJob, OnProgress, finished_job
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
)
from context_compactor._transport import DEFAULT_TIMEOUT, TimeoutTypes
from context_compactor._types import CompactReason, Strategy, ThinkingLevel

T = TypeVar("T")


class AsyncCompactorClient(ClientBase[httpx.AsyncClient]):
    """Async client of a context-compactor service; every failure is CompactorAPIError."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: TimeoutTypes = DEFAULT_TIMEOUT,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, http_client, httpx.AsyncClient)

    async def aclose(self) -> None:
        """Close the connection pool (an injected httpx.AsyncClient stays open)."""
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncCompactorClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _send(self, call: api.Call[T]) -> T:
        try:
            response = await self._http.request(**self._request(call))
        except httpx.RequestError as exc:
            raise self._no_answer(exc, call) from exc
        return call.finish(response)

    # -- service -----------------------------------------------------------------------

    async def healthz(self) -> Health:
        """GET /healthz: the process is up."""
        return await self._send(api.healthz())

    async def readyz(self) -> Readiness:
        """GET /readyz: tokenizers and database ready (503 → CompactorAPIError)."""
        return await self._send(api.readyz())

    async def metrics(self) -> str:
        """GET /metrics: Prometheus text."""
        return await self._send(api.metrics())

    # -- stateless ---------------------------------------------------------------------

    async def estimate(
        self, messages: Sequence[Mapping[str, Any]], **options: Unpack[EstimateOptions]
    ) -> Estimate:
        """POST /estimate: count a history's tokens and say whether to compact."""
        return await self._send(api.estimate(messages, options))

    async def compact(
        self, messages: Sequence[Mapping[str, Any]], **options: Unpack[CompactOptions]
    ) -> CompactResult:
        """POST /compact: fold the older part of a history into one summary message."""
        return await self._send(api.compact(messages, options))

    async def assemble_system_prompt(
        self, cwd: str, **options: Unpack[SystemPromptOptions]
    ) -> SystemPrompt:
        """POST /context/system: assemble the system prompt for an agent working in `cwd`."""
        return await self._send(api.assemble_system_prompt(cwd, options))

    # -- sessions ----------------------------------------------------------------------

    async def create_session(self, **options: Unpack[SessionOptions]) -> Session:
        """POST /sessions: a new session with its model, format, system, tools, settings."""
        return await self._send(api.create_session(options))

    async def list_sessions(self, *, offset: int = 0, limit: int = 50) -> SessionPage:
        """GET /sessions: the caller's sessions, newest first."""
        return await self._send(api.list_sessions(offset, limit))

    async def get_session(self, session_id: str) -> Session:
        """GET /sessions/{id}."""
        return await self._send(api.get_session(session_id))

    async def delete_session(self, session_id: str) -> None:
        """DELETE /sessions/{id}, with its transcript and compactions."""
        await self._send(api.delete_session(session_id))

    async def append_messages(
        self,
        session_id: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        usage: Sequence[UsageReport] | None = None,
        idempotency_key: str | None = None,
    ) -> AppendResult:
        """POST /sessions/{id}/messages; a repeated `idempotency_key` appends nothing."""
        return await self._send(api.append_messages(session_id, messages, usage, idempotency_key))

    async def transcript(
        self, session_id: str, *, offset: int = 0, limit: int = 1000
    ) -> Transcript:
        """GET /sessions/{id}/transcript: the original messages, as received."""
        return await self._send(api.transcript(session_id, offset, limit))

    async def context(self, session_id: str) -> Context:
        """GET /sessions/{id}/context: what to send now, with its estimate."""
        return await self._send(api.context(session_id))

    async def prepare(self, session_id: str, *, dry_run: bool = False) -> PrepareResult:
        """POST /sessions/{id}/prepare: the before-turn hook (compacts when over threshold);
        with `dry_run`, what it would do, writing nothing."""
        return await self._send(api.prepare(session_id, dry_run))

    async def compact_session(
        self,
        session_id: str,
        *,
        reason: CompactReason = "manual",
        instructions: str | None = None,
        thinking: ThinkingLevel | None = None,
        strategy: Strategy | None = None,
        dry_run: bool = False,
    ) -> PrepareResult:
        """POST /sessions/{id}/compact: compact now; 409 when there is nothing to compact."""
        return await self._send(
            api.compact_session(session_id, reason, instructions, thinking, strategy, dry_run)
        )

    async def start_compaction(
        self,
        session_id: str,
        *,
        reason: CompactReason = "manual",
        instructions: str | None = None,
        thinking: ThinkingLevel | None = None,
        strategy: Strategy | None = None,
    ) -> CompactionJob:
        """POST /sessions/{id}/compact with `Prefer: respond-async`: the compaction as a
        job in the service's background, answered (202) before the summary is written."""
        call = api.start_compaction(session_id, reason, instructions, thinking, strategy)
        return await self._send(call)

    async def compaction_job(self, session_id: str, job_id: str) -> CompactionJob:
        """GET /sessions/{id}/jobs/{job}: its state, progress, and record or problem."""
        return await self._send(api.compaction_job(session_id, job_id))

    async def wait_for_job(
        self,
        job: CompactionJob,
        *,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        timeout: float | None = None,
        on_progress: OnProgress | None = None,
    ) -> CompactionJob:
        """Polls `job` until it finishes (telling `on_progress` of each answer): the done
        job, with its `compaction`; CompactorAPIError with the job's problem when it
        failed or was abandoned, or status 0 when `timeout` seconds pass first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not job.finished:
            if deadline is not None and time.monotonic() >= deadline:
                raise _still_running(job, timeout)
            await asyncio.sleep(poll_interval)
            job = await self.compaction_job(job.session_id, job.id)
            if on_progress is not None:
                on_progress(job)
        return finished_job(job)

    async def compactions(self, session_id: str) -> list[CompactionRecord]:
        """GET /sessions/{id}/compactions: every compaction record, oldest first."""
        return await self._send(api.compactions(session_id))

    # -- recall and control (SPEC §17) -------------------------------------------------

    async def search(
        self, session_id: str, q: str, *, limit: int = 10, folded_only: bool = False
    ) -> SearchResult:
        """GET /sessions/{id}/search: transcript entries by full text, folded ones included."""
        return await self._send(api.search(session_id, q, limit, folded_only))

    async def revert(self, session_id: str, compaction_id: str) -> RevertResult:
        """POST /sessions/{id}/compactions/{cid}/revert: the context before it, as a record."""
        return await self._send(api.revert(session_id, compaction_id))

    async def fork(self, session_id: str, *, at_seq: int) -> Session:
        """POST /sessions/{id}/fork: a new session from entries 0..at_seq."""
        return await self._send(api.fork(session_id, at_seq))

    async def update_session(self, session_id: str, **changes: Unpack[SessionChanges]) -> Session:
        """PATCH /sessions/{id}: change its settings; the change is recorded."""
        return await self._send(api.update_session(session_id, changes))

    async def settings_changes(self, session_id: str) -> list[SettingsChange]:
        """GET /sessions/{id}/changes: every recorded settings change, oldest first."""
        return await self._send(api.settings_changes(session_id))

    async def export_session(self, session_id: str) -> bytes:
        """GET /sessions/{id}/export: the JSON Lines bundle."""
        return await self._send(api.export_session(session_id))

    async def import_session(self, bundle: bytes) -> Session:
        """POST /sessions/import: a new session from a bundle (422 if cut or altered)."""
        return await self._send(api.import_session(bundle))

    async def tenant_cost(self) -> TenantCost:
        """GET /cost: what the caller's tenant was billed, by source, API and model."""
        return await self._send(api.tenant_cost())

    async def cost(self, session_id: str) -> SessionCost:
        """GET /sessions/{id}/cost: tokens and dollars by kind, the summarizer's share,
        and what the same requests would have cost uncompacted (SPEC §15)."""
        return await self._send(api.cost(session_id))


def _still_running(job: CompactionJob, timeout: float | None) -> CompactorAPIError:
    return CompactorAPIError(
        0,
        "Still running",
        f"compaction job {job.id} did not finish within {timeout} seconds (state "
        f"{job.state}); wait for it again or read it with compaction_job()",
    )
