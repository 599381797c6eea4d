"""Transport shared by the HTTP summarizers: bounded retries under one deadline, and the
mapping of every failure to exactly one engine error.

- 429, 408, 5xx and connection failures are transient: retried with exponential backoff
  (or after the provider's `Retry-After`), at most `RetryPolicy.max_retries` times, never
  past the deadline → `SummarizerUnavailableError` when they run out.
- No complete answer before the deadline → `SummarizerTimeoutError`.
- Any other status, a body that is not JSON, or JSON of the wrong shape →
  `SummarizerRejectedError`.

Error messages quote what the provider said, with the API key redacted; they never carry
request headers.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from app.engine.errors import (
    SummarizerError,
    SummarizerRejectedError,
    SummarizerTimeoutError,
    SummarizerUnavailableError,
)
from app.engine.models import ModelInfo
from app.engine.ports import SummarizerInfo

ResponseT = TypeVar("ResponseT", bound=BaseModel)

# Reaching the server should be quick; the rest of the deadline is for the model to write.
CONNECT_TIMEOUT_SECONDS = 10.0
_EXCERPT_CHARS = 300
DEFAULT_MAX_REPLY_BYTES = 16 * 1024 * 1024
# Replies above this are parsed in a worker thread, off the event loop.
_THREAD_PARSE_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a provider call is made: transient failures retried, replies capped in size.
    `sleep` is injectable so tests need not wait."""

    max_retries: int = 3
    base_delay: float = 0.5
    # A provider asking for a longer pause than this is not coming back within a request.
    max_delay: float = 20.0
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    # Told the reason of every transport retry (status code or "connection"): metrics.
    on_retry: Callable[[str], None] | None = None
    # A reply larger than this once decompressed is refused as soon as it gets there: a
    # runaway or hostile endpoint (a gzip bomb) cannot fill the service's memory.
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES

    def backoff(self, retry: int) -> float:
        """Delay before retry number `retry` (1-based) when the provider gave no hint."""
        return min(self.max_delay, self.base_delay * 2.0 ** (retry - 1))


@dataclass(frozen=True, slots=True)
class ProviderEndpoint:
    """Where and as whom one provider is called. Headers and secret stay out of reprs."""

    provider: str
    model: str
    url: str
    timeout_seconds: float
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    secret: str | None = field(default=None, repr=False)

    def error(self, kind: type[SummarizerError], message: str) -> SummarizerError:
        """An engine error naming this provider and model, with the key redacted."""
        return kind(self.redact(message), provider=self.provider, model=self.model)

    def redact(self, text: str) -> str:
        return text.replace(self.secret, "[redacted]") if self.secret else text

    @property
    def host(self) -> str:
        url = httpx.URL(self.url)
        return f"{url.host}:{url.port}" if url.port else url.host


def registry_info(provider: str, model: str, entry: ModelInfo) -> SummarizerInfo:
    """The engine's view of a configured model: window, output limit and thinking levels
    come from its registry entry (unknown models: no limits, no thinking)."""
    return SummarizerInfo(
        provider=provider,
        model=model,
        context_window=entry.context_window,
        max_output_tokens=entry.max_output_tokens,
        thinking_levels=entry.thinking_levels,
    )


async def post_json(
    client: httpx.AsyncClient,
    endpoint: ProviderEndpoint,
    payload: Mapping[str, Any],
    response_model: type[ResponseT],
    policy: RetryPolicy,
) -> ResponseT:
    """POSTs `payload` with retries and parses a 2xx answer into `response_model`."""
    response = await _send_with_retries(client, endpoint, payload, policy)
    if len(response.content) > _THREAD_PARSE_BYTES:
        return await asyncio.to_thread(parse_response, response, response_model, endpoint)
    return parse_response(response, response_model, endpoint)


def parse_response(
    response: httpx.Response, response_model: type[ResponseT], endpoint: ProviderEndpoint
) -> ResponseT:
    """A typed provider answer, or a rejected-error saying what was wrong with it."""
    try:
        data = json.loads(response.content)
    except ValueError:
        raise endpoint.error(
            SummarizerRejectedError,
            f"answered HTTP {response.status_code} with a body that is not JSON: "
            f"{_excerpt(response.text)!r}",
        ) from None
    try:
        return response_model.model_validate(data)
    except ValidationError as exc:
        problem = f"a response of an unexpected shape ({_first_problem(exc)})"
    # Some gateways answer 200 with an error object instead of a completion.
    with contextlib.suppress(ValidationError):
        said = _ErrorBody.model_validate(data).error
        if said.type or said.message:
            reason = ": ".join(part for part in (said.type, said.message) if part)
            problem = f"an error instead of a completion: {reason}"
    raise endpoint.error(SummarizerRejectedError, f"answered with {_excerpt(problem)}")


