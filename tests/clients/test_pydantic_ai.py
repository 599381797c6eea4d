"""The pydantic-ai history processor in a real Agent run, a FunctionModel, a running service."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from context_compactor import CompactorClient, CompactResult
from context_compactor.integrations.pydantic_ai import CompactingHistoryProcessor
from context_compactor.integrations.pydantic_ai import to_wire as pydantic_wire
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.conftest import CLAUDE_CODE, load_json

TRANSCRIPT = CLAUDE_CODE / "4d5611e5.agent-a2898e3.openai.json"
SUMMARY_MARKER = "[Context summary: the conversation before this point was compacted]"
SYSTEM = "You are a coding agent working on the spotter project."


def history_from_transcript() -> list[ModelMessage]:
    """A real Chat Completions transcript as pydantic-ai messages (tool results batched)."""
    history: list[ModelMessage] = [ModelRequest(parts=[SystemPromptPart(SYSTEM)])]
    for message in load_json(TRANSCRIPT)["messages"]:
        if message["role"] == "tool":
            part = ToolReturnPart("tool", str(message["content"]), message["tool_call_id"])
            last = history[-1]
            if isinstance(last, ModelRequest) and isinstance(last.parts[-1], ToolReturnPart):
                history[-1] = ModelRequest(parts=[*last.parts, part])
            else:
                history.append(ModelRequest(parts=[part]))
        elif message["role"] == "assistant":
            parts: list[Any] = [TextPart(message["content"])] if message.get("content") else []
            for call in message.get("tool_calls") or []:
                function = call["function"]
                parts.append(ToolCallPart(function["name"], function["arguments"], call["id"]))
            history.append(ModelResponse(parts=parts))
        else:
            content = message["content"]
            text = content if isinstance(content, str) else json.dumps(content)
            history.append(ModelRequest(parts=[UserPromptPart(text)]))
    return history


def assert_tool_pairs_intact(messages: list[ModelMessage]) -> None:
    """Every tool call is answered by the next request, and every return has its call."""
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, ModelResponse):
            assert not open_calls, f"calls without returns: {open_calls}"
            open_calls = {p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)}
        else:
            returns = {p.tool_call_id for p in message.parts if isinstance(p, ToolReturnPart)}
            assert returns <= open_calls, f"orphan returns: {returns - open_calls}"
            assert returns == open_calls, f"calls without returns: {open_calls - returns}"
            open_calls = set()


class ScriptedModel:
    """A FunctionModel's function: call read_file once, then answer; record every input."""

    def __init__(self) -> None:
        self.inputs: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.inputs.append(list(messages))
        if len(self.inputs) == 1:
            return ModelResponse(parts=[ToolCallPart("read_file", {"path": "p.py"}, "call_1")])
        return ModelResponse(parts=[TextPart("parse() splits on whitespace.")])


