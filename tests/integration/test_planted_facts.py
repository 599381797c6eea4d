"""The recall target (issue 25): 50 facts planted in a real coding-agent transcript (the
Claude Code session in tests/data/claude_code), folded away by compaction, are found by
the MCP tool `search_history` at rank ≤ 3 for at least 95% of them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry
from tests.conftest import migrated_copy
from tests.live_server import live_server

TRANSCRIPT = (
    Path(__file__).resolve().parents[1]
    / "data/claude_code/4d5611e5-241a-462a-8d15-5122611a9569.anthropic.json"
)

# (what the fact is about, its value): the query an agent would type is the first part.
FACTS = [
    ("staging database password", "TANGERINE-4417"),
    ("release codename", "HALIBUT"),
    ("on-call pager alias", "ops-nightowl"),
    ("build cache bucket", "s3://spotter-ci-cache-7"),
    ("feature flag for the new timeline", "timeline_v2_rollout"),
    ("Grafana dashboard id", "dash-5521"),
    ("customer ticket number", "ZD-88213"),
    ("maximum upload size", "37 megabytes"),
    ("preferred commit prefix", "spot:"),
    ("vendor contact email", "liaison@acme-vendor.test"),
    ("retry budget for webhooks", "eleven attempts"),
    ("cron schedule of the cleanup job", "17 3 * * 2"),
    ("TLS certificate expiry", "March 9 2027"),
    ("Redis key namespace", "spt:v3:"),
    ("SLO for session page latency", "420 milliseconds"),
    ("elixir version pinned in CI", "1.16.2-otp-26"),
    ("fallback locale", "pt-BR"),
    ("name of the load balancer", "lb-orchid-east"),
    ("Sentry project slug", "spotter-web-prod"),
    ("rate limit for anonymous users", "90 requests per minute"),
    ("database replica hostname", "pg-replica-kestrel"),
    ("Kafka topic for transcripts", "transcripts.raw.v4"),
    ("design review owner", "Ingrid Halvorsen"),
    ("license header year", "2019"),
    ("docker base image tag", "hexpm/elixir:1.16.2-erlang-26.2.1-alpine"),
    ("password hashing cost", "bcrypt rounds 13"),
    ("maintenance window", "Sunday 02:00 UTC"),
    ("analytics sampling ratio", "one in forty"),
    ("PDF export font", "Atkinson Hyperlegible"),
    ("websocket heartbeat interval", "25 seconds"),
    ("archive retention period", "400 days"),
    ("mobile deep link scheme", "spotter-app://"),
    ("git tag of the last good deploy", "v2.31.7"),
    ("payment provider sandbox key prefix", "pk_sbx_"),
    ("support chat widget id", "chatw-4410"),
    ("ETS table name for presence", "presence_cache_v2"),
    ("color of the error banner", "#B3261E"),
    ("terraform workspace", "spotter-prod-eu"),
    ("oban queue concurrency", "queue media at 6"),
    ("CSV delimiter for exports", "semicolon"),
    ("minimum password length", "14 characters"),
    ("office wifi network", "SpotterGuest5G"),
    ("translation vendor", "Lingotek"),
    ("hotfix branch naming", "hotfix/yyyy-mm-dd"),
    ("search index shard count", "seven shards"),
    ("image thumbnail width", "320 pixels"),
    ("legal hold mailbox", "legalhold@spotter.test"),
    ("browserslist target", "last 2 versions, not dead"),
    ("penetration test vendor", "Cobalt Labs"),
    ("quarterly budget code", "ENG-Q3-SPT-42"),
]


def _planted() -> tuple[list[dict[str, Any]], dict[int, int]]:
    """The transcript with one fact added to each of 50 user messages spread over its
    first two thirds (a text block beside the tool results); fact index → entry seq."""
    messages = json.loads(TRANSCRIPT.read_text("utf-8"))["messages"]
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    folded_part = users[: len(users) * 2 // 3]
    step = len(folded_part) / len(FACTS)
    where: dict[int, int] = {}
    for n, (about, value) in enumerate(FACTS):
        seq = folded_part[int(n * step)]
        message = messages[seq]
        text = f"By the way, for the record: the {about} is {value}."
        content = message["content"]
        if isinstance(content, str):
            message["content"] = f"{content}\n\n{text}"
        else:
            message["content"] = [*content, {"type": "text", "text": text}]
        where[n] = seq
    return messages, where


def test_planted_facts_are_recalled_at_rank_3_or_better(
    tmp_path: Path, migrated_sqlite: Path, tokenizers: TokenizerRegistry
) -> None:
    messages, where = _planted()
    assert len(set(where.values())) == len(FACTS)
    settings = Settings(database_url=migrated_copy(migrated_sqlite, tmp_path))
    with live_server(settings, tokenizers=tokenizers) as url:
        body = {"format": "anthropic", "keep_recent_tokens": 8000}
        sid = httpx.post(f"{url}/sessions", json=body).json()["id"]
        httpx.post(f"{url}/sessions/{sid}/messages", json={"messages": messages}, timeout=60)
        compacted = httpx.post(f"{url}/sessions/{sid}/compact", json={}, timeout=120).json()
        first_kept = compacted["compaction"]["first_kept_seq"]
        assert max(where.values()) < first_kept, "every planted fact is folded away"
        context = json.dumps(compacted["context"]["messages"])
        lost = [value for _about, value in FACTS if value not in context]
        assert len(lost) >= len(FACTS) // 2, "the summary should not keep most facts"

        async def ranks() -> list[int | None]:
            found: list[int | None] = []
            async with (
                httpx2.AsyncClient(timeout=60) as http,
                Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
            ):
                for n, (about, _value) in enumerate(FACTS):
                    result = await client.call_tool(
                        "search_history", {"session_id": sid, "query": about, "limit": 10}
                    )
                    assert not result.is_error, result.content
                    hits = (result.structured_content or {})["hits"]
                    seqs = [h["seq"] for h in hits]
                    found.append(seqs.index(where[n]) + 1 if where[n] in seqs else None)
            return found

        found = asyncio.run(ranks())
    within = sum(1 for rank in found if rank is not None and rank <= 3)
    missed = [FACTS[n][0] for n, rank in enumerate(found) if rank is None or rank > 3]
    print(f"recall@3: {within}/{len(FACTS)}; missed: {missed}")
    assert within / len(FACTS) >= 0.95, (within, missed, found)
