"""The one interface every vendor API the proxy speaks implements (SPEC §10, §11).

A `VendorApi` is the wire knowledge of one model API beside its `WireFormat`: which
route it answers and where the upstream expects it, where a request keeps its history,
system prompt, tools, model and output budget (`RequestEnvelope`), how its replies and
streams look (`reply_from_body`, `stream_capture`), how it says the context is too long,
and the vendor-native context management its requests may carry. Services only ever see
this Protocol and the registry (`app.formats.apis.registry`); adding an API is one module
plus one registry line. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Protocol

from app.engine.errors import InvalidHistoryError

_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


class Upstream(StrEnum):
    """Which configured upstream an API's requests go to."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"


# The path parameters of a route that has none.
NO_PARAMS: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class RequestEnvelope:
    """What a proxied request body says about its history, typed.

    `history` is None when the body holds no history the proxy can work on (absent, not
    a list, or empty); everything else is as the caller sent it, checked for type only.
    """

    history: list[Any] | None
    system: Any = None
    # None when the request has no `tools` field (an empty list is a request for none).
    tools: tuple[Any, ...] | None = None
    # The request's tool fields besides `tools` (legacy `functions`, `tool_choice`, …):
    # the wire format interprets them when it counts the tools.
    tool_fields: Mapping[str, Any] = field(default_factory=dict)
    model: str | None = None
    # The largest output budget the request asks for (0 when it names none).
    output_budget: int = 0
    streamed: bool = False


@dataclass(frozen=True, slots=True)
class UpstreamReply:
    """The model's reply as history messages of the request's format, and the usage
    report that belongs to the last of them."""

    messages: list[Any]
    usage: dict[str, int] | None
    # Of `usage`'s cache writes, those with Anthropic's 1-hour TTL (priced 2x, not 1.25x).
    cache_write_1h: int = 0


class ReplyStream(Protocol):
    """Rebuilds the reply from a stream's events, fed chunk by chunk as they pass."""

    @property
    def finished(self) -> bool:
        """True once the stream's final event has arrived."""
        ...

    def feed(self, chunk: bytes) -> bool:
        """Reads the events in `chunk`; True once the final event has arrived."""
        ...

    def reply(self) -> UpstreamReply | None:
        """The reassembled reply; None when there is none or the stream did not finish."""
        ...


class ContextManagementWire(Protocol):
    """The vendor-native context management a request of this API may carry (SPEC §11)."""

    def mentions(self, raw: bytes) -> bool:
        """False when the raw body cannot carry native context management (a byte scan:
        most bodies are then never parsed)."""
        ...

    def carries(self, body: Mapping[str, Any]) -> bool:
        """True when the request asks for native context management or carries a
        compaction block/item to rebuild."""
        ...

    def self_managed(self, body: Mapping[str, Any]) -> bool:
        """True when the caller manages its own context (it sent `context_management`):
        the proxy's transparent compaction stays out of the way."""
        ...

    def with_capabilities(self, content: bytes) -> bytes:
        """An upstream's model description (`GET /v1/models/{id}`) that also says which
        context management the service honours in front of it (unchanged where the vendor
        publishes no such flags)."""
        ...