def build_agent(processor: CompactingHistoryProcessor, model: ScriptedModel) -> Agent[None, str]:
    agent = Agent(FunctionModel(model), capabilities=[ProcessHistory(processor)])

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the project."""
        return f"contents of {path}: def parse(text): return text.split()"

    return agent


def test_the_model_gets_the_compacted_history_with_tool_pairs_intact(compactor_url: str) -> None:
    processor = CompactingHistoryProcessor(
        compactor_url, model="claude-sonnet-4-5", trigger_tokens=20_000, keep_recent_tokens=4_000
    )
    model = ScriptedModel()
    history = history_from_transcript()
    # asyncio.run, not run_sync: run_sync leaves its own event loop open for the process.
    result = asyncio.run(
        build_agent(processor, model).run(
            "Now read p.py and say what parse() does.", message_history=history
        )
    )
    assert result.output == "parse() splits on whitespace."
    assert len(model.inputs) == 2
    first, second = model.inputs
    # One request with the system prompt and the summary, then the kept recent messages.
    head = first[0]
    assert isinstance(head, ModelRequest)
    assert [type(p) for p in head.parts] == [SystemPromptPart, UserPromptPart]
    assert head.parts[0].content == SYSTEM
    assert str(head.parts[1].content).startswith(SUMMARY_MARKER)
    assert len(first) < len(history) / 2
    assert first[1:-1] == history[len(history) - len(first) + 2 :]  # the originals, untouched
    last = first[-1]
    assert isinstance(last, ModelRequest) and isinstance(last.parts[-1], UserPromptPart)
    assert last.parts[-1].content == "Now read p.py and say what parse() does."
    assert_tool_pairs_intact(first)
    # The second request carries the new tool pair after the (still compacted) history.
    assert_tool_pairs_intact(second)
    assert isinstance(second[0], ModelRequest)
    assert str(second[0].parts[1].content).startswith(SUMMARY_MARKER)
    tool_return = second[-1].parts[-1]
    assert isinstance(tool_return, ToolReturnPart) and "def parse" in str(tool_return.content)


def test_under_the_threshold_the_history_is_left_alone(compactor_url: str) -> None:
    processor = CompactingHistoryProcessor(compactor_url, model="claude-sonnet-4-5")
    model = ScriptedModel()
    asyncio.run(build_agent(processor, model).run("What does parse() do?"))
    assert processor.last_result is not None and not processor.last_result.compacted
    first = model.inputs[0]
    assert len(first) == 1 and isinstance(first[0], ModelRequest)
    assert first[0].parts[-1].content == "What does parse() do?"  # type: ignore[union-attr]


def test_only_summaries_keep_the_original_messages() -> None:
    with pytest.raises(ValueError, match="summarize"):
        CompactingHistoryProcessor("http://127.0.0.1:9", strategy="clear_tool_results")


class RecordingProcessor(CompactingHistoryProcessor):
    """The processor, keeping every answer of the service (not only the last)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.results: list[tuple[list[ModelMessage], CompactResult]] = []

    async def compact(self, messages: list[ModelMessage], **kwargs: Any) -> list[ModelMessage]:
        compacted = await super().compact(messages, **kwargs)
        assert self.last_result is not None
        self.results.append((list(messages), self.last_result))
        return compacted


READ_FILE_TOOL = {
    "name": "read_file",
    "description": "Read a file of the project.",
    "input_schema": {
        "additionalProperties": False,
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "type": "object",
    },
}


def test_the_agents_instructions_and_tools_count_toward_the_threshold(
    compactor_url: str,
) -> None:
    """Issue 26.3: what the model is shown besides the messages (the agent's instructions
    and tool definitions) counts. The history alone is under the trigger here; only the
    instructions put it over."""
    instructions = ("You review code. " + "Quote rule 7 of the house style guide. " * 1200).strip()
    question = "Now read p.py and say what parse() does."
    history = history_from_transcript()
    options: dict[str, Any] = {"model": "claude-sonnet-4-5", "format": "anthropic"}
    with CompactorClient(compactor_url) as service:
        bare = service.estimate(
            [*pydantic_wire(history).messages, {"role": "user", "content": question}],
            system=SYSTEM,
            **options,
        ).tokens
    processor = RecordingProcessor(
        compactor_url,
        model="claude-sonnet-4-5",
        trigger_tokens=bare + 1_000,
        keep_recent_tokens=4_000,
    )
    model = ScriptedModel()
    agent = Agent(
        FunctionModel(model), instructions=instructions, capabilities=[processor.capability()]
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the project."""
        return f"contents of {path}: def parse(text): return text.split()"

    asyncio.run(agent.run(question, message_history=history))
    first = model.inputs[0]
    head = first[0]
    assert isinstance(head, ModelRequest)
    assert str(head.parts[-1].content).startswith(SUMMARY_MARKER), "not compacted"
    assert_tool_pairs_intact(first)
    # The service counted what the model is shown: system prompt, instructions, tool.
    messages, result = processor.results[0]
    with CompactorClient(compactor_url) as service:
        full = service.estimate(
            pydantic_wire(messages).messages,
            system=f"{SYSTEM}\n\n{instructions}",
            tools=[READ_FILE_TOOL],
            **options,
        ).tokens
    assert result.tokens_before == full > bare + 5_000
