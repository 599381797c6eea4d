"""The LangChain v1 middleware in `create_agent`, with a fake chat model and a running service."""

from __future__ import annotations

import asyncio
from typing import Any

from context_compactor import CompactorClient, CompactResult
from context_compactor.integrations.langchain import CompactionMiddleware, to_wire
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from tests.conftest import CLAUDE_CODE, load_json

TRANSCRIPT = CLAUDE_CODE / "4d5611e5.agent-a2898e3.openai.json"
SUMMARY_MARKER = "[Context summary: the conversation before this point was compacted]"


class ToolCallingFakeModel(FakeMessagesListChatModel):
    """langchain_core's scripted fake model, accepting the agent's tool bindings."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


class ModelInputs(BaseCallbackHandler):
    """Records the messages of every chat model call, as LangChain hands them to the model."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.calls.extend(messages)


@tool
def read_file(path: str) -> str:
    """Read a file of the project."""
    return f"contents of {path}: def parse(text): return text.split()"


def scripted_model() -> ToolCallingFakeModel:
    return ToolCallingFakeModel(
        responses=[
            AIMessage(
                content="",
                tool_calls=[{"id": "call_read_1", "name": "read_file", "args": {"path": "p.py"}}],
            ),
            AIMessage(content="The parser splits on whitespace; done."),
        ]
    )


def history() -> list[BaseMessage]:
    earlier = convert_to_messages(load_json(TRANSCRIPT)["messages"])
    return [*earlier, HumanMessage("Now read p.py and tell me what parse() does.")]


def assert_tool_pairs_intact(messages: list[BaseMessage]) -> None:
    """Every tool call is answered right after it, and every tool result has its call."""
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in open_calls, f"orphan result {message.tool_call_id}"
            open_calls.discard(message.tool_call_id)
        else:
            assert not open_calls, f"calls without results: {open_calls}"
            if isinstance(message, AIMessage):
                open_calls = {call["id"] for call in message.tool_calls if call["id"]}
    assert not open_calls


def run_agent(compactor_url: str, use_async: bool) -> tuple[ModelInputs, dict[str, Any], Any]:
    middleware = CompactionMiddleware(
        compactor_url, model="gpt-4o", trigger_tokens=20_000, keep_recent_tokens=4_000
    )
    agent = create_agent(
        scripted_model(),
        tools=[read_file],
        system_prompt="You are a coding agent.",
        middleware=[middleware],
    )
    inputs = ModelInputs()
    payload = {"messages": history()}
    config: Any = {"callbacks": [inputs]}
    state = (
        asyncio.run(agent.ainvoke(payload, config=config))
        if use_async
        else agent.invoke(payload, config=config)
    )
    return inputs, state, middleware


def check_run(inputs: ModelInputs, state: dict[str, Any], middleware: Any) -> None:
    original = history()
    assert len(inputs.calls) == 2  # the tool call, then the final answer
    first, second = inputs.calls
    # The model got the system prompt, then the summary, then the kept recent messages.
    assert isinstance(first[0], SystemMessage) and first[0].content == "You are a coding agent."
    assert isinstance(first[1], HumanMessage)
    assert str(first[1].content).startswith(SUMMARY_MARKER)
    assert len(first) < len(original) / 2
    assert first[-1].content == original[-1].content
    assert_tool_pairs_intact(first)
    assert_tool_pairs_intact(second)
    # The second call builds on the compacted state: summary first, the new tool pair last.
    assert str(second[1].content).startswith(SUMMARY_MARKER)
    assert isinstance(second[-1], ToolMessage) and second[-1].tool_call_id == "call_read_1"
    assert "def parse" in str(second[-1].content)
    assert state["messages"][-1].content == "The parser splits on whitespace; done."
    assert middleware.last_result is not None and not middleware.last_result.compacted


def test_the_model_gets_the_compacted_history_with_tool_pairs_intact(compactor_url: str) -> None:
    check_run(*run_agent(compactor_url, use_async=False))


def test_the_async_agent_compacts_the_same_way(compactor_url: str) -> None:
    check_run(*run_agent(compactor_url, use_async=True))


def test_under_the_threshold_the_history_is_left_alone(compactor_url: str) -> None:
    agent = create_agent(
        scripted_model(),
        tools=[read_file],
        middleware=[CompactionMiddleware(compactor_url, model="gpt-4o")],
    )
    inputs = ModelInputs()
    question = HumanMessage("What does parse() do?")
    agent.invoke({"messages": [question]}, config={"callbacks": [inputs]})
    assert [m.content for m in inputs.calls[0]] == ["What does parse() do?"]


def test_clearing_tool_results_keeps_the_newest_and_every_pair(compactor_url: str) -> None:
    middleware = CompactionMiddleware(
        compactor_url,
        model="gpt-4o",
        trigger_tokens=20_000,
        strategy="clear_tool_results",
        clear={"keep": 2},
    )
    agent = create_agent(scripted_model(), tools=[read_file], middleware=[middleware])
    inputs = ModelInputs()
    agent.invoke({"messages": history()}, config={"callbacks": [inputs]})
    first = inputs.calls[0]
    assert middleware.last_result is not None
    results = [m for m in first if isinstance(m, ToolMessage)]
    original = [m for m in history() if isinstance(m, ToolMessage)]
    assert len(results) == len(original)  # nothing summarized, results only cleared
    assert [str(m.content) for m in results[-2:]] == [str(m.content) for m in original[-2:]]
    assert sum(str(a.content) != str(b.content) for a, b in zip(results, original, strict=True)) > 0
    assert_tool_pairs_intact(first)


class RecordingMiddleware(CompactionMiddleware):
    """The middleware, keeping every answer of the service (not only the last)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.results: list[CompactResult] = []

    def _compacted(self, messages: list[Any], result: CompactResult) -> Any:
        self.results.append(result)
        return super()._compacted(messages, result)


def test_the_agents_system_prompt_and_tools_count_toward_the_threshold(
    compactor_url: str,
) -> None:
    """Issue 26.3: `create_agent(system_prompt=…)` and the agent's tools were never sent,
    so a large agent prompt compacted late. Here the history alone is under the trigger
    and only the prompt puts it over."""
    prompt = "You are a coding agent. " + "Follow rule 7 of the house style guide. " * 1200
    wire = to_wire(history())
    tool_definitions = [convert_to_openai_tool(read_file)]
    with CompactorClient(compactor_url) as service:
        bare = service.estimate(wire, model="gpt-4o", format="openai").tokens
        full = service.estimate(
            wire, model="gpt-4o", format="openai", system=prompt, tools=tool_definitions
        ).tokens
    assert full > bare + 5_000
    middleware = RecordingMiddleware(
        compactor_url, model="gpt-4o", trigger_tokens=bare + 1_000, keep_recent_tokens=4_000
    )
    agent = create_agent(
        scripted_model(), tools=[read_file], system_prompt=prompt, middleware=[middleware]
    )
    inputs = ModelInputs()
    agent.invoke({"messages": history()}, config={"callbacks": [inputs]})
    first = inputs.calls[0]
    assert isinstance(first[0], SystemMessage) and first[0].content == prompt
    assert str(first[1].content).startswith(SUMMARY_MARKER), "not compacted"
    assert_tool_pairs_intact(first)
    # The service counted exactly what the model is shown: prompt, tool and messages.
    assert middleware.results[0].tokens_before == full
