"""LangChain v1 agent middleware: compact the agent's messages through the service.

    from langchain.agents import create_agent
    from context_compactor.integrations.langchain import CompactionMiddleware

    agent = create_agent(
        "openai:gpt-4o",
        tools=[...],
        middleware=[CompactionMiddleware("http://127.0.0.1:8000", model="gpt-4o")],
    )

Before each model call the middleware sends the agent's messages to `POST /compact`.
When the service compacts, the agent state is replaced by the summary message followed by
the kept messages — the very same message objects, so every tool call keeps its result —
and the model sees the compacted history; later calls build on it (the next compaction
updates the summary instead of summarizing it again). Install with the `[langchain]` extra.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Unpack

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import (
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    convert_to_messages,
    convert_to_openai_messages,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime

from context_compactor import AsyncCompactorClient, CompactOptions, CompactorClient, CompactResult


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

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Replace the history with its compacted form when the service compacts it."""
        messages = list(state["messages"])
        if not messages:
            return None
        wire, options = to_wire(messages), self._request_options()
        if self._client is not None:
            result = self._client.compact(wire, **options)
        else:
            with CompactorClient(self._url(), api_key=self._api_key) as client:
                result = client.compact(wire, **options)
        return self._update(messages, result)

    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """The same as `before_model`, for agents run with `ainvoke` / `astream`."""
        messages = list(state["messages"])
        if not messages:
            return None
        wire, options = to_wire(messages), self._request_options()
        if self._async_client is not None:
            result = await self._async_client.compact(wire, **options)
        else:
            # A client per call: an agent may run under a new event loop each time.
            async with AsyncCompactorClient(self._url(), api_key=self._api_key) as client:
                result = await client.compact(wire, **options)
        return self._update(messages, result)

    def _url(self) -> str:
        if self._base_url is None:
            raise ValueError("this middleware was given a client for the other mode only")
        return self._base_url

    def _request_options(self) -> CompactOptions:
        options: CompactOptions = {"format": "openai"}
        options.update(self.options)
        return options

    def _update(self, messages: list[AnyMessage], result: CompactResult) -> dict[str, Any] | None:
        self.last_result = result
        if not result.compacted:
            return None
        compacted = compacted_history(messages, result)
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *compacted]}


def to_wire(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as Chat Completions messages (tool calls and results paired by id)."""
    wire = convert_to_openai_messages(list(messages))
    return [dict(message) for message in wire]


def compacted_history(messages: list[AnyMessage], result: CompactResult) -> list[BaseMessage]:
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
    return list(convert_to_messages(result.messages))