async def _send_with_retries(
    client: httpx.AsyncClient,
    endpoint: ProviderEndpoint,
    payload: Mapping[str, Any],
    policy: RetryPolicy,
) -> httpx.Response:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + endpoint.timeout_seconds
    retries = 0
    try:
        async with asyncio.timeout_at(deadline):
            while True:
                remaining = max(0.001, deadline - loop.time())
                timeout = httpx.Timeout(remaining, connect=min(CONNECT_TIMEOUT_SECONDS, remaining))
                retry_after: float | None = None
                reason = "connection"
                try:
                    response = await _post_capped(client, endpoint, payload, timeout, policy)
                except (httpx.ConnectTimeout, httpx.PoolTimeout):
                    failure = f"could not connect to {endpoint.host} in time"
                except httpx.TimeoutException:
                    # The per-attempt timeout is the rest of the deadline: it has passed.
                    raise TimeoutError from None
                except httpx.TransportError as exc:
                    failure = f"could not talk to {endpoint.host} ({_describe_transport(exc)})"
                except httpx.RequestError as exc:  # e.g. a body that cannot be decoded
                    raise endpoint.error(
                        SummarizerRejectedError,
                        f"answered in a way that could not be read ({_describe_transport(exc)})",
                    ) from None
                else:
                    if response.is_success:
                        return response
                    if not _is_transient(response.status_code):
                        raise _rejected(response, endpoint)
                    failure = _describe_status(response)
                    reason = str(response.status_code)
                    retry_after = retry_after_seconds(response.headers)
                retries += 1
                if retries > policy.max_retries:
                    attempts = "1 attempt" if retries == 1 else f"{retries} attempts"
                    raise endpoint.error(
                        SummarizerUnavailableError, f"{failure}; gave up after {attempts}"
                    )
                delay = retry_after if retry_after is not None else policy.backoff(retries)
                if delay > policy.max_delay:
                    raise endpoint.error(
                        SummarizerUnavailableError,
                        f"{failure}; it asked to wait {delay:g} s before retrying, longer than "
                        f"the {policy.max_delay:g} s the service pauses within a request",
                    )
                if loop.time() + delay >= deadline:
                    raise endpoint.error(
                        SummarizerUnavailableError,
                        f"{failure}; waiting {delay:g} s to retry would pass the "
                        f"{endpoint.timeout_seconds:g} s deadline",
                    )
                if policy.on_retry is not None:
                    policy.on_retry(reason)
                await policy.sleep(delay)
    except TimeoutError:
        raise endpoint.error(
            SummarizerTimeoutError,
            f"no complete answer within the {endpoint.timeout_seconds:g} s deadline "
            "(COMPACTOR_SUMMARIZER_TIMEOUT_SECONDS)",
        ) from None


async def _post_capped(
    client: httpx.AsyncClient,
    endpoint: ProviderEndpoint,
    payload: Mapping[str, Any],
    timeout: httpx.Timeout,
    policy: RetryPolicy,
) -> httpx.Response:
    """One POST whose reply is read (decompressed) only up to `policy.max_reply_bytes`."""
    limit = policy.max_reply_bytes
    async with client.stream(
        "POST", endpoint.url, json=payload, headers=dict(endpoint.headers), timeout=timeout
    ) as streamed:
        chunks: list[bytes] = []
        size = 0
        async for chunk in streamed.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise endpoint.error(
                    SummarizerRejectedError,
                    f"answered HTTP {streamed.status_code} with a reply larger than {limit} "
                    "bytes once decompressed; it was refused unread "
                    "(COMPACTOR_SUMMARIZER_MAX_REPLY_BYTES)",
                )
            chunks.append(chunk)
    # The body is decoded already: the copy must not say it is still compressed.
    headers = [
        (name, value)
        for name, value in streamed.headers.multi_items()
        if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    return httpx.Response(
        streamed.status_code,
        headers=headers,
        content=b"".join(chunks),
        request=streamed.request,
        extensions=streamed.extensions,
    )


def retry_after_seconds(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The pause a provider asked for: `retry-after-ms`, or `Retry-After` in seconds or as
    an HTTP date. None when absent or unreadable."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(0.0, value)
    raw = headers.get("retry-after")
    if raw is None or not raw.strip():
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _is_transient(status: int) -> bool:
    return status in (408, 429) or status >= 500


class _ErrorDetail(BaseModel):
    message: str | None = None
    type: str | None = None


class _ErrorBody(BaseModel):
    """Both OpenAI and Anthropic put their explanation in `error.message`."""

    error: _ErrorDetail


def _provider_says(response: httpx.Response) -> str:
    try:
        body = _ErrorBody.model_validate_json(response.content)
    except ValidationError:
        return _excerpt(response.text)
    parts = [p for p in (body.error.type, body.error.message) if p]
    return _excerpt(": ".join(parts))


def _describe_status(response: httpx.Response) -> str:
    said = _provider_says(response)
    return f"answered HTTP {response.status_code}" + (f": {said}" if said else "")


_HINTS = {
    401: "check COMPACTOR_SUMMARIZER_API_KEY",
    403: "check COMPACTOR_SUMMARIZER_API_KEY and the account's access to this model",
    404: "check COMPACTOR_SUMMARIZER_BASE_URL and COMPACTOR_SUMMARIZER_MODEL",
}


def _rejected(response: httpx.Response, endpoint: ProviderEndpoint) -> SummarizerError:
    status = response.status_code
    if 300 <= status < 400:
        where = response.headers.get("location", "elsewhere")
        message = (
            f"answered HTTP {status} redirecting to {where}; redirects are not followed, "
            "set COMPACTOR_SUMMARIZER_BASE_URL to the final address"
        )
    else:
        message = _describe_status(response)
        if status in _HINTS:
            message += f" ({_HINTS[status]})"
    return endpoint.error(SummarizerRejectedError, message)


def _describe_transport(exc: httpx.RequestError) -> str:
    detail = str(exc).strip()
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def _first_problem(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "body"
    more = f"; and {len(errors) - 1} more" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _EXCERPT_CHARS else flat[: _EXCERPT_CHARS - 1] + "…"
