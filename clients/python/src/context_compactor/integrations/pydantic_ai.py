"""pydantic-ai history processor: compact the agent's messages through the service.

    from pydantic_ai import Agent
    from context_compactor.integrations.pydantic_ai import CompactingHistoryProcessor

    compact = CompactingHistoryProcessor("http://127.0.0.1:8000", model="claude-sonnet-4-5")
    agent = Agent("anthropic:claude-sonnet-4-5", capabilities=[compact.capability()])
    # pydantic-ai 1.x: Agent(..., history_processors=[compact])

Before each model request the history is sent to `POST /compact` (as Anthropic Messages:
requests are user messages, responses assistant messages, tool calls `tool_use` blocks
answered by `tool_result` blocks), with the agent's system prompt and instructions. The
capability (pydantic-ai 2) also sends the request's tool definitions, so everything the
model is shown counts toward the threshold; as a plain history processor
(`ProcessHistory(compact)`, `history_processors=[compact]`) the tools are not visible to
it. When the service compacts, the model gets one request holding the system prompt parts
and the summary, then the kept messages — the original objects, so every tool call keeps
its return. Install with the `[pydantic-ai]` extra.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Unpack

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from context_compactor import AsyncCompactorClient, CompactOptions, CompactResult

Block = dict[str, Any]


class CompactingHistoryProcessor:
    """An async history processor that compacts through a context-compactor service.

    `options` are the fields of `POST /compact` (`model`, `context_window`,
    `trigger_tokens`, `keep_recent_tokens`, `instructions`, `pinned`, ...).
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        client: AsyncCompactorClient | None = None,
        **options: Unpack[CompactOptions],
    ) -> None:
        if base_url is None and client is None:
            raise ValueError("give the service's base_url, or a client")
        if options.get("strategy", "summarize") != "summarize":
            # The kept messages are passed on as the original objects, never rewritten.
            raise ValueError("the history processor compacts with strategy 'summarize' only")
        self._base_url = base_url
        self._api_key = api_key
        self._client = client
        self.options = options
        self.last_result: CompactResult | None = None
        """The service's answer for the latest model request (for logs and tests)."""

    async def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """The history to send now: compacted when the service says it must be."""
        return await self.compact(messages, instructions=_latest_instructions(messages))

    async def compact(
        self,
        messages: list[ModelMessage],
        *,
        instructions: Sequence[str] = (),
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> list[ModelMessage]:
        """`messages`, compacted when the service says so; the `instructions` and `tools`
        the model is also shown count toward the threshold."""
        wire = to_wire(messages)
        if not wire.messages:
            return messages
        options: CompactOptions = {"format": "anthropic"}
        system = [*wire.system, *(text for text in instructions if text)]
        if system:
            options["system"] = "\n\n".join(system)
        if tools:
            options["tools"] = list(tools)
        options.update(self.options)
        if self._client is not None:
            result = await self._client.compact(wire.messages, **options)
        else:
            # A client per call: an agent may run under a new event loop each time.
            assert self._base_url is not None
            async with AsyncCompactorClient(self._base_url, api_key=self._api_key) as client:
                result = await client.compact(wire.messages, **options)
        self.last_result = result
        if not result.compacted or result.cut_index is None:
            return messages
        return compacted_history(messages, wire, result)

    def capability(self) -> Any:
        """This processor as a pydantic-ai 2 capability (use it instead of
        `ProcessHistory(processor)`): it also counts the request's instructions and tools."""
        return _compaction_capability(self)


def _latest_instructions(messages: Sequence[ModelMessage]) -> list[str]:
    """The instructions of the latest request that carries them (pydantic-ai 2 keeps the
    agent's instructions on its requests, not among the parts)."""
    for message in reversed(messages):
        text = getattr(message, "instructions", None) if isinstance(message, ModelRequest) else None
        if isinstance(text, str) and text:
            return [text]
    return []


def _compaction_capability(processor: CompactingHistoryProcessor) -> Any:
    # Imported here: pydantic-ai 1.x, where history processors are plain callables, has no
    # capabilities module.
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.tools import RunContext

    @dataclass
    class CompactHistory(AbstractCapability[Any]):
        """Compacts the history before each model request, counting instructions and tools."""

        async def before_model_request(
            self, ctx: RunContext[Any], request_context: ModelRequestContext
        ) -> ModelRequestContext:
            parameters = request_context.model_request_parameters
            parts = getattr(parameters, "instruction_parts", None) or []
            instructions = [str(part.content) for part in parts]
            if not instructions:
                instructions = _latest_instructions(request_context.messages)
            tools = [
                {
                    "name": tool.name,
                    "description": tool.description or "",
                    "input_schema": tool.parameters_json_schema,
                }
                for tool in parameters.function_tools
            ]
            messages = await processor.compact(
                list(request_context.messages), instructions=instructions, tools=tools
            )
            # As ProcessHistory does: this request, and the run's history from now on.
            request_context.messages = messages.copy()
            ctx.messages[:] = messages
            return request_context

        @classmethod
        def get_serialization_name(cls) -> str | None:
            return None  # holds a live client configuration, not a spec

    return CompactHistory()


class WireHistory:
    """A pydantic-ai history as Anthropic Messages, with where each message came from."""

    def __init__(self) -> None:
        self.system: list[str] = []
        self.messages: list[dict[str, Any]] = []
        self.origin: list[int] = []
        """origin[i] is the index in the pydantic-ai history of wire message i."""


def to_wire(messages: Sequence[ModelMessage]) -> WireHistory:
    """Requests become user messages, responses assistant messages; system parts go on top."""
    wire = WireHistory()
    for index, message in enumerate(messages):
        if isinstance(message, ModelRequest):
            role, blocks = "user", _request_blocks(message, wire.system)
        else:
            role, blocks = "assistant", _response_blocks(message)
        if blocks:  # a request of system parts only has nothing to send
            wire.messages.append({"role": role, "content": blocks})
            wire.origin.append(index)
    return wire


def _request_blocks(request: ModelRequest, system: list[str]) -> list[Block]:
    blocks: list[Block] = []
    for part in request.parts:
        if isinstance(part, SystemPromptPart):
            system.append(part.content)
        elif isinstance(part, ToolReturnPart):
            blocks.append(_tool_result(part.tool_call_id, part.model_response_str(), False))
        elif isinstance(part, RetryPromptPart) and part.tool_name is not None:
            blocks.append(_tool_result(part.tool_call_id, part.model_response(), True))
        elif isinstance(part, RetryPromptPart):
            blocks.append({"type": "text", "text": part.model_response()})
        elif isinstance(part, UserPromptPart):
            blocks.append({"type": "text", "text": _user_text(part)})
    # Anthropic wants a user message's tool results before its text.
    return sorted(blocks, key=lambda block: block["type"] != "tool_result")


def _response_blocks(response: ModelResponse) -> list[Block]:
    blocks: list[Block] = []
    for part in response.parts:
        if isinstance(part, ToolCallPart):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": part.tool_call_id,
                    "name": part.tool_name,
                    "input": part.args_as_dict(),
                }
            )
        else:
            content = getattr(part, "content", None)
            text = content if isinstance(content, str) else json.dumps(content, default=str)
            if text:
                blocks.append({"type": "text", "text": text})
    return blocks


def _tool_result(tool_call_id: str, content: str, is_error: bool) -> Block:
    block: Block = {"type": "tool_result", "tool_use_id": tool_call_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def _user_text(part: UserPromptPart) -> str:
    if isinstance(part.content, str):
        return part.content
    return "\n".join(
        item if isinstance(item, str) else f"[{type(item).__name__}]" for item in part.content
    )


def compacted_history(
    messages: list[ModelMessage], wire: WireHistory, result: CompactResult
) -> list[ModelMessage]:
    """One request with the dropped system parts and the summary, then the kept originals."""
    assert result.cut_index is not None
    first_kept = wire.origin[result.cut_index]
    summary = result.messages[0]["content"]
    if not isinstance(summary, str):
        summary = "\n".join(block.get("text", "") for block in summary)
    system: list[ModelRequestPart] = [
        part
        for message in messages[:first_kept]
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, SystemPromptPart)
    ]
    head = ModelRequest(parts=[*system, UserPromptPart(content=summary)])
    return [head, *messages[first_kept:]]
