"""An agent loop that hands its context to context-compactor, turn by turn.

Each turn: `prepare` (the before-turn hook: the service compacts when the session is over
its threshold) → send the context to the model → append the model's reply with its usage
report → run the tool it asked for → append the tool result. When the model still refuses
the context as too long, the loop asks for an `overflow` compaction and retries once.

    python examples/agent_loop.py --self-contained
    python examples/agent_loop.py --compactor-url http://127.0.0.1:8000 \\
        --model-url http://127.0.0.1:8081/v1

`--self-contained` starts both a compactor (temporary SQLite file) and the fake model
(examples/fake_model.py) on 127.0.0.1 and stops them at the end. The agent side needs only
httpx and the `context-compactor-client` distribution (clients/python).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from context_compactor import CompactorAPIError, CompactorClient, Context, PrepareResult

SYSTEM_PROMPT = "You are a careful coding agent. Use the tools; keep answers short."
TASK = (
    "The parser in src/parser crashes on empty input with IndexError. Find the cause, fix "
    "it without changing the public parse() signature, and make the test suite pass."
)
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file of the project.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "lines": {"type": "integer"}},
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_tests",
            "description": "Run the test suite and return its output.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    },
]
# Session settings for the demo: a small trigger so a few turns are enough to compact.
TRIGGER_TOKENS = 6_000
KEEP_RECENT_TOKENS = 1_500


class ContextTooLongError(Exception):
    """The model refused the request: its context window is smaller than the prompt."""


@dataclass(frozen=True)
class ModelReply:
    message: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int


@dataclass
class TurnReport:
    turn: int
    context_tokens: int
    messages_sent: int
    compaction: str | None  # "auto" (by prepare), "overflow" (after a refusal) or None
    tokens_before: int | None = None
    tokens_after: int | None = None
    prompt_tokens: int = 0
    tool: str | None = None


@dataclass
class LoopReport:
    session_id: str
    turns: list[TurnReport] = field(default_factory=list)
    done: bool = False  # the model gave its final answer (no more tool calls)

    @property
    def compactions(self) -> int:
        return sum(1 for t in self.turns if t.compaction is not None)


class ChatModel:
    """A minimal OpenAI-compatible Chat Completions caller."""

    def __init__(self, base_url: str, model: str = "fake-coder", timeout: float = 60.0) -> None:
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout)
        self.model = model

    def close(self) -> None:
        self._http.close()

    def complete(self, context: Context) -> ModelReply:
        """Send the context the compactor prepared; ContextTooLongError on a 400 overflow."""
        messages = list(context.messages)
        if isinstance(context.system, str):
            messages.insert(0, {"role": "system", "content": context.system})
        body = {"model": self.model, "messages": messages, "tools": context.tools}
        response = self._http.post("/chat/completions", json=body)
        if response.status_code == 400 and _is_context_overflow(response):
            raise ContextTooLongError(response.json()["error"]["message"])
        response.raise_for_status()
        answer = response.json()
        usage = answer["usage"]
        return ModelReply(
            message=answer["choices"][0]["message"],
            prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"],
        )


def _is_context_overflow(response: httpx.Response) -> bool:
    try:
        error = response.json().get("error") or {}
    except ValueError:
        return False
    return error.get("code") == "context_length_exceeded"


def run_tool(call: dict[str, Any]) -> str:
    """A fake tool: file contents and test logs big enough to fill a context quickly."""
    name = call["function"]["name"]
    arguments = json.loads(call["function"]["arguments"] or "{}")
    if name == "read_file":
        path, lines = arguments["path"], int(arguments.get("lines", 100))
        body = "\n".join(
            f"def handle_{i}(tokens: list[str]) -> str:  # {path}:{i}\n    return tokens[{i % 7}]"
            for i in range(lines // 2)
        )
        return f"{path} ({lines} lines)\n{body}"
    if name == "run_tests":
        passed = "\n".join(f"tests/test_parser.py::test_case_{i} PASSED" for i in range(120))
        failure = (
            "tests/test_parser.py::test_empty_input FAILED\n"
            "E   IndexError: list index out of range\n"
            "src/parser/module_0.py:3: in handle_0\n    return tokens[0]"
        )
        return f"{passed}\n{failure}\n===== 1 failed, 120 passed in 0.42s ====="
    return f"error: unknown tool {name!r}"


def run_agent(
    compactor: CompactorClient,
    model: ChatModel,
    turns: int,
    *,
    trigger_tokens: int = TRIGGER_TOKENS,
    keep_recent_tokens: int = KEEP_RECENT_TOKENS,
    report: Callable[[str], None] = print,
) -> LoopReport:
    """Run up to `turns` model calls on a new session; the report says what happened."""
    session = compactor.create_session(
        model=model.model,
        format="openai",
        system=SYSTEM_PROMPT,
        tools=TOOLS,
        trigger_tokens=trigger_tokens,
        keep_recent_tokens=keep_recent_tokens,
    )
    result = LoopReport(session_id=session.id)
    compactor.append_messages(
        session.id, [{"role": "user", "content": TASK}], idempotency_key="task"
    )
    report(f"session {session.id}: trigger {trigger_tokens:,} tokens, {turns} turns at most")
    for turn in range(1, turns + 1):
        prepared = compactor.prepare(session.id)
        turn_report = _turn_report(turn, prepared)
        try:
            reply = model.complete(prepared.context)
        except ContextTooLongError as refusal:
            # The model counts differently from the estimate: compact once and retry once.
            report(f"turn {turn:2}: model refused the context ({refusal}); compacting")
            compacted = compactor.compact_session(session.id, reason="overflow")
            turn_report = _turn_report(turn, compacted, overflow=True)
            reply = model.complete(compacted.context)
        turn_report.prompt_tokens = reply.prompt_tokens
        # Keys make each append safe to retry after a network error: no duplicates.
        compactor.append_messages(
            session.id,
            [reply.message],
            usage=[
                {
                    "message_index": 0,
                    "input_tokens": reply.prompt_tokens,
                    "output_tokens": reply.completion_tokens,
                }
            ],
            idempotency_key=f"turn-{turn}-assistant",
        )
        calls = reply.message.get("tool_calls") or []
        if calls:
            results = [
                {"role": "tool", "tool_call_id": call["id"], "content": run_tool(call)}
                for call in calls
            ]
            compactor.append_messages(session.id, results, idempotency_key=f"turn-{turn}-tools")
            turn_report.tool = ", ".join(call["function"]["name"] for call in calls)
        result.turns.append(turn_report)
        report(_describe(turn_report))
        if not calls:
            result.done = True
            break
    total = compactor.get_session(session.id)
    ending = "the model finished the task" if result.done else "turn budget used up"
    report(
        f"{ending}: {len(result.turns)} turns, {total.message_count} messages stored, "
        f"{result.compactions} compactions ({total.compaction_count} records)"
    )
    return result


def _turn_report(turn: int, prepared: PrepareResult, *, overflow: bool = False) -> TurnReport:
    compaction = prepared.compaction
    return TurnReport(
        turn=turn,
        context_tokens=prepared.context.estimate.tokens,
        messages_sent=len(prepared.context.messages),
        compaction=("overflow" if overflow else "auto") if prepared.compacted else None,
        tokens_before=compaction.tokens_before if compaction else None,
        tokens_after=compaction.tokens_after if compaction else None,
    )


def _describe(t: TurnReport) -> str:
    if t.compaction is None:
        compacted = "compacted: no"
    else:
        compacted = f"compacted: yes ({t.compaction}, {t.tokens_before:,} → {t.tokens_after:,})"
    return (
        f"turn {t.turn:2}: context {t.context_tokens:6,} tokens in {t.messages_sent:2} messages"
        f" | {compacted:<36} | model prompt {t.prompt_tokens:6,} | tool: {t.tool or '(none)'}"
    )


@contextmanager
def serve_compactor(database_dir: Path) -> Iterator[str]:
    """A compactor on 127.0.0.1 (uvicorn in a thread, temporary SQLite); yields its URL."""
    import uvicorn

    from app.main import create_app
    from app.settings import Settings

    app = create_app(Settings(database_url=f"sqlite:///{database_dir / 'compactor.db'}"))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="compactor", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the compactor did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def run_self_contained(
    turns: int, report: Callable[[str], None] = print, context_window: int | None = None
) -> LoopReport:
    """Start a compactor and the fake model on loopback, run the loop, stop both."""
    from fake_model import DEFAULT_CONTEXT_WINDOW, serve_fake_model

    with ExitStack() as stack:
        database_dir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        compactor_url = stack.enter_context(serve_compactor(database_dir))
        window = context_window or DEFAULT_CONTEXT_WINDOW
        model_url, _ = stack.enter_context(serve_fake_model(context_window=window))
        report(f"compactor at {compactor_url}, fake model at {model_url} (window {window:,})")
        compactor = stack.enter_context(CompactorClient(compactor_url))
        model = ChatModel(model_url)
        stack.callback(model.close)
        return run_agent(compactor, model, turns, report=report)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="An agent loop using context-compactor.")
    parser.add_argument("--compactor-url", default="http://127.0.0.1:8000")
    parser.add_argument("--model-url", default="http://127.0.0.1:8081/v1")
    parser.add_argument("--api-key", default=None, help="compactor API key, if it needs one")
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--trigger-tokens", type=int, default=TRIGGER_TOKENS)
    parser.add_argument(
        "--self-contained",
        action="store_true",
        help="start a compactor and the fake model on 127.0.0.1 for this run",
    )
    args = parser.parse_args(argv)
    try:
        if args.self_contained:
            run_self_contained(args.turns)
        else:
            with CompactorClient(args.compactor_url, args.api_key) as compactor:
                model = ChatModel(args.model_url)
                try:
                    run_agent(compactor, model, args.turns, trigger_tokens=args.trigger_tokens)
                finally:
                    model.close()
    except CompactorAPIError as exc:
        print(f"compactor error: {exc}", file=sys.stderr)
        return 1
    except (httpx.HTTPError, ContextTooLongError) as exc:
        print(f"model error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