class LocalCount(Protocol):
    """A vendor's token-counting route that the service answers itself, offline."""

    @property
    def route(self) -> str:
        """The service's route for it (a path template, like the API's own)."""
        ...

    @property
    def description(self) -> str: ...

    def as_request(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The counting body as the generation request whose input it counts."""
        ...

    def answer(self, tokens: int) -> dict[str, Any]:
        """The vendor's counting answer for `tokens` input tokens."""
        ...


class VendorApi(Protocol):
    """One model API the proxy forwards."""

    @property
    def name(self) -> str:
        """Its name in metrics and logs (`chat_completions`, `messages`, `responses`)."""
        ...

    @property
    def upstream(self) -> Upstream: ...

    @property
    def format(self) -> str:
        """The wire format of its history (a name in the format registry)."""
        ...

    @property
    def route(self) -> str:
        """The service's route for it (a path template, `{name}` for path parameters)."""
        ...

    @property
    def description(self) -> str:
        """One line for the route's OpenAPI description."""
        ...

    @property
    def path_choices(self) -> Mapping[str, tuple[str, ...]]:
        """The values a path parameter may take (others are 404), for those it limits."""
        ...

    @property
    def context_management(self) -> ContextManagementWire | None:
        """Its vendor-native context management, if it has any."""
        ...

    @property
    def local_count(self) -> LocalCount | None:
        """Its counting route, answered by the service (generated from the registry)."""
        ...

    def upstream_path(self, params: Mapping[str, str]) -> str:
        """The path appended to the upstream's configured base URL."""
        ...

    def envelope(
        self, body: Mapping[str, Any], params: Mapping[str, str] = NO_PARAMS
    ) -> RequestEnvelope:
        """The request's history, system prompt, tools, model and output budget, as far
        as they have the right types (the upstream judges the rest); `params` are the
        route's path parameters (an API may name the model in its path)."""
        ...

    def checked_envelope(
        self, body: Mapping[str, Any], params: Mapping[str, str] = NO_PARAMS
    ) -> RequestEnvelope:
        """The envelope of a request the service answers itself (counting, native edits):
        a wrong type is the caller's mistake (InvalidHistoryError); `history` is a list,
        empty when the request has none."""
        ...

    def with_history(self, body: Mapping[str, Any], history: Sequence[Any]) -> dict[str, Any]:
        """`body` with its history replaced; every other field kept as received."""
        ...

    def with_system(self, body: Mapping[str, Any], system: Any) -> dict[str, Any]:
        """`body` with its top-level system prompt set (unchanged where the API has none)."""
        ...

    def with_cache_breakpoints(
        self, sent: Mapping[str, Any], forwarded: dict[str, Any], summary_at: int | None
    ) -> dict[str, Any]:
        """`forwarded`, a body whose history the service rebuilt from the caller's `sent`
        (compacted, cleared, a session's context), with the prompt-cache breakpoints the
        caller's request places today and none other; one after the summary message at
        `summary_at` (an index in the forwarded history) when there is room; never more
        than the API takes (SPEC §15). Unchanged where the API caches on its own."""
        ...

    def without_server_state(self, body: dict[str, Any]) -> dict[str, Any]:
        """`body` without the fields naming history the upstream stores (Responses
        `previous_response_id`, `conversation`); a bound session stands for them."""
        ...

    def server_state_fields(self, body: Mapping[str, Any]) -> tuple[str, ...]:
        """The fields of `body` that name history the upstream stores (set, not null)."""
        ...

    def reply_from_body(self, content: bytes) -> UpstreamReply | None:
        """The reply in a whole (non-streamed) answer body; None when it holds none."""
        ...

    def stream_capture(self) -> ReplyStream:
        """A fresh capture for one streamed answer."""
        ...

    def is_overflow(self, status: int, content: bytes) -> bool:
        """True when the upstream refused the request because its context is too long."""
        ...


def usage_report(raw: Any) -> dict[str, int] | None:
    """A provider usage object → the session's usage fields (input, output, cache)."""
    if not isinstance(raw, dict):
        return None
    if "prompt_tokens" in raw:  # Chat Completions; cached tokens are part of the prompt
        raw = _split_cached(
            raw.get("prompt_tokens"), raw.get("completion_tokens"), raw.get("prompt_tokens_details")
        )
    elif isinstance(raw.get("input_tokens_details"), dict):  # Responses: the same, renamed
        raw = _split_cached(
            raw.get("input_tokens"), raw.get("output_tokens"), raw.get("input_tokens_details")
        )
    report = {
        name: value
        for name in _USAGE_FIELDS
        if isinstance(value := raw.get(name), int) and not isinstance(value, bool) and value >= 0
    }
    return report or None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _split_cached(prompt: Any, output: Any, details: Any) -> dict[str, Any]:
    """OpenAI's usage in the session's fields: the prompt's cached part (`cached_tokens`)
    as cache reads, the rest as input; their sum, what the estimate anchors on, is the
    prompt as reported."""
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else None
    total = _count(prompt)
    if cached is None or total is None:
        return {"input_tokens": prompt, "output_tokens": output}
    cached = min(cached, total)
    return {
        "input_tokens": total - cached,
        "cache_read_input_tokens": cached,
        "output_tokens": output,
    }


def one_hour_writes(raw: Any) -> int:
    """Anthropic's `usage.cache_creation.ephemeral_1h_input_tokens` (0 when absent)."""
    split = raw.get("cache_creation") if isinstance(raw, dict) else None
    value = split.get("ephemeral_1h_input_tokens") if isinstance(split, dict) else None
    return _count(value) or 0


def output_budget(body: Mapping[str, Any], names: Sequence[str]) -> int:
    """The largest integer among the output-budget fields `names` (0 when none is set)."""
    values = [body.get(name) for name in names]
    return max((v for v in values if isinstance(v, int) and not isinstance(v, bool)), default=0)


def envelope_of(
    body: Mapping[str, Any],
    history: list[Any] | None,
    system: Any,
    budget_fields: Sequence[str],
    tool_field_names: Sequence[str] = (),
) -> RequestEnvelope:
    """The envelope fields every API reads the same way (`tools`, `model`, `stream`)."""
    tools = body.get("tools")
    model = body.get("model")
    return RequestEnvelope(
        history=history,
        system=system,
        tools=tuple(tools) if isinstance(tools, list) else None,
        tool_fields={k: body[k] for k in tool_field_names if body.get(k) is not None},
        model=model if isinstance(model, str) else None,
        output_budget=output_budget(body, budget_fields),
        streamed=body.get("stream") is True,
    )


def checked_model_and_tools(
    body: Mapping[str, Any],
) -> tuple[str | None, tuple[Any, ...] | None]:
    """A request's `model` and `tools`, checked: they choose the tokenizer and are counted."""
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise InvalidHistoryError("model: must be a string", where="model")
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise InvalidHistoryError("tools: must be an array of tool definitions", where="tools")
    return model, tuple(tools) if tools is not None else None


def checked_envelope_of(
    body: Mapping[str, Any],
    history: list[Any],
    system: Any,
    budget_fields: Sequence[str],
    tool_field_names: Sequence[str] = (),
) -> RequestEnvelope:
    """`envelope_of` for a request the service answers itself: model and tools checked."""
    model, tools = checked_model_and_tools(body)
    loose = envelope_of(body, history, system, budget_fields, tool_field_names)
    return RequestEnvelope(
        history=history,
        system=system,
        tools=tools,
        tool_fields=loose.tool_fields,
        model=model,
        output_budget=loose.output_budget,
        streamed=loose.streamed,
    )
