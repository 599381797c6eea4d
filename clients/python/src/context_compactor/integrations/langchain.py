"""LangChain v1 agent middleware: compact the agent's messages through the service.

    from langchain.agents import create_agent
    from context_compactor.integrations.langchain import CompactionMiddleware

    agent = create_agent(
        "openai:gpt-4o",
        tools=[...],
        system_prompt="You are a coding agent.",
        middleware=[CompactionMiddleware("http://127.0.0.1:8000", model="gpt-4o")],
    )

Around each model call the middleware sends what the model is about to get — the
agent's system prompt, its tools and its messages — to `POST /compact`, so a large agent
prompt or tool set counts toward the threshold. When the service compacts, the model gets
the summary message followed by the kept messages — the very same message objects, so
every tool call keeps its result — and the agent state is replaced by that history plus
the model's answer; later calls build on it (the next compaction updates the summary
instead of summarizing it again). Install with the `[langchain]` extra (LangChain 1.2.9+:
the state is updated through `ExtendedModelResponse`).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Unpack, cast

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import (
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    convert_to_messages,
    convert_to_openai_messages,
)
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import Command

from context_compactor import AsyncCompactorClient, CompactOptions, CompactorClient, CompactResult

ModelCallResult = ModelResponse[Any] | ExtendedModelResponse[Any]


class CompactionMiddleware(AgentMiddleware[AgentState[Any], Any]):
    """Compacts the agent's history through a context-compactor service before each model call.

    `options` are the fields of `POST /compact` (`model`, `context_window`,
    `trigger_tokens`, `keep_recent_tokens`, `instructions`, `pinned`, `strategy`, ...);
    the history is sent in the OpenAI Chat Completions format.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        client: CompactorClient | None = None,
        async_client: AsyncCompactorClient | None = None,
        **options: Unpack[CompactOptions],
    ) -> None:
        super().__init__()
        if base_url is None and client is None and async_client is None:
            raise ValueError("give the service's base_url, or a client")
        self._base_url = base_url
        self._api_key = api_key
        self._client = client
        self._async_client = async_client
        self.options = options
        self.last_result: CompactResult | None = None
        """The service's answer for the latest model call (for logs and tests)."""

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelCallResult:
        """Call the model with the compacted history when the service compacts it."""
        messages = list(request.messages)
        if not messages:
            return handler(request)
        wire, options = to_wire(messages), self._request_options(request)
        if self._client is not None:
            result = self._client.compact(wire, **options)
        else:
            with CompactorClient(self._url(), api_key=self._api_key) as client:
                result = client.compact(wire, **options)
        compacted = self._compacted(messages, result)
        if compacted is None:
            return handler(request)
        return _with_new_state(compacted, handler(request.override(messages=compacted)))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelCallResult:
        """The same as `wrap_model_call`, for agents run with `ainvoke` / `astream`."""
        messages = list(request.messages)
        if not messages:
            return await handler(request)
        wire, options = to_wire(messages), self._request_options(request)
        if self._async_client is not None:
            result = await self._async_client.compact(wire, **options)
        else:
            # A client per call: an agent may run under a new event loop each time.
            async with AsyncCompactorClient(self._url(), api_key=self._api_key) as client:
                result = await client.compact(wire, **options)
        compacted = self._compacted(messages, result)
        if compacted is None:
            return await handler(request)
        return _with_new_state(compacted, await handler(request.override(messages=compacted)))

    def _url(self) -> str:
        if self._base_url is None:
            raise ValueError("this middleware was given a client for the other mode only")
        return self._base_url

    def _request_options(self, request: ModelRequest[Any]) -> CompactOptions:
        """The options, with the request's system prompt and tools unless given."""
        options: CompactOptions = {"format": "openai"}
        system = request.system_message
        if system is not None and system.text:
            options["system"] = system.text
        tools = tool_definitions(request.tools)
        if tools:
            options["tools"] = tools
        options.update(self.options)
        return options

    def _compacted(
        self, messages: list[AnyMessage], result: CompactResult
    ) -> list[AnyMessage] | None:
        self.last_result = result
        return compacted_history(messages, result) if result.compacted else None


def _with_new_state(
    compacted: list[AnyMessage], response: ModelResponse[Any]
) -> ExtendedModelResponse[Any]:
    """The model's answer, and the agent state replaced by the compacted history + answer."""
    update = {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *compacted, *response.result]}
    return ExtendedModelResponse(model_response=response, command=Command(update=update))


def tool_definitions(tools: Sequence[BaseTool | dict[str, Any]]) -> list[dict[str, Any]]:
    """The agent's tools as Chat Completions tool definitions (what the model is shown)."""
    definitions = []
    for tool in tools:
        try:
            definitions.append(dict(convert_to_openai_tool(tool)))
        except (TypeError, ValueError):
            # A provider's built-in tool (a plain dict LangChain passes on): as given.
            if isinstance(tool, dict):
                definitions.append(dict(tool))
    return definitions


def to_wire(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as Chat Completions messages (tool calls and results paired by id)."""
    wire = convert_to_openai_messages(list(messages))
    return [dict(message) for message in wire]


def compacted_history(messages: list[AnyMessage], result: CompactResult) -> list[AnyMessage]:
    """The new history: leading system messages, the summary, then the kept originals."""
    leading = 0
    while leading < len(messages) and isinstance(messages[leading], SystemMessage):
        leading += 1
    cut = result.cut_index
    kept = len(messages) - cut if cut is not None else -1
    summary_only = result.applied in ([], ["summarize"])
    if summary_only and cut is not None and len(result.messages) == leading + 1 + kept:
        summary = result.messages[leading]
        return [
            *messages[:leading],
            HumanMessage(content=summary["content"], id=str(uuid.uuid4())),
            *messages[cut:],
        ]
    # Tool results were cleared in place: the service's messages are the new history.
    return cast(list[AnyMessage], convert_to_messages(result.messages))
