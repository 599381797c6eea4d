"""The Agents SDK session on the service's store, in real Runner runs with a fake model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, ModelSettings, RunConfig, Runner, function_tool
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model, ModelTracing
from agents.usage import Usage
from context_compactor import CompactorClient
from context_compactor.integrations.openai_agents import CompactorSession
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

SUMMARY_MARKER = "[Context summary: the conversation before this point was compacted]"
NO_TRACING = RunConfig(tracing_disabled=True)


class ScriptedModel(Model):
    """An Agents SDK model: asks for read_file once per run, then answers; records inputs."""

    def __init__(self) -> None:
        self.inputs: list[list[dict[str, Any]]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else input
        self.inputs.append([dict(item) for item in items])  # type: ignore[call-overload]
        turn = len(self.inputs)
        if items[-1].get("type") == "function_call_output":
            output: Any = ResponseOutputMessage(
                id=f"msg_{turn}",
                content=[ResponseOutputText(text="Done.", annotations=[], type="output_text")],
                role="assistant",
                status="completed",
                type="message",
            )
        else:
            output = ResponseFunctionToolCall(
                arguments='{"path": "p.py"}',
                call_id=f"call_{turn}",
                name="read_file",
                type="function_call",
                id=f"fc_{turn}",
                status="completed",
            )
        return ModelResponse(output=[output], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("these tests do not stream")


@function_tool
def read_file(path: str) -> str:
    """Read a file of the project."""
    return f"contents of {path}: " + "def parse(text): return text.split()\n" * 120


def earlier_turns(n: int) -> list[dict[str, Any]]:
    """n earlier turns as Responses items: a request, a tool call with its output, a reply."""
    items: list[dict[str, Any]] = []
    for i in range(n):
        items += [
            {"role": "user", "content": f"step {i}: look at src/m{i}.py " * 40},
            {
                "type": "function_call",
                "call_id": f"old_{i}",
                "name": "read_file",
                "arguments": f'{{"path": "src/m{i}.py"}}',
            },
            {"type": "function_call_output", "call_id": f"old_{i}", "output": "x = 1\n" * 300},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": f"m{i} is fine " * 40}],
            },
        ]
    return items


def assert_tool_pairs_intact(items: list[dict[str, Any]]) -> None:
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    assert calls == outputs, (calls, outputs)
    for item in items:
        if item.get("type") == "function_call_output":
            index = items.index(item)
            assert any(c.get("call_id") == item["call_id"] for c in items[:index])


def item_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])


async def run_turns(compactor_url: str) -> tuple[ScriptedModel, CompactorSession]:
    session = CompactorSession(
        base_url=compactor_url, model="gpt-4o", trigger_tokens=3_000, keep_recent_tokens=1_000
    )
    await session.add_items(earlier_turns(6))  # type: ignore[arg-type]
    model = ScriptedModel()
    agent = Agent(name="coder", instructions="You are a coding agent.", model=model)
    agent.tools.append(read_file)
    result = await Runner.run(agent, "Now read p.py.", session=session, run_config=NO_TRACING)
    assert result.final_output == "Done."
    return model, session


def test_a_run_starts_from_the_compacted_history_and_everything_is_stored(
    compactor_url: str,
) -> None:
    model, session = asyncio.run(run_turns(compactor_url))
    assert session.last_prepare is not None and session.last_prepare.compacted
    first, second = model.inputs
    # The model got the summary first, then the kept items, then the new request.
    assert item_text(first[0]).startswith(SUMMARY_MARKER)
    assert len(first) < len(earlier_turns(6)) / 2
    assert item_text(first[-1]) == "Now read p.py."
    assert_tool_pairs_intact(first)
    assert_tool_pairs_intact(second)
    assert second[-1]["type"] == "function_call_output" and "def parse" in second[-1]["output"]
    # The store keeps every original item, the run's new ones appended after them.
    with CompactorClient(compactor_url) as compactor:
        transcript = compactor.transcript(session.session_id).messages
    assert transcript[: len(earlier_turns(6))] == earlier_turns(6)
    kinds = [item.get("type", "message") for item in transcript[len(earlier_turns(6)) :]]
    assert kinds == ["message", "function_call", "function_call_output", "message"]


async def pop_and_clear(compactor_url: str) -> None:
    session = CompactorSession(base_url=compactor_url)
    assert await session.pop_item() is None
    items: list[Any] = [
        {"role": "user", "content": "first"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]},
        {"role": "user", "content": "second"},
    ]
    await session.add_items(items)
    created = session.session_id
    assert [item_text(i) for i in await session.get_items()] == ["first", "a", "second"]
    assert [item_text(i) for i in await session.get_items(limit=2)] == ["a", "second"]
    popped = await session.pop_item()
    assert popped == items[-1]
    assert [item_text(i) for i in await session.get_items()] == ["first", "a"]
    assert session.session_id != created  # the append-only store was rebuilt without it
    await session.clear_session()
    assert await session.get_items() == []


def test_pop_item_and_clear_session(compactor_url: str) -> None:
    asyncio.run(pop_and_clear(compactor_url))


async def run_with_a_large_prompt(compactor_url: str) -> tuple[CompactorSession, int]:
    instructions = "You are a coding agent. " + "Keep to rule 7 of the style guide. " * 1000
    agent = Agent(name="coder", instructions=instructions, model=ScriptedModel())
    agent.tools.append(read_file)
    with CompactorClient(compactor_url) as compactor:
        bare = compactor.estimate(earlier_turns(6), model="gpt-4o", format="responses").tokens
    session = CompactorSession(
        base_url=compactor_url,
        model="gpt-4o",
        trigger_tokens=bare + 500,
        keep_recent_tokens=1_000,
        agent=agent,
    )
    await session.add_items(earlier_turns(6))  # type: ignore[arg-type]
    await Runner.run(agent, "Now read p.py.", session=session, run_config=NO_TRACING)
    return session, bare


def test_the_agents_instructions_and_tools_count_toward_the_threshold(
    compactor_url: str,
) -> None:
    """Issue 26.3: the items alone are under the trigger; the agent's instructions and
    tools, which the model is shown too, put the session over it."""
    session, bare = asyncio.run(run_with_a_large_prompt(compactor_url))
    prepared = session.last_prepare
    assert prepared is not None and prepared.compacted and prepared.compaction is not None
    # Counted: the items, the instructions and the tool definition.
    assert prepared.compaction.tokens_before > bare + 5_000
    with CompactorClient(compactor_url) as compactor:
        stored = compactor.get_session(session.session_id)
    assert str(stored.system).startswith("You are a coding agent.")
    assert [tool["name"] for tool in stored.tools] == ["read_file"]
