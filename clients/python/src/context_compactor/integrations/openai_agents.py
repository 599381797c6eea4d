"""OpenAI Agents SDK `Session` backed by the context-compactor session store.

    from agents import Agent, Runner
    from context_compactor.integrations.openai_agents import CompactorSession

    session = CompactorSession(base_url="http://127.0.0.1:8000", model="gpt-4o", agent=agent)
    await Runner.run(agent, "Fix the parser", session=session)
    print(session.session_id)  # keep it to continue the conversation later

Items are stored as OpenAI Responses input items (`format: "responses"`). Before each run
the SDK reads the history with `get_items`, which calls the session's `prepare` hook:
when the session is over its threshold the service compacts it, and the run starts from
the summary item followed by the kept items (function calls still paired with their
outputs). The transcript keeps every original item. Given the `agent`, the session is
created with its instructions (when they are text) and its function tools, so what the
model is shown besides the items counts toward the threshold. Install with
`[openai-agents]`.

The store is append-only: `pop_item` rebuilds the session without its last item (a new
session id, the compaction records start over) and `clear_session` deletes it; a new
session is created on the next use. Read `session_id` after either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack, cast

from agents import Agent, FunctionTool
from agents.items import TResponseInputItem
from agents.memory.session import SessionABC

from context_compactor import AsyncCompactorClient, PrepareResult, SessionOptions

_PAGE = 1000


class CompactorSession(SessionABC):
    """Conversation memory for the Agents SDK, kept and compacted by a context-compactor service.

    `session_id` names an existing store session; without it one is created on first use
    with `options` (`model`, `context_window`, `trigger_tokens`, `keep_recent_tokens`,
    `pinned`, `strategy`, `metadata`, ...).
    """

    def __init__(
        self,
        session_id: str | None = None,
        *,
        base_url: str,
        api_key: str | None = None,
        agent: Agent[Any] | None = None,
        **options: Unpack[SessionOptions],
    ) -> None:
        self.session_id = session_id or ""
        """The store session's id ("" until the first use creates it)."""
        self._base_url = base_url
        self._api_key = api_key
        self.options: SessionOptions = {"format": "responses"}
        if agent is not None:
            self.options.update(agent_prompt(agent))
        self.options.update(options)
        self.last_prepare: PrepareResult | None = None
        """The service's answer to the latest `get_items` (for logs and tests)."""

    def _client(self) -> AsyncCompactorClient:
        # A client per call: a session outlives the event loop of any one run.
        return AsyncCompactorClient(self._base_url, api_key=self._api_key)

    async def _ensure(self, client: AsyncCompactorClient) -> str:
        if not self.session_id:
            self.session_id = (await client.create_session(**self.options)).id
        return self.session_id

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The items to send now: compacted first when the session is over its threshold."""
        async with self._client() as client:
            prepared = await client.prepare(await self._ensure(client))
        self.last_prepare = prepared
        items = prepared.context.messages
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return [cast(TResponseInputItem, item) for item in items]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items to the transcript, exactly as given."""
        if not items:
            return
        batch = [dict(cast(Mapping[str, Any], item)) for item in items]
        async with self._client() as client:
            await client.append_messages(await self._ensure(client), batch)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item (by rebuilding the session without it)."""
        if not self.session_id:
            return None
        async with self._client() as client:
            items = await _all_items(client, self.session_id)
            if not items:
                return None
            old, self.session_id = self.session_id, ""
            new = await self._ensure(client)
            if len(items) > 1:
                await client.append_messages(new, items[:-1])
            await client.delete_session(old)
        return cast(TResponseInputItem, items[-1])

    async def clear_session(self) -> None:
        """Delete the stored session; the next use starts a new, empty one."""
        if not self.session_id:
            return
        async with self._client() as client:
            await client.delete_session(self.session_id)
        self.session_id = ""


def agent_prompt(agent: Agent[Any]) -> SessionOptions:
    """What the model is shown besides the items: the agent's instructions (when text; a
    function of the run context cannot be known here) and its function tools, as
    Responses tool definitions."""
    prompt: SessionOptions = {}
    if isinstance(agent.instructions, str) and agent.instructions:
        prompt["system"] = agent.instructions
    tools = [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.params_json_schema,
        }
        for tool in agent.tools
        if isinstance(tool, FunctionTool)
    ]
    if tools:
        prompt["tools"] = tools
    return prompt


async def _all_items(client: AsyncCompactorClient, session_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    while True:
        page = await client.transcript(session_id, offset=len(items), limit=_PAGE)
        items.extend(page.messages)
        if not page.messages or len(items) >= page.total:
            return items
